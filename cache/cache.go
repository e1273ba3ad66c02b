package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Key identifies what a DNS question (or an HTTP ?cached read) needs. The
// cache compares keys field by field and gives them no meaning; the
// Fetcher does. Callers normalize (lowercase names, fill in the default
// datacenter) before asking, or equal questions get separate entries.
type Key struct {
	Kind       string // what is asked for, e.g. "service", "node", "reverse"
	Datacenter string
	Name       string
	Tag        string
	Filter     string // e.g. a health filter ("passing")
}

// String returns a readable form of k for errors and logs.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(k.Kind)
	b.WriteString(" ")
	b.WriteString(k.Name)
	for _, f := range [...]struct{ name, v string }{{"tag", k.Tag}, {"dc", k.Datacenter}, {"filter", k.Filter}} {
		if f.v != "" {
			b.WriteString(" " + f.name + "=" + f.v)
		}
	}
	return b.String()
}

// Fetcher fetches key's value from the servers; it is what the cache needs
// of RPC, and the agent builds it over rpc.Pool.
//
// The cache asks only for plain reads: minIndex and wait are always 0
// (fills and refetches; the Hub's Feed is what blocks). They remain in
// the signature so that the agent's fetchers, written when each entry ran
// its own blocking query, need not change with this package; a
// minIndex > 0 would be a blocking query (MinQueryIndex, MaxQueryTime =
// wait). The returned index is the one the value reflects; a name that
// does not exist yields the fetcher's own "none" value (and the index of
// the table it was looked up in), which the cache keeps like any other.
//
// The cache calls a Fetcher from its own goroutines, concurrently for
// different keys, and for one key only when the refetch of an entry just
// evicted overlaps the fill of the key's next one. It must return promptly
// once ctx is done: a miss's caller stops waiting at Config.FetchTimeout
// regardless, but the goroutine running the fetch can only end when the
// fetch does, and Close waits for it.
type Fetcher[V any] func(ctx context.Context, key Key, minIndex uint64, wait time.Duration) (V, uint64, error)

// Entry is one version of a key's value. It is immutable once published:
// a refetch publishes a new Entry and never changes an old one, so what
// Get returned may be read, and shared, without any lock.
type Entry[V any] struct {
	Value   V
	Index   uint64    // the index Value reflects, as the Fetcher returned it
	Fetched time.Time // when this version was fetched
}

// Info says how Get answered.
type Info struct {
	// Hit is true when the entry came from memory, false when Get fetched
	// it (a miss).
	Hit bool
	// Stale is true when the entry is out of contact with the servers
	// (its datacenter's feed or its last refetch failed) since more than
	// Config.StaleAfter.
	Stale bool
	// Age is 0 while the entry is in contact with the servers (its
	// datacenter's feed call is open, so a change would have arrived, and
	// its last refetch succeeded) and, while it is not, the time since it
	// last was; the HTTP API sends it as the Age header.
	Age time.Duration
}

// Cache is the agent's cache of V, keyed by Key. Create it with New and
// stop it with Close. All methods may be called from any goroutine.
type Cache[V any] struct {
	cfg    Config
	fetch  Fetcher[V]
	logger *slog.Logger
	epoch  time.Time // origin of now(); carries a monotonic reading

	// coarse is now() as of the last tick (see tick); hits stamp entries
	// with it instead of reading the clock, which would be a quarter of
	// a hit's cost.
	coarse atomic.Int64
	done   chan struct{} // closed by Close; stops the ticker
	// ctx is canceled by Close: the parent of every refetch, so that
	// Close does not wait for their timeouts.
	ctx       context.Context
	cancelAll context.CancelFunc

	// table maps Key to *slot[V]. Get reads it without locks; it is
	// written only under mu, together with lru, so that under mu a key is
	// in both or in neither.
	table sync.Map

	mu     sync.Mutex
	lru    *simplelru.LRU[Key, *slot[V]] // eviction order only; see evictLocked
	bytes  int64                         // sum of the slots' size
	fills  map[Key]*fill[V]              // misses being fetched, one per key, at most MaxEntries
	closed bool

	// The hub that follows the feeds (see feed.go), and the entries
	// waiting for a refetch, which wake signals; queueLocked keeps the
	// queue's removed slots from piling up.
	hub   *Hub
	queue []*slot[V]
	wake  chan struct{}
	wg    sync.WaitGroup // fill, refetcher and ticker goroutines

	hits, misses, staleAnswers, evictions, refreshErrors atomic.Uint64
	lastWarn                                             atomic.Int64 // now() of the last rate-limited warning
}

// slot holds a key's live entry. Its atomics are read by Get without
// locks; the rest belongs to mu.
type slot[V any] struct {
	key   Key
	entry atomic.Pointer[Entry[V]] // the current version; replaced, never changed
	// lastUsed is now() of the fill or, to within a tick, of the last
	// hit: the idle clock and the LRU's second chance read it.
	lastUsed atomic.Int64
	// failingSince is 0 while the entry is in contact with the servers;
	// once its feed or a refetch fails, it is now() of the last contact
	// (the feed's last success, or the entry's last successful fetch).
	// Age and staleness count from it.
	failingSince atomic.Int64

	// Guarded by Cache.mu: when the slot was last put at the LRU's front
	// (a lastUsed); the bytes it counts for in Cache.bytes; whether it is
	// evicted, dropped or closed; queued for a refetch, being refetched,
	// to be refetched again once this one ends; consecutive failed
	// refetches; now() of the last successful fetch.
	listed                    int64
	size                      int64
	removed                   bool
	queued, refetching, again bool
	failures                  int
	lastOK                    int64
	refreshAfter              time.Duration // Config.RefreshAfter of the current value
	// atLeast is the highest feed index that named the slot: its
	// refetches ask for data at least that recent.
	atLeast uint64
}

// fill is one miss being fetched, shared by every caller of its key until
// the fetch returns.
type fill[V any] struct {
	done chan struct{} // closed once entry or err is set
	// ctx is the fetch's own context (FetchTimeout, or Close through
	// stop); waiting callers give up when it ends even if the Fetcher has
	// not returned yet. It lives as long as the fill, no longer.
	ctx   context.Context
	stop  context.CancelCauseFunc
	entry *Entry[V]
	err   error
	// invalidated (under Cache.mu) says the feed named the key while the
	// fill was in flight: what it read may predate the change.
	invalidated bool
}

// New returns a cache that fills its entries with fetch and refetches
// them when cfg.Hub's feeds say they changed. cfg must be valid
// (Config.Validate) and name a Hub. A nil logger discards.
func New[V any](cfg Config, fetch Fetcher[V], logger *slog.Logger) (*Cache[V], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Hub == nil {
		// Not in Validate: the agent validates the Config it then
		// passes to NewHub, before any Hub exists.
		return nil, errors.New("cache: Hub: must be set: a cache is kept fresh only by a Hub's change feeds (NewHub)")
	}
	if fetch == nil {
		return nil, errors.New("cache: nil Fetcher")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The list's own bound is never reached: evictLocked makes room
	// before each Add, choosing the victim with a second chance.
	l, err := simplelru.NewLRU[Key, *slot[V]](cfg.MaxEntries, nil)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache[V]{
		cfg:    cfg,
		fetch:  fetch,
		logger: logger.With("component", "cache"),
		epoch:  time.Now(),
		done:   make(chan struct{}),
		lru:    l,
		fills:  make(map[Key]*fill[V]),
		hub:    cfg.Hub,
		wake:   make(chan struct{}, 1),
	}
	c.ctx, c.cancelAll = context.WithCancel(context.Background())
	c.coarse.Store(c.now())
	c.wg.Go(c.tick)
	c.hub.subscribe(c)
	for range refetchers {
		c.wg.Go(c.refetcher)
	}
	return c, nil
}

// tick advances the coarse clock every IdleTimeout/64, between 1ms and
// 1s (1s by default), and sweeps, until Close. A hit's time of use is
// therefore up to a tick early, and an entry may go idle up to a tick
// before IdleTimeout has really passed (1s of the default 10m); its next
// question is then a miss. That is the price of a hit without a clock
// read.
func (c *Cache[V]) tick() {
	t := time.NewTicker(min(max(c.cfg.IdleTimeout/64, time.Millisecond), time.Second))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.coarse.Store(c.now())
			c.sweep()
		case <-c.done:
			return
		}
	}
}

// now returns the cache's monotonic clock in nanoseconds: time since New,
// plus one so that 0 can mean "never". time.Since on a time with a
// monotonic reading reads only the monotonic clock, cheaply.
func (c *Cache[V]) now() int64 {
	return int64(time.Since(c.epoch)) + 1
}

// Get returns key's entry.
//
// A hit is answered from memory: no RPC, no lock, no allocation. A miss
// fetches once, shared by all concurrent callers of key, bounded by
// Config.FetchTimeout and by ctx (ctx ending makes this caller stop
// waiting; the fetch goes on for the others and for the cache); the entry
// is then refetched whenever its datacenter's feed names it, until it has
// been idle for Config.IdleTimeout. A miss while MaxEntries other keys
// are being fetched fails at once with ErrOverloaded.
//
// While the servers cannot be reached, the last entry keeps being
// returned, with Info.Stale once it has been out of contact for more than
// Config.StaleAfter, up to Config.MaxStale; past that the entry is
// dropped and Get behaves as a miss, returning the fetch's error. Errors
// wrap the Fetcher's error, ErrFetchTimeout, ErrOverloaded, ErrClosed or
// ctx's error.
func (c *Cache[V]) Get(ctx context.Context, key Key) (*Entry[V], Info, error) {
	// Kept small and free of closures so that key does not escape: the
	// hit path must not allocate (TestGetHitAllocs).
	if v, ok := c.table.Load(key); ok {
		if e, info, ok := c.hit(v.(*slot[V])); ok {
			return e, info, nil
		}
	}
	return c.miss(ctx, key)
}

// Peek returns key's current entry, or false when the cache holds none.
// It fetches nothing and counts as no use: it is for a Feed deciding what
// a change touches from the values it cached.
func (c *Cache[V]) Peek(key Key) (*Entry[V], bool) {
	v, ok := c.table.Load(key)
	if !ok {
		return nil, false
	}
	e := v.(*slot[V]).entry.Load()
	return e, e != nil
}

// hit answers from s, or reports false if s is past MaxStale. It takes no
// lock: it reads s's atomics, and stores the time of use (the coarse
// clock) once per tick at most, so that cores answering one name do not
// take turns writing its cache line. It reads the clock only while s is
// out of contact, to tell the answer's age.
func (c *Cache[V]) hit(s *slot[V]) (*Entry[V], Info, bool) {
	info := Info{Hit: true}
	if since := s.failingSince.Load(); since != 0 {
		info.Age = time.Duration(c.now() - since)
		if info.Age > c.cfg.MaxStale {
			return nil, Info{}, false
		}
		if info.Age > c.cfg.StaleAfter {
			info.Stale = true
			c.staleAnswers.Add(1)
		}
	}
	if t := c.coarse.Load(); t > s.lastUsed.Load() {
		s.lastUsed.Store(t)
	}
	c.hits.Add(1)
	return s.entry.Load(), info, true
}

// miss joins or starts the fill of key and waits for it.
func (c *Cache[V]) miss(ctx context.Context, key Key) (*Entry[V], Info, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, Info{}, ErrClosed
	}
	if s, ok := c.lru.Peek(key); ok {
		if e, info, ok := c.hit(s); ok { // filled since Get looked
			c.mu.Unlock()
			return e, info, nil
		}
		c.removeLocked(s, true) // past MaxStale: fetch afresh
	}
	f := c.fills[key]
	if f == nil {
		if err := c.hub.failing(key.Datacenter, c.cfg.MaxStale); err != nil {
			c.mu.Unlock()
			c.misses.Add(1)
			return nil, Info{}, fmt.Errorf("cache: fetch %s: %w", key, err)
		}
		if len(c.fills) >= c.cfg.MaxEntries {
			// Each fill is a goroutine and an RPC for as long as
			// FetchTimeout; names come from the network, so without a
			// bound a flood of new names for an unreachable datacenter
			// would hold one of each per name asked in the last
			// FetchTimeout. More fills than entries could not be kept
			// anyway.
			c.mu.Unlock()
			c.misses.Add(1)
			return nil, Info{}, fmt.Errorf("cache: fetch %s: %w", key, ErrOverloaded)
		}
		f = c.startFillLocked(key)
	}
	c.mu.Unlock()
	c.misses.Add(1)

	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, Info{}, fmt.Errorf("cache: fetch %s: %w", key, ctx.Err())
	case <-f.ctx.Done():
		select {
		case <-f.done: // returned just in time
		default: // the Fetcher ignores its ctx; do not hang with it
			return nil, Info{}, abandoned(f.ctx, key, nil)
		}
	}
	if f.err != nil {
		return nil, Info{}, f.err
	}
	return f.entry, Info{}, nil
}

// startFillLocked starts fetching key in a goroutine the cache owns; on
// success the entry is inserted (and its datacenter followed).
//
// This is singleflight by hand rather than golang.org/x/sync/singleflight:
// that one keys calls by string (a Key would have to be encoded on every
// miss) and its DoChan runs the call in a goroutine nobody can wait for,
// while Close must wait for every Fetcher call. Here the fill is
// registered, and its entry published, under the same lock as the table,
// so a key is never both being filled and cached.
func (c *Cache[V]) startFillLocked(key Key) *fill[V] {
	parent, stop := context.WithCancelCause(context.Background())
	ctx, cancel := context.WithTimeoutCause(parent, c.cfg.FetchTimeout, ErrFetchTimeout)
	f := &fill[V]{done: make(chan struct{}), ctx: ctx, stop: stop}
	c.fills[key] = f
	c.wg.Go(func() {
		defer stop(nil)
		defer cancel()
		v, idx, err := c.fetch(ctx, key, 0, 0)
		c.mu.Lock()
		delete(c.fills, key)
		if err != nil {
			f.err = abandoned(ctx, key, err)
		} else {
			f.entry = &Entry[V]{Value: v, Index: idx, Fetched: time.Now()}
			if !c.closed {
				c.insertLocked(key, f.entry, f.invalidated)
			}
		}
		c.mu.Unlock()
		close(f.done)
	})
	return f
}

// abandoned wraps the error of a fetch: with the reason its ctx ended
// (ErrFetchTimeout or ErrClosed) when it did, and err when there is one.
func abandoned(ctx context.Context, key Key, err error) error {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return fmt.Errorf("cache: fetch %s: %w", key, err)
	case err == nil:
		return fmt.Errorf("cache: fetch %s: %w (%w)", key, cause, ctx.Err())
	default:
		return fmt.Errorf("cache: fetch %s: %w: %w", key, cause, err)
	}
}

// Close stops every fill and refetch and the ticker, waits for their
// goroutines (and so for Fetcher calls in flight, which see their ctx
// canceled) and empties the cache, which lets the hub stop following the
// datacenters no other cache has entries of. Get then returns ErrClosed.
// Close may be called more than once.
func (c *Cache[V]) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
		c.cancelAll()
		for _, s := range c.lru.Values() {
			c.removeLocked(s, false)
		}
		for _, f := range c.fills {
			f.stop(ErrClosed)
		}
	}
	c.mu.Unlock()
	c.hub.unsubscribe(c)
	c.wg.Wait()
}
