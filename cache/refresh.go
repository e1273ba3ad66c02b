package cache

import (
	"context"
	"math/rand/v2"
	"time"
)

// warnEvery is the least time between two warnings of the cache: when the
// servers go away, every entry's refresh fails at once, and one line says
// as much as ten thousand.
const warnEvery = int64(time.Minute)

// refresh keeps s current until it is idle, evicted, past MaxStale or the
// cache closes (ctx is canceled by whoever removes s). lastOK is now() of
// the fill.
//
// Each round is a blocking fetch at the entry's index. A new index
// publishes a new Entry; the same index only confirms that the servers are
// in contact. An error backs off (RetryMin doubling to RetryMax, jittered),
// so a Fetcher that fails at once still makes the loop wait. A retry is a
// plain read, not a blocking query: a blocking query would not return
// until the next change or the end of its wait, and until a fetch returns
// the entry cannot know that the servers are back, so it would go on being
// served as stale (and could pass MaxStale) with the servers reachable.
//
// An index lower than the entry's (a server restored from a snapshot, or
// another server that is behind) is Consul's "reset the index if it goes
// backwards" case: the value is accepted as the servers' current answer
// and published, and the next round is a plain read (minIndex 0) whose
// index the loop then blocks on, rather than blocking on an index that may
// be far ahead of the servers'. A returned index of 0 is blocked on as 1
// (Consul's other rule), so that it cannot turn into a loop of plain
// reads; and a blocking query that comes back well before its wait without
// moving forward (a Fetcher or server that does not block) is paced at
// RetryMin, so that nothing the Fetcher does can make the loop spin.
func (c *Cache[V]) refresh(ctx context.Context, s *slot[V], lastOK int64) {
	minIndex := max(s.entry.Load().Index, 1)
	failures := 0
	for ctx.Err() == nil {
		now := c.now()
		idleLeft := time.Duration(s.lastUsed.Load() + int64(c.cfg.IdleTimeout) - now)
		if idleLeft <= 0 {
			if c.dropIdle(s) {
				return
			}
			continue // used meanwhile
		}
		if since := s.failingSince.Load(); since != 0 && time.Duration(now-since) > c.cfg.MaxStale {
			c.drop(s)
			c.warn("cache entry dropped: refresh failing for longer than MaxStale", s.key, nil)
			return
		}
		// Ending the wait when the entry would turn idle lets the loop
		// notice in time without a timer of its own.
		wait := min(jitter(c.cfg.BlockingWait), idleLeft)
		v, idx, err := c.fetchRefresh(ctx, s.key, minIndex, wait)
		if ctx.Err() != nil {
			return // removed: whoever canceled ctx did the bookkeeping
		}
		elapsed := time.Duration(c.now() - now)
		if err != nil {
			c.refreshErrors.Add(1)
			failures++
			if s.failingSince.CompareAndSwap(0, lastOK) {
				c.warn("cache refresh failing; serving stale", s.key, err)
			}
			if !sleep(ctx, backoff(c.cfg.RetryMin, c.cfg.RetryMax, failures)) {
				return
			}
			minIndex = 0 // retry with a plain read: see refresh's doc
			continue
		}
		if failures > 0 {
			c.logger.Debug("cache refresh recovered", "kind", s.key.Kind, "name", s.key.Name,
				"dc", s.key.Datacenter, "failures", failures)
			failures = 0
		}
		lastOK = c.now()
		s.failingSince.Store(0)
		cur := s.entry.Load()
		if idx != cur.Index {
			c.publish(s, &Entry[V]{Value: v, Index: idx, Fetched: time.Now()})
		}
		if minIndex > 0 && idx <= minIndex && elapsed < wait/2 {
			// A blocking query came back early without moving forward:
			// the Fetcher (or a server) is not blocking. Pace it so that
			// it cannot spin; a real change still arrives within RetryMin.
			if !sleep(ctx, jitter(c.cfg.RetryMin)) {
				return
			}
		}
		if idx < cur.Index {
			minIndex = 0 // went backwards: start again with a plain read
		} else {
			minIndex = max(idx, 1)
		}
	}
}

// fetchRefresh runs one refresh fetch, bounded by its wait plus the
// servers' own jitter (wait/16, as Consul's) plus FetchTimeout, so that a
// fetch that never returns cannot keep the loop from noticing that its
// entry went idle.
func (c *Cache[V]) fetchRefresh(ctx context.Context, key Key, minIndex uint64, wait time.Duration) (V, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+wait/16+c.cfg.FetchTimeout)
	defer cancel()
	return c.fetch(ctx, key, minIndex, wait)
}

// backoff returns the wait after the given number of consecutive failures:
// lo doubled per failure up to hi, then jittered into [d/2, d] so that
// entries failing together spread out, and never below lo/2.
func backoff(lo, hi time.Duration, failures int) time.Duration {
	d := hi
	if failures >= 1 && failures < 32 {
		if x := lo << (failures - 1); x > 0 && x < hi {
			d = x
		}
	}
	return d/2 + rand.N(d/2+1)
}

// jitter returns d moved at random by up to ±10%.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// sleep waits for d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// warn logs at most one warning per warnEvery for the whole cache.
func (c *Cache[V]) warn(msg string, key Key, err error) {
	now, last := c.now(), c.lastWarn.Load()
	if last != 0 && now-last < warnEvery || !c.lastWarn.CompareAndSwap(last, now) {
		return
	}
	args := []any{"kind", key.Kind, "name", key.Name, "dc", key.Datacenter}
	if err != nil {
		args = append(args, "err", err)
	}
	c.logger.Warn(msg, args...)
}
