package consensus_test

import (
	"fmt"
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
