package rpc

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics counts the calls a Server runs, through either door, by
// method and result, and times those that answer at once; blocking queries
// (MinQueryIndex set), which wait on purpose, are counted as open
// instead.
type serverMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	blocking *prometheus.GaugeVec
	// Over the port only (budget.go): connections open, calls being
	// served, and what the client budget refused.
	conns    prometheus.Gauge
	inFlight prometheus.Gauge
	refused  *prometheus.CounterVec
	// late counts requests refused because they were read after their
	// caller's deadline.
	late *prometheus.CounterVec
}

func newServerMetrics() *serverMetrics {
	return &serverMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_rpc_requests_total",
			Help: "RPC calls a server ran, by method and result (ok, or the kind of error).",
		}, []string{"method", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_rpc_request_duration_seconds",
			Help:    "Time a server took to run an RPC call that is not a blocking query, by method; forwards included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method"}),
		blocking: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_rpc_blocking_queries",
			Help: "Blocking queries and streams a server is holding now, by method (Catalog.Feed: the agents' change feeds).",
		}, []string{"method"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_rpc_connections",
			Help: "Connections to the server port being served now: in their handshake, or RPC sessions (Raft's are Raft's).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_rpc_calls_in_flight",
			Help: "Calls and streams a server is serving over its port now, blocking queries included.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_rpc_client_budget_refused_total",
			Help: "Connections and calls refused because their client address was over its budget, by cap (max_conns_per_client, max_calls_per_client).",
		}, []string{"cap"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_rpc_late_requests_refused_total",
			Help: "Requests a server refused, unrun, because it read them after their caller's deadline (it was paused, or they were held up on the way), by method.",
		}, []string{"method"}),
	}
}

// Collectors returns the server's metrics, for the agent's registry.
func (s *Server) Collectors() []prometheus.Collector {
	m := s.metrics
	return []prometheus.Collector{m.calls, m.duration, m.blocking, m.conns, m.inFlight, m.refused, m.late}
}

// poolMetrics times the calls a Pool sends, by the datacenter of the
// server called: on a server, the forwards to other datacenters (and to
// its leader); on a client agent, its calls to its servers. Blocking
// queries are left out, as they wait on purpose.
type poolMetrics struct {
	duration *prometheus.HistogramVec
	// batches and batched count the coalesced batches sent (batch.go)
	// and the calls in them.
	batches, batched prometheus.Counter
}

func newPoolMetrics() *poolMetrics {
	return &poolMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_rpc_client_request_duration_seconds",
			Help:    "Time for an RPC call sent to a server to be answered, by the server's datacenter and result; blocking queries left out.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"dc", "result"}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_rpc_client_batches_total",
			Help: "Batches of writes a server forwarded to its leader as one call (those that arrived while a forward was in flight).",
		}),
		batched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_rpc_client_batched_calls_total",
			Help: "Writes a server forwarded to its leader inside batches; divided by cairn_rpc_client_batches_total, the mean batch size.",
		}),
	}
}

func (m *poolMetrics) observe(dc string, args any, err error, took time.Duration) {
	if bq, ok := args.(blockingQuery); ok && bq.isBlocking() {
		return
	}
	m.duration.WithLabelValues(dc, resultOf(err)).Observe(took.Seconds())
}

// Collectors returns the pool's metrics, for the agent's registry.
func (p *Pool) Collectors() []prometheus.Collector {
	return []prometheus.Collector{p.metrics.duration, p.metrics.batches, p.metrics.batched, p.skew.gauge}
}

// blockingQuery is satisfied by the requests that embed QueryOptions.
type blockingQuery interface{ isBlocking() bool }

func (q *QueryOptions) isBlocking() bool { return q.MinQueryIndex > 0 }

// observe runs call, a call of method with args, and records it.
func (m *serverMetrics) observe(method string, args reflect.Value, call func() error) error {
	bq, ok := args.Interface().(blockingQuery)
	blocking := ok && bq.isBlocking()
	if blocking {
		g := m.blocking.WithLabelValues(method)
		g.Inc()
		defer g.Dec()
	}
	start := time.Now()
	err := call()
	m.calls.WithLabelValues(method, resultOf(err)).Inc()
	if !blocking {
		m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	}
	return err
}

// resultOf names the outcome of a call for the result label: a few kinds
// an operator acts on, so that the series stay few.
func resultOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrPermissionDenied), errors.Is(err, ErrACLNotFound):
		return "permission_denied"
	case errors.Is(err, ErrNoLeader), errors.Is(err, ErrNotLeader):
		return "no_leader"
	case errors.Is(err, ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, ErrNoPathToDatacenter):
		return "no_path_to_datacenter"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrServerStopping):
		return "canceled"
	}
	return "error"
}
