package httpapi_test

import (
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
)

// fakeMetrics writes text as the Prometheus form (or fails with err) and
// returns sum as the JSON one.
type fakeMetrics struct {
	text string
	err  error
	sum  httpapi.MetricsSummary
}

func (f fakeMetrics) WritePrometheus(w io.Writer) error {
	if f.err != nil {
		_, _ = io.WriteString(w, "# HELP half")
		return f.err
	}
	_, err := io.WriteString(w, f.text)
	return err
}

func (f fakeMetrics) Summary() httpapi.MetricsSummary { return f.sum }

// metricsServer returns the handler of a server with empty fakes and m
// (none when nil).
func metricsServer(t *testing.T, m httpapi.Metrics) http.Handler {
	t.Helper()
	s, err := httpapi.New(testConfig(), &fakeLocal{}, &fakeCatalog{}, fakeStatus("10.0.0.1:8300"), &fakeCluster{}, discard())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if m != nil {
		s.SetMetrics(m)
	}
	return s.Handler()
}

func TestAgentMetricsPrometheus(t *testing.T) {
	const text = "# HELP x_total X.\n# TYPE x_total counter\nx_total 3\n"
	rec := serve(metricsServer(t, fakeMetrics{text: text}), http.MethodGet, "/v1/agent/metrics?format=prometheus", "")
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Header().Get("Content-Type"); got != httpapi.PrometheusContentType {
		t.Errorf("got Content-Type %q, want %q", got, httpapi.PrometheusContentType)
	}
	if got := rec.Body.String(); got != text {
		t.Errorf("got body %q, want %q", got, text)
	}
}

func TestAgentMetricsJSON(t *testing.T) {
	sum := httpapi.MetricsSummary{
		Gauges:   []httpapi.GaugeValue{{Name: "g", Value: 2.5, Labels: map[string]string{}}},
		Counters: []httpapi.SampledValue{{Name: "c_total", Count: 3, Sum: 3, Mean: 1, Labels: map[string]string{"rcode": "NOERROR"}}},
	}
	rec := serve(metricsServer(t, fakeMetrics{sum: sum}), http.MethodGet, "/v1/agent/metrics", "")
	wantStatus(t, rec, http.StatusOK)
	body := decode[map[string]any](t, rec)
	if got, want := keys(t, body), sorted("Timestamp", "Gauges", "Counters", "Samples"); !slices.Equal(got, want) {
		t.Errorf("got keys %v, want %v", got, want)
	}
	if ts, _ := body["Timestamp"].(string); len(ts) != len("2006-01-02 15:04:05 +0000 UTC") {
		t.Errorf("got Timestamp %q, want Consul's form 2006-01-02 15:04:05 +0000 UTC", ts)
	}
	if samples, ok := body["Samples"].([]any); !ok || len(samples) != 0 {
		t.Errorf("got Samples %v, want [] (not null)", body["Samples"])
	}
	got := decode[httpapi.MetricsSummary](t, rec)
	if len(got.Counters) != 1 || got.Counters[0].Name != "c_total" || got.Counters[0].Count != 3 || got.Counters[0].Labels["rcode"] != "NOERROR" {
		t.Errorf("got Counters %+v, want %+v", got.Counters, sum.Counters)
	}
	if len(got.Gauges) != 1 || got.Gauges[0].Value != 2.5 {
		t.Errorf("got Gauges %+v, want %+v", got.Gauges, sum.Gauges)
	}
}

func TestAgentMetricsErrors(t *testing.T) {
	tests := []struct {
		name   string
		m      httpapi.Metrics
		method string
		target string
		code   int
	}{
		{"not wired", nil, http.MethodGet, "/v1/agent/metrics", http.StatusNotFound},
		{"unknown format", fakeMetrics{}, http.MethodGet, "/v1/agent/metrics?format=xml", http.StatusBadRequest},
		{"write fails", fakeMetrics{err: errBoom}, http.MethodGet, "/v1/agent/metrics?format=prometheus", http.StatusInternalServerError},
		{"PUT", fakeMetrics{}, http.MethodPut, "/v1/agent/metrics", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(metricsServer(t, tt.m), tt.method, tt.target, "")
			wantStatus(t, rec, tt.code)
			errorBody(t, rec) // a JSON error, not a cut-off text
		})
	}
}
