package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/internal/clock"
)

// warnEvery is the least time between two warnings of a hub or a cache:
// when the servers go away, every datacenter's feed and every refetch
// fail at once, and one line says as much as ten thousand.
const warnEvery = int64(time.Minute)

// Hub follows each datacenter's Feed once for several caches, so that an
// agent whose caches hold different kinds of values (instances, nodes,
// prepared query answers) keeps one feed per datacenter open on the
// servers, not one per cache. Every cache needs one (Config.Hub).
//
// A hub follows a datacenter only while one of its caches holds an entry
// of it: the first entry of a datacenter starts that datacenter's feed
// loop, and removing its last entry (idle, evicted, past MaxStale, or its
// cache closed) stops it. Datacenter names come from DNS questions, so
// anything kept per datacenter for longer than its entries would grow
// with every name anyone asks for.
//
// Create it with NewHub, give it to the caches, and Close it after them.
type Hub struct {
	feed   Feed
	cfg    Config // the waits and backoff of the feed's calls
	logger *slog.Logger
	wg     sync.WaitGroup // one run per followed datacenter

	mu     sync.Mutex
	subs   []subscriber
	dcs    map[string]*follower // the datacenters followed now
	closed bool

	lastWarn atomic.Int64 // UnixNano of the last rate-limited warning
}

// follower is a datacenter the hub follows, and why.
type follower struct {
	entries int                // the datacenter's entries in the hub's caches
	stop    context.CancelFunc // ends its run (and the feed call in flight)
	// failingSince is the feed's last success while it fails (zero while
	// it works), and err its last error. A follower whose feed fails is
	// kept after its last entry goes (entries 0), so that the feed is
	// retried and misses keep failing until it works again, or until no
	// one has asked for the datacenter for IdleTimeout (asked).
	failingSince time.Time
	err          error
	asked        time.Time
	// kick, buffered 1, cuts short the run's wait before its next try:
	// a question refused for the failing feed tries it again at once
	// (after RetryMin), so the names answer as soon as it works.
	kick chan struct{}
}

// subscriber is what a Hub needs of a cache: it is told which of its
// entries a change names, and which are out of contact since when.
type subscriber interface {
	invalidate(match func(Key) bool, atLeast uint64)
	markFailing(match func(Key) bool, lastOK time.Time)
}

// NewHub returns a hub that follows feed, with cfg's BlockingWait,
// FetchTimeout, RetryMin and RetryMax, and MaxStale and IdleTimeout for a
// failing feed (cfg must be valid; its other fields are the caches'
// business). A nil logger discards.
func NewHub(feed Feed, cfg Config, logger *slog.Logger) (*Hub, error) {
	if feed == nil {
		return nil, errors.New("cache: NewHub: nil Feed")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{feed: feed, cfg: cfg, logger: logger.With("component", "cache"), dcs: map[string]*follower{}}, nil
}

// Close stops following and waits for the feed calls to return. Close the
// caches first: a cache left open no longer hears of changes. Close may be
// called more than once.
func (h *Hub) Close() {
	h.mu.Lock()
	// Under mu, so that no acquire starts a run once Wait may have begun.
	h.closed = true
	for dc, f := range h.dcs {
		f.stop()
		delete(h.dcs, dc)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func (h *Hub) subscribe(s subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs = append(h.subs, s)
}

func (h *Hub) unsubscribe(s subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.subs {
		if x == s {
			h.subs = append(h.subs[:i], h.subs[i+1:]...)
			return
		}
	}
}

// each calls fn for every subscriber, outside the hub's lock: a cache
// calls acquire and release with its own lock held, so the hub must never
// wait for a cache's lock while holding its own.
func (h *Hub) each(fn func(subscriber)) {
	h.mu.Lock()
	subs := append([]subscriber(nil), h.subs...)
	h.mu.Unlock()
	for _, s := range subs {
		fn(s)
	}
}

// acquire counts one more entry of dc, and starts following dc if it is
// the only one. A cache calls it when it inserts an entry.
func (h *Hub) acquire(dc string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	f := h.dcs[dc]
	if f == nil {
		ctx, stop := context.WithCancel(context.Background())
		f = &follower{stop: stop, kick: make(chan struct{}, 1)}
		h.dcs[dc] = f
		h.wg.Go(func() { h.run(ctx, dc, f.kick) })
	}
	f.entries++
}

// release counts one entry of dc less, and stops following dc if it was
// the last. A cache calls it when it removes an entry. The run stopped
// ends on its own (Close waits for it); one started meanwhile for the same
// datacenter is a new run, from index 0, like any first one. A report the
// old run was already making may still reach the caches: at worst a
// needless refetch, or entries marked out of contact until the new run's
// first call has them refetched.
func (h *Hub) release(dc string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.dcs[dc]
	if f == nil { // acquired after Close
		return
	}
	f.entries--
	if f.entries <= 0 {
		if !f.failingSince.IsZero() {
			// Its entries went because the feed fails (past MaxStale):
			// keep retrying it, so that the datacenter answers again once
			// it works (run stops it then, or when no one asks).
			f.asked = time.Now()
			return
		}
		f.stop()
		delete(h.dcs, dc)
	}
}

// ErrFeedFailing is wrapped by Get's error for a miss of a datacenter
// whose change feed has failed for longer than MaxStale: with no way to
// hear of changes, an answer could be wrong for as long as the agent
// runs, so the cache treats the datacenter as out of reach (the DNS layer
// answers SERVFAIL) until the feed works again, whatever the reason it
// fails (the servers unreachable, or an RPC this agent's servers do not
// serve: a version outside the supported range).
var ErrFeedFailing = errors.New("the datacenter's change feed has failed for longer than max_stale")

// failing reports, for a miss of dc, whether dc's feed has failed for
// longer than maxStale, with its last error; it counts as a question
// asked of dc, which keeps the feed retried.
func (h *Hub) failing(dc string, maxStale time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.dcs[dc]
	if f == nil || f.failingSince.IsZero() || time.Since(f.failingSince) <= maxStale {
		return nil
	}
	f.asked = time.Now()
	select {
	case f.kick <- struct{}{}:
	default:
	}
	return fmt.Errorf("%w (since %s): %w", ErrFeedFailing, f.failingSince.UTC().Format(time.RFC3339), f.err)
}

// reportFailing records that dc's feed failed with err, its last success
// at lastOK; reportOK that it works, and says whether the run should stop:
// dc has no entries left (they were dropped while it failed).
func (h *Hub) reportFailing(dc string, lastOK time.Time, err error) (idle bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.dcs[dc]
	if f == nil {
		return false
	}
	if f.failingSince.IsZero() {
		f.failingSince = lastOK
	}
	f.err = err
	if f.entries <= 0 && time.Since(f.asked) > h.cfg.IdleTimeout {
		f.stop()
		delete(h.dcs, dc)
		return true
	}
	return false
}

func (h *Hub) reportOK(dc string) (idle bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.dcs[dc]
	if f == nil {
		return false
	}
	f.failingSince, f.err = time.Time{}, nil
	if f.entries <= 0 {
		f.stop()
		delete(h.dcs, dc)
		return true
	}
	return false
}

// run follows dc's feed until ctx ends (dc's last entry went, or Close).
// Its first call (minIndex 0) resets, so entries filled before it began
// are refetched once; after the feed has failed it starts again from 0,
// since the servers may have changed meanwhile and the one answering may
// not be the one that did. While the feed fails, dc's entries count as
// out of contact from the feed's last success, which makes them stale
// after StaleAfter and drops them after MaxStale (the caches' sweep).
func (h *Hub) run(ctx context.Context, dc string, kick <-chan struct{}) {
	feed := h.feed(dc)
	defer feed.Stop()
	inDC := func(k Key) bool { return k.Datacenter == dc }
	var index uint64
	failures := 0
	lastOK := time.Now()
	for ctx.Err() == nil {
		wait := jitter(h.cfg.BlockingWait)
		start := time.Now()
		fctx, fcancel := context.WithTimeout(ctx, wait+wait/16+h.cfg.FetchTimeout)
		idx, changed, reset, err := feed.Next(fctx, index, wait)
		fcancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			h.each(func(s subscriber) { s.markFailing(inDC, lastOK) })
			h.warn(dc, lastOK, err)
			if h.reportFailing(dc, lastOK, err) {
				return
			}
			if !h.pause(ctx, backoff(h.cfg.RetryMin, h.cfg.RetryMax, failures), kick) {
				return
			}
			index = 0
			continue
		}
		if failures > 0 {
			h.logger.Info("cache feed recovered", "dc", dc, "failures", failures, "down", time.Since(lastOK).Round(time.Millisecond))
			failures = 0
			h.lastWarn.Store(0)
			if h.reportOK(dc) {
				return
			}
		}
		lastOK = time.Now()
		switch {
		case reset || index == 0:
			h.each(func(s subscriber) { s.invalidate(inDC, idx) })
		case idx != index:
			match := func(k Key) bool { return k.Datacenter == dc && changed(k) }
			h.each(func(s subscriber) { s.invalidate(match, idx) })
		}
		if (reset && index != 0 || idx <= index) && time.Since(start) < wait/2 {
			// Back early without news, or with another reset: pace the
			// feed so that a server that does not block cannot make it
			// spin; a real change still arrives within RetryMin.
			if !clock.Sleep(ctx, jitter(h.cfg.RetryMin)) {
				return
			}
		}
		index = max(idx, 1)
	}
}

// pause waits d before the next try of a failing feed, or RetryMin if a
// kick comes first; it reports false when ctx ends.
func (h *Hub) pause(ctx context.Context, d time.Duration, kick <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-kick:
		return clock.Sleep(ctx, min(d, h.cfg.RetryMin))
	case <-ctx.Done():
		return false
	}
}

// warn logs a failing feed at most once per warnEvery, for as long as it
// fails: at WARN while its entries are served stale, at ERROR once they
// are past MaxStale and the datacenter's names answer SERVFAIL.
func (h *Hub) warn(dc string, lastOK time.Time, err error) {
	now, last := time.Now().UnixNano(), h.lastWarn.Load()
	if last != 0 && now-last < warnEvery || !h.lastWarn.CompareAndSwap(last, now) {
		return
	}
	down := time.Since(lastOK).Round(time.Second)
	if down > h.cfg.MaxStale {
		h.logger.Error("cache feed failing for longer than max_stale; the datacenter's names answer SERVFAIL until it works",
			"dc", dc, "down", down, "max_stale", h.cfg.MaxStale, "err", err)
		return
	}
	h.logger.Warn("cache feed failing; serving stale", "dc", dc, "down", down, "max_stale", h.cfg.MaxStale, "err", err)
}

// backoff returns the wait after the given number of consecutive failures:
// lo doubled per failure up to hi, then jittered into [d/2, d] so that
// datacenters and entries failing together spread out, and never below
// lo/2.
func backoff(lo, hi time.Duration, failures int) time.Duration {
	d := hi
	if failures >= 1 && failures < 32 {
		if x := lo << (failures - 1); x > 0 && x < hi {
			d = x
		}
	}
	return d/2 + rand.N(d/2+1)
}

// jitter returns d moved at random by up to ±10%, so that feed calls
// started together do not return together.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}
