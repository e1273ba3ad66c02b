package httpapi

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics counts the API's requests by route (the endpoint's pattern,
// so that the series stay few whatever the paths), method and status, and
// times those that answer at once; blocking queries, which wait on
// purpose, are counted as open instead.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	blocking prometheus.Gauge
}

func newHTTPMetrics() *httpMetrics {
	return &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_http_requests_total",
			Help: "HTTP API requests answered, by route, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_http_request_duration_seconds",
			Help:    "Time to answer an HTTP API request that is not a blocking query, by route and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		blocking: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_http_blocking_queries",
			Help: "HTTP API blocking queries (?index) waiting now.",
		}),
	}
}

// Collectors returns the server's metrics, for the agent's registry.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.httpMetrics.requests, s.httpMetrics.duration, s.httpMetrics.blocking}
}

// streamingRoutes answer for as long as the client asks (a log stream, a
// CPU profile): counted, not timed.
var streamingRoutes = map[string]bool{"/v1/agent/monitor": true, "/debug/pprof/{name...}": true}

// instrument wraps an endpoint's handler with its metrics.
func (m *httpMetrics) instrument(route string, h http.HandlerFunc) http.HandlerFunc {
	streaming := streamingRoutes[route]
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		blocking := r.URL.Query().Has("index")
		if blocking {
			m.blocking.Inc()
			defer m.blocking.Dec()
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r)
		m.requests.WithLabelValues(route, r.Method, statusText(sw.code)).Inc()
		if !blocking && !streaming {
			m.duration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
		}
	}
}

// statusWriter remembers the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer (to
// flush a stream, set deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusText is a status code as a label value, without allocating for
// the common ones.
func statusText(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusNotFound:
		return "404"
	case http.StatusBadRequest:
		return "400"
	case http.StatusForbidden:
		return "403"
	case http.StatusInternalServerError:
		return "500"
	case http.StatusServiceUnavailable:
		return "503"
	}
	return itoa3(code)
}

func itoa3(code int) string {
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{byte('0' + code/100), byte('0' + code/10%10), byte('0' + code%10)})
}
