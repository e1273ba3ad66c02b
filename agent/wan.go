package agent

import (
	"context"
	"errors"
	"fmt"

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
	gc.BindAddr, gc.BindPort = a.cfg.BindAddr, a.cfg.Ports.SerfWAN
	gc.AdvertiseAddr = a.advertise
	gc.RPCAddr = rpcAddr
	// A failed datacenter stays known (its names fail rather than not
	// exist) as long as a failed node stays in the catalog.
	gc.RetainDead = a.cfg.ReconnectTimeout
	var err error
	if gc.EncryptKey, err = a.cfg.encryptKey(); err != nil {
		return err
	}
	if a.wan, err = gossip.New(gc, a.logger); err != nil {
		return fmt.Errorf("start WAN gossip: %w", err)
	}
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
