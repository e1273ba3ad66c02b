package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// Peer is one server of the Raft configuration.
type Peer struct {
	// ID is the server's Raft ID: its node ID, or its node name in a data
	// dir from before Raft IDs were node IDs (raftid.go).
	ID string
	// Address is its Raft address, the host:port of its server port.
	Address string
	// Voter is false for a non-voter (which replicates but does not vote).
	Voter bool
	// Leader is true for the server this server believes leads.
	Leader bool
}

// BootstrapCluster forms the first Raft configuration from servers (each
// a voter; Voter and Leader are ignored), which must include this server.
// Every server of the list may call it with the same list, as the agent does
// once -bootstrap-expect servers have seen each other in gossip: they then
// elect a leader among themselves. On a server that already has Raft state
// (bootstrapped before, or joined by a leader) it does nothing and returns
// nil, so calling it again after a restart is safe.
func (s *Server) BootstrapCluster(servers []Peer) error {
	conf := raft.Configuration{Servers: make([]raft.Server, 0, len(servers))}
	self := false
	for _, p := range servers {
		self = self || p.ID == s.id
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Address),
		})
	}
	if !self {
		return fmt.Errorf("bootstrap raft cluster: this server %q is not in the list of %d servers", s.id, len(servers))
	}
	err := s.raft.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap raft cluster of %d servers: %w", len(servers), err)
	}
	return nil
}

// Peers returns the latest Raft configuration known to this server (on a
// follower it may trail the leader's), marking the server it believes leads.
func (s *Server) Peers() ([]Peer, error) {
	conf, err := s.configuration()
	if err != nil {
		return nil, err
	}
	return s.peers(conf), nil
}

// RaftConfiguration returns the latest Raft configuration known to this
// server as the Status endpoint sends it: the servers of Peers sorted by
// ID, and the Raft index of the log entry that made the configuration, or 0
// when this server does not know it (a change it has not seen committed is
// in flight). Unlike Peers it may read the snapshot store's metadata from
// disk, to find the index.
func (s *Server) RaftConfiguration() (*rpc.RaftConfigurationResponse, error) {
	conf, err := s.configuration()
	if err != nil {
		return nil, err
	}
	peers := s.peers(conf)
	names := s.nodeNames()
	servers := make([]rpc.RaftServer, 0, len(peers))
	for _, p := range peers {
		node := names[strings.ToLower(p.ID)]
		servers = append(servers, rpc.RaftServer{ID: p.ID, Node: node, Address: p.Address, Leader: p.Leader, Voter: p.Voter})
	}
	slices.SortFunc(servers, func(a, b rpc.RaftServer) int { return strings.Compare(a.ID, b.ID) })
	return &rpc.RaftConfigurationResponse{Servers: servers, Index: s.configurationIndex(conf)}, nil
}

// nodeNames maps the lowercased node ID and node name of every node of
// the catalog to its name, to name the servers of the Raft configuration
// by either kind of Raft ID.
func (s *Server) nodeNames() map[string]string {
	_, nodes, err := s.store.Nodes(nil)
	if err != nil {
		return nil
	}
	out := make(map[string]string, 2*len(nodes))
	for _, n := range nodes {
		out[strings.ToLower(n.Node)] = n.Node
	}
	for _, n := range nodes {
		if n.ID != "" {
			out[strings.ToLower(n.ID)] = n.Node
		}
	}
	return out
}

func (s *Server) peers(conf raft.Configuration) []Peer {
	leader := s.LeaderID()
	peers := make([]Peer, 0, len(conf.Servers))
	for _, srv := range conf.Servers {
		peers = append(peers, Peer{
			ID:      string(srv.ID),
			Address: string(srv.Address),
			Voter:   srv.Suffrage == raft.Voter,
			Leader:  leader != "" && string(srv.ID) == leader,
		})
	}
	return peers
}

func (s *Server) configuration() (raft.Configuration, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, fmt.Errorf("raft configuration: %w", err)
	}
	return f.Configuration(), nil
}

// configurationIndex finds the index of conf, which raft does not report
// (see fsm.StoreConfiguration). The newest committed configuration is
// either the last configuration entry the FSM was given or, when that
// entry was compacted into a snapshot before this server applied it (after
// a restart, or a snapshot installed from the leader), the one recorded in
// the newest snapshot. Its index is conf's when the two configurations are
// the same; otherwise conf is a change not yet committed here, whose index
// is unknown (0).
func (s *Server) configurationIndex(conf raft.Configuration) uint64 {
	best := s.fsm.conf.Load()
	if metas, err := s.snaps.List(); err == nil && len(metas) > 0 {
		if m := metas[0]; best == nil || m.ConfigurationIndex > best.index {
			best = &indexedConfiguration{index: m.ConfigurationIndex, servers: m.Configuration.Servers}
		}
	}
	if best == nil || !slices.Equal(best.servers, conf.Servers) {
		return 0
	}
	return best.index
}

// AddVoter adds the server id at addr to the configuration as a voter, or
// updates its address, and returns once the change is committed. Only the
// leader can: elsewhere it returns an error wrapping ErrNotLeader. A server
// already a voter at addr is left alone (nil), so a leader reconciling
// gossip members may call it for every server it sees. The new server is
// started without bootstrap and catches up from the leader.
//
// ctx's deadline (or Config.ApplyTimeout) bounds how long the change may
// wait to enter Raft; once in, it is waited for until committed or until
// leadership is lost.
func (s *Server) AddVoter(ctx context.Context, id, addr string) error {
	if !s.IsLeader() {
		return fmt.Errorf("add voter %q: %w", id, ErrNotLeader)
	}
	conf, err := s.configuration()
	if err != nil {
		return fmt.Errorf("add voter %q: %w", id, err)
	}
	for _, srv := range conf.Servers {
		if string(srv.ID) == id && string(srv.Address) == addr && srv.Suffrage == raft.Voter {
			return nil
		}
	}
	timeout, err := s.waitBound(ctx)
	if err != nil {
		return fmt.Errorf("add voter %q: %w", id, err)
	}
	if err := raftError(s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout).Error()); err != nil {
		return fmt.Errorf("add voter %q at %s: %w", id, addr, err)
	}
	s.logger.Info("added raft voter", "peer", id, "addr", addr)
	return nil
}

// AddNonvoter adds the server id at addr to the configuration as a
// non-voter, which receives the log but does not vote (the leader promotes
// it with AddVoter once it is stable: autopilot.go), or updates the
// address of a non-voter, and returns once the change is committed. Only
// the leader can (ErrNotLeader elsewhere). A server already in the
// configuration at addr is left alone (nil), whatever its suffrage: a
// voter is never demoted by it. ctx bounds the wait as for AddVoter.
func (s *Server) AddNonvoter(ctx context.Context, id, addr string) error {
	if !s.IsLeader() {
		return fmt.Errorf("add non-voter %q: %w", id, ErrNotLeader)
	}
	conf, err := s.configuration()
	if err != nil {
		return fmt.Errorf("add non-voter %q: %w", id, err)
	}
	for _, srv := range conf.Servers {
		if string(srv.ID) != id {
			continue
		}
		if string(srv.Address) == addr {
			return nil
		}
		if srv.Suffrage == raft.Voter {
			return s.AddVoter(ctx, id, addr) // a new address, the same vote
		}
	}
	timeout, err := s.waitBound(ctx)
	if err != nil {
		return fmt.Errorf("add non-voter %q: %w", id, err)
	}
	if err := raftError(s.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout).Error()); err != nil {
		return fmt.Errorf("add non-voter %q at %s: %w", id, addr, err)
	}
	s.logger.Info("added raft non-voter", "peer", id, "addr", addr)
	return nil
}

// RemoveServer removes the server id from the configuration and returns
// once the change is committed. Only the leader can (ErrNotLeader
// elsewhere). Removing a server that is not in the configuration does
// nothing (nil). It refuses, with ErrLastVoter, to remove the only voter
// left; any further quorum policy (such as not removing failed servers
// below a minimum) is the caller's, which knows why it removes. A removed
// server's Raft shuts itself down (raft's ShutdownOnRemove); its owner
// still calls Shutdown.
//
// ctx bounds the wait as for AddVoter.
func (s *Server) RemoveServer(ctx context.Context, id string) error {
	if !s.IsLeader() {
		return fmt.Errorf("remove server %q: %w", id, ErrNotLeader)
	}
	conf, err := s.configuration()
	if err != nil {
		return fmt.Errorf("remove server %q: %w", id, err)
	}
	found, isVoter, voters := false, false, 0
	for _, srv := range conf.Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
		if string(srv.ID) == id {
			found, isVoter = true, srv.Suffrage == raft.Voter
		}
	}
	switch {
	case !found:
		return nil
	case isVoter && voters <= 1:
		return fmt.Errorf("remove server %q: %w", id, ErrLastVoter)
	}
	timeout, err := s.waitBound(ctx)
	if err != nil {
		return fmt.Errorf("remove server %q: %w", id, err)
	}
	if err := raftError(s.raft.RemoveServer(raft.ServerID(id), 0, timeout).Error()); err != nil {
		return fmt.Errorf("remove server %q: %w", id, err)
	}
	s.logger.Info("removed raft server", "peer", id)
	return nil
}

// waitBound turns ctx into the timeout raft's calls take: what is left of
// its deadline, or Config.ApplyTimeout without one.
func (s *Server) waitBound(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 {
			return d, nil
		}
		return 0, context.DeadlineExceeded
	}
	return s.cfg.ApplyTimeout, nil
}

// raftError marks raft's leadership errors with ErrNotLeader.
func raftError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return err
}
