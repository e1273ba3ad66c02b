// Package cache owns the agent's materialized views: one entry per Key
// (kind, datacenter, name, tag, filter), filled by one fetch on the first
// question, then kept fresh in the background until it has not been asked
// for IdleTimeout, and served stale, for up to MaxStale, while the servers
// cannot be reached.
//
// One way of keeping entries fresh: a Hub (hub.go, required by New)
// follows each datacenter's change feed (a Follower, which may keep one
// stream open on a server) for all its caches, and each cache refetches the entries a change names
// (feed.go), so an entry is only its value: no goroutine and no watch on
// a server of its own. The hub follows a datacenter only while some cache
// holds an entry of it: it starts on the first entry of the datacenter
// (the fill of a miss) and stops when the last one goes (idle, evicted,
// past MaxStale, or its cache closed).
//
// # Why it looks like this
//
// The DNS hot path must not pay for an RPC, a global lock or an allocation
// on a repeated question (DESIGN.md, "A DNS question"). So:
//
//   - An Entry is immutable once published and returned by pointer; a
//     refetch publishes a new Entry (an atomic.Pointer swap) instead of
//     changing the old one, so a caller may use what Get returned for as
//     long as it likes without holding anything.
//   - The lookup table is a sync.Map (a lock-free hash trie since Go 1.24;
//     with a struct key its Load does not allocate): a hit is one map read,
//     a few atomic loads and one counter increment, with no lock, no
//     allocation and no clock read. A hit stamps its entry with a coarse
//     clock that one goroutine advances every second (IdleTimeout/64 if
//     that is shorter); reading the real clock would cost a quarter of the
//     hit, and idleness is measured in minutes.
//   - golang-lru's list gives the eviction order only, under the cache's
//     own mutex, which hits never take. A hit only stores its time in the
//     entry's slot (an atomic); the list is reordered lazily, when an
//     eviction is due ("second chance", as CLOCK does): an oldest entry
//     used since it was last placed moves to the front instead of being
//     evicted. Calling lru.Cache.Get on every hit would serialize every
//     question on one mutex (and make every hit wait for inserts,
//     evictions and size updates); BenchmarkGetHit and
//     BenchmarkLRUGetBaseline compare the two: on one core a bare
//     lru.Cache.Get costs about what the whole hit path does (~50ns on
//     the 2-core test machine), and with both cores asking the hit path
//     answers about twice as many questions (~30ns against ~60-80ns a
//     question), while lru.Cache.Get slows down.
//   - A miss fetches once for all concurrent callers of the key, in a
//     goroutine the cache owns, bounded by Config.FetchTimeout; each caller
//     waits only as long as its own ctx allows. A name nobody has asked for
//     with no server reachable therefore fails within FetchTimeout, never
//     hangs.
//
// The cache knows nothing of what it stores: the Fetcher and the Feed
// (which the agent builds over rpc) decide what a Key means, which keys a
// change touches and what "no such name" looks like. A negative answer is
// an ordinary entry whose value says "none", and it is refetched like any
// other, so a registration reaches a name that was just answered NXDOMAIN
// as fast as any change reaches any name.
//
// Freshness and staleness: while an entry is in contact with the servers
// (its datacenter's feed call is open or returned successfully, and its
// last refetch succeeded), the entry is current and Info.Age is 0. Once
// the feed or a refetch fails, the entry is served as it is and Info.Age
// counts from the last contact; past Config.StaleAfter, Info.Stale is set
// (the DNS layer answers with a short TTL, in the spirit of RFC 8767), and
// past Config.MaxStale the entry is dropped, so that Get behaves as a miss
// and returns the fetch's error.
//
// Bounds: everything the package keeps grows with entries, not with the
// names asked for: entries (MaxEntries, MaxBytes), misses being fetched
// (at most MaxEntries; past it Get fails with ErrOverloaded), the refetch
// queue (each entry at most once, removed ones compacted away), and the
// hub's per-datacenter state (only datacenters that have entries).
//
// cache imports no other cairn package: it declares what it needs of RPC
// (Fetcher) and is generic in the value it keeps. Of third-party code it
// uses golang-lru/v2 (its home, per DESIGN.md).
//
// Concurrency: every method may be called from any goroutine. A cache
// starts one goroutine per miss in flight, one for the coarse clock (which
// also sweeps idle and too-stale entries) and a few refetch workers; its
// Close stops them and waits for them. A Hub runs one goroutine per
// followed datacenter; one stops when its datacenter's last entry goes,
// and Hub.Close stops and waits for them all. The Fetcher is called from
// the cache's goroutines, concurrently for different keys, and the Feed
// from the hub's, concurrently for different datacenters; both must
// return promptly once their ctx is done.
package cache
