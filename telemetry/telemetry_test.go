package telemetry_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/telemetry"
	gometrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestRegistryReportsLibrariesRuntimeAndOwn: what the libraries emit
// through go-metrics, the Go runtime's and the process's series, and an
// own collector's all come out of one registry (which the HTTP API writes
// in Prometheus' text format).
func TestRegistryReportsLibrariesRuntimeAndOwn(t *testing.T) {
	own := prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_test_things_total", Help: "Things."})
	own.Add(3)
	r, err := telemetry.New(telemetry.DefaultConfig(), own)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// As raft does: go-metrics' global, which New installed.
	gometrics.IncrCounter([]string{"raft", "test", "apply"}, 2)
	gometrics.MeasureSince([]string{"raft", "test", "commitTime"}, time.Now().Add(-5*time.Millisecond))

	gathered, err := r.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	fams := make(map[string]*dto.MetricFamily, len(gathered))
	var names []string
	for _, mf := range gathered {
		fams[mf.GetName()] = mf
		names = append(names, mf.GetName())
	}
	for _, name := range []string{
		"cairn_raft_test_apply", "cairn_raft_test_commitTime", // the libraries'
		"go_goroutines", "go_memstats_heap_alloc_bytes", // the runtime's
		"process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total", // the process's
		"cairn_test_things_total", // the agent's own
	} {
		if fams[name] == nil {
			t.Errorf("no %s in %v", name, names)
		}
	}
	if f := fams["cairn_test_things_total"]; f != nil && f.Metric[0].GetCounter().GetValue() != 3 {
		t.Errorf("cairn_test_things_total: got %v, want 3", f.Metric[0].GetCounter().GetValue())
	}
	if f := fams["cairn_raft_test_apply"]; f != nil && f.Metric[0].GetCounter().GetValue() != 2 {
		t.Errorf("cairn_raft_test_apply: got %v, want 2", f.Metric[0].GetCounter().GetValue())
	}

	// A second registry (another agent in this process) reports the
	// same library series.
	r2, err := telemetry.New(telemetry.DefaultConfig())
	if err != nil {
		t.Fatalf("second New: %v", err)
	}
	mfs, err := r2.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "cairn_raft_test_apply"
	}
	if !found {
		t.Error("the second registry lacks the library series")
	}
}

func TestRegistryRefusesClashesAndBadConfig(t *testing.T) {
	a := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_test_clash", Help: "a"})
	b := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_test_clash", Help: "a"})
	if _, err := telemetry.New(telemetry.DefaultConfig(), a, b); err == nil {
		t.Error("two collectors of one series: got no error")
	}
	cfg := telemetry.DefaultConfig()
	cfg.PrometheusRetentionTime = 0
	if _, err := telemetry.New(cfg); err == nil || !strings.Contains(err.Error(), "telemetry.prometheus_retention_time") {
		t.Errorf("retention 0: got %v, want an error naming telemetry.prometheus_retention_time", err)
	}
}
