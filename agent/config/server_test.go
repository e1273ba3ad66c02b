package config

import (
	"errors"
	"testing"
	"time"
)

func TestServerBlocks(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"server.hcl", `
leave_on_terminate = true
skip_leave_on_interrupt = false
performance { raft_multiplier = 5  commit_timeout = "50ms"  rpc_hold_timeout = "3s"  raft_group_commit = false }
autopilot {
  cleanup_dead_servers = false
  last_contact_threshold = "1s"
  max_trailing_logs = 500
  min_quorum = 3
  server_stabilization_time = "30s"
}`},
		{"server.json", `{"leave_on_terminate": true, "skip_leave_on_interrupt": false,
  "performance": {"raft_multiplier": 5, "commit_timeout": "50ms", "rpc_hold_timeout": "3s", "raft_group_commit": false},
  "autopilot": {"cleanup_dead_servers": false, "last_contact_threshold": "1s", "max_trailing_logs": 500,
    "min_quorum": 3, "server_stabilization_time": "30s"}}`},
	} {
		c := Default()
		c.Server, c.DataDir = true, "/d"
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", tc.name, err)
		}
		if want := (Performance{RaftMultiplier: 5, CommitTimeout: 50 * time.Millisecond, RPCHoldTimeout: 3 * time.Second}); c.Performance != want {
			t.Errorf("%s: performance: got %+v, want %+v", tc.name, c.Performance, want)
		}
		want := Autopilot{LastContactThreshold: time.Second, MaxTrailingLogs: 500, MinQuorum: 3, ServerStabilizationTime: 30 * time.Second}
		if c.Autopilot != want {
			t.Errorf("%s: autopilot: got %+v, want %+v", tc.name, c.Autopilot, want)
		}
		if !c.LeavesOnTerminate() || !c.LeavesOnInterrupt() {
			t.Errorf("%s: a server told to leave on both signals: got terminate %v, interrupt %v", tc.name, c.LeavesOnTerminate(), c.LeavesOnInterrupt())
		}
	}
}

// TestRaftSnapshotKeys: Consul's top-level Raft snapshot keys, in HCL and
// JSON; without them the defaults are hashicorp/raft's.
func TestRaftSnapshotKeys(t *testing.T) {
	if c := Default(); c.RaftSnapshotThreshold != 8192 || c.RaftSnapshotInterval != 120*time.Second || c.RaftTrailingLogs != 10240 {
		t.Errorf("defaults: got threshold %d, interval %s, trailing logs %d; want 8192, 2m0s, 10240",
			c.RaftSnapshotThreshold, c.RaftSnapshotInterval, c.RaftTrailingLogs)
	}
	for _, tc := range []struct{ name, file string }{
		{"raft.hcl", `raft_snapshot_threshold = 64
raft_snapshot_interval = "250ms"
raft_trailing_logs = 0`},
		{"raft.json", `{"raft_snapshot_threshold": 64, "raft_snapshot_interval": "250ms", "raft_trailing_logs": 0}`},
	} {
		c := Default()
		c.Server, c.DataDir = true, "/d"
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", tc.name, err)
		}
		if c.RaftSnapshotThreshold != 64 || c.RaftSnapshotInterval != 250*time.Millisecond || c.RaftTrailingLogs != 0 {
			t.Errorf("%s: got threshold %d, interval %s, trailing logs %d; want 64, 250ms, 0",
				tc.name, c.RaftSnapshotThreshold, c.RaftSnapshotInterval, c.RaftTrailingLogs)
		}
	}
}

// TestServerServiceName: the servers' service is "cairn" unless
// server_service_name names another, in HCL or JSON.
func TestServerServiceName(t *testing.T) {
	if c := Default(); c.ServerServiceName != "cairn" {
		t.Errorf("default: got %q, want cairn", c.ServerServiceName)
	}
	for _, tc := range []struct{ name, file string }{
		{"s.hcl", `server_service_name = "consul"`},
		{"s.json", `{"server_service_name": "consul"}`},
	} {
		c := Default()
		c.Server, c.DataDir = true, "/d"
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := c.Validate(); err != nil || c.ServerServiceName != "consul" {
			t.Errorf("%s: got %q, %v; want consul", tc.name, c.ServerServiceName, err)
		}
	}
}

// TestLeaveDefaultsByRole: without the keys a client leaves on both
// signals and a server on neither, as Consul's agents.
func TestLeaveDefaultsByRole(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name                 string
		server               bool
		onTerm, skipOnInt    *bool
		wantTerm, wantInterr bool
	}{
		{"client", false, nil, nil, true, true},
		{"server", true, nil, nil, false, false},
		{"client told not to leave on SIGTERM", false, &no, nil, false, true},
		{"server told to leave on SIGINT", true, nil, &no, false, true},
	} {
		c := Default()
		c.Server, c.LeaveOnTerminate, c.SkipLeaveOnInterrupt = tc.server, tc.onTerm, tc.skipOnInt
		if got := c.LeavesOnTerminate(); got != tc.wantTerm {
			t.Errorf("%s: LeavesOnTerminate: got %v, want %v", tc.name, got, tc.wantTerm)
		}
		if got := c.LeavesOnInterrupt(); got != tc.wantInterr {
			t.Errorf("%s: LeavesOnInterrupt: got %v, want %v", tc.name, got, tc.wantInterr)
		}
	}
}

func TestServerBlocksErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ file, field string }{
		{`performance { raft_multiplier = 11 }`, "performance.raft_multiplier"},
		{`performance { raft_multiplier = 0 }`, "performance.raft_multiplier"},
		{`performance { commit_timeout = "1ms" }`, "performance.commit_timeout"},
		{`performance { commit_timeout = "soon" }`, "performance.commit_timeout"},
		{`performance { rpc_hold_timeout = "100ms" }`, "performance.rpc_hold_timeout"},
		{`performance { rpc_hold_timeout = "5m" }`, "performance.rpc_hold_timeout"},
		{`autopilot { last_contact_threshold = "-1s" }`, "autopilot.last_contact_threshold"},
		{`autopilot { last_contact_threshold = "fast" }`, "autopilot.last_contact_threshold"},
		{`autopilot { max_trailing_logs = -1 }`, "autopilot.max_trailing_logs"},
		{`autopilot { min_quorum = -1 }`, "autopilot.min_quorum"},
		{`autopilot { server_stabilization_time = "-1s" }`, "autopilot.server_stabilization_time"},
		{`autopilot { cleanup_dead = true }`, "autopilot.cleanup_dead"},
		{`raft_snapshot_threshold = 0`, "raft_snapshot_threshold"},
		{`raft_snapshot_interval = "1ms"`, "raft_snapshot_interval"},
		{`raft_snapshot_interval = "often"`, "raft_snapshot_interval"},
		{`raft_trailing_logs = -1`, "raft_trailing_logs"},
		{`server_service_name = "my_servers"`, "server_service_name"},
		{`server_service_name = ""`, "server_service_name"},
	} {
		c := Default()
		c.Dev = true
		err := LoadFile(writeConfig(t, "bad.hcl", tc.file), &c)
		if err == nil {
			err = c.Validate()
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want an error naming %s", tc.file, err, tc.field)
		}
	}
}
