package agent

import (
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/gossip"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
)

// agentMetrics is what GET /v1/agent/metrics reports: the DNS server's
// questions and latency, the DNS cache's counters, the agent's own
// services and checks, and a few Go runtime figures. Each call collects
// them afresh; nothing is kept between scrapes.
type agentMetrics struct{ a *Agent }

var _ httpapi.Metrics = agentMetrics{}

// The kinds of metric family, as the TYPE line spells them.
const (
	kindCounter   = "counter"
	kindGauge     = "gauge"
	kindHistogram = "histogram"
)

// family is one metric family: its samples (counter, gauge) or its
// histogram.
type family struct {
	name, help, kind string
	samples          []sample
	hist             *histogram
}

// sample is one sample of a counter or gauge family.
type sample struct {
	labels []label
	value  float64
}

type label struct{ name, value string }

// histogram is a histogram family's one series (they have no labels here).
type histogram struct {
	bounds []float64 // the buckets' upper bounds, increasing, without +Inf
	counts []uint64  // cumulative: observations at most each bound
	count  uint64    // all observations: the +Inf bucket
	sum    float64
}

// statusOrder is the order the agent's checks are reported in by status;
// each of these is reported, zero or not.
var statusOrder = []catalog.HealthStatus{catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical, catalog.HealthMaintenance}

// families collects the metrics now. A part the agent has not started
// (it is wired after DNS and local state start, so only in tests) is left
// out.
func (m agentMetrics) families() []family {
	var fs []family
	if m.a.dns != nil {
		fs = append(fs, dnsFamilies(m.a.dns.Metrics())...)
	}
	if m.a.dnsSrc != nil {
		st := m.a.dnsSrc.Stats()
		fs = append(fs,
			counter("cairn_cache_hits_total", "DNS cache lookups answered from memory.", st.Hits),
			counter("cairn_cache_misses_total", "DNS cache lookups that waited for a fetch from the servers.", st.Misses),
			counter("cairn_cache_stale_answers_total", "DNS cache hits answered from an entry the servers could not refresh (serve-stale).", st.StaleAnswers),
			counter("cairn_cache_evictions_total", "DNS cache entries dropped by the size bounds, idleness or the maximum staleness.", st.Evictions),
			counter("cairn_cache_refresh_errors_total", "Failed background refreshes of DNS cache entries.", st.RefreshErrors),
			gauge("cairn_cache_entries", "DNS cache entries held now.", float64(st.Entries)),
		)
	}
	if m.a.local != nil {
		fs = append(fs,
			gauge("cairn_agent_services", "Services registered on this agent.", float64(len(m.a.local.Services()))),
			checksFamily(m.a.local.Checks()),
		)
	}
	if m.a.gossip != nil {
		g := family{name: "cairn_gossip_log_lines_dropped_total", help: "Log lines about bad gossip packets left out by the per-source rate limit, by pool.", kind: kindCounter}
		c := family{name: "cairn_gossip_name_conflicts_total", help: "Times two agents claimed one member name, by pool.", kind: kindCounter}
		for _, p := range []struct {
			name string
			pool *gossip.Pool
		}{{"lan", m.a.gossip}, {"wan", m.a.wan}} {
			if p.pool == nil {
				continue
			}
			g.samples = append(g.samples, sample{labels: []label{{"pool", p.name}}, value: float64(p.pool.DroppedLogLines())})
			c.samples = append(c.samples, sample{labels: []label{{"pool", p.name}}, value: float64(p.pool.NameConflicts())})
		}
		fs = append(fs, g, c)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // stops the world briefly, once per scrape
	fs = append(fs,
		gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and still in use.", float64(ms.HeapAlloc)),
	)
	return fs
}

// dnsFamilies returns the DNS server's metrics: every (qtype, rcode) pair
// answered so far, and the latency histogram in seconds.
func dnsFamilies(dm resolver.DNSMetrics) []family {
	q := family{name: "cairn_dns_questions_total", help: "DNS questions answered, by query type and rcode.", kind: kindCounter}
	for _, c := range dm.Questions {
		q.samples = append(q.samples, sample{labels: []label{{"qtype", c.Qtype}, {"rcode", c.Rcode}}, value: float64(c.Count)})
	}
	h := &histogram{count: dm.Latency.Count, sum: dm.Latency.Sum.Seconds()}
	for _, b := range dm.Latency.Buckets {
		h.bounds = append(h.bounds, b.UpperBound.Seconds())
		h.counts = append(h.counts, b.Count)
	}
	lat := family{name: "cairn_dns_answer_seconds", help: "Time from a DNS query's arrival to its reply having been written.", kind: kindHistogram, hist: h}
	rrl := family{name: "cairn_dns_rate_limited_total", help: "UDP replies over the response rate limit, by what became of them (dropped, or slipped: sent truncated).", kind: kindCounter,
		samples: []sample{
			{labels: []label{{"action", "dropped"}}, value: float64(dm.RateLimited.Dropped)},
			{labels: []label{{"action", "slipped"}}, value: float64(dm.RateLimited.Slipped)},
		}}
	tcp := counter("cairn_dns_tcp_refused_total", "TCP DNS connections closed at once because dns_max_tcp_conns were open.", dm.TCPRefused)
	return []family{q, lat, rrl, tcp}
}

// checksFamily counts checks by status.
func checksFamily(checks []*catalog.Check) family {
	f := family{name: "cairn_agent_checks", help: "Health checks registered on this agent, by status.", kind: kindGauge}
	n := make(map[catalog.HealthStatus]int, len(statusOrder))
	for _, c := range checks {
		n[c.Status]++
	}
	for _, st := range statusOrder {
		f.samples = append(f.samples, sample{labels: []label{{"status", string(st)}}, value: float64(n[st])})
	}
	return f
}

func counter(name, help string, v uint64) family {
	return family{name: name, help: help, kind: kindCounter, samples: []sample{{value: float64(v)}}}
}

func gauge(name, help string, v float64) family {
	return family{name: name, help: help, kind: kindGauge, samples: []sample{{value: v}}}
}

// WritePrometheus writes the metrics in the Prometheus text exposition
// format 0.0.4: per family a HELP and a TYPE line, then its samples.
func (m agentMetrics) WritePrometheus(w io.Writer) error {
	_, err := w.Write(appendPrometheus(nil, m.families()))
	return err
}

// appendPrometheus appends fs in the Prometheus text format to b.
func appendPrometheus(b []byte, fs []family) []byte {
	for _, f := range fs {
		b = append(b, "# HELP "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, escapeHelp(f.help)...)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, f.kind...)
		b = append(b, '\n')
		for _, s := range f.samples {
			b = appendSample(b, f.name, s.labels, s.value)
		}
		if h := f.hist; h != nil {
			for i, le := range h.bounds {
				b = appendSample(b, f.name+"_bucket", []label{{"le", formatFloat(le)}}, float64(h.counts[i]))
			}
			b = appendSample(b, f.name+"_bucket", []label{{"le", "+Inf"}}, float64(h.count))
			b = appendSample(b, f.name+"_sum", nil, h.sum)
			b = appendSample(b, f.name+"_count", nil, float64(h.count))
		}
	}
	return b
}

// appendSample appends the line `name{labels} value`.
func appendSample(b []byte, name string, labels []label, v float64) []byte {
	b = append(b, name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.name...)
			b = append(b, `="`...)
			b = append(b, escapeLabel(l.value)...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, formatFloat(v)...)
	return append(b, '\n')
}

// labelEscaper and helpEscaper escape what the text format requires:
// backslash and newline in HELP text, and the double quote too in label
// values.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

// formatFloat formats a sample value or bound: integers a float64 holds
// exactly as integers (counters read "1234567", not "1.234567e+06"),
// others in the shortest form that reads back exactly, and the special
// values as Prometheus spells them.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) <= 1<<53:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Summary returns the metrics for the JSON answer: counters with their
// total as Count and Sum, gauges, and each histogram as a sample.
func (m agentMetrics) Summary() httpapi.MetricsSummary {
	var out httpapi.MetricsSummary
	for _, f := range m.families() {
		switch f.kind {
		case kindCounter:
			for _, s := range f.samples {
				sv := httpapi.SampledValue{Name: f.name, Count: uint64(s.value), Sum: s.value, Labels: labelMap(s.labels)}
				if sv.Count > 0 {
					sv.Mean = 1 // every increment is one
				}
				out.Counters = append(out.Counters, sv)
			}
		case kindGauge:
			for _, s := range f.samples {
				out.Gauges = append(out.Gauges, httpapi.GaugeValue{Name: f.name, Value: s.value, Labels: labelMap(s.labels)})
			}
		case kindHistogram:
			sv := httpapi.SampledValue{Name: f.name, Count: f.hist.count, Sum: f.hist.sum, Labels: map[string]string{}}
			if sv.Count > 0 {
				sv.Mean = sv.Sum / float64(sv.Count)
			}
			out.Samples = append(out.Samples, sv)
		}
	}
	return out
}

// labelMap returns labels as a map, empty (not nil) when there are none.
func labelMap(labels []label) map[string]string {
	m := make(map[string]string, len(labels))
	for _, l := range labels {
		m[l.name] = l.value
	}
	return m
}
