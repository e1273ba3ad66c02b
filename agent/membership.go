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
	members := a.gossip.Members()
	out := make([]httpapi.Member, 0, len(members))
	for _, gm := range members {
		role := "client"
		if gm.IsServer() {
			role = "server"
		}
		out = append(out, httpapi.Member{
			Name: gm.Node, Addr: gm.Addr.String(), Port: gm.Port, Status: gm.Status.String(),
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
// rather than failed (and the leader deregisters its node), and takes a
// server out of the Raft configuration so the remaining servers' quorum
// does not count it. It does nothing without gossip and is done once:
// later calls return the first one's result.
func (a *Agent) leave(ctx context.Context) error {
	a.leaveDo.Do(func() {
		if a.gossip == nil {
			return
		}
		a.logger.Info("leaving the cluster")
		a.leaving.Store(true) // the member snapshot loop stops writing
		a.forgetMembers()
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
