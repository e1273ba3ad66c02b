// Package cache owns the agent's materialized views: one entry per Key
// (kind, datacenter, name, tag, filter), filled by one fetch on the first
// question, then kept fresh in the background until it has not been asked
// for IdleTimeout, and served stale, for up to MaxStale, while the servers
// cannot be reached.
//
// Two ways of keeping entries fresh: with a Config.Feed (what the agent
// uses; feed.go), the cache follows each datacenter's change feed with one
// blocking call and refetches the entries a change names, so an entry is
// only its value; without one, each entry runs its own blocking query
// (refresh.go), which costs a goroutine here and a watch on a server per
// entry (about 14 KiB on a server and twice that on a client, measured),
// too much for ten thousand names.
//
// # Why it looks like this
//
// The DNS hot path must not pay for an RPC, a global lock or an allocation
// on a repeated question (DESIGN.md, "A DNS question"). So:
//
//   - An Entry is immutable once published and returned by pointer; a
//     refresh publishes a new Entry (an atomic.Pointer swap) instead of
//     changing the old one, so a caller may use what Get returned for as long
//     as it likes without holding anything.
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
// The cache knows nothing of what it stores: the Fetcher (which the agent
// builds over rpc) decides what a Key means and what "no such name" looks
// like. A negative answer is an ordinary entry whose value says "none", and
// it is refreshed like any other, so a registration reaches a name that
// was just answered NXDOMAIN as fast as any change reaches any name.
//
// Freshness and staleness: while an entry's refresh is in contact with
// the servers (its blocking query, or its datacenter's feed, is open or
// returned successfully, and its last refetch succeeded), the
// entry is current and Info.Age is 0. Once a refresh fails, the entry is
// served as it is and Info.Age counts from the entry's last successful
// refresh; past Config.StaleAfter, Info.Stale is set (the DNS layer answers
// with a short TTL, in the spirit of RFC 8767), and past Config.MaxStale
// the entry is dropped, so that Get behaves as a miss and returns the
// fetch's error.
//
// cache imports no other cairn package: it declares what it needs of RPC
// (Fetcher) and is generic in the value it keeps. Of third-party code it
// uses golang-lru/v2 (its home, per DESIGN.md).
//
// Concurrency: every method may be called from any goroutine. The cache
// starts one goroutine per miss in flight, one for the coarse clock (which
// also sweeps idle and too-stale entries with a Feed), and either one per
// live entry (its refresh loop) or, with a Feed, a few refetch workers
// (and, with a Feed but no Hub, a hub of its own, which runs one
// goroutine per followed datacenter); Close stops them all and waits for
// them. The Fetcher is
// called from those goroutines, concurrently for different keys, and must
// return promptly once its ctx is done.
package cache
