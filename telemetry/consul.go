package telemetry

import (
	"os"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Consul's dashboards and alerts read Consul's series names; Gather adds
// them (Config.ConsulAliases) as copies of cairn's series that measure the
// same thing, so those dashboards work unchanged:
//
//   - every series Raft, raft-wal and memberlist emit (cairn_raft_*,
//     cairn_memberlist_*) again under consul_: the same libraries name
//     them the same way in Consul;
//   - the ones named in consulAliases, from cairn's own series and the Go
//     runtime's.
//
// Consul prefixes its gauges with the host name unless
// telemetry.disable_hostname; so do these when DisableHostname is off.

// aliasKind says how an alias is made from its source family.
type aliasKind int

const (
	// aliasCopy (the zero kind) copies the family (its metrics whose
	// label matches, with that label dropped) under the new name.
	_ aliasKind = iota
	// aliasGauge turns the first metric's value into a gauge.
	aliasGauge
	// aliasGCPauseNs is a gauge of a summary's sum, seconds into
	// nanoseconds (Consul's runtime.total_gc_pause_ns).
	aliasGCPauseNs
	// aliasGCRuns is a gauge of a summary's count (runtime.total_gc_runs).
	aliasGCRuns
	// aliasTotal is one counter, the sum of the family's counters whose
	// label matches (or, with not set, does not match).
	aliasTotal
)

// consulAlias is one of Consul's series made from one of cairn's.
type consulAlias struct {
	name string // Consul's name after "consul.", dotted
	from string // cairn's family
	kind aliasKind
	// label, value: only the metrics whose label has value (none: all);
	// not inverts the match.
	label, value string
	not          bool
}

// consulAliases are the series of Consul's documented key metrics and
// dashboards that cairn measures too. (consul.serf.member.* have no
// counterpart: cairn's gossip is memberlist without serf; the members by
// status are cairn_gossip_members.)
var consulAliases = []consulAlias{
	{name: "autopilot.healthy", from: "cairn_autopilot_healthy"},
	{name: "autopilot.failure_tolerance", from: "cairn_autopilot_failure_tolerance"},
	{name: "server.isLeader", from: "cairn_server_is_leader"},
	{name: "runtime.alloc_bytes", from: "go_memstats_alloc_bytes", kind: aliasGauge},
	{name: "runtime.sys_bytes", from: "go_memstats_sys_bytes", kind: aliasGauge},
	{name: "runtime.heap_objects", from: "go_memstats_heap_objects", kind: aliasGauge},
	{name: "runtime.malloc_count", from: "go_memstats_mallocs_total", kind: aliasGauge},
	{name: "runtime.free_count", from: "go_memstats_frees_total", kind: aliasGauge},
	{name: "runtime.num_goroutines", from: "go_goroutines", kind: aliasGauge},
	{name: "runtime.total_gc_pause_ns", from: "go_gc_duration_seconds", kind: aliasGCPauseNs},
	{name: "runtime.total_gc_runs", from: "go_gc_duration_seconds", kind: aliasGCRuns},
	{name: "catalog.register", from: "cairn_rpc_request_duration_seconds", label: "method", value: "Catalog.Register"},
	{name: "catalog.deregister", from: "cairn_rpc_request_duration_seconds", label: "method", value: "Catalog.Deregister"},
	{name: "catalog.service.query", from: "cairn_rpc_request_duration_seconds", label: "method", value: "Catalog.ServiceInstances"},
	{name: "health.service.query", from: "cairn_rpc_request_duration_seconds", label: "method", value: "Health.ServiceInstances"},
	{name: "kvs.apply", from: "cairn_rpc_request_duration_seconds", label: "method", value: "KVS.Apply"},
	{name: "txn.apply", from: "cairn_rpc_request_duration_seconds", label: "method", value: "Txn.Apply"},
	{name: "rpc.request", from: "cairn_rpc_requests_total", kind: aliasTotal},
	{name: "rpc.request_error", from: "cairn_rpc_requests_total", kind: aliasTotal, label: "result", value: "ok", not: true},
	{name: "rpc.rate_limit.exceeded", from: "cairn_rpc_requests_total", kind: aliasTotal, label: "result", value: "rate_limited"},
	{name: "client.rpc", from: "cairn_rpc_client_request_duration_seconds"},
}

// libraryPrefixes are the families copied whole under consul_: the
// libraries Consul uses too name their series as they do in Consul.
var libraryPrefixes = []string{"raft_", "memberlist_"}

// consulNames adds Consul's series to mfs, sorted by name, and returns it
// with names, which maps each added family's name to Consul's dotted name
// (for the JSON form of /v1/agent/metrics).
func (r *Registry) consulNames(mfs []*dto.MetricFamily) ([]*dto.MetricFamily, map[string]string) {
	byName := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	names := map[string]string{}
	add := func(dotted string, mf *dto.MetricFamily) {
		if mf == nil || len(mf.Metric) == 0 {
			return
		}
		if mf.GetType() == dto.MetricType_GAUGE && r.host != "" {
			dotted = r.host + "." + dotted
		}
		name := "consul_" + sanitize(dotted)
		if _, taken := byName[name]; taken {
			return
		}
		mf.Name = proto.String(name)
		byName[name] = mf
		names[name] = "consul." + dotted
		mfs = append(mfs, mf)
	}
	for _, mf := range slices.Clone(mfs) {
		rest, ok := strings.CutPrefix(mf.GetName(), Prefix+"_")
		if !ok {
			continue
		}
		if r.host != "" {
			rest = strings.TrimPrefix(rest, sanitize(r.host)+"_")
		}
		if strings.HasPrefix(rest, "raft_storage_") || !slices.ContainsFunc(libraryPrefixes, func(p string) bool { return strings.HasPrefix(rest, p) }) {
			continue
		}
		c := proto.Clone(mf).(*dto.MetricFamily)
		add(strings.ReplaceAll(rest, "_", "."), c)
	}
	for _, a := range consulAliases {
		if src := byName[a.from]; src != nil {
			add(a.name, a.make(src))
		}
	}
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return mfs, names
}

// make builds a's family from src; nil when src has nothing for it.
func (a consulAlias) make(src *dto.MetricFamily) *dto.MetricFamily {
	var ms []*dto.Metric
	for _, m := range src.Metric {
		if a.matches(m) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 && a.kind != aliasTotal { // a total of none is 0
		return nil
	}
	gauge := func(v float64) *dto.MetricFamily {
		return &dto.MetricFamily{Help: src.Help, Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}
	}
	switch a.kind {
	case aliasGauge:
		return gauge(value(ms[0]))
	case aliasGCPauseNs:
		return gauge(ms[0].GetSummary().GetSampleSum() * 1e9)
	case aliasGCRuns:
		return gauge(float64(ms[0].GetSummary().GetSampleCount()))
	case aliasTotal:
		total := 0.0
		for _, m := range ms {
			total += value(m)
		}
		return &dto.MetricFamily{Help: src.Help, Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(total)}}}}
	}
	out := &dto.MetricFamily{Help: src.Help, Type: src.Type}
	for _, m := range ms {
		c := proto.Clone(m).(*dto.Metric)
		if a.label != "" {
			c.Label = slices.DeleteFunc(c.Label, func(l *dto.LabelPair) bool { return l.GetName() == a.label })
		}
		out.Metric = append(out.Metric, c)
	}
	return out
}

// matches says whether m is one of the metrics a is made from. An empty
// value matches every value (the label is only dropped).
func (a consulAlias) matches(m *dto.Metric) bool {
	if a.label == "" || a.value == "" {
		return true
	}
	i := slices.IndexFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == a.label })
	return (i >= 0 && m.Label[i].GetValue() == a.value) != a.not
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// sanitize turns a dotted name into a Prometheus one, as go-metrics'
// Prometheus sink does.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ':':
			return r
		}
		return '_'
	}, s)
}

// hostname is the host name Consul puts in its gauges' names.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}
