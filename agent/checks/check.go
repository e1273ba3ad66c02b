package checks

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cairndns/cairn/catalog"
)

// result is what one probe found.
type result struct {
	status catalog.HealthStatus
	output string
}

// prober runs one probe of a check's target. ctx carries the run's
// Timeout (and is cancelled when the check is removed); a probe returns
// promptly once ctx is done. A probe is only ever run by its check's own
// goroutine, one run at a time.
type prober interface {
	probe(ctx context.Context) result
}

// check is one running check: its definition, its goroutine, and its
// status machine.
type check struct {
	def    Definition // validated
	prober prober     // nil for a TTL check
	// interval between runs; Definition.Interval, or the alias poll
	// period for an alias check that sets none.
	interval time.Duration
	// direct: results are applied as they come, without the thresholds
	// (alias checks mirror a status that has been through them already).
	direct bool

	notify Notifier
	runs   *runCounts // the Manager's; nil in tests of one check
	logger *slog.Logger
	cancel context.CancelFunc
	ctx    context.Context // the check's lifetime; cancelled by stop
	done   chan struct{}   // closed when the check's goroutine returns

	mu        sync.Mutex
	status    catalog.HealthStatus
	output    string
	successes int // consecutive successful results
	failures  int // consecutive failed results
	seq       uint64
	expires   time.Time     // TTL checks: when the TTL runs out
	expired   bool          // TTL checks: expiry has been applied
	wake      chan struct{} // TTL checks: UpdateTTL wakes the expiry loop

	// notifyMu orders Notifier calls for this check: a change is
	// delivered only if no later one (by seq) has been, so the Notifier's
	// last word is always the check's current state.
	notifyMu sync.Mutex
	notified uint64
	told     catalog.HealthStatus // the status last told, for the log
	stopped  bool                 // set by stop: no Notifier call after Remove returns
}

func newCheck(def Definition, p prober, interval time.Duration, n Notifier, logger *slog.Logger) *check {
	ctx, cancel := context.WithCancel(context.Background())
	return &check{
		def:      def,
		prober:   p,
		interval: interval,
		direct:   def.Type() == TypeAlias,
		notify:   n,
		logger:   logger.With("check", def.ID),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		status:   def.Status,
		told:     def.Status,
		expires:  time.Now().Add(def.TTL),
		wake:     make(chan struct{}, 1),
	}
}

// run is the check's goroutine. It starts once prev, the check this one
// replaces (if any), has stopped, so their notifications never interleave.
func (c *check) run(prev *check) {
	defer close(c.done)
	if prev != nil {
		<-prev.done
	}
	if c.prober == nil {
		c.runTTL(c.ctx)
		return
	}
	c.runProbes(c.ctx)
}

// runProbes probes every interval until ctx is done. The first run waits a
// random part of the interval so that checks registered together (an
// agent restarting with a thousand services) spread over the period
// instead of firing together. The period runs from the end of one probe
// to the start of the next, so runs never overlap.
func (c *check) runProbes(ctx context.Context) {
	timer := time.NewTimer(rand.N(c.interval))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		rctx, cancel := context.WithTimeout(ctx, c.def.Timeout)
		r := c.prober.probe(rctx)
		cancel()
		if ctx.Err() != nil {
			return // removed mid-run: the result is about a check that is gone
		}
		if c.runs != nil {
			c.runs.add(c.def.Type(), r.status)
		}
		c.record(r)
		timer.Reset(c.interval)
	}
}

// record applies one probe's result.
func (c *check) record(r result) {
	c.mu.Lock()
	status := r.status
	if !c.direct {
		status = c.judgeLocked(r.status)
	}
	seq, changed := c.setLocked(status, r.output)
	c.mu.Unlock()
	if changed {
		c.publish(seq, status, r.output)
	}
}

// judgeLocked turns one result into the check's status, through the
// thresholds (Consul's rules, with one difference noted below):
//
//   - passing counts as a success; the check turns passing once
//     SuccessBeforePassing consecutive successes were seen (0 or 1: at
//     once) and keeps its status until then.
//   - critical counts as a failure; the check turns critical after
//     FailuresBeforeCritical consecutive failures, and warning after
//     FailuresBeforeWarning (when unset, the critical threshold, so that
//     FailuresBeforeCritical 3 alone means two failures change nothing).
//     A failure never improves the status: a check that is critical stays
//     critical.
//   - warning (HTTP 429, exit code 1) is a definite answer from the
//     target, not a flap, so it is applied at once and resets both counts.
//     Consul instead counts it as a success and holds it back until
//     SuccessBeforePassing is reached; applying it directly makes "the
//     target says it is degraded" visible without delay, and means a
//     passing check needs SuccessBeforePassing fresh successes after it.
//
// c.mu must be held.
func (c *check) judgeLocked(s catalog.HealthStatus) catalog.HealthStatus {
	d := &c.def
	switch s {
	case catalog.HealthPassing:
		c.failures = 0
		c.successes++
		if c.successes >= d.SuccessBeforePassing {
			return catalog.HealthPassing
		}
		return c.status
	case catalog.HealthWarning:
		c.successes, c.failures = 0, 0
		return catalog.HealthWarning
	}
	c.successes = 0
	c.failures++
	toWarn := d.FailuresBeforeWarning
	if toWarn == 0 {
		toWarn = d.FailuresBeforeCritical
	}
	switch {
	case c.failures >= d.FailuresBeforeCritical:
		return catalog.HealthCritical
	case c.failures >= toWarn:
		return c.status.Worse(catalog.HealthWarning)
	}
	return c.status
}

// setLocked stores status and output. It reports whether either changed
// and, if so, the change's sequence number for publish. c.mu must be held.
func (c *check) setLocked(status catalog.HealthStatus, output string) (uint64, bool) {
	if status == c.status && output == c.output {
		return 0, false
	}
	c.status, c.output = status, output
	c.seq++
	return c.seq, true
}

// publish tells the Notifier about change seq, unless a later change has
// been told already or the check was stopped. It must be called without
// c.mu and without the Manager's lock.
func (c *check) publish(seq uint64, status catalog.HealthStatus, output string) {
	c.notifyMu.Lock()
	defer c.notifyMu.Unlock()
	if c.stopped || seq <= c.notified {
		return
	}
	c.notified = seq
	if status != c.told {
		// Edges only, so a thousand checks log only when something changes.
		level := slog.LevelInfo
		if status == catalog.HealthCritical {
			level = slog.LevelWarn
		}
		c.logger.Log(context.Background(), level, "check status changed", "from", c.told, "to", status, "service", c.def.ServiceID)
		c.told = status
	}
	if c.notify != nil {
		c.notify.UpdateCheck(c.def.ID, status, output)
	}
}

// stop cancels the check (and any probe in flight), makes sure the
// Notifier hears nothing more from it, and waits for its goroutine.
func (c *check) stop() {
	c.cancel()
	c.notifyMu.Lock()
	c.stopped = true
	c.notifyMu.Unlock()
	<-c.done
}

// current returns the check's status and output.
func (c *check) current() (catalog.HealthStatus, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.output
}

// truncate returns at most limit bytes of b as a string, cut back to a rune
// boundary so that a truncated output is still valid UTF-8.
func truncate(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	n := limit
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}
