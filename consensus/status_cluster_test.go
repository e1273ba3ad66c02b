package consensus_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// registerStatus registers a Status endpoint on n's rpc server (again after
// a Restart, which replaces it).
func registerStatus(t *testing.T, n *consensustest.Node) {
	t.Helper()
	st, err := consensus.NewStatus(n.Server, "dc1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.RPC.Register(rpc.StatusEndpoint, st); err != nil {
		t.Fatal(err)
	}
}

// raftConfiguration asks n, over RPC, for its Raft configuration.
func raftConfiguration(p *rpc.Pool, n *consensustest.Node) (*rpc.RaftConfigurationResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var reply rpc.RaftConfigurationResponse
	if err := p.Call(ctx, n.Addr, rpc.MethodStatusRaftConfiguration, &rpc.StatusRequest{}, &reply); err != nil {
		return nil, fmt.Errorf("%s: %w", n.ID, err)
	}
	return &reply, nil
}

// wantServers is the configuration of nodes, all voters, led by leader,
// sorted by ID.
func wantServers(leader *consensustest.Node, nodes ...*consensustest.Node) []rpc.RaftServer {
	var out []rpc.RaftServer
	for _, n := range nodes {
		out = append(out, rpc.RaftServer{ID: n.ID, Address: n.Addr, Leader: n == leader, Voter: true})
	}
	slices.SortFunc(out, func(a, b rpc.RaftServer) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// waitForConfiguration waits until n reports servers at index (any index
// but 0 when index is 0), and returns the index.
func waitForConfiguration(t *testing.T, p *rpc.Pool, n *consensustest.Node, servers []rpc.RaftServer, index uint64) uint64 {
	t.Helper()
	var got uint64
	consensustest.WaitFor(t, within, func() error {
		conf, err := raftConfiguration(p, n)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(conf.Servers, servers) || conf.Index == 0 || (index != 0 && conf.Index != index) {
			return fmt.Errorf("%s: got %+v at index %d, want %+v at index %d", n.ID, conf.Servers, conf.Index, servers, index)
		}
		got = conf.Index
		return nil
	})
	return got
}

// TestStatusEndpointCluster asks the leader and the followers, over RPC,
// who leads and what the configuration is, through a membership change
// and a restart from a snapshot.
func TestStatusEndpointCluster(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	for _, n := range nodes {
		registerStatus(t, n)
	}
	p := rpctest.NewPool(t)
	leader := consensustest.WaitForLeader(t, nodes, within)

	for _, n := range nodes {
		var reply rpc.LeaderResponse
		ctx, cancel := context.WithTimeout(context.Background(), within)
		err := p.Call(ctx, n.Addr, rpc.MethodStatusLeader, &rpc.StatusRequest{}, &reply)
		cancel()
		if err != nil {
			t.Fatalf("Leader on %s: %v", n.ID, err)
		}
		if reply.Leader != leader.Addr {
			t.Errorf("Leader on %s: got %q, want %s's %q", n.ID, reply.Leader, leader.ID, leader.Addr)
		}
		// Every server bootstrapped the same configuration as entry 1.
		waitForConfiguration(t, p, n, wantServers(leader, nodes...), 1)
	}

	// A fourth server: the change is a new entry, and every server
	// reports it at the same index once committed.
	s4 := consensustest.StartNode(t, "s4", t.TempDir(), "")
	registerStatus(t, s4)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := leader.Server.AddVoter(ctx, s4.ID, s4.Addr); err != nil {
		t.Fatalf("AddVoter: %v", err)
	}
	all := append(slices.Clone(nodes), s4)
	want := wantServers(leader, all...)
	index := waitForConfiguration(t, p, leader, want, 0)
	if index <= 1 {
		t.Fatalf("configuration with s4 at index %d, want past the bootstrap's 1", index)
	}
	for _, n := range all {
		waitForConfiguration(t, p, n, want, index)
	}

	// A follower restarted from a snapshot taken after the change does not
	// apply the change's entry again; it still knows its index.
	f := followers(nodes, leader)[0]
	mustRegister(t, leader, "web")
	waitForServices(t, f, "web")
	if err := f.Server.Snapshot(); err != nil {
		t.Fatalf("Snapshot on %s: %v", f.ID, err)
	}
	f.Restart()
	registerStatus(t, f)
	consensustest.WaitForLeader(t, all, within)
	waitForConfiguration(t, p, f, want, index)
}
