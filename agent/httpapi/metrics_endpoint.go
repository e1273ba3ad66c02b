package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// PrometheusContentType is the Content-Type of GET
// /v1/agent/metrics?format=prometheus: the text exposition format, version
// 0.0.4.
const PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

// writePrometheus writes every series of g to w in the Prometheus text
// exposition format, version 0.0.4.
func writePrometheus(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("write metric %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// summarize returns g's series for the JSON answer, each named by rename
// (nil: its own name): counters with their total as Count and Sum, gauges,
// and each histogram and summary as a sample of its count and sum. A
// failed gather gives what was gathered.
func summarize(g prometheus.Gatherer, rename func(string) string) MetricsSummary {
	var out MetricsSummary
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		name := mf.GetName()
		if rename != nil {
			name = rename(name)
		}
		for _, mt := range mf.GetMetric() {
			labels := labelMap(mt.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				v := mt.GetCounter().GetValue()
				sv := SampledValue{Name: name, Count: uint64(v), Sum: v, Labels: labels}
				if sv.Count > 0 {
					sv.Mean = 1 // every increment is one
				}
				out.Counters = append(out.Counters, sv)
			case dto.MetricType_GAUGE:
				out.Gauges = append(out.Gauges, GaugeValue{Name: name, Value: mt.GetGauge().GetValue(), Labels: labels})
			case dto.MetricType_UNTYPED:
				out.Gauges = append(out.Gauges, GaugeValue{Name: name, Value: mt.GetUntyped().GetValue(), Labels: labels})
			case dto.MetricType_HISTOGRAM:
				out.Samples = append(out.Samples, sampled(name, mt.GetHistogram().GetSampleCount(), mt.GetHistogram().GetSampleSum(), labels))
			case dto.MetricType_SUMMARY:
				out.Samples = append(out.Samples, sampled(name, mt.GetSummary().GetSampleCount(), mt.GetSummary().GetSampleSum(), labels))
			}
		}
	}
	return out
}

func sampled(name string, count uint64, sum float64, labels map[string]string) SampledValue {
	sv := SampledValue{Name: name, Count: count, Sum: sum, Labels: labels}
	if count > 0 {
		sv.Mean = sum / float64(count)
	}
	return sv
}

// labelMap returns labels as a map, empty (not nil) when there are none.
func labelMap(labels []*dto.LabelPair) map[string]string {
	m := make(map[string]string, len(labels))
	for _, l := range labels {
		m[l.GetName()] = l.GetValue()
	}
	return m
}

// MetricsSummary is the JSON answer of GET /v1/agent/metrics, loosely
// Consul's shape (its Timestamp is added by the handler). Names are the
// Prometheus names. Counters hold totals since the agent started, not
// Consul's per-interval aggregates: Count and Sum are both the total.
type MetricsSummary struct {
	Gauges   []GaugeValue
	Counters []SampledValue
	// Samples are the histograms: their Count, Sum and Mean.
	Samples []SampledValue
}

// GaugeValue is one gauge of MetricsSummary.
type GaugeValue struct {
	Name   string
	Value  float64
	Labels map[string]string // never nil: {} when the metric has none
}

// SampledValue is one counter or histogram of MetricsSummary.
type SampledValue struct {
	Name   string
	Count  uint64
	Sum    float64
	Mean   float64 // Sum/Count, 0 when Count is
	Labels map[string]string
}

// agentMetrics answers GET /v1/agent/metrics: with ?format=prometheus in
// the Prometheus text format, without it as JSON.
func (s *Server) agentMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Metrics == nil {
		return notFound("metrics are not served by this agent")
	}
	switch format := r.URL.Query().Get("format"); format {
	case "":
		sum := summarize(s.deps.Metrics, s.deps.MetricName)
		// Lists, never null, as Consul's.
		sum.Gauges, sum.Counters, sum.Samples = orEmpty(sum.Gauges), orEmpty(sum.Counters), orEmpty(sum.Samples)
		writeJSONPretty(w, r, metricsBody{Timestamp: time.Now().UTC().Truncate(time.Second).String(), MetricsSummary: sum})
		return nil
	case "prometheus":
		// Buffered, so that an error is answered as one rather than
		// cutting the text short after a 200.
		var buf bytes.Buffer
		if err := writePrometheus(&buf, s.deps.Metrics); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
		w.Header().Set("Content-Type", PrometheusContentType)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(buf.Bytes())
		return nil
	default:
		return badRequest("format", "must be prometheus, or absent for JSON; got %q", format)
	}
}

// metricsBody is the JSON answer: Consul's Timestamp ("2006-01-02
// 15:04:05 +0000 UTC"), then the summary's fields.
type metricsBody struct {
	Timestamp string
	MetricsSummary
}

// orEmpty returns s, or an empty slice when s is nil.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
