package consensus

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// Config configures one Raft server.
type Config struct {
	// NodeID is this server's Raft ID, the agent's node ID (a UUID), as
	// Consul's: what Raft's configuration, autopilot's state and
	// /v1/operator/raft name the server by. Required. A data dir whose
	// Raft configuration already names this server by NodeName keeps that
	// ID (raftid.go).
	NodeID string
	// NodeName is the agent's node name: the Raft ID of servers whose data
	// dir was written before Raft IDs were node IDs. "" (tests): NodeID.
	NodeName string
	// Address is the address other servers reach this one at (host:port of
	// the server RPC port). Required without Layer; with Layer it is the
	// layer's (Layer.Addr, the rpc server's advertised address) and must be
	// empty or equal to it.
	Address string
	// Layer is the Raft side of the rpc server's port. With it Raft talks to
	// its peers over the network; Shutdown, or a New that fails, closes the
	// layer (one Raft per rpc server). The agent always sets it; nil keeps
	// Raft's in-memory transport, for unit tests of this package. The rpc
	// server must have been started (Layer.Addr set) before New. Default
	// nil.
	Layer *rpc.Layer
	// DataDir holds the Raft log ("raft/wal") and snapshots ("raft/snapshots").
	// Empty keeps everything in memory (dev mode): a restart starts empty.
	DataDir string
	// Bootstrap makes this server form a cluster of itself alone on first
	// start when it has no Raft state yet, for unit tests of this package
	// (the agent bootstraps through BootstrapCluster once it sees its
	// bootstrap_expect servers in gossip).
	Bootstrap bool
	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout are Raft's
	// timers. Defaults: 1s, 1s, 500ms (hashicorp/raft's defaults); see
	// ScaleRaftTimers.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long the leader waits, with no new write, before
	// telling followers what is committed. A follower applies a write (and
	// wakes the blocking queries, and so the agents' caches, that read from
	// it) only once it hears the commit index, so this bounds how far a
	// follower's reads trail the leader's. Default 25ms, measured with
	// examples/bench/propagation and an idle 3-server cluster: raft's 50ms
	// (randomised up to 100ms) gave a registration on one agent a p99 of
	// ~105 ms to another agent's DNS through a follower, with the leader
	// idle at 2% of a core; 25ms gives 56 ms at 4%; 10ms 29 ms at 7% (an
	// empty AppendEntries per follower every one to two timeouts).
	CommitTimeout time.Duration
	// GroupCommit lets the leader write the writes that arrive while
	// another is being committed as one log entry (batch.go), while every
	// server announces that it reads such entries. A server of v0.1.0
	// cannot, not even one rolled back onto a data dir whose log holds
	// them: false keeps that way back open. Default true.
	GroupCommit bool
	// ApplyTimeout bounds how long one write waits to be committed when the
	// caller's context sets no deadline. Default 10s.
	ApplyTimeout time.Duration
	// SnapshotsRetained is how many snapshots are kept on disk. Default 2.
	SnapshotsRetained int
	// SnapshotThreshold is how many log entries past the last snapshot
	// make Raft take a new one (then compact the log), checked every
	// SnapshotInterval. Default 8192, hashicorp/raft's (Consul's
	// raft_snapshot_threshold defaults to 16384).
	SnapshotThreshold uint64
	// SnapshotInterval is how often Raft checks SnapshotThreshold, at a
	// random time between one and two intervals so that servers do not
	// snapshot together. Default 120s, hashicorp/raft's (Consul's
	// raft_snapshot_interval defaults to 30s); at least 5ms.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a compaction leaves in the log
	// behind a snapshot, so that a follower that trails by fewer catches
	// up from the log rather than by a snapshot. Default 10240,
	// hashicorp/raft's and Consul's.
	TrailingLogs uint64
	// LogSegmentSize is the size of each segment file of the Raft log
	// (Consul's raft_logstore.wal.segment_size_mb), preallocated when the
	// segment is created: a full segment is sealed and a new one created,
	// which needs this much free space in the data dir. Default 64 MiB,
	// raft-wal's.
	LogSegmentSize int
	// SealKeys returns the secrets the servers share outside Raft, primary
	// first (the agent gives its gossip encryption keys): the DNSSEC
	// private key is kept in Raft, its snapshots and archives sealed with
	// the primary (dnssec_seal.go), so none of them gives the key away.
	// Nil, or none returned: the key is stored as it is. Default nil.
	SealKeys func() [][]byte
	// InitialManagement is the secret of a management token the servers
	// create when ACLs are on (Consul's acl.tokens.initial_management):
	// creating it is the ACL bootstrap, so `PUT /v1/acl/bootstrap` is
	// refused from the start. Default "": none.
	InitialManagement string
}

// Bounds of Config.LogSegmentSize: raft-wal keeps a segment's index in
// 32-bit offsets, and a segment much smaller than an entry would hold one
// entry each.
const (
	minLogSegmentSize = 16 << 10
	maxLogSegmentSize = 1 << 30
)

// DefaultConfig returns a Config with every timer set; NodeID and Address
// must still be filled in.
func DefaultConfig() Config {
	return Config{
		HeartbeatTimeout:   time.Second,
		ElectionTimeout:    time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout:      25 * time.Millisecond,
		ApplyTimeout:       10 * time.Second,
		GroupCommit:        true,
		SnapshotsRetained:  2,
		SnapshotThreshold:  8192,
		SnapshotInterval:   120 * time.Second,
		TrailingLogs:       10240,
		LogSegmentSize:     64 << 20,
	}
}

// MaxRaftMultiplier is the largest multiplier ScaleRaftTimers takes.
const MaxRaftMultiplier = 10

// ScaleRaftTimers multiplies HeartbeatTimeout, ElectionTimeout and
// LeaderLeaseTimeout by m (1 to MaxRaftMultiplier; other values are
// clamped), as Consul's performance.raft_multiplier does: on slow or
// overloaded hosts a larger one keeps a leader that is merely slow from
// being deposed, at the cost of noticing a dead one later (a failover
// takes about ElectionTimeout times m). CommitTimeout is left alone: it
// trades idle traffic for how far followers' reads trail, not failure
// detection. Consul's default multiplier is 5 because its base timers are
// those of its fastest setting; cairn's base timers are the same and its
// default multiplier is 1, so an unscaled Config is the fast setting.
func (c *Config) ScaleRaftTimers(m int) {
	m = min(max(m, 1), MaxRaftMultiplier)
	c.HeartbeatTimeout *= time.Duration(m)
	c.ElectionTimeout *= time.Duration(m)
	c.LeaderLeaseTimeout *= time.Duration(m)
}

// SingleServerTiming shortens the election timers for a cluster of one, where
// no peer can be slow: the dev agent elects itself in a few hundred
// milliseconds instead of seconds.
func (c *Config) SingleServerTiming() {
	c.HeartbeatTimeout = 150 * time.Millisecond
	c.ElectionTimeout = 150 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("consensus NodeID: is required"))
	}
	switch {
	case c.Layer == nil && c.Address == "":
		errs = append(errs, errors.New("consensus Address: is required"))
	case c.Layer != nil && c.Layer.Addr() == nil:
		errs = append(errs, errors.New("consensus Layer: has no address; start the rpc server first"))
	case c.Layer != nil && c.Address != "" && c.Address != c.Layer.Addr().String():
		errs = append(errs, fmt.Errorf("consensus Address: %q differs from the rpc layer's %q", c.Address, c.Layer.Addr()))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HeartbeatTimeout", c.HeartbeatTimeout}, {"ElectionTimeout", c.ElectionTimeout},
		{"LeaderLeaseTimeout", c.LeaderLeaseTimeout}, {"CommitTimeout", c.CommitTimeout}, {"ApplyTimeout", c.ApplyTimeout},
		{"SnapshotInterval", c.SnapshotInterval},
	} {
		if d.v < 5*time.Millisecond {
			errs = append(errs, fmt.Errorf("consensus %s: must be at least 5ms, got %s", d.name, d.v))
		}
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		errs = append(errs, fmt.Errorf("consensus LeaderLeaseTimeout: must not exceed HeartbeatTimeout (%s > %s)", c.LeaderLeaseTimeout, c.HeartbeatTimeout))
	}
	if c.SnapshotsRetained < 1 {
		errs = append(errs, fmt.Errorf("consensus SnapshotsRetained: must be at least 1, got %d", c.SnapshotsRetained))
	}
	if c.SnapshotThreshold < 1 {
		errs = append(errs, fmt.Errorf("consensus SnapshotThreshold: must be at least 1, got %d", c.SnapshotThreshold))
	}
	if c.LogSegmentSize < minLogSegmentSize || c.LogSegmentSize > maxLogSegmentSize {
		errs = append(errs, fmt.Errorf("consensus LogSegmentSize: must be from %d to %d bytes, got %d", minLogSegmentSize, maxLogSegmentSize, c.LogSegmentSize))
	}
	return errors.Join(errs...)
}
