package telemetry_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cairndns/cairn/telemetry"
	gometrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestConsulAliases: with consul_aliases (the default) the registry adds
// Consul's names of what Consul's dashboards read: the libraries' Raft
// series under consul_raft_, cairn's own (a server's leadership, one RPC
// method's timing, the RPC totals) and the Go runtime's under Consul's
// names, gauges with the host name unless disable_hostname; the JSON
// form names them Consul's dotted way. Off, only cairn's names remain.
func TestConsulAliases(t *testing.T) {
	leader := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_server_is_leader", Help: "Leader."})
	leader.Set(1)
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_rpc_requests_total", Help: "Calls."}, []string{"method", "result"})
	calls.WithLabelValues("KVS.Apply", "ok").Add(3)
	calls.WithLabelValues("KVS.Apply", "not_leader").Add(2)
	took := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cairn_rpc_request_duration_seconds", Help: "Took."}, []string{"method"})
	took.WithLabelValues("KVS.Apply").Observe(0.01)
	took.WithLabelValues("Catalog.Register").Observe(0.02)
	cfg := telemetry.DefaultConfig()
	cfg.DisableHostname = false
	r, err := telemetry.New(cfg, leader, calls, took)
	if err != nil {
		t.Fatal(err)
	}
	gometrics.IncrCounter([]string{"raft", "alias", "apply"}, 1)
	host, _ := os.Hostname()
	fams := gather(t, r)
	prom := func(dotted string) string { return strings.NewReplacer(".", "_", "-", "_").Replace(dotted) }
	for name, want := range map[string]float64{
		"consul_raft_alias_apply":                       1,
		"consul_" + prom(host) + "_server_isLeader":     1,
		"consul_rpc_request":                            5,
		"consul_rpc_request_error":                      2,
		"consul_" + prom(host) + "_runtime_alloc_bytes": -1, // any value
	} {
		mf := fams[name]
		if mf == nil {
			t.Errorf("no %s among %d families", name, len(fams))
			continue
		}
		if v := metricValue(mf.Metric[0]); want >= 0 && v != want {
			t.Errorf("%s: got %v, want %v", name, v, want)
		}
	}
	if mf := fams["consul_kvs_apply"]; mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.Metric) != 1 || len(mf.Metric[0].Label) != 0 || mf.Metric[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("consul_kvs_apply: got %v, want KVS.Apply's timing alone, without the method label", mf)
	}
	if got, want := r.JSONName("consul_"+prom(host)+"_runtime_alloc_bytes"), "consul."+host+".runtime.alloc_bytes"; got != want {
		t.Errorf("JSON name: got %q, want %q", got, want)
	}
	if got := r.JSONName("cairn_server_is_leader"); got != "cairn_server_is_leader" {
		t.Errorf("JSON name of cairn's own: got %q, want it unchanged", got)
	}

	cfg.ConsulAliases = false
	off, err := telemetry.New(cfg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_server_is_leader", Help: "Leader."}))
	if err != nil {
		t.Fatal(err)
	}
	for name := range gather(t, off) {
		if strings.HasPrefix(name, "consul_") {
			t.Errorf("consul_aliases off: got %s", name)
		}
	}
}

func gather(t *testing.T, r *telemetry.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return -1
}
