package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cairndns/cairn/gossip"
)

// startWAN makes this server a member of the WAN pool, where the servers of
// every datacenter find each other, and starts the owned loops that keep
// the router current from it, join it through cfg.JoinWAN (and the
// remembered members) and keep its member snapshot. Client agents never
// call it: the WAN pool holds servers only. The router must exist.
func (a *Agent) startWAN(loopCtx context.Context, rpcAddr string) error {
	gc := gossip.DefaultWANConfig()
	gc.NodeName, gc.Datacenter = a.cfg.NodeName, a.cfg.Datacenter
	gc.NodeID, gc.Build = a.cfg.NodeID, agentBuild()
	gc.BindAddr, gc.BindPort = a.cfg.BindAddr, a.cfg.Ports.SerfWAN
	gc.AdvertiseAddr, gc.RPCAddr = a.advertise, rpcAddr
	if wan := a.cfg.AdvertiseAddrWAN; wan != "" {
		// Other datacenters reach this server, gossip and RPC, there.
		gc.AdvertiseAddr = wan
		if _, port, err := net.SplitHostPort(rpcAddr); err == nil {
			gc.RPCAddr = net.JoinHostPort(wan, port)
		}
	}
	// A failed datacenter stays known (its names fail rather than not
	// exist) as long as a failed node stays in the catalog.
	gc.RetainDead = a.cfg.ReconnectTimeout
	gc.DisableCoordinates = a.cfg.Coordinates.Disable
	setTiming(&gc.Timing, a.cfg.GossipWAN) // client.go
	var err error
	if gc.EncryptKey, err = a.cfg.GossipKey(); err != nil {
		return err
	}
	gc.KeyringFile = a.keyringFile(gossip.WAN) // keyring.go
	if a.wan, err = gossip.New(gc, a.logger); err != nil {
		return fmt.Errorf("start WAN gossip: %w", err)
	}
	a.peers.wan.Store(a.wan)
	// The router is the WAN pool's only reader of its change signal.
	a.loops.Go(func() { a.router.Run(loopCtx, a.wan) })
	a.startJoin(loopCtx, a.wan, gossip.WAN, a.cfg.JoinWAN, wanSnapshotFile)
	return nil
}

// leaveWAN announces this server's leave in the WAN pool, so the other
// datacenters stop routing to it at once rather than after failure
// detection. It does nothing on an agent without one.
func (a *Agent) leaveWAN() error {
	if a.wan == nil {
		return nil
	}
	if err := a.wan.Leave(leaveTimeout); err != nil && !errors.Is(err, gossip.ErrShutdown) {
		return fmt.Errorf("WAN gossip leave: %w", err)
	}
	return nil
}

// wanFloodInterval is how often a server looks for servers of its own
// datacenter that LAN gossip knows and its WAN pool does not.
const wanFloodInterval = 2 * time.Second

// floodWAN joins, in the WAN pool, every alive server of this datacenter
// that LAN gossip knows (at the WAN port it gossips) but the WAN pool does
// not see alive, until ctx ends, as Consul's servers do: a server needs no
// -join-wan of its own, and one that joined the WAN pool through some
// server brings the rest of its datacenter along. It polls (the leader and
// the router own the pools' change signals).
func (a *Agent) floodWAN(ctx context.Context) {
	t := time.NewTicker(wanFloodInterval)
	defer t.Stop()
	for {
		inWAN := make(map[string]bool)
		for _, m := range a.wan.Members() {
			if m.Status == gossip.StatusAlive {
				inWAN[m.Name] = true
			}
		}
		var addrs []string
		for _, m := range a.gossip.Members() {
			if !m.IsServer() || m.Status != gossip.StatusAlive || m.Datacenter != a.cfg.Datacenter || m.WANPort == 0 ||
				inWAN[m.Node+"."+m.Datacenter] {
				continue
			}
			addrs = append(addrs, net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.WANPort))))
		}
		if len(addrs) > 0 {
			if n, err := a.wan.Join(ctx, addrs); err != nil {
				a.logger.Debug("flood join of the WAN pool failed", "addrs", addrs, "err", err)
			} else {
				a.logger.Info("joined servers of this datacenter in the WAN pool", "addrs", addrs, "answered", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
