package consensus

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// TestWALMetricsCountAppends appends to the on-disk log store New opens and
// expects raft-wal's count of appends in cairn_raft_wal_log_appends, and of
// entries in cairn_raft_wal_log_entries_written, as a registry gathers them.
func TestWALMetricsCountAppends(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.DataDir = "s1", t.TempDir()
	s := &Server{cfg: cfg, logger: slog.New(slog.DiscardHandler), health: newStorageHealth(slog.New(slog.DiscardHandler)), walMetrics: newWALMetrics()}
	rc := raft.DefaultConfig()
	rc.Logger = newHCLog(s.logger)
	logs, _, _, err := s.openStores(rc)
	if err != nil {
		t.Fatalf("open log store: %v", err)
	}
	t.Cleanup(s.closeStores)
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.walMetrics.collectors()...)
	for i := uint64(1); i <= 3; i++ {
		batch := []*raft.Log{{Index: 2*i - 1, Term: 1, Data: []byte("a")}, {Index: 2 * i, Term: 1, Data: []byte("b")}}
		if err := logs.StoreLogs(batch); err != nil {
			t.Fatalf("store logs: %v", err)
		}
	}
	got := gathered(t, reg)
	if v := got["cairn_raft_wal_log_appends"]; v != 3 {
		t.Errorf("cairn_raft_wal_log_appends: got %v, want 3 (reported %v)", v, got)
	}
	if v := got["cairn_raft_wal_log_entries_written"]; v != 6 {
		t.Errorf("cairn_raft_wal_log_entries_written: got %v, want 6", v)
	}
}

// gathered is reg's unlabelled counters and gauges by name.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			out[f.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}
