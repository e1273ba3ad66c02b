package cache

// insertLocked adds key's first entry, makes room for it, and has the hub
// follow its datacenter; it refetches the entry at once when the feed
// named it while it was being filled (stale). An entry larger than
// MaxBytes on its own is returned to the callers of the miss but not kept
// (and counts as an eviction): keeping it would empty the rest of the
// cache.
func (c *Cache[V]) insertLocked(key Key, e *Entry[V], stale bool) {
	size := c.sizeOf(key, e.Value)
	if c.cfg.MaxBytes > 0 && size > c.cfg.MaxBytes {
		c.evictions.Add(1)
		return
	}
	// Counted before making room: were the entry it replaces or the
	// victims the datacenter's last, the hub would stop its feed only to
	// start it again (and refetch all of it) a moment later.
	c.hub.acquire(key.Datacenter)
	if old, ok := c.lru.Peek(key); ok { // not expected: a fill starts only for a missing key
		c.removeLocked(old, false)
	}
	c.evictLocked(1, size)
	now := c.now()
	s := &slot[V]{key: key, size: size, listed: now, lastOK: now}
	s.entry.Store(e)
	s.lastUsed.Store(now)
	c.setRefreshAfterLocked(s, e.Value)
	c.lru.Add(key, s)
	c.table.Store(key, s)
	c.bytes += size
	if stale {
		c.queueLocked(s)
	}
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

// removeLocked takes s out of the cache, and tells the hub, which stops
// following s's datacenter if s was its last entry; evicted says whether
// to count it in Stats.Evictions (Close does not). It may be called more
// than once for a slot. A refetch of s queued or running finds s.removed
// and drops its result.
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
	c.hub.release(s.key.Datacenter)
	if evicted {
		c.evictions.Add(1)
	}
}

// publishLocked makes a new version of s's value current and accounts for
// its size, evicting others (or s itself, when it alone exceeds MaxBytes)
// if it grew past MaxBytes.
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

// sizeOf returns the bytes an entry of key and v counts for: 0 without
// Config.Size, else the value's size, the key's strings and entryOverhead.
func (c *Cache[V]) sizeOf(key Key, v V) int64 {
	if c.cfg.Size == nil {
		return 0
	}
	k := len(key.Kind) + len(key.Datacenter) + len(key.Name) + len(key.Tag) + len(key.Filter)
	return int64(c.cfg.Size(v)) + int64(k) + entryOverhead
}
