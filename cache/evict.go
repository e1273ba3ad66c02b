package cache

import "context"

// insertLocked adds key's first entry, makes room for it, and starts its
// refresh (or, with a Feed, follows its datacenter, refetching the entry
// at once when the feed named it while it was being filled: stale). An entry larger than MaxBytes on its own is returned to the
// callers of the miss but not kept (and counts as an eviction): keeping it
// would empty the rest of the cache.
func (c *Cache[V]) insertLocked(key Key, e *Entry[V], stale bool) {
	if old, ok := c.lru.Peek(key); ok { // not expected: a fill starts only for a missing key
		c.removeLocked(old, false)
	}
	size := c.sizeOf(key, e.Value)
	if c.cfg.MaxBytes > 0 && size > c.cfg.MaxBytes {
		c.evictions.Add(1)
		return
	}
	c.evictLocked(1, size)
	now := c.now()
	s := &slot[V]{key: key, size: size, listed: now, lastOK: now}
	s.entry.Store(e)
	s.lastUsed.Store(now)
	if c.hub != nil {
		s.cancel = func() {}
		c.setRefreshAfterLocked(s, e.Value)
		c.lru.Add(key, s)
		c.table.Store(key, s)
		c.bytes += size
		c.hub.follow(key.Datacenter)
		if stale {
			c.queueLocked(s)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	c.lru.Add(key, s)
	c.table.Store(key, s)
	c.bytes += size
	c.wg.Go(func() { c.refresh(ctx, s, now) })
}

// evictLocked evicts entries until newEntries more entries and newBytes
// more bytes fit under MaxEntries and MaxBytes.
//
// The victim is the oldest entry in the LRU list that has not been used
// since it was put at the front (a "second chance", as CLOCK gives): hits
// do not reorder the list, they only store their time in the slot, so
// that they never take mu. An oldest entry used since it was listed moves
// to the front, and the next oldest is considered; each entry gets at most
// one such chance per eviction round, so the loop ends.
func (c *Cache[V]) evictLocked(newEntries int, newBytes int64) {
	over := func() bool {
		return c.lru.Len()+newEntries > c.cfg.MaxEntries ||
			c.cfg.MaxBytes > 0 && c.bytes+newBytes > c.cfg.MaxBytes
	}
	chances := c.lru.Len()
	for over() {
		_, s, ok := c.lru.GetOldest()
		if !ok {
			return
		}
		if used := s.lastUsed.Load(); used > s.listed && chances > 0 {
			s.listed = used
			c.lru.Get(s.key) // to the front
			chances--
			continue
		}
		c.removeLocked(s, true)
	}
}

// removeLocked takes s out of the cache and stops its refresh; evicted
// says whether to count it in Stats.Evictions (Close does not). It may be
// called more than once for a slot.
func (c *Cache[V]) removeLocked(s *slot[V], evicted bool) {
	if s.removed {
		return
	}
	s.removed = true
	// Under mu, table and lru hold the same slot for a key, so deleting
	// by key removes s and nothing newer.
	c.table.Delete(s.key)
	c.lru.Remove(s.key)
	c.bytes -= s.size
	s.cancel()
	if evicted {
		c.evictions.Add(1)
	}
}

// publish makes a new version of s's value current and accounts for its
// size, evicting others (or s itself, when it alone exceeds MaxBytes) if
// it grew past MaxBytes. Only s's refresh loop calls it.
func (c *Cache[V]) publish(s *slot[V], e *Entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publishLocked(s, e)
}

func (c *Cache[V]) publishLocked(s *slot[V], e *Entry[V]) {
	size := c.sizeOf(s.key, e.Value)
	if s.removed {
		return
	}
	c.setRefreshAfterLocked(s, e.Value)
	s.entry.Store(e)
	c.bytes += size - s.size
	s.size = size
	if c.cfg.MaxBytes > 0 {
		if size > c.cfg.MaxBytes {
			c.removeLocked(s, true)
			return
		}
		c.evictLocked(0, 0)
	}
}

// setRefreshAfterLocked records Config.RefreshAfter of s's value v.
func (c *Cache[V]) setRefreshAfterLocked(s *slot[V], v V) {
	if c.cfg.RefreshAfter != nil {
		s.refreshAfter = c.cfg.RefreshAfter(v)
	}
}

// dropIdle removes s if it still has not been used for IdleTimeout,
// rechecked under mu since a hit may have come in meanwhile, and reports
// whether it did.
func (c *Cache[V]) dropIdle(s *slot[V]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now()-s.lastUsed.Load() < int64(c.cfg.IdleTimeout) {
		return false
	}
	c.removeLocked(s, true)
	return true
}

// drop removes s (its refresh has been failing for longer than MaxStale).
func (c *Cache[V]) drop(s *slot[V]) {
	c.mu.Lock()
	c.removeLocked(s, true)
	c.mu.Unlock()
}

// sizeOf returns the bytes an entry of key and v counts for: 0 without
// Config.Size, else the value's size, the key's strings and entryOverhead.
func (c *Cache[V]) sizeOf(key Key, v V) int64 {
	if c.cfg.Size == nil {
		return 0
	}
	k := len(key.Kind) + len(key.Datacenter) + len(key.Name) + len(key.Tag) + len(key.Filter)
	return int64(c.cfg.Size(v)) + int64(k) + entryOverhead
}
