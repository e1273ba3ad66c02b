package checks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cairndns/cairn/catalog"
)

// Notifier hears about the checks' changes. agent/local implements it to
// keep its copy of the checks and push changes to the servers.
type Notifier interface {
	// UpdateCheck is called when check id's status or output changes, not
	// for every run. Calls for one check come one at a time and in order;
	// calls for different checks may come concurrently, from the checks'
	// goroutines (or from UpdateTTL's caller). It must not block for long,
	// since its check waits for it, and must not call the Manager's Add,
	// Remove or Close, which wait for that check: hand the work to another
	// goroutine instead. It is never called for a check after Remove (or
	// the Add that replaces it, or Close) has returned.
	UpdateCheck(id string, status catalog.HealthStatus, output string)
}

// AliasSource is where alias checks read the health they mirror.
type AliasSource interface {
	// AliasHealth returns the aggregate health of service instance
	// serviceID on node (node "" is this agent's own node), or of the node
	// alone when serviceID is "". found is false when the instance or node
	// does not exist. It is called from the alias check's goroutine with a
	// ctx bounded by the check's Timeout, and must honour ctx.
	AliasHealth(ctx context.Context, node, serviceID string) (status catalog.HealthStatus, found bool, err error)
}

// Manager runs this agent's checks, each on its own goroutine, and
// reports their changes to a Notifier. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg    Config
	notify Notifier
	alias  AliasSource
	logger *slog.Logger

	mu     sync.Mutex
	checks map[string]*check
	closed bool

	runs runCounts // probe results, for metrics (runs.go)

	wg sync.WaitGroup // the checks' goroutines
}

// NewManager returns a Manager that runs checks with cfg (zero fields take
// DefaultConfig's values). n hears the changes; nil means nobody listens.
// alias answers alias checks; nil means Add refuses them. logger nil
// discards the log.
func NewManager(cfg Config, n Notifier, alias AliasSource, logger *slog.Logger) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		cfg:    cfg.withDefaults(),
		notify: n,
		alias:  alias,
		logger: logger.With("component", "checks"),
		checks: make(map[string]*check),
	}, nil
}

// Add validates def (with field prefix "", filling its defaults in a copy)
// and starts it, replacing a check with the same ID: the old one is
// stopped, and Add returns once it is gone, so the Notifier never hears
// from it again. Callers that keep the definition should Validate it
// themselves first to store the defaults (Validate is idempotent).
//
// A check starts in def.Status and Add does not report that starting
// status to the Notifier: the caller registers the check with it. Probing
// checks run first after a random delay in [0, Interval), then every
// Interval; a TTL check turns critical if no UpdateTTL comes within TTL.
func (m *Manager) Add(def Definition) error {
	if err := def.Validate("", m.cfg.EnableScriptChecks); err != nil {
		return err
	}
	c, err := m.newCheck(def)
	if err != nil {
		return fmt.Errorf("add check %q: %w", def.ID, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.cancel()
		return fmt.Errorf("add check %q: %w", def.ID, ErrClosed)
	}
	prev := m.checks[def.ID]
	m.checks[def.ID] = c
	if prev != nil {
		prev.cancel()
	}
	m.wg.Go(func() { c.run(prev) })
	m.mu.Unlock()
	if prev != nil {
		prev.stop()
	}
	return nil
}

// newCheck builds the check for a validated definition.
func (m *Manager) newCheck(def Definition) (*check, error) {
	var p prober
	interval := def.Interval
	switch def.Type() {
	case TypeHTTP:
		p = newHTTPProbe(&def, m.cfg.UserAgent)
	case TypeTCP:
		p = &tcpProbe{addr: def.TCP}
	case TypeUDP:
		p = &udpProbe{addr: def.UDP}
	case TypeGRPC:
		p = newGRPCProbe(&def, m.cfg.UserAgent)
	case TypeScript:
		p = &scriptProbe{args: def.Args, timeout: def.Timeout, limit: def.OutputMaxSize}
	case TypeDocker:
		p = newDockerProbe(&def, m.cfg.DockerHost)
	case TypeAlias:
		if m.alias == nil {
			return nil, ErrNoAliasSource
		}
		p = &aliasProbe{src: m.alias, node: def.AliasNode, service: def.AliasService}
		if interval == 0 {
			interval = m.cfg.AliasInterval
		}
	case TypeTTL:
		// no prober: runTTL
	}
	c := newCheck(def, p, interval, m.notify, m.logger)
	c.runs = &m.runs
	return c, nil
}

// Remove stops check id, cancelling a probe in flight, and waits for its
// goroutine. It reports whether the check existed.
func (m *Manager) Remove(id string) bool {
	m.mu.Lock()
	c, ok := m.checks[id]
	delete(m.checks, id)
	m.mu.Unlock()
	if ok {
		c.stop()
	}
	return ok
}

// UpdateTTL records the application's report for TTL check id (pass, warn,
// fail, or update with a status) and restarts its TTL. The status applies
// at once, without thresholds. It returns an error wrapping
// ErrUnknownCheck or ErrNotTTL, or a *catalog.FieldError for a status
// other than passing, warning or critical.
func (m *Manager) UpdateTTL(id string, status catalog.HealthStatus, output string) error {
	m.mu.Lock()
	c := m.checks[id]
	m.mu.Unlock()
	switch {
	case c == nil:
		return fmt.Errorf("update check %q: %w", id, ErrUnknownCheck)
	case c.prober != nil:
		return fmt.Errorf("update check %q: %w", id, ErrNotTTL)
	}
	return c.updateTTL(status, output)
}

// Status returns check id's current status and output; ok is false when
// no such check is running.
func (m *Manager) Status(id string) (status catalog.HealthStatus, output string, ok bool) {
	m.mu.Lock()
	c := m.checks[id]
	m.mu.Unlock()
	if c == nil {
		return "", "", false
	}
	status, output = c.current()
	return status, output, true
}

// Close stops every check, cancelling probes in flight, and waits for
// their goroutines. Add fails after Close; Close may be called again.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	checks := m.checks
	m.checks = make(map[string]*check)
	m.mu.Unlock()
	for _, c := range checks {
		c.cancel() // all at once, so they unwind in parallel
	}
	for _, c := range checks {
		c.stop()
	}
	m.wg.Wait()
}
