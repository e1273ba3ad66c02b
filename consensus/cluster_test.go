package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
)

// within bounds every wait for the cluster to converge: many election
// timeouts, so a slow machine under -race does not flake.
const within = 10 * time.Second

func register(t *testing.T, n *consensustest.Node, svc string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.Server.Register(ctx, &catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Datacenter: "dc1",
		Service: &catalog.Service{Service: svc, Port: 80},
	})
}

func mustRegister(t *testing.T, n *consensustest.Node, svc string) {
	t.Helper()
	if err := register(t, n, svc); err != nil {
		t.Fatalf("Register %s on %s: %v", svc, n.ID, err)
	}
}

// waitForServices waits until n's store holds every service of want.
func waitForServices(t *testing.T, n *consensustest.Node, want ...string) {
	t.Helper()
	consensustest.WaitFor(t, within, func() error {
		_, names, err := n.Store.Services(nil)
		if err != nil {
			return err
		}
		for _, w := range want {
			if _, ok := names[w]; !ok {
				return fmt.Errorf("%s: got services %v, want %v", n.ID, names, want)
			}
		}
		return nil
	})
}

// waitForPeers waits until n's configuration is exactly the voters ids
// and names leader as the leader.
func waitForPeers(t *testing.T, n *consensustest.Node, leader string, ids ...string) {
	t.Helper()
	consensustest.WaitFor(t, within, func() error {
		peers, err := n.Server.Peers()
		if err != nil {
			return err
		}
		var got []string
		leaders := 0
		for _, p := range peers {
			if !p.Voter {
				return fmt.Errorf("%s: %s is not a voter", n.ID, p.ID)
			}
			if p.Leader {
				leaders++
				if p.ID != leader {
					return fmt.Errorf("%s: peers %+v mark %s leader, want %s", n.ID, peers, p.ID, leader)
				}
			}
			got = append(got, p.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) || leaders != 1 {
			return fmt.Errorf("%s: got peers %+v, want voters %v led by %s", n.ID, peers, ids, leader)
		}
		return nil
	})
}

func followers(nodes []*consensustest.Node, leader *consensustest.Node) []*consensustest.Node {
	var fs []*consensustest.Node
	for _, n := range nodes {
		if n != leader && n.Running() {
			fs = append(fs, n)
		}
	}
	return fs
}

func TestClusterReplicatesAndRefusesFollowerWrites(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	leader := consensustest.WaitForLeader(t, nodes, within)

	mustRegister(t, leader, "web")
	for _, n := range nodes {
		waitForServices(t, n, "web")
		waitForPeers(t, n, leader.ID, "s1", "s2", "s3")
	}

	if got := leader.Server.LastContact(); got != 0 {
		t.Errorf("leader LastContact: got %s, want 0", got)
	}
	for _, f := range followers(nodes, leader) {
		if got := f.Server.LastContact(); got < 0 || got > 5*time.Second {
			t.Errorf("%s LastContact: got %s, want a recent contact", f.ID, got)
		}
		err := register(t, f, "db")
		if !errors.Is(err, consensus.ErrNotLeader) {
			t.Errorf("Register on follower %s: got %v, want ErrNotLeader", f.ID, err)
		}
		ctx := context.Background()
		if err := f.Server.AddVoter(ctx, "s9", "127.0.0.1:1"); !errors.Is(err, consensus.ErrNotLeader) {
			t.Errorf("AddVoter on follower %s: got %v, want ErrNotLeader", f.ID, err)
		}
		if err := f.Server.RemoveServer(ctx, leader.ID); !errors.Is(err, consensus.ErrNotLeader) {
			t.Errorf("RemoveServer on follower %s: got %v, want ErrNotLeader", f.ID, err)
		}
	}
	// Bootstrapping again, as an agent restarting with -bootstrap-expect
	// does, is a no-op.
	peers, err := leader.Server.Peers()
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Server.BootstrapCluster(peers); err != nil {
		t.Errorf("second BootstrapCluster: got %v, want nil", err)
	}
}

func TestLeaderFailoverAndRestartCatchesUp(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	old := consensustest.WaitForLeader(t, nodes, within)
	mustRegister(t, old, "before")

	// The followers' signals, taken now, must fire for whichever wins.
	changed := map[*consensustest.Node]<-chan struct{}{}
	for _, f := range followers(nodes, old) {
		changed[f] = f.Server.LeadershipChanged()
	}
	start := time.Now()
	old.Stop()
	leader := consensustest.WaitForLeader(t, nodes, within)
	t.Logf("new leader %s after %s", leader.ID, time.Since(start).Round(time.Millisecond))
	select {
	case <-changed[leader]:
	case <-time.After(within):
		t.Fatalf("LeadershipChanged of new leader %s not closed", leader.ID)
	}
	mustRegister(t, leader, "after")

	old.Restart()
	waitForServices(t, old, "before", "after")
	consensustest.WaitForLeader(t, nodes, within)
	mustRegister(t, leader, "later")
	for _, n := range nodes {
		waitForServices(t, n, "before", "after", "later")
		waitForPeers(t, n, leader.ID, "s1", "s2", "s3")
	}
}

func TestAddVoterAndRemoveServer(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	leader := consensustest.WaitForLeader(t, nodes, within)
	mustRegister(t, leader, "web")

	s4 := consensustest.StartNode(t, "s4", t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := leader.Server.AddVoter(ctx, s4.ID, s4.Addr); err != nil {
		t.Fatalf("AddVoter: %v", err)
	}
	if err := leader.Server.AddVoter(ctx, s4.ID, s4.Addr); err != nil {
		t.Fatalf("AddVoter again: got %v, want nil", err)
	}
	waitForServices(t, s4, "web")
	waitForPeers(t, leader, leader.ID, "s1", "s2", "s3", "s4")
	waitForPeers(t, s4, leader.ID, "s1", "s2", "s3", "s4")
	mustRegister(t, leader, "db")
	waitForServices(t, s4, "web", "db")

	if err := leader.Server.RemoveServer(ctx, s4.ID); err != nil {
		t.Fatalf("RemoveServer: %v", err)
	}
	if err := leader.Server.RemoveServer(ctx, s4.ID); err != nil {
		t.Fatalf("RemoveServer again: got %v, want nil", err)
	}
	for _, n := range nodes {
		waitForPeers(t, n, leader.ID, "s1", "s2", "s3")
	}
	mustRegister(t, leader, "cache")
	for _, n := range nodes {
		waitForServices(t, n, "web", "db", "cache")
	}
}
