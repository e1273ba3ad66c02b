package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// leaveTimeout bounds each step of a graceful leave: broadcasting it in
// gossip, and on a server leaving the Raft configuration.
const leaveTimeout = 5 * time.Second

// membership is the agent's cluster membership as the HTTP API sees it
// (httpapi.Cluster): the LAN pool's members, joining and leaving, and the
// servers' Raft configuration. An agent without gossip (a dev agent or a
// single server) is a cluster of itself.
type membership struct{ a *Agent }

var _ httpapi.Cluster = membership{}

// Members returns the LAN pool's members, or this agent alone without one.
func (m membership) Members() []httpapi.Member {
	a := m.a
	if a.gossip == nil {
		role := "client"
		if a.cfg.Server {
			role = "server"
		}
		return []httpapi.Member{{
			Name: a.cfg.NodeName, Addr: a.advertise, Status: gossip.StatusAlive.String(),
			Role: role, Datacenter: a.cfg.Datacenter, ProtocolVersion: gossip.ProtocolVersionMax,
		}}
	}
	return toHTTPMembers(a.gossip.Members(), gossip.LAN)
}

// WANMembers returns the WAN pool's members, named "<node>.<dc>" as Consul
// names them; an agent without a WAN pool is not a server that clusters.
func (m membership) WANMembers() ([]httpapi.Member, error) {
	if m.a.wan == nil {
		return nil, m.notInWAN()
	}
	return toHTTPMembers(m.a.wan.Members(), gossip.WAN), nil
}

// notInWAN says why this agent has no WAN pool.
func (m membership) notInWAN() error {
	if m.a.cfg.Server {
		return fmt.Errorf("a single server joins no WAN pool; restart it with -join-wan: %w", httpapi.ErrNotInWAN)
	}
	return fmt.Errorf("a client agent: %w", httpapi.ErrNotInWAN)
}

// toHTTPMembers converts a pool's members: LAN members are named by their
// node, WAN members by their "<node>.<dc>" member name.
func toHTTPMembers(members []gossip.Member, kind gossip.Kind) []httpapi.Member {
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
		out = append(out, httpapi.Member{
			Name: name, Addr: gm.Addr.String(), Port: gm.Port, Status: gm.Status.String(),
			Role: role, Datacenter: gm.Datacenter, RPCAddr: gm.RPCAddr, ProtocolVersion: gm.ProtocolVersion,
		})
	}
	return out
}

// errNoGossip is returned by Join on an agent that runs without gossip.
var errNoGossip = errors.New("this agent runs without gossip (-dev, or a single server started without -bootstrap-expect or -join); restart it with -join to cluster it")

// Join joins the LAN pool through addrs.
func (m membership) Join(ctx context.Context, addrs []string) (int, error) {
	if m.a.gossip == nil {
		return 0, errNoGossip
	}
	n, err := m.a.gossip.Join(ctx, addrs)
	if err == nil {
		m.a.logger.Info("joined through the API", "addrs", addrs, "answered", n)
	}
	return n, err
}

// JoinWAN joins the WAN pool through addrs.
func (m membership) JoinWAN(ctx context.Context, addrs []string) (int, error) {
	if m.a.wan == nil {
		return 0, m.notInWAN()
	}
	n, err := m.a.wan.Join(ctx, addrs)
	if err == nil {
		m.a.logger.Info("joined the WAN pool through the API", "addrs", addrs, "answered", n)
	}
	return n, err
}

// Datacenters returns the datacenters this agent knows: a clustering
// server's router's, a client's from a server, a single server's own.
func (m membership) Datacenters(ctx context.Context) ([]string, error) {
	a := m.a
	switch {
	case a.router != nil:
		return a.router.Datacenters(), nil
	case a.backend != nil:
		if rb, ok := a.backend.(*rpcBackend); ok {
			return rb.Datacenters(ctx)
		}
	}
	return []string{a.cfg.Datacenter}, nil
}

// Leave leaves the cluster gracefully and tells Run to shut the agent
// down.
func (m membership) Leave(ctx context.Context) error {
	err := m.a.leave(ctx)
	m.a.leaveOnce.Do(func() { close(m.a.left) })
	return err
}

// RaftConfiguration returns the servers of the datacenter as Raft knows
// them: a server's own configuration, or a client's from a server.
func (m membership) RaftConfiguration(ctx context.Context) (*rpc.RaftConfigurationResponse, error) {
	a := m.a
	if rb, ok := a.backend.(*rpcBackend); ok {
		return rb.RaftConfiguration(ctx)
	}
	return a.server.RaftConfiguration()
}

// Left is closed once the agent left the cluster through the HTTP API
// (PUT /v1/agent/leave); its owner should then shut it down. Run does.
func (a *Agent) Left() <-chan struct{} { return a.left }

// leave announces this agent's leave in gossip, so the others see it left
// rather than failed (and the leader deregisters its node; the other
// datacenters stop routing to a server at once), and takes a server out of
// the Raft configuration so the remaining servers' quorum does not count
// it. It does nothing without gossip and is done once:
// later calls return the first one's result.
func (a *Agent) leave(ctx context.Context) error {
	a.leaveDo.Do(func() {
		if a.gossip == nil {
			return
		}
		a.logger.Info("leaving the cluster")
		a.leaving.Store(true) // the member snapshot loop stops writing
		a.forgetMembers()
		// The WAN pool first: other datacenters stop sending requests
		// to this server before it stops answering them. A failure
		// there leaves the server to their failure detection, and the
		// LAN leave still matters more.
		if err := a.leaveWAN(); err != nil {
			a.logger.Warn("leaving the WAN pool", "err", err)
		}
		if err := a.gossip.Leave(leaveTimeout); err != nil && !errors.Is(err, gossip.ErrShutdown) {
			a.leaveErr = fmt.Errorf("gossip leave: %w", err)
			return
		}
		if a.server != nil {
			a.leaveErr = a.leaveRaft(ctx)
		}
	})
	return a.leaveErr
}

// leaveRaft takes this server out of the Raft configuration: a leader
// removes itself (and steps down once that commits); a follower waits for
// the leader, which saw the gossip leave, to remove it. The last voter
// stays: there is no one to hand the catalog to.
func (a *Agent) leaveRaft(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	me := a.cfg.NodeName
	for {
		peers, err := a.server.Peers()
		if err != nil {
			return nil // Raft already stopped: removed, or shutting down
		}
		in, voters := false, 0
		for _, p := range peers {
			in = in || p.ID == me
			if p.Voter {
				voters++
			}
		}
		if !in || voters <= 1 {
			return nil
		}
		if a.server.IsLeader() {
			err := a.server.RemoveServer(ctx, me)
			if err == nil || errors.Is(err, consensus.ErrLastVoter) {
				return nil
			}
			a.logger.Warn("removing this server from raft", "err", err)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			a.logger.Warn("left gossip but is still in the raft configuration; the leader will remove it", "err", ctx.Err())
			return nil
		case <-t.C:
		}
	}
}
