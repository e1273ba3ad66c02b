package consensus_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
)

// TestSnapshotKnobsReachRaft: with a small SnapshotThreshold and
// SnapshotInterval a server snapshots after a few writes, and with a small
// TrailingLogs it then deletes the log's first segments. Raft's defaults
// (8192 entries checked every 2 to 4 minutes, 10240 entries kept) do
// neither within the test.
func TestSnapshotKnobsReachRaft(t *testing.T) {
	t.Parallel()
	n := consensustest.StartNodeWith(t, "s1", t.TempDir(), "", func(c *consensus.Config) {
		c.SnapshotThreshold, c.SnapshotInterval, c.TrailingLogs = 16, 20*time.Millisecond, 4
		c.LogSegmentSize = 16 << 10
	})
	if err := n.Server.BootstrapCluster([]consensus.Peer{n.Peer()}); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitForLeader(t, []*consensustest.Node{n}, within)
	// Enough to fill several 16 KiB segments.
	for i := range 200 {
		mustRegister(t, n, fmt.Sprintf("svc-%03d-%s", i, strings.Repeat("x", 50)))
	}
	walDir := filepath.Join(n.Dir, "raft", "wal")
	consensustest.WaitFor(t, within, func() error {
		if idx := n.Server.RaftStats()["last_snapshot_index"]; idx == "0" || idx == "" {
			return fmt.Errorf("no snapshot yet (last_snapshot_index %q)", idx)
		}
		// raft-wal names a segment after the index it starts at.
		first, err := filepath.Glob(filepath.Join(walDir, "00000000000000000001-*.wal"))
		if err != nil {
			return err
		}
		if len(first) > 0 {
			return fmt.Errorf("the log's first segment %s is still there: not compacted", first[0])
		}
		return nil
	})
}

// TestUnfinishedSnapshotRemovedAtStart: a server killed while it wrote a
// snapshot leaves its directory (<id>.tmp) behind, which Raft never
// deletes; the server removes it at its next start and keeps its complete
// snapshots (the fault suite's kill9-leader-snapshot).
func TestUnfinishedSnapshotRemovedAtStart(t *testing.T) {
	t.Parallel()
	n := consensustest.StartNode(t, "s1", t.TempDir(), "")
	if err := n.Server.BootstrapCluster([]consensus.Peer{n.Peer()}); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitForLeader(t, []*consensustest.Node{n}, within)
	mustRegister(t, n, "web")
	if err := n.Server.Snapshot(); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	dir := filepath.Join(n.Dir, "raft", "snapshots")
	complete, err := os.ReadDir(dir)
	if err != nil || len(complete) != 1 {
		t.Fatalf("want one snapshot in %s, got %v (%v)", dir, complete, err)
	}
	unfinished := filepath.Join(dir, "2-9-1795794796745.tmp")
	if err := os.Mkdir(unfinished, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unfinished, "state.bin"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}

	n.Restart()
	if _, err := os.Stat(unfinished); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unfinished snapshot %s is still there after a restart (%v)", unfinished, err)
	}
	if _, err := os.Stat(filepath.Join(dir, complete[0].Name())); err != nil {
		t.Errorf("the complete snapshot is gone: %v", err)
	}
	consensustest.WaitForLeader(t, []*consensustest.Node{n}, within)
	waitForServices(t, n, "web")
}
