package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// PrometheusContentType is the Content-Type of GET
// /v1/agent/metrics?format=prometheus: the text exposition format, version
// 0.0.4.
const PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metrics is the agent's metrics, read on each GET /v1/agent/metrics from
// the handler's goroutine, several at once. Both methods report the same
// metrics as they are at the call.
type Metrics interface {
	// WritePrometheus writes every metric to w in the Prometheus text
	// exposition format, version 0.0.4.
	WritePrometheus(w io.Writer) error
	// Summary returns the metrics for the JSON answer.
	Summary() MetricsSummary
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

// SetMetrics makes GET /v1/agent/metrics answer with m. Call it before
// Start (or before serving Handler); without it the endpoint answers 404.
func (s *Server) SetMetrics(m Metrics) { s.metrics = m }

// agentMetrics answers GET /v1/agent/metrics: with ?format=prometheus in
// the Prometheus text format, without it as JSON.
func (s *Server) agentMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		return notFound("metrics are not served by this agent")
	}
	switch format := r.URL.Query().Get("format"); format {
	case "":
		sum := s.metrics.Summary()
		// Lists, never null, as Consul's.
		sum.Gauges, sum.Counters, sum.Samples = orEmpty(sum.Gauges), orEmpty(sum.Counters), orEmpty(sum.Samples)
		writeJSONPretty(w, r, metricsBody{Timestamp: time.Now().UTC().Truncate(time.Second).String(), MetricsSummary: sum})
		return nil
	case "prometheus":
		// Buffered, so that an error is answered as one rather than
		// cutting the text short after a 200.
		var buf bytes.Buffer
		if err := s.metrics.WritePrometheus(&buf); err != nil {
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
