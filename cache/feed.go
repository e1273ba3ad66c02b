package cache

import (
	"context"
	"time"
)

// Feed follows one datacenter's changes: it blocks until something changes
// after minIndex, or until wait passes, and returns the index it reached
// and which keys may have changed since minIndex. reset says any key may
// have changed (the feed cannot tell what: a gap in the servers' change
// log, a server that is behind); changed is not consulted then. minIndex
// 0 is a plain read that returns at once (the cache refetches everything
// after it anyway). As with blocking queries, an index of 0 is blocked on
// as 1, so a change must have an index above 1 (Raft's first entry is its
// configuration, so a catalog write's always has). A Feed must return
// promptly once ctx is done.
type Feed func(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (index uint64, changed func(Key) bool, reset bool, err error)

// refetchers is how many entries a cache with a Feed refetches at once
// after a change: enough that a reset of ten thousand entries takes a
// second or so on a LAN, few enough not to flood a server.
const refetchers = 8

// With a Feed (Config.Feed, or a Hub's), an entry has no goroutine and no
// blocking query of its own: the hub follows the feed of each datacenter
// the entries belong to (one blocking call at a time, hub.go), and the
// cache refetches the entries the feed names (plain reads, by a few
// workers, refetch).
// This is what lets one agent hold ten thousand names for the memory of
// their values, and a server carry a thousand agents for a thousand open
// calls instead of millions.
//
// A refetch that is asked for while one of the same entry is running runs
// again after it, and a fill that is named while in flight is refetched
// once inserted, so a change that lands while a read of the entry is in
// progress is never lost.

// markFailing (the hub's) marks the matching entries as out of contact
// since lastOK, unless they already are, and counts a refresh error.
func (c *Cache[V]) markFailing(match func(Key) bool, lastOK time.Time) {
	c.refreshErrors.Add(1)
	since := max(int64(lastOK.Sub(c.epoch))+1, 1)
	c.table.Range(func(_, v any) bool {
		if s := v.(*slot[V]); match(s.key) {
			s.failingSince.CompareAndSwap(0, since)
		}
		return true
	})
}

// invalidate queues a refetch of every entry match names, and marks the
// fills in flight that it names to be refetched once inserted.
func (c *Cache[V]) invalidate(match func(Key) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, f := range c.fills {
		if match(key) {
			f.invalidated = true
		}
	}
	c.table.Range(func(_, v any) bool {
		if s := v.(*slot[V]); match(s.key) {
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
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
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
		c.mu.Unlock()
		c.refetch(s)
	}
}

// refetch reads s's key afresh and publishes it. A failure retries after
// a backoff (the slot counts as out of contact meanwhile); a refetch asked
// for while this one ran runs next.
func (c *Cache[V]) refetch(s *slot[V]) {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.FetchTimeout)
	v, idx, err := c.fetch(ctx, s.key, 0, 0)
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

// sweep drops the entries of a cache with a Feed that went idle or whose
// contact with the servers has been lost for longer than MaxStale: with
// no refresh loop per entry, nothing else would notice. It also queues
// the refetch of entries older than their RefreshAfter (unless a failed
// refetch's backoff already owns their next try).
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
