package cache

import (
	"context"
	"time"
)

// Feed starts following datacenter dc's changes for a Hub, which calls
// Next on the Follower for as long as it follows dc and Stop once it has
// stopped. A hub may start a new follower of dc while the one it stopped
// still ends.
type Feed func(dc string) Follower

// Follower is one datacenter's change feed, as a Hub follows it. Next
// blocks until something changes after minIndex, or until wait passes,
// and returns the index it reached and which keys may have changed since
// minIndex. reset says any key may have changed (the feed cannot tell
// what: a gap in the servers' change log, a server that is behind);
// changed is not consulted then. minIndex 0 is a plain read that returns
// at once (the cache refetches everything after it anyway). As with
// blocking queries, an index of 0 is blocked on as 1, so a change must
// have an index above 1 (Raft's first entry is its configuration, so a
// catalog write's always has). Next must return promptly once ctx is
// done. The hub makes one call at a time, each with the index the last
// one returned (or 0 after a failure), so a follower may keep a stream
// open between calls; Stop, after the last call, lets it go.
type Follower interface {
	Next(ctx context.Context, minIndex uint64, wait time.Duration) (index uint64, changed func(Key) bool, reset bool, err error)
	Stop()
}

// catchUpWait bounds how long a refetch waits for a server that is behind
// the feed's index: replication lag, not an outage, so short.
const catchUpWait = time.Second

// refetchers is how many entries a cache refetches at once after a
// change: enough that a reset of ten thousand entries takes a second or
// so on a LAN, few enough not to flood a server.
const refetchers = 8

// An entry has no goroutine and no blocking query of its own: the hub
// follows the feed of each datacenter the entries belong to (one Follower
// each, hub.go), and the cache refetches the entries the feed names (plain
// reads, by a few workers, refetch). This is what lets one agent hold ten
// thousand names for the memory of their values, and a server carry a
// thousand agents for a thousand open feeds instead of millions of
// queries. (A blocking query per entry, which this replaced, cost a
// goroutine on the agent and a watch on a server per entry: about 14 KiB
// on a server and twice that on a client, measured.)
//
// A refetch that is asked for while one of the same entry is running runs
// again after it, and a fill that is named while in flight is refetched
// once inserted, so a change that lands while a read of the entry is in
// progress is never lost.

// markFailing (the hub's) marks the matching entries as out of contact
// since lastOK, unless they already are, and counts a refresh error if
// there were any: a cache that shares the hub but has no entry of the
// failing datacenter has lost nothing.
func (c *Cache[V]) markFailing(match func(Key) bool, lastOK time.Time) {
	since := max(int64(lastOK.Sub(c.epoch))+1, 1)
	matched := false
	c.table.Range(func(_, v any) bool {
		if s := v.(*slot[V]); match(s.key) {
			matched = true
			s.failingSince.CompareAndSwap(0, since)
		}
		return true
	})
	if matched {
		c.refreshErrors.Add(1)
	}
}

// invalidate queues a refetch of every entry match names, and marks the
// fills in flight that it names to be refetched once inserted. atLeast is
// the index the feed reported: the refetch asks for data at least that
// recent, so a server that is behind the one that answered the feed (a
// follower, or another server of a remote datacenter) catches up before
// it answers, rather than handing back the old value for good.
func (c *Cache[V]) invalidate(match func(Key) bool, atLeast uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, f := range c.fills {
		if match(key) {
			f.invalidated = true
		}
	}
	c.table.Range(func(_, v any) bool {
		if s := v.(*slot[V]); match(s.key) {
			s.atLeast = max(s.atLeast, atLeast)
			c.queueLocked(s)
		}
		return true
	})
}

// queueLocked queues s for a refetch; if one is running, it runs again
// after it.
func (c *Cache[V]) queueLocked(s *slot[V]) {
	switch {
	case s.removed || s.queued:
	case s.refetching:
		s.again = true
	default:
		s.queued = true
		c.queue = append(c.queue, s)
		if len(c.queue) > 2*c.cfg.MaxEntries {
			c.compactQueueLocked()
		}
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// compactQueueLocked drops the removed slots from the queue. A slot is
// queued at most once at a time, so the queue holds at most MaxEntries
// live slots; but a removed one stays until a worker reaches it, and
// while the workers are slow (servers that time out) resets and evictions
// could otherwise pile up removed slots without bound. Compacting only
// past twice MaxEntries keeps the cost at O(1) per queued slot.
func (c *Cache[V]) compactQueueLocked() {
	live := c.queue[:0]
	for _, s := range c.queue {
		if !s.removed {
			live = append(live, s)
		}
	}
	clear(c.queue[len(live):])
	c.queue = live
}

// refetcher refetches queued entries until the cache closes.
func (c *Cache[V]) refetcher() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			select {
			case <-c.wake:
				continue
			case <-c.done:
				return
			}
		}
		s := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if len(c.queue) > 0 {
			select { // let another worker take the next one
			case c.wake <- struct{}{}:
			default:
			}
		}
		s.queued = false
		if s.removed {
			c.mu.Unlock()
			continue
		}
		s.refetching = true
		atLeast := s.atLeast
		c.mu.Unlock()
		c.refetch(s, atLeast)
	}
}

// refetch reads s's key afresh, at index atLeast or later (waiting up to
// catchUpWait for the server to get there; 0: any), and publishes it. A
// failure retries after a backoff (the slot counts as out of contact
// meanwhile); a refetch asked for while this one ran runs next.
func (c *Cache[V]) refetch(s *slot[V], atLeast uint64) {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.FetchTimeout)
	var minIndex uint64
	var wait time.Duration
	if atLeast > 1 {
		minIndex, wait = atLeast-1, min(catchUpWait, c.cfg.FetchTimeout/2)
	}
	v, idx, err := c.fetch(ctx, s.key, minIndex, wait)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	s.refetching = false
	if s.removed || c.closed {
		return
	}
	if err != nil {
		c.refreshErrors.Add(1)
		s.failures++
		if s.failingSince.CompareAndSwap(0, s.lastOK) {
			c.warn("cache refetch failing; serving stale", s.key, err)
		}
		s.again = false
		d := backoff(c.cfg.RetryMin, c.cfg.RetryMax, s.failures)
		time.AfterFunc(d, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.closed {
				c.queueLocked(s)
			}
		})
		return
	}
	s.failures = 0
	s.lastOK = c.now()
	s.failingSince.Store(0)
	c.publishLocked(s, &Entry[V]{Value: v, Index: idx, Fetched: time.Now()})
	if s.again {
		s.again = false
		c.queueLocked(s)
	}
}

// sweep drops the entries that went idle or whose contact with the
// servers has been lost for longer than MaxStale (with no goroutine per
// entry, nothing else would notice; a hit past MaxStale drops its entry
// too), which may let the hub stop following their datacenter. It also
// queues the refetch of entries older than their RefreshAfter (unless a
// failed refetch's backoff already owns their next try).
func (c *Cache[V]) sweep() {
	now := c.now()
	if c.cfg.RefreshAfter != nil {
		c.mu.Lock()
		c.table.Range(func(_, v any) bool {
			s := v.(*slot[V])
			if s.refreshAfter > 0 && !s.queued && !s.refetching && s.failures == 0 && time.Duration(now-s.lastOK) >= s.refreshAfter {
				c.queueLocked(s)
			}
			return true
		})
		c.mu.Unlock()
	}
	var victims []*slot[V]
	c.table.Range(func(_, v any) bool {
		s := v.(*slot[V])
		since := s.failingSince.Load()
		if now-s.lastUsed.Load() >= int64(c.cfg.IdleTimeout) || since != 0 && time.Duration(now-since) > c.cfg.MaxStale {
			victims = append(victims, s)
		}
		return true
	})
	if len(victims) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range victims {
		since := s.failingSince.Load()
		if c.now()-s.lastUsed.Load() >= int64(c.cfg.IdleTimeout) || since != 0 && time.Duration(c.now()-since) > c.cfg.MaxStale {
			c.removeLocked(s, true)
		}
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
