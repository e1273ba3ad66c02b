package telemetry

import (
	"errors"
	"fmt"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Prefix starts the name of every series the libraries emit through
// go-metrics: cairn_raft_apply, cairn_memberlist_gossip, ...
const Prefix = "cairn"

// Config is the telemetry block of the agent's configuration; its field
// names are Consul's.
type Config struct {
	// PrometheusRetentionTime is how long a series the libraries emit is
	// still reported after its last update. Default 1 minute. (Consul's
	// knob of this name also turns the Prometheus format on; cairn always
	// serves it.)
	PrometheusRetentionTime time.Duration
	// DisableHostname leaves the host name out of the names of the
	// libraries' gauges, as Prometheus users want (their scrape labels
	// the instance). Default true; false puts it in, as go-metrics and
	// Consul do by default.
	DisableHostname bool
	// ConsulAliases adds Consul's names of the series Consul's dashboards
	// and alerts read (consul_raft_*, consul_autopilot_healthy,
	// consul_runtime_*, …: consul.go) beside cairn's own, so those work
	// unchanged. Default true; false leaves only cairn's names.
	ConsulAliases bool
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{PrometheusRetentionTime: time.Minute, DisableHostname: true, ConsulAliases: true}
}

// Validate checks c, naming the configuration field at fault.
func (c Config) Validate() error {
	if c.PrometheusRetentionTime < time.Second {
		return fmt.Errorf("telemetry.prometheus_retention_time: must be at least 1s, got %s", c.PrometheusRetentionTime)
	}
	return nil
}

// Registry is one agent's metrics. Safe for concurrent use.
type Registry struct {
	reg *prometheus.Registry
	// aliases is Config.ConsulAliases; host the host name Consul puts in
	// its gauges' names ("" with DisableHostname).
	aliases bool
	host    string
	// names maps the Consul series the last Gather added to Consul's
	// dotted names (JSONName).
	mu    sync.Mutex
	names map[string]string
}

// New returns a registry reporting the libraries' series, the Go runtime's
// and the process's, and the given collectors (the agent's own series).
// A collector whose series clash with another's is an error.
func New(cfg Config, own ...prometheus.Collector) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sink, err := librarySink(cfg)
	if err != nil {
		return nil, err
	}
	r := &Registry{reg: prometheus.NewRegistry(), aliases: cfg.ConsulAliases}
	if !cfg.DisableHostname {
		r.host = hostname()
	}
	all := append([]prometheus.Collector{
		sink,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, own...)
	if err := r.Register(all...); err != nil {
		return nil, err
	}
	return r, nil
}

// Register adds collectors to the registry, for parts made after it (the
// HTTP server, the RPC server). A collector whose series clash with
// another's is an error.
func (r *Registry) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := r.reg.Register(c); err != nil {
			return fmt.Errorf("register metrics collector %T: %w", c, err)
		}
	}
	return nil
}

// Gather collects every series now, sorted by name.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := r.reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	if r.aliases {
		var names map[string]string
		mfs, names = r.consulNames(mfs) // consul.go
		r.mu.Lock()
		r.names = names
		r.mu.Unlock()
	}
	return mfs, nil
}

// JSONName is the name a series goes by in the JSON form of
// /v1/agent/metrics: Consul's dotted one ("consul.runtime.alloc_bytes")
// for the Consul series Gather added, else its own.
func (r *Registry) JSONName(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if dotted, ok := r.names[name]; ok {
		return dotted
	}
	return name
}

// librarySink is the process's go-metrics sink, installed as go-metrics'
// global by the first call: raft and memberlist write there, and there is
// one global per process (see the package comment). Later calls get the
// same sink, made with the first call's Config.
var library struct {
	once sync.Once
	sink *gmprom.PrometheusSink
	err  error
}

func librarySink(cfg Config) (*gmprom.PrometheusSink, error) {
	library.once.Do(func() {
		// The sink registers itself with a registerer; a private one
		// keeps it out of client_golang's default registry, and each
		// agent's Registry registers it again.
		sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			Expiration: cfg.PrometheusRetentionTime,
			Registerer: prometheus.NewRegistry(),
			Name:       Prefix,
		})
		if err != nil {
			library.err = fmt.Errorf("make the go-metrics sink: %w", err)
			return
		}
		mc := gometrics.DefaultConfig(Prefix)
		mc.EnableHostname = !cfg.DisableHostname
		mc.EnableHostnameLabel = false
		mc.EnableRuntimeMetrics = false // the Go collector reports the runtime
		if _, err := gometrics.NewGlobal(mc, sink); err != nil {
			library.err = fmt.Errorf("install the go-metrics sink: %w", err)
			return
		}
		library.sink = sink
	})
	if library.err != nil {
		return nil, library.err
	}
	if library.sink == nil {
		return nil, errors.New("the go-metrics sink is not installed")
	}
	return library.sink, nil
}
