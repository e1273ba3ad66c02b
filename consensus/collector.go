package consensus

import (
	"strconv"
	"time"

	raftwal "github.com/hashicorp/raft-wal"
	"github.com/prometheus/client_golang/prometheus"
)

// A server's series: Raft's state, the storage's health, the catalog's
// size (read at each scrape), and raft-wal's own counters.
var (
	descIsLeader     = prometheus.NewDesc("cairn_server_is_leader", "1 on the server that is the Raft leader of its datacenter, 0 on the others.", nil, nil)
	descLeaderKnown  = prometheus.NewDesc("cairn_server_leader_known", "1 while this server knows a Raft leader of its datacenter, 0 without one.", nil, nil)
	descAppliedIndex = prometheus.NewDesc("cairn_server_applied_index", "The last Raft index this server's catalog applied.", nil, nil)
	descLastContact  = prometheus.NewDesc("cairn_server_last_contact_seconds", "Time since this server last heard from the leader (0 on the leader).", nil, nil)
	descInflated     = prometheus.NewDesc("cairn_snapshot_restore_inflated_bytes_total", "Bytes this server inflated from snapshot archives it restored (it inflates only as the leader, after the restore was authorized).", nil, nil)
	descStorageOK    = prometheus.NewDesc("cairn_raft_storage_healthy", "1 while this server can write its Raft log, stable store and snapshots; 0 once a write failed (a full or failing disk), until one succeeds again.", nil, nil)
	descStorageFails = prometheus.NewDesc("cairn_raft_storage_write_failures_total", "Failed writes of this server's Raft log, stable store and snapshots.", nil, nil)
	descBatches      = prometheus.NewDesc("cairn_raft_batches_total", "Raft log entries this server wrote as the leader that each carry several writes (group commit).", nil, nil)
	descBatched      = prometheus.NewDesc("cairn_raft_batched_writes_total", "Writes this server committed as the leader inside batch entries; divided by cairn_raft_batches_total, the mean batch size.", nil, nil)
	descCatalog      = prometheus.NewDesc("cairn_catalog_entries", "What a server's catalog holds, by kind: nodes, service_instances, checks, kv_entries, sessions, prepared_queries.", []string{"kind"}, nil)
)

// Collectors returns the server's series, for the agent's registry.
func (s *Server) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{serverCollector{s}}, s.walMetrics.collectors()...)
}

// serverCollector is unchecked (Describe sends nothing): the applied index
// and last contact are left out when Raft's stats lack them.
type serverCollector struct{ s *Server }

func (serverCollector) Describe(chan<- *prometheus.Desc) {}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	leader := s.IsLeader()
	gauge(descIsLeader, boolValue(leader))
	gauge(descLeaderKnown, boolValue(s.Leader() != ""))
	stats := s.RaftStats()
	if v, err := strconv.ParseUint(stats["applied_index"], 10, 64); err == nil {
		gauge(descAppliedIndex, float64(v))
	}
	if leader {
		gauge(descLastContact, 0)
	} else if d, err := time.ParseDuration(stats["last_contact"]); err == nil {
		gauge(descLastContact, d.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(descInflated, prometheus.CounterValue, float64(s.SnapshotInflatedBytes()))
	st := s.StorageStatus()
	gauge(descStorageOK, boolValue(st.Healthy))
	ch <- prometheus.MustNewConstMetric(descStorageFails, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(descBatches, prometheus.CounterValue, float64(s.batcher.batches.Load()))
	ch <- prometheus.MustNewConstMetric(descBatched, prometheus.CounterValue, float64(s.batcher.batched.Load()))
	if sz, err := s.Store().Sizes(); err == nil {
		for _, k := range []struct {
			kind string
			n    int
		}{
			{"nodes", sz.Nodes}, {"service_instances", sz.ServiceInstances}, {"checks", sz.Checks},
			{"kv_entries", sz.KVEntries}, {"sessions", sz.Sessions}, {"prepared_queries", sz.PreparedQueries},
		} {
			gauge(descCatalog, float64(k.n), k.kind)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// walMetrics is raft-wal's metrics.Collector, as Prometheus series named
// cairn_raft_wal_<name> with raft-wal's own help (raftwal.MetricDefinitions).
// One outlives the WAL's reopens, so its counters keep counting.
type walMetrics struct {
	counters map[string]prometheus.Counter
	gauges   map[string]prometheus.Gauge
}

func newWALMetrics() *walMetrics {
	m := &walMetrics{counters: map[string]prometheus.Counter{}, gauges: map[string]prometheus.Gauge{}}
	for _, d := range raftwal.MetricDefinitions.Counters {
		m.counters[d.Name] = prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_raft_wal_" + d.Name, Help: d.Desc})
	}
	for _, d := range raftwal.MetricDefinitions.Gauges {
		m.gauges[d.Name] = prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_raft_wal_" + d.Name, Help: d.Desc})
	}
	return m
}

// IncrementCounter ignores a name raft-wal did not define.
func (m *walMetrics) IncrementCounter(name string, delta uint64) {
	if c, ok := m.counters[name]; ok {
		c.Add(float64(delta))
	}
}

// SetGauge ignores a name raft-wal did not define.
func (m *walMetrics) SetGauge(name string, val uint64) {
	if g, ok := m.gauges[name]; ok {
		g.Set(float64(val))
	}
}

func (m *walMetrics) collectors() []prometheus.Collector {
	out := make([]prometheus.Collector, 0, len(m.counters)+len(m.gauges))
	for _, c := range m.counters {
		out = append(out, c)
	}
	for _, g := range m.gauges {
		out = append(out, g)
	}
	return out
}

// The leader's view of the servers' health, as Consul's autopilot reports
// it: on the leader only, once it has judged them.
var (
	descAutopilotHealthy = prometheus.NewDesc("cairn_autopilot_healthy", "1 while every server is healthy as the leader's autopilot judges them, 0 otherwise; reported by the leader only.", nil, nil)
	descFailureTolerance = prometheus.NewDesc("cairn_autopilot_failure_tolerance", "How many voters could fail without the others losing their quorum, as the leader's autopilot judges them; reported by the leader only.", nil, nil)
)

// Collectors returns the leader duties' series, for the agent's registry.
func (l *Leader) Collectors() []prometheus.Collector {
	return []prometheus.Collector{leaderCollector{l}}
}

// leaderCollector is unchecked: it reports nothing off the leader.
type leaderCollector struct{ l *Leader }

func (leaderCollector) Describe(chan<- *prometheus.Desc) {}

func (c leaderCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.l
	if !l.s.IsLeader() {
		return
	}
	l.ap.mu.Lock()
	report := l.ap.report
	l.ap.mu.Unlock()
	if report == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descAutopilotHealthy, prometheus.GaugeValue, boolValue(report.Healthy))
	ch <- prometheus.MustNewConstMetric(descFailureTolerance, prometheus.GaugeValue, float64(report.FailureTolerance))
}
