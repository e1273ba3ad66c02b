// Package consensustest starts Raft servers for tests: each with its own
// rpc.Server on a free loopback port (its Raft address), its own data dir
// and fast Raft timers, shut down when the test ends. Imported only by
// tests.
package consensustest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// Config returns a consensus configuration with timers short enough for
// tests on loopback (a leader in well under a second, a failover in about
// one), and still long enough not to flap under the race detector.
func Config() consensus.Config {
	cfg := consensus.DefaultConfig()
	cfg.HeartbeatTimeout = 250 * time.Millisecond
	cfg.ElectionTimeout = 250 * time.Millisecond
	cfg.LeaderLeaseTimeout = 125 * time.Millisecond
	cfg.ApplyTimeout = 5 * time.Second
	return cfg
}

// Node is one running (or stopped) server: its rpc server and its Raft
// server with the catalog store it applies to. Restart replaces RPC,
// Server and Store, keeping ID, Dir and Addr. A Node is used from the test
// goroutine only.
type Node struct {
	ID   string
	Dir  string
	Addr string // the rpc server's address, this server's Raft address

	RPC    *rpc.Server
	Server *consensus.Server
	Store  *catalog.Store

	tb        testing.TB
	running   bool
	configure func(*consensus.Config) // StartNodeWith's, applied at every start
}

// StartNode starts a server named id with its data in dir, listening on
// addr ("" for a free port on 127.0.0.1), without bootstrapping: it waits
// for BootstrapCluster or a leader's AddVoter. It is stopped when the test
// ends.
func StartNode(tb testing.TB, id, dir, addr string) *Node {
	tb.Helper()
	return StartNodeWith(tb, id, dir, addr, nil)
}

// StartNodeWith is StartNode with configure applied to the server's
// configuration (after Config's) at this start and every restart.
func StartNodeWith(tb testing.TB, id, dir, addr string, configure func(*consensus.Config)) *Node {
	tb.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	n := &Node{ID: id, Dir: dir, Addr: addr, tb: tb, configure: configure}
	n.start()
	tb.Cleanup(n.Stop)
	return n
}

func (n *Node) start() {
	n.tb.Helper()
	rc := rpc.DefaultServerConfig()
	rc.Addr = n.Addr
	rs, err := rpc.NewServer(rc, nil)
	if err != nil {
		n.tb.Fatalf("consensustest: %s: rpc.NewServer: %v", n.ID, err)
	}
	if err := rs.Start(); err != nil {
		n.tb.Fatalf("consensustest: %s: rpc Start: %v", n.ID, err)
	}
	n.Addr = rs.Addr().String()
	store, err := catalog.NewStore()
	if err != nil {
		shutdownRPC(n.tb, rs)
		n.tb.Fatalf("consensustest: %s: %v", n.ID, err)
	}
	cfg := Config()
	cfg.NodeID, cfg.DataDir, cfg.Layer = n.ID, n.Dir, rs.RaftLayer()
	if n.configure != nil {
		n.configure(&cfg)
	}
	s, err := consensus.New(cfg, store, slog.New(slog.DiscardHandler).With("node", n.ID))
	if err != nil {
		shutdownRPC(n.tb, rs)
		n.tb.Fatalf("consensustest: %s: consensus.New: %v", n.ID, err)
	}
	n.RPC, n.Server, n.Store, n.running = rs, s, store, true
}

// Running reports whether the node is started (not stopped).
func (n *Node) Running() bool { return n.running }

// Stop shuts down Raft, then the rpc server. It does nothing on a stopped
// node.
func (n *Node) Stop() {
	n.tb.Helper()
	if !n.running {
		return
	}
	n.running = false
	if err := n.Server.Shutdown(); err != nil {
		n.tb.Errorf("consensustest: %s: Shutdown: %v", n.ID, err)
	}
	shutdownRPC(n.tb, n.RPC)
}

// Restart stops the node if it runs and starts it again from the same
// data dir on the same address, with a new, empty catalog store that Raft
// fills from its snapshot and log.
func (n *Node) Restart() {
	n.tb.Helper()
	n.Stop()
	n.start()
}

func shutdownRPC(tb testing.TB, s *rpc.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		tb.Errorf("consensustest: rpc Shutdown: %v", err)
	}
}

// Peer is the node as a member of a bootstrap list.
func (n *Node) Peer() consensus.Peer {
	return consensus.Peer{ID: n.ID, Address: n.Addr, Voter: true}
}

// StartCluster starts n servers named s1…sn, bootstraps them together
// from the list of all of them (as -bootstrap-expect does) and waits for a
// leader.
func StartCluster(tb testing.TB, n int) []*Node {
	tb.Helper()
	return StartClusterWith(tb, n, nil)
}

// StartClusterWith is StartCluster with configure applied to each server's
// configuration (StartNodeWith).
func StartClusterWith(tb testing.TB, n int, configure func(*consensus.Config)) []*Node {
	tb.Helper()
	nodes := make([]*Node, n)
	peers := make([]consensus.Peer, n)
	for i := range nodes {
		nodes[i] = StartNodeWith(tb, fmt.Sprintf("s%d", i+1), tb.TempDir(), "", configure)
		peers[i] = nodes[i].Peer()
	}
	for _, nd := range nodes {
		if err := nd.Server.BootstrapCluster(peers); err != nil {
			tb.Fatalf("consensustest: %s: BootstrapCluster: %v", nd.ID, err)
		}
	}
	WaitForLeader(tb, nodes, 10*time.Second)
	return nodes
}

// WaitForLeader waits until exactly one running node of nodes is the
// leader and every running node knows it, and returns it.
func WaitForLeader(tb testing.TB, nodes []*Node, timeout time.Duration) *Node {
	tb.Helper()
	var leader *Node
	WaitFor(tb, timeout, func() error {
		leader = nil
		for _, n := range nodes {
			if n.running && n.Server.IsLeader() {
				if leader != nil {
					return fmt.Errorf("both %s and %s lead", leader.ID, n.ID)
				}
				leader = n
			}
		}
		if leader == nil {
			return fmt.Errorf("no leader among %d nodes", len(nodes))
		}
		for _, n := range nodes {
			if n.running && n.Server.LeaderID() != leader.ID {
				return fmt.Errorf("%s knows leader %q, want %s", n.ID, n.Server.LeaderID(), leader.ID)
			}
		}
		return nil
	})
	return leader
}

// WaitFor polls cond until it returns nil, and fails the test with
// cond's last error if that does not happen within timeout.
func WaitFor(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	waittest.For(tb, timeout, "consensustest", cond)
}
