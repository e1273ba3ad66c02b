package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/gossip"
)

// leaveTimeout bounds each step of a graceful leave: broadcasting it in
// gossip, and on a server leaving the Raft configuration.
const leaveTimeout = 5 * time.Second

// membership is the agent's cluster membership as the HTTP API sees it
// (httpapi.Cluster): the LAN pool's members, joining and leaving, a
// server's WAN pool, and the servers' Raft configuration and datacenters
// through the door.
type membership struct{ a *Agent }

var _ httpapi.Cluster = membership{}

// Members returns the LAN pool's members.
func (m membership) Members() []httpapi.Member {
	return m.toHTTP(m.a.gossip.Members(), gossip.LAN)
}

// WANMembers returns the WAN pool's members, named "<node>.<dc>" as Consul
// names them; a client is in no WAN pool.
func (m membership) WANMembers() ([]httpapi.Member, error) {
	wan, err := m.a.role.wanPool()
	if err != nil {
		return nil, err
	}
	return m.toHTTP(wan.Members(), gossip.WAN), nil
}

var errClientNotInWAN = fmt.Errorf("a client agent: %w", httpapi.ErrNotInWAN)

// toHTTP converts a pool's members: LAN members are named by their node,
// WAN members by their "<node>.<dc>" member name. A server's clock skew
// is what the agent's rpc pool measured calling it.
func (m membership) toHTTP(members []gossip.Member, kind gossip.Kind) []httpapi.Member {
	out := make([]httpapi.Member, 0, len(members))
	for _, gm := range members {
		role := "client"
		if gm.IsServer() {
			role = "server"
		}
		name := gm.Node
		if kind == gossip.WAN {
			name = gm.Name
		}
		hm := httpapi.Member{
			Name: name, Addr: gm.Addr.String(), Port: gm.Port, Status: gm.Status.String(),
			Role: role, Datacenter: gm.Datacenter, RPCAddr: gm.RPCAddr, ProtocolVersion: gm.ProtocolVersion,
			ID: gm.ID, Build: gm.Build, ProtocolMin: gm.ProtocolMin, ProtocolMax: gm.ProtocolMax,
		}
		if gm.RPCAddr != "" && m.a.rpcPool != nil {
			hm.ClockSkew, hm.ClockSkewKnown = m.a.rpcPool.ClockSkew(gm.RPCAddr)
		}
		out = append(out, hm)
	}
	return out
}

// Join joins the LAN pool through addrs.
func (m membership) Join(ctx context.Context, addrs []string) (int, error) {
	n, err := m.a.gossip.Join(ctx, addrs)
	if err == nil {
		m.a.logger.Info("joined through the API", "addrs", addrs, "answered", n)
	}
	return n, err
}

// JoinWAN joins the WAN pool through addrs.
func (m membership) JoinWAN(ctx context.Context, addrs []string) (int, error) {
	wan, err := m.a.role.wanPool()
	if err != nil {
		return 0, err
	}
	n, err := wan.Join(ctx, addrs)
	if err == nil {
		m.a.logger.Info("joined the WAN pool through the API", "addrs", addrs, "answered", n)
	}
	return n, err
}

// Datacenters returns the datacenters a server of this agent's
// datacenter knows: its own and those of its WAN pool.
func (m membership) Datacenters(ctx context.Context) ([]string, error) {
	return m.a.datacenters.List(ctx)
}

// ForceLeave makes a failed member leave: in the LAN pool and, on a
// server, as "<node>.<dc>" in the WAN pool (Consul's), or with wan in the
// WAN pool only.
func (m membership) ForceLeave(ctx context.Context, node string, prune, wan bool) error {
	wp, werr := m.a.role.wanPool()
	if wan {
		if werr != nil {
			return werr
		}
		return wp.ForceLeave(ctx, node, prune)
	}
	if err := m.a.gossip.ForceLeave(ctx, node, prune); err != nil || werr != nil {
		return err
	}
	return wp.ForceLeave(ctx, node+"."+m.a.cfg.Datacenter, prune)
}

// Leave leaves the cluster gracefully and tells Run to shut the agent
// down.
func (m membership) Leave(ctx context.Context) error {
	err := m.a.leave(ctx)
	m.a.leaveOnce.Do(func() { close(m.a.left) })
	return err
}

// Left is closed once the agent left the cluster through the HTTP API
// (PUT /v1/agent/leave); its owner should then shut it down. Run does.
func (a *Agent) Left() <-chan struct{} { return a.left }

// leave announces this agent's leave in gossip, so the others see it left
// rather than failed (and the leader deregisters its node; the other
// datacenters stop routing to a server at once), and takes a server out of
// the Raft configuration so the remaining servers' quorum does not count
// it. It is done once: later calls return the first one's result.
func (a *Agent) leave(ctx context.Context) error {
	a.leaveDo.Do(func() {
		if a.pools == nil { // Start failed before gossip
			return
		}
		a.logger.Info("leaving the cluster")
		if a.leaveErr = a.pools.Leave(); a.leaveErr != nil {
			return
		}
		a.leaveErr = a.role.leaveRaft(ctx)
	})
	return a.leaveErr
}
