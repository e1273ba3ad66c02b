package consensus_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
)

// TestUpgradeKeepsNameRaftIDs: a cluster written when Raft IDs were node
// names (NodeID was the name) restarts, every server at once, with node
// IDs configured: each keeps the name it has in the configuration, so a
// leader is elected, the catalog is intact and writes go on. One server's
// configuration is only in its snapshot (its log compacted), the other
// two's in their logs.
func TestUpgradeKeepsNameRaftIDs(t *testing.T) {
	t.Parallel()
	upgraded := false
	configure := func(c *consensus.Config) {
		c.TrailingLogs = 0 // a snapshot compacts the whole log
		if upgraded {
			c.NodeName, c.NodeID = c.NodeID, "0000000"+c.NodeID[1:]+"-1111-2222-3333-444444444444"
		}
	}
	nodes := make([]*consensustest.Node, 3)
	peers := make([]consensus.Peer, 3)
	for i := range nodes {
		nodes[i] = consensustest.StartNodeWith(t, fmt.Sprintf("s%d", i+1), t.TempDir(), "", configure)
		peers[i] = nodes[i].Peer()
	}
	for _, n := range nodes {
		if err := n.Server.BootstrapCluster(peers); err != nil {
			t.Fatal(err)
		}
	}
	leader := consensustest.WaitForLeader(t, nodes, within)
	mustRegister(t, leader, "before")
	for _, n := range nodes {
		waitForServices(t, n, "before")
	}
	if err := nodes[0].Server.Snapshot(); err != nil {
		t.Fatalf("snapshot s1: %v", err)
	}

	upgraded = true
	for _, n := range nodes {
		n.Stop()
	}
	for _, n := range nodes {
		n.Restart()
	}
	for _, n := range nodes {
		if got := n.Server.ID(); got != n.ID {
			t.Errorf("%s restarted with raft ID %q, want the name it has in the configuration", n.ID, got)
		}
	}
	leader = consensustest.WaitForLeader(t, nodes, within)
	waitForPeers(t, leader, leader.ID, "s1", "s2", "s3")
	mustRegister(t, leader, "after")
	for _, n := range nodes {
		waitForServices(t, n, "before", "after")
	}
}

// TestRaftIDIsNodeIDForNewDataDir: a server without Raft state runs under
// its node ID, whatever its name.
func TestRaftIDIsNodeIDForNewDataDir(t *testing.T) {
	t.Parallel()
	const id = "6d1a3c1e-0b0e-4a47-9c4b-7f6d8a3e2b10"
	n := consensustest.StartNodeWith(t, "s1", t.TempDir(), "", func(c *consensus.Config) {
		c.NodeID, c.NodeName, c.Bootstrap = id, "s1", true
	})
	if got := n.Server.ID(); got != id {
		t.Fatalf("raft ID: got %q, want the node ID %s", got, id)
	}
	consensustest.WaitFor(t, within, func() error {
		peers, err := n.Server.Peers()
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(peers))
		for _, p := range peers {
			ids = append(ids, p.ID)
		}
		if !slices.Equal(ids, []string{id}) || !n.Server.IsLeader() {
			return fmt.Errorf("peers %v (leader %v), want [%s] leading", ids, n.Server.IsLeader(), id)
		}
		return nil
	})
}
