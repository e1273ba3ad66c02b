package agent

import (
	"context"

	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/pools"
	"github.com/cairndns/cairn/agent/tokens"
	"github.com/cairndns/cairn/internal/buildinfo"
	"github.com/cairndns/cairn/rpc"
)

// startClient starts a client agent: an rpc pool, LAN gossip as a client
// member, and the door that sends every call to a server found in gossip.
// It returns without waiting for a server; until the join loop (or a later
// join) finds one, calls wait for one through their hold, then fail with
// door.ErrNoServers, and the first sync retries.
func (a *Agent) startClient(loopCtx context.Context) error {
	var err error
	if a.rpcPool, err = a.newRPCPool(); err != nil {
		return err
	}
	pc, err := a.poolsConfig()
	if err != nil {
		return err
	}
	if a.pools, err = pools.NewClient(pc, a.logger); err != nil {
		return err
	}
	a.gossip = a.pools.LAN()
	if err := a.register(a.gossip.Collectors()); err != nil {
		return err
	}
	a.servers = door.NewServerList(a.gossip, a.cfg.Datacenter)
	a.clientDoor = door.NewClient(a.doorConfig(), a.rpcPool, a.servers.Addrs, a.logger.With("component", "door"))
	a.door = door.WithToken(a.clientDoor, a.tokens.Func(tokens.Default))
	a.loops.Go(func() { a.pools.Run(loopCtx) })
	a.logger.Info("client agent", "gossip", pools.Addr(a.gossip))
	return nil
}

// poolsConfig is the gossip pools' configuration (a server adds the WAN
// router's feed).
func (a *Agent) poolsConfig() (pools.Config, error) {
	key, err := a.cfg.GossipKey()
	if err != nil {
		return pools.Config{}, err
	}
	return pools.Config{
		NodeName: a.cfg.NodeName, NodeID: a.cfg.NodeID, Datacenter: a.cfg.Datacenter, Build: buildinfo.Build(), Protocol: a.testProtocol,
		BindAddr: a.cfg.BindAddr, Advertise: a.advertise, AdvertiseWAN: a.cfg.AdvertiseAddrWAN,
		LANPort: a.cfg.Ports.SerfLAN, WANPort: a.cfg.Ports.SerfWAN,
		LANTiming: a.cfg.GossipLAN, WANTiming: a.cfg.GossipWAN,
		RetainDead: a.cfg.ReconnectTimeout, DisableCoordinates: a.cfg.Coordinates.Disable,
		EncryptKey: key, DataDir: a.cfg.DataDir,
		Join: a.cfg.Join, JoinWAN: a.cfg.JoinWAN, RetryInterval: a.cfg.RetryInterval, RetryMax: a.cfg.RetryMax,
		Peers: a.peers, OnUserEvent: a.events.Receive,
	}, nil
}

// doorConfig is how the client door waits and fails over.
func (a *Agent) doorConfig() door.Config {
	c := door.DefaultConfig()
	c.HoldTimeout = a.cfg.Performance.RPCHoldTimeout
	return c
}

// newRPCPool makes the pool to the servers that a client's door, and a
// server's leader duties and forwards, send through.
func (a *Agent) newRPCPool() (*rpc.Pool, error) {
	pc := rpc.DefaultPoolConfig()
	pc.SourceAddr = pools.SourceAddr(a.cfg.BindAddr, a.advertise)
	pc.Dial, pc.ClockOffset = a.dialServer, a.clockOffset
	a.tls.SecurePool(&pc)
	p, err := rpc.NewPool(pc, a.logger)
	if err != nil {
		return nil, err
	}
	if err := a.metrics.Register(p.Collectors()...); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
