package pools

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cairndns/cairn/gossip"
)

// startWAN makes this server a member of the WAN pool, where the servers
// of every datacenter find each other. Client agents have none: the WAN
// pool holds servers only.
func (p *Pools) startWAN(rpcAddr string) error {
	c := p.cfg
	gc := gossip.DefaultWANConfig()
	gc.NodeName, gc.Datacenter = c.NodeName, c.Datacenter
	gc.NodeID, gc.Build = c.NodeID, c.Build
	c.protocol(&gc)
	gc.BindAddr, gc.BindPort = c.BindAddr, c.WANPort
	gc.AdvertiseAddr, gc.RPCAddr = c.Advertise, rpcAddr
	if wan := c.AdvertiseWAN; wan != "" {
		// Other datacenters reach this server, gossip and RPC, there.
		gc.AdvertiseAddr = wan
		if _, port, err := net.SplitHostPort(rpcAddr); err == nil {
			gc.RPCAddr = net.JoinHostPort(wan, port)
		}
	}
	// A failed datacenter stays known (its names fail rather than not
	// exist) as long as a failed node stays in the catalog.
	gc.RetainDead = c.RetainDead
	gc.DisableCoordinates = c.DisableCoordinates
	setTiming(&gc.Timing, c.WANTiming)
	gc.EncryptKey = c.EncryptKey
	gc.KeyringFile = p.keyringFile(gossip.WAN)
	wan, err := gossip.New(gc, p.logger)
	if err != nil {
		return fmt.Errorf("start WAN gossip: %w", err)
	}
	p.wan = wan
	p.cfg.Peers.wan.Store(wan)
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
func (p *Pools) floodWAN(ctx context.Context) {
	t := time.NewTicker(wanFloodInterval)
	defer t.Stop()
	for {
		inWAN := make(map[string]bool)
		for _, m := range p.wan.Members() {
			if m.Status == gossip.StatusAlive {
				inWAN[m.Name] = true
			}
		}
		var addrs []string
		for _, m := range p.lan.Members() {
			if !m.IsServer() || m.Status != gossip.StatusAlive || m.Datacenter != p.cfg.Datacenter || m.WANPort == 0 ||
				inWAN[m.Node+"."+m.Datacenter] {
				continue
			}
			addrs = append(addrs, net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.WANPort))))
		}
		if len(addrs) > 0 {
			if n, err := p.wan.Join(ctx, addrs); err != nil {
				p.logger.Debug("flood join of the WAN pool failed", "addrs", addrs, "err", err)
			} else {
				p.logger.Info("joined servers of this datacenter in the WAN pool", "addrs", addrs, "answered", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
