package agent

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/gossip"
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
	if err := a.startGossip(gossip.RoleClient, ""); err != nil {
		return err
	}
	a.servers = door.NewServerList(a.gossip, a.cfg.Datacenter)
	a.clientDoor = door.NewClient(a.doorConfig(), a.rpcPool, a.servers.Addrs, a.logger.With("component", "door"))
	a.door = door.WithToken(a.clientDoor, a.cfg.ACL.Tokens.Default)
	a.startJoin(loopCtx, a.gossip, gossip.LAN, a.cfg.Join, lanSnapshotFile)
	a.logger.Info("client agent", "gossip", a.gossipAddr())
	return nil
}

// startGossip joins nothing yet: it creates this agent's LAN pool member
// with role and (for a server) the RPC address it gossips.
func (a *Agent) startGossip(role gossip.Role, rpcAddr string) error {
	gc := gossip.DefaultLANConfig()
	gc.NodeName, gc.Datacenter, gc.Role = a.cfg.NodeName, a.cfg.Datacenter, role
	gc.NodeID, gc.Build = a.cfg.NodeID, agentBuild() // identity.go
	gc.BindAddr, gc.BindPort = a.cfg.BindAddr, a.cfg.Ports.SerfLAN
	gc.AdvertiseAddr = a.advertise
	gc.RPCAddr = rpcAddr
	if a.wan != nil {
		gc.WANPort = int(a.wan.LocalMember().Port)
	}
	gc.RetainDead = a.cfg.ReconnectTimeout
	gc.DisableCoordinates = a.cfg.Coordinates.Disable
	setTiming(&gc.Timing, a.cfg.GossipLAN)
	var err error
	if gc.EncryptKey, err = a.cfg.GossipKey(); err != nil {
		return err
	}
	gc.KeyringFile = a.keyringFile(gossip.LAN) // keyring.go
	if a.gossip, err = gossip.New(gc, a.logger); err != nil {
		return fmt.Errorf("start LAN gossip: %w", err)
	}
	a.peers.lan.Store(a.gossip)
	return nil
}

// setTiming sets the timers of a gossip_lan or gossip_wan block onto t, a
// pool preset's timing; the preset's other timers stay as they are.
func setTiming(t *gossip.Timing, c config.GossipTiming) {
	t.GossipNodes, t.GossipInterval = c.GossipNodes, c.GossipInterval
	t.ProbeInterval, t.ProbeTimeout = c.ProbeInterval, c.ProbeTimeout
	t.RetransmitMult, t.SuspicionMult = c.RetransmitMult, c.SuspicionMult
}

// gossipAddr is this agent's LAN gossip address, for logs.
func (a *Agent) gossipAddr() string { return poolAddr(a.gossip) }

// poolAddr is this agent's address in pool p, for logs.
func poolAddr(p *gossip.Pool) string {
	m := p.LocalMember()
	return m.Addr.String() + ":" + strconv.Itoa(int(m.Port))
}

// doorConfig is how the client door waits and fails over.
func (a *Agent) doorConfig() door.Config {
	c := door.DefaultConfig()
	c.HoldTimeout = a.cfg.Performance.RPCHoldTimeout
	return c
}
