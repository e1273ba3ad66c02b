package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cairndns/cairn/agent/httpapi"
)

// metricsServer returns the handler of a server gathering from g (none
// when nil).
func metricsServer(t *testing.T, g prometheus.Gatherer) http.Handler {
	t.Helper()
	return newAPI(t, testConfig(), httpapi.Deps{Metrics: g}).Handler()
}

// testRegistry holds a counter x_total of 3 with an rcode label, and a gauge
// g of 2.5.
func testRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "X."}, []string{"rcode"})
	c.WithLabelValues("NOERROR").Add(3)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "G."})
	g.Set(2.5)
	reg.MustRegister(c, g)
	return reg
}

func TestAgentMetricsPrometheus(t *testing.T) {
	const text = "# HELP g G.\n# TYPE g gauge\ng 2.5\n# HELP x_total X.\n# TYPE x_total counter\nx_total{rcode=\"NOERROR\"} 3\n"
	rec := serve(metricsServer(t, testRegistry(t)), http.MethodGet, "/v1/agent/metrics?format=prometheus", "")
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
		Counters: []httpapi.SampledValue{{Name: "x_total", Count: 3, Sum: 3, Mean: 1, Labels: map[string]string{"rcode": "NOERROR"}}},
	}
	rec := serve(metricsServer(t, testRegistry(t)), http.MethodGet, "/v1/agent/metrics", "")
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
	if len(got.Counters) != 1 || got.Counters[0].Name != "x_total" || got.Counters[0].Count != 3 || got.Counters[0].Labels["rcode"] != "NOERROR" {
		t.Errorf("got Counters %+v, want %+v", got.Counters, sum.Counters)
	}
	if len(got.Gauges) != 1 || got.Gauges[0].Value != 2.5 {
		t.Errorf("got Gauges %+v, want %+v", got.Gauges, sum.Gauges)
	}
}

func TestAgentMetricsErrors(t *testing.T) {
	failing := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return nil, errBoom })
	tests := []struct {
		name   string
		g      prometheus.Gatherer
		method string
		target string
		code   int
	}{
		{"not wired", nil, http.MethodGet, "/v1/agent/metrics", http.StatusNotFound},
		{"unknown format", prometheus.NewRegistry(), http.MethodGet, "/v1/agent/metrics?format=xml", http.StatusBadRequest},
		{"gather fails", failing, http.MethodGet, "/v1/agent/metrics?format=prometheus", http.StatusInternalServerError},
		{"PUT", prometheus.NewRegistry(), http.MethodPut, "/v1/agent/metrics", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(metricsServer(t, tt.g), tt.method, tt.target, "")
			wantStatus(t, rec, tt.code)
			errorBody(t, rec) // a JSON error, not a cut-off text
		})
	}
}
