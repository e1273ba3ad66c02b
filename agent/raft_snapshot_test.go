package agent_test

import (
	"testing"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/consensus"
)

// TestRaftSnapshotDefaults: the agent's raft_snapshot_threshold,
// raft_snapshot_interval and raft_trailing_logs defaults are consensus's
// (agent/config does not import consensus, so this keeps them one).
func TestRaftSnapshotDefaults(t *testing.T) {
	t.Parallel()
	c, cc := config.Default(), consensus.DefaultConfig()
	if uint64(c.RaftSnapshotThreshold) != cc.SnapshotThreshold || c.RaftSnapshotInterval != cc.SnapshotInterval || uint64(c.RaftTrailingLogs) != cc.TrailingLogs {
		t.Errorf("agent defaults: threshold %d, interval %s, trailing logs %d; consensus's: %d, %s, %d",
			c.RaftSnapshotThreshold, c.RaftSnapshotInterval, c.RaftTrailingLogs, cc.SnapshotThreshold, cc.SnapshotInterval, cc.TrailingLogs)
	}
}
