package config

import (
	"fmt"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// This file holds the keys that shape how servers run together, as
// Consul's: the performance block (Raft's timers), the autopilot block
// (how the leader looks after the servers) and whether the agent leaves
// the cluster when it is stopped by a signal.

// Performance is the performance block.
type Performance struct {
	// RaftMultiplier scales Raft's heartbeat, election and leader lease
	// timeouts (performance.raft_multiplier), 1 to 10: on slow or shared
	// hosts a larger one keeps a slow leader from being deposed, at the
	// cost of a slower failover. Default 1: cairn's timers, which are
	// Consul's at its fastest setting (Consul's default of 5 scales the
	// same base).
	RaftMultiplier int
	// CommitTimeout is how long the leader waits, with no new write,
	// before telling followers what is committed
	// (performance.commit_timeout): it bounds how far reads from a
	// follower trail the leader when idle, against an empty message per
	// follower per timeout. Default 25ms (see consensus.Config's
	// CommitTimeout for the measurement); at least 5ms.
	CommitTimeout time.Duration
	// RPCHoldTimeout is how long a client agent keeps trying the servers
	// of its datacenter with one call, failing over from one that is
	// down, hung or without a leader (performance.rpc_hold_timeout), on
	// top of a blocking query's own wait; past it the call answers 503.
	// Default 7s, Consul's; 1s to 1m.
	RPCHoldTimeout time.Duration
	// RaftGroupCommit lets the leader commit writes that arrive while
	// another is being committed together, as one Raft log entry
	// (performance.raft_group_commit; consensus.Config.GroupCommit), once
	// every server runs a version that reads such entries. v0.1.0 cannot,
	// so a server rolled back to it onto its data dir after that would
	// miss those writes: set it false on every server before the last one
	// is upgraded to keep that way back open. Default true.
	RaftGroupCommit bool
}

// RaftLogStore is the raft_logstore block: how a server keeps its Raft
// log on disk.
type RaftLogStore struct {
	// WALSegmentSizeMB is the size of each segment file of the log, in
	// MiB (raft_logstore.wal.segment_size_mb, Consul's), 1 to 1024. A
	// segment is preallocated whole when the log moves to it, so the
	// data dir needs this much free space then. Default 64.
	WALSegmentSizeMB int
}

// Autopilot is the autopilot block: the configuration the servers' first
// leader stores in Raft. Once stored, it is changed with `cairn operator
// autopilot set-config` (PUT /v1/operator/autopilot/configuration), and a
// changed block applies only to a new cluster, as in Consul.
type Autopilot struct {
	// CleanupDeadServers lets the leader remove servers that have been
	// failed for a while (10m) from the Raft configuration, as far as the
	// quorum allows (autopilot.cleanup_dead_servers). Default true.
	CleanupDeadServers bool
	// LastContactThreshold is how long a server may go without hearing
	// from the leader and still count as healthy
	// (autopilot.last_contact_threshold). Default 200ms.
	LastContactThreshold time.Duration
	// MaxTrailingLogs is how many Raft log entries a server may trail the
	// leader by and still count as healthy (autopilot.max_trailing_logs).
	// Default 250.
	MaxTrailingLogs int
	// MinQuorum is the fewest voters dead-server cleanup leaves
	// (autopilot.min_quorum); 0 leaves at least 3. Default 0.
	MinQuorum int
	// ServerStabilizationTime is how long a server that joined a running
	// cluster must have been healthy before the leader makes it a voter
	// (autopilot.server_stabilization_time); until then it receives the
	// log without voting. Servers that bootstrap the cluster together
	// (bootstrap_expect) vote from the start. Default 10s.
	ServerStabilizationTime time.Duration
}

// DefaultPerformance returns the defaults documented on Performance.
func DefaultPerformance() Performance {
	return Performance{RaftMultiplier: 1, CommitTimeout: 25 * time.Millisecond, RPCHoldTimeout: 7 * time.Second, RaftGroupCommit: true}
}

// DefaultAutopilot returns the defaults documented on Autopilot, which are
// Consul's.
func DefaultAutopilot() Autopilot {
	return Autopilot{
		CleanupDeadServers:      true,
		LastContactThreshold:    200 * time.Millisecond,
		MaxTrailingLogs:         250,
		ServerStabilizationTime: 10 * time.Second,
	}
}

// LeavesOnTerminate says whether the agent leaves the cluster gracefully
// when stopped by SIGTERM: LeaveOnTerminate when set, else true for a
// client and false for a server, as Consul's leave_on_terminate.
func (c *Config) LeavesOnTerminate() bool {
	if c.LeaveOnTerminate != nil {
		return *c.LeaveOnTerminate
	}
	return !c.Server
}

// LeavesOnInterrupt says whether the agent leaves the cluster gracefully
// when stopped by SIGINT (Ctrl-C): not when SkipLeaveOnInterrupt is set
// true; by default a client does and a server does not, as Consul's
// skip_leave_on_interrupt.
func (c *Config) LeavesOnInterrupt() bool {
	if c.SkipLeaveOnInterrupt != nil {
		return !*c.SkipLeaveOnInterrupt
	}
	return !c.Server
}

// fileServerKeys are the keys of this file in a config file.
type fileServerKeys struct {
	LeaveOnTerminate     *bool             `hcl:"leave_on_terminate"`
	SkipLeaveOnInterrupt *bool             `hcl:"skip_leave_on_interrupt"`
	Performance          *filePerformance  `hcl:"performance"`
	Autopilot            *fileAutopilot    `hcl:"autopilot"`
	RaftLogStore         *fileRaftLogStore `hcl:"raft_logstore"`
	// Consul's top-level Raft keys.
	RaftSnapshotThreshold *int    `hcl:"raft_snapshot_threshold"`
	RaftSnapshotInterval  *string `hcl:"raft_snapshot_interval"`
	RaftTrailingLogs      *int    `hcl:"raft_trailing_logs"`
	ServerServiceName     *string `hcl:"server_service_name"`
}

type fileRaftLogStore struct {
	WAL *struct {
		SegmentSizeMB *int `hcl:"segment_size_mb"`
	} `hcl:"wal"`
}

type filePerformance struct {
	RaftMultiplier  *int    `hcl:"raft_multiplier"`
	CommitTimeout   *string `hcl:"commit_timeout"`
	RPCHoldTimeout  *string `hcl:"rpc_hold_timeout"`
	RaftGroupCommit *bool   `hcl:"raft_group_commit"`
}

type fileAutopilot struct {
	CleanupDeadServers      *bool   `hcl:"cleanup_dead_servers"`
	LastContactThreshold    *string `hcl:"last_contact_threshold"`
	MaxTrailingLogs         *int    `hcl:"max_trailing_logs"`
	MinQuorum               *int    `hcl:"min_quorum"`
	ServerStabilizationTime *string `hcl:"server_stabilization_time"`
}

// apply sets the keys the file gave onto c.
func (f *fileServerKeys) apply(c *Config) error {
	if f.LeaveOnTerminate != nil {
		v := *f.LeaveOnTerminate
		c.LeaveOnTerminate = &v
	}
	if f.SkipLeaveOnInterrupt != nil {
		v := *f.SkipLeaveOnInterrupt
		c.SkipLeaveOnInterrupt = &v
	}
	if l := f.RaftLogStore; l != nil && l.WAL != nil {
		setIf(&c.RaftLogStore.WALSegmentSizeMB, l.WAL.SegmentSizeMB)
	}
	setIf(&c.RaftSnapshotThreshold, f.RaftSnapshotThreshold)
	setIf(&c.RaftTrailingLogs, f.RaftTrailingLogs)
	setIf(&c.ServerServiceName, f.ServerServiceName)
	durations := []durationKey{{"raft_snapshot_interval", "30s", f.RaftSnapshotInterval, &c.RaftSnapshotInterval}}
	if p := f.Performance; p != nil {
		setIf(&c.Performance.RaftMultiplier, p.RaftMultiplier)
		setIf(&c.Performance.RaftGroupCommit, p.RaftGroupCommit)
		durations = append(durations,
			durationKey{"performance.commit_timeout", "25ms", p.CommitTimeout, &c.Performance.CommitTimeout},
			durationKey{"performance.rpc_hold_timeout", "7s", p.RPCHoldTimeout, &c.Performance.RPCHoldTimeout})
	}
	if a := f.Autopilot; a != nil {
		setIf(&c.Autopilot.CleanupDeadServers, a.CleanupDeadServers)
		setIf(&c.Autopilot.MaxTrailingLogs, a.MaxTrailingLogs)
		setIf(&c.Autopilot.MinQuorum, a.MinQuorum)
		durations = append(durations,
			durationKey{"autopilot.last_contact_threshold", "200ms", a.LastContactThreshold, &c.Autopilot.LastContactThreshold},
			durationKey{"autopilot.server_stabilization_time", "10s", a.ServerStabilizationTime, &c.Autopilot.ServerStabilizationTime})
	}
	for _, d := range durations {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil {
			return &FieldError{Field: d.key, Reason: fmt.Sprintf("%q is not a duration such as %q", *d.v, d.example)}
		}
		*d.dst = v
	}
	return nil
}

// durationKey is a duration key of a file: its name, an example for the
// error, the value given (nil when absent) and where it goes.
type durationKey struct {
	key, example string
	v            *string
	dst          *time.Duration
}

// validateServer reports the bad fields of this file's keys.
func (c *Config) validateServer(bad func(field, format string, args ...any)) {
	if n := c.RaftLogStore.WALSegmentSizeMB; n < 1 || n > 1024 {
		bad("raft_logstore.wal.segment_size_mb", "must be between 1 and 1024, got %d", n)
	}
	if n := c.RaftSnapshotThreshold; n < 1 {
		bad("raft_snapshot_threshold", "must be at least 1, got %d", n)
	}
	if d := c.RaftSnapshotInterval; d < 5*time.Millisecond {
		// Raft's own floor.
		bad("raft_snapshot_interval", "must be at least 5ms, got %s", d)
	}
	if n := c.RaftTrailingLogs; n < 0 {
		bad("raft_trailing_logs", "must not be negative, got %d", n)
	}
	if r := catalog.ValidLabel(c.ServerServiceName); r != "" {
		bad("server_service_name", "%s (it is a DNS label: <name>.service.<domain>)", r)
	}
	if m := c.Performance.RaftMultiplier; m < 1 || m > 10 {
		bad("performance.raft_multiplier", "must be between 1 and 10, got %d", m)
	}
	if d := c.Performance.CommitTimeout; d < 5*time.Millisecond {
		bad("performance.commit_timeout", "must be at least 5ms, got %s", d)
	}
	if d := c.Performance.RPCHoldTimeout; d < time.Second || d > time.Minute {
		// Servers remember a retried write's request ID for two minutes
		// (consensus/once.go); a longer hold could outlast that.
		bad("performance.rpc_hold_timeout", "must be between 1s and 1m, got %s", d)
	}
	a := c.Autopilot
	if a.LastContactThreshold < 0 {
		bad("autopilot.last_contact_threshold", "must not be negative, got %s", a.LastContactThreshold)
	}
	if a.MaxTrailingLogs < 0 {
		bad("autopilot.max_trailing_logs", "must not be negative, got %d", a.MaxTrailingLogs)
	}
	if a.MinQuorum < 0 {
		bad("autopilot.min_quorum", "must not be negative, got %d", a.MinQuorum)
	}
	if a.ServerStabilizationTime < 0 {
		bad("autopilot.server_stabilization_time", "must not be negative, got %s", a.ServerStabilizationTime)
	}
}
