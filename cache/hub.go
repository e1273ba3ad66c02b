package cache

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Hub follows each datacenter's Feed once for several caches, so that an
// agent whose caches hold different kinds of values (instances, nodes,
// prepared query answers) keeps one blocking call per datacenter open on
// the servers, not one per cache. A cache uses a Hub given in
// Config.Hub; given only a Feed, it makes a Hub of its own.
//
// Create it with NewHub, give it to the caches, and Close it after them.
type Hub struct {
	feed   Feed
	cfg    Config // the waits and backoff of the feed's calls
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	subs     []subscriber
	followed map[string]bool

	lastWarn atomic.Int64 // UnixNano of the last rate-limited warning
}

// subscriber is what a Hub needs of a cache: it is told which of its
// entries a change names, and which are out of contact since when.
type subscriber interface {
	invalidate(match func(Key) bool)
	markFailing(match func(Key) bool, lastOK time.Time)
}

// NewHub returns a hub that follows feed, with cfg's BlockingWait,
// FetchTimeout, RetryMin and RetryMax (cfg must be valid). A nil logger
// discards.
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
	h := &Hub{feed: feed, cfg: cfg, logger: logger.With("component", "cache"), followed: map[string]bool{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// Close stops following and waits for the feed calls to return.
func (h *Hub) Close() {
	h.cancel()
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

// each calls fn for every subscriber, outside the hub's lock.
func (h *Hub) each(fn func(subscriber)) {
	h.mu.Lock()
	subs := append([]subscriber(nil), h.subs...)
	h.mu.Unlock()
	for _, s := range subs {
		fn(s)
	}
}

// follow starts following dc unless the hub already does (or is closed).
func (h *Hub) follow(dc string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.followed[dc] || h.ctx.Err() != nil {
		return
	}
	h.followed[dc] = true
	h.wg.Go(func() { h.run(dc) })
}

// run follows dc's feed until the hub closes. Its first call (minIndex
// 0) resets, so entries filled before it began are refetched once; after
// the feed has failed it starts again from 0, since the servers may have
// changed meanwhile and the one answering may not be the one that did.
// While the feed fails, dc's entries count as out of contact from the
// feed's last success, which makes them stale after StaleAfter and drops
// them after MaxStale (the caches' sweep).
func (h *Hub) run(dc string) {
	ctx := h.ctx
	inDC := func(k Key) bool { return k.Datacenter == dc }
	var index uint64
	failures := 0
	lastOK := time.Now()
	for ctx.Err() == nil {
		wait := jitter(h.cfg.BlockingWait)
		start := time.Now()
		fctx, fcancel := context.WithTimeout(ctx, wait+wait/16+h.cfg.FetchTimeout)
		idx, changed, reset, err := h.feed(fctx, dc, index, wait)
		fcancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			h.each(func(s subscriber) { s.markFailing(inDC, lastOK) })
			h.warn(dc, err)
			if !sleep(ctx, backoff(h.cfg.RetryMin, h.cfg.RetryMax, failures)) {
				return
			}
			index = 0
			continue
		}
		if failures > 0 {
			h.logger.Debug("cache feed recovered", "dc", dc, "failures", failures)
			failures = 0
		}
		lastOK = time.Now()
		switch {
		case reset || index == 0:
			h.each(func(s subscriber) { s.invalidate(inDC) })
		case idx != index:
			match := func(k Key) bool { return k.Datacenter == dc && changed(k) }
			h.each(func(s subscriber) { s.invalidate(match) })
		}
		if (reset && index != 0 || idx <= index) && time.Since(start) < wait/2 {
			// Back early without news, or with another reset: pace the
			// feed so that a server that does not block cannot make it
			// spin; a real change still arrives within RetryMin.
			if !sleep(ctx, jitter(h.cfg.RetryMin)) {
				return
			}
		}
		index = max(idx, 1)
	}
}

// warn logs a failing feed at most once per warnEvery.
func (h *Hub) warn(dc string, err error) {
	now, last := time.Now().UnixNano(), h.lastWarn.Load()
	if last != 0 && now-last < warnEvery || !h.lastWarn.CompareAndSwap(last, now) {
		return
	}
	h.logger.Warn("cache feed failing; serving stale", "dc", dc, "err", err)
}
