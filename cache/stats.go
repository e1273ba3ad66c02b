package cache

// Stats is a snapshot of a cache's counters, for metrics. The counters
// only grow over the cache's life.
type Stats struct {
	Hits          uint64 // Gets answered from memory
	Misses        uint64 // Gets not answered from memory (they waited for a fetch, or met ErrOverloaded)
	StaleAnswers  uint64 // hits with Info.Stale set
	Evictions     uint64 // entries removed by MaxEntries, MaxBytes, IdleTimeout or MaxStale (not Close)
	RefreshErrors uint64 // failed refetches, and failed feed calls of a datacenter the cache has entries of
	Entries       int    // entries held now
	Bytes         int64  // their approximate bytes now (0 without Config.Size)
}

// Stats returns the cache's counters. It briefly takes the lock that
// inserts and evictions take (for Entries and Bytes), never one a hit
// takes.
func (c *Cache[V]) Stats() Stats {
	c.mu.Lock()
	entries, bytes := c.lru.Len(), c.bytes
	c.mu.Unlock()
	return Stats{
		Hits:          c.hits.Load(),
		Misses:        c.misses.Load(),
		StaleAnswers:  c.staleAnswers.Load(),
		Evictions:     c.evictions.Load(),
		RefreshErrors: c.refreshErrors.Load(),
		Entries:       entries,
		Bytes:         bytes,
	}
}
