package cache_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/cache"
)

var web = cache.Key{Kind: "service", Name: "web", Datacenter: "dc1"}

func svc(name string) cache.Key { return cache.Key{Kind: "service", Name: name, Datacenter: "dc1"} }

// feedFunc is a Feed of a function that keeps nothing between calls.
type feedFunc func(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error)

func (fn feedFunc) feed(dc string) cache.Follower { return funcFollower{fn, dc} }

type funcFollower struct {
	fn feedFunc
	dc string
}

func (f funcFollower) Next(ctx context.Context, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	return f.fn(ctx, f.dc, minIndex, wait)
}

func (funcFollower) Stop() {}

// newHub returns a hub over feed, closed when the test ends (inside a
// bubble, before it ends: cleanups run in the bubble).
func newHub(t testing.TB, cfg cache.Config, feed cache.Feed) *cache.Hub {
	t.Helper()
	hub, err := cache.NewHub(feed, cfg, nil)
	if err != nil {
		t.Fatalf("NewHub: %v", err)
	}
	t.Cleanup(hub.Close)
	return hub
}

// newCache returns a cache over f's Fetcher and, unless cfg names a Hub,
// a hub of its own over f's Feed, as the agent wires them.
func newCache(t testing.TB, cfg cache.Config, f *fakeCatalog) *cache.Cache[*answer] {
	t.Helper()
	return newCacheWith(t, cfg, f.fetch, f.feed)
}

// newCacheWith returns a cache over fetch and, unless cfg names a Hub, a
// hub of its own over feed. Both are closed when the test ends, the cache
// first (cleanups run last-registered first); a test may Close the cache
// earlier.
func newCacheWith[V any](t testing.TB, cfg cache.Config, fetch cache.Fetcher[V], feed cache.Feed) *cache.Cache[V] {
	t.Helper()
	if cfg.Hub == nil {
		cfg.Hub = newHub(t, cfg, feed)
	}
	c, err := cache.New(cfg, fetch, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// get calls Get and fails the test on an error.
func get(t *testing.T, c *cache.Cache[*answer], key cache.Key) (*cache.Entry[*answer], cache.Info) {
	t.Helper()
	e, info, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%v): %v", key, err)
	}
	return e, info
}

func wantInstances(t *testing.T, e *cache.Entry[*answer], want ...string) {
	t.Helper()
	if got := e.Value.instances; !slices.Equal(got, want) {
		t.Fatalf("instances: got %q, want %q", got, want)
	}
}

func TestFillThenHit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)

		e, info := get(t, c, web)
		if info != (cache.Info{}) {
			t.Errorf("first Get info: got %+v, want a miss", info)
		}
		wantInstances(t, e, "10.0.0.1")
		if e.Index != 1 || !e.Fetched.Equal(time.Now()) {
			t.Errorf("entry: got index %d fetched %v, want 1 at %v", e.Index, e.Fetched, time.Now())
		}
		synctest.Wait() // the feed reset (its first call), then blocked at index 1
		calls := f.callsFor("web")
		if calls != 2 {
			t.Errorf("fetches after the fill: got %d, want 2 (the fill, the refetch after the feed's first reset)", calls)
		}
		if got, want := f.feedMinIndexes("dc1"), []uint64{0, 1}; !slices.Equal(got, want) {
			t.Errorf("feed calls' minIndex: got %v, want %v", got, want)
		}

		time.Sleep(time.Second)
		// The refetch published a new version of the same data.
		e2, info := get(t, c, web)
		if e2.Index != e.Index || info != (cache.Info{Hit: true}) {
			t.Errorf("second Get: got index %d %+v, want index %d as a fresh hit", e2.Index, info, e.Index)
		}
		wantInstances(t, e2, "10.0.0.1")
		if got := f.callsFor("web"); got != calls {
			t.Errorf("fetches after a hit: got %d, want %d", got, calls)
		}
		if s := c.Stats(); s.Hits != 1 || s.Misses != 1 || s.Entries != 1 || s.Evictions != 0 {
			t.Errorf("stats: got %+v, want 1 hit, 1 miss, 1 entry", s)
		}
	})
}

// TestRefetchPublishesANewEntry: a change the feed names publishes a new
// Entry, fetched by a plain read; the one Get returned before is left as
// it was.
func TestRefetchPublishesANewEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)
		old, _ := get(t, c, web)
		synctest.Wait()

		time.Sleep(time.Second)
		f.register("web", "10.0.0.2")
		synctest.Wait()
		e, info := get(t, c, web)
		if !info.Hit || e.Index != 2 || !e.Fetched.Equal(time.Now()) {
			t.Errorf("after a change: got %+v index %d fetched %v, want a hit at index 2 fetched now", info, e.Index, e.Fetched)
		}
		wantInstances(t, e, "10.0.0.1", "10.0.0.2")
		wantInstances(t, old, "10.0.0.1") // published entries never change
		if old.Index != 1 {
			t.Errorf("old entry's index: got %d, want 1", old.Index)
		}
		// The fill is a plain read; a refetch asks for the index the feed
		// reported (minIndex one below it), so a lagging server catches up
		// before it answers.
		if got, want := f.minIndexes(), []uint64{0, 0, 1}; !slices.Equal(got, want) {
			t.Errorf("minIndex of the fetches: got %v, want %v", got, want)
		}
		if s := c.Stats(); s.Misses != 1 {
			t.Errorf("misses: got %d, want 1", s.Misses)
		}
	})
}

// TestFeedWaitEnds checks that a feed call that ends without a change
// refetches nothing and is simply made again.
func TestFeedWaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		get(t, c, web)
		synctest.Wait()
		e, _ := get(t, c, web) // the one the feed's first reset refetched

		time.Sleep(cfg.BlockingWait * 11 / 10) // past the longest jittered wait
		synctest.Wait()
		e2, info := get(t, c, web)
		if e2 != e || info != (cache.Info{Hit: true}) {
			t.Errorf("after an empty wait: got %p %+v, want the same entry %p, fresh", e2, info, e)
		}
		if got := f.callsFor("web"); got != 2 {
			t.Errorf("fetches: got %d, want 2 (the fill, the refetch after the first reset)", got)
		}
		if got, want := f.feedMinIndexes("dc1"), []uint64{0, 1, 1}; !slices.Equal(got, want) {
			t.Errorf("feed calls' minIndex: got %v, want %v (a reset, a wait that ended, the next one)", got, want)
		}
	})
}

func TestNegativeEntryTurnsPositive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)
		api := svc("api")

		e, _ := get(t, c, api)
		wantInstances(t, e) // none: a negative entry, cached like any other
		synctest.Wait()
		time.Sleep(time.Second)
		if _, info := get(t, c, api); !info.Hit {
			t.Errorf("second Get of an unknown name: got %+v, want a hit", info)
		}

		f.register("api", "10.0.2.1")
		synctest.Wait()
		e, info := get(t, c, api)
		if !info.Hit {
			t.Errorf("after registration: got %+v, want a hit", info)
		}
		wantInstances(t, e, "10.0.2.1")
		if s := c.Stats(); s.Misses != 1 {
			t.Errorf("misses: got %d, want 1", s.Misses)
		}
	})
}

func TestSingleflight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		hold := make(chan struct{})
		f.setHold(hold)
		c := newCache(t, cache.DefaultConfig(), f)

		const n = 100
		entries := make([]*cache.Entry[*answer], n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				e, _, err := c.Get(t.Context(), web)
				if err != nil {
					t.Errorf("Get: %v", err)
				}
				entries[i] = e
			})
		}
		synctest.Wait() // all n wait for the one fetch
		if got := f.plainReads(); got != 1 {
			t.Errorf("fetches for %d concurrent misses: got %d, want 1", n, got)
		}
		f.setHold(nil)
		close(hold)
		wg.Wait()

		for i, e := range entries {
			if e != entries[0] {
				t.Fatalf("caller %d: got entry %p, want the shared %p", i, e, entries[0])
			}
		}
		if s := c.Stats(); s.Misses != n || s.Entries != 1 {
			t.Errorf("stats: got %+v, want %d misses, 1 entry", s, n)
		}
	})
}

func TestMissWithServersDownFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.fail(errDown)
		c := newCache(t, cache.DefaultConfig(), f)

		start := time.Now()
		for range 2 {
			_, _, err := c.Get(t.Context(), web)
			if !errors.Is(err, errDown) {
				t.Fatalf("Get with servers down: got %v, want %v", err, errDown)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Get with servers down took %v, want no wait", d)
		}
		// Errors are not cached: each miss asks again.
		if s := c.Stats(); s.Misses != 2 || s.Entries != 0 || f.callsFor("web") != 2 {
			t.Errorf("got %+v and %d fetches, want 2 misses, no entry, 2 fetches", s, f.callsFor("web"))
		}
		// No entry, so no datacenter to follow.
		synctest.Wait()
		if n := f.feedCalls(); n != 0 {
			t.Errorf("feed calls: got %d, want none", n)
		}
	})
}

func TestFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		hold := make(chan struct{}) // never closed: servers that do not answer
		f.setHold(hold)
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)

		for range 2 { // the second miss starts afresh, and times out the same way
			start := time.Now()
			_, _, err := c.Get(t.Context(), web)
			if !errors.Is(err, cache.ErrFetchTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Get of a hanging fetch: got %v, want ErrFetchTimeout and DeadlineExceeded", err)
			}
			if d := time.Since(start); d != cfg.FetchTimeout {
				t.Errorf("Get of a hanging fetch returned after %v, want FetchTimeout %v", d, cfg.FetchTimeout)
			}
			synctest.Wait() // the fill has ended
		}
		if s := c.Stats(); s.Entries != 0 {
			t.Errorf("entries: got %d, want 0", s.Entries)
		}
	})
}

// TestFetchIgnoringContext checks that callers stop waiting at
// FetchTimeout even when the Fetcher does not, and that a late value is
// kept.
func TestFetchIgnoringContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		fetch := func(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*answer, uint64, error) {
			<-release
			return &answer{instances: []string{"10.0.0.1"}}, 1, nil
		}
		cfg := cache.DefaultConfig()
		c := newCacheWith(t, cfg, fetch, newFake().feed)

		start := time.Now()
		if _, _, err := c.Get(t.Context(), web); !errors.Is(err, cache.ErrFetchTimeout) {
			t.Errorf("Get: got %v, want ErrFetchTimeout", err)
		}
		if d := time.Since(start); d != cfg.FetchTimeout {
			t.Errorf("Get returned after %v, want %v", d, cfg.FetchTimeout)
		}
		// The stuck fetch is still the key's fill: joiners give up at once.
		if _, _, err := c.Get(t.Context(), web); !errors.Is(err, cache.ErrFetchTimeout) || time.Since(start) != cfg.FetchTimeout {
			t.Errorf("Get while the stuck fetch runs: got %v after %v, want ErrFetchTimeout at once", err, time.Since(start))
		}
		close(release)
		synctest.Wait()
		if e, info := get(t, c, web); !info.Hit || e.Index != 1 {
			t.Errorf("after the late fetch: got %+v index %d, want a hit at index 1", info, e.Index)
		}
	})
}

// TestCallerContext checks that a caller whose ctx ends stops waiting,
// while the fetch goes on and fills the cache.
func TestCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		hold := make(chan struct{})
		f.setHold(hold)
		c := newCache(t, cache.DefaultConfig(), f)

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, _, err := c.Get(ctx, web)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, cache.ErrFetchTimeout) {
			t.Errorf("Get with a 1s ctx: got %v, want the ctx's DeadlineExceeded", err)
		}
		f.setHold(nil)
		close(hold)
		synctest.Wait()
		if _, info := get(t, c, web); !info.Hit {
			t.Errorf("after the fetch: got %+v, want a hit", info)
		}
	})
}

func TestCloseStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)
		for _, name := range []string{"a", "b", "c", "d"} {
			get(t, c, svc(name))
		}
		hold := make(chan struct{})
		f.setHold(hold)
		var wg sync.WaitGroup
		var pending error
		wg.Go(func() { _, _, pending = c.Get(t.Context(), web) })
		synctest.Wait() // one fill in flight, the feed call blocked

		c.Close()
		// Close has waited for every goroutine it owns, and its hub
		// (still open) has stopped following: dc1 has no entries left.
		wg.Wait()
		synctest.Wait()
		if n := f.openFeeds("dc1"); n != 0 {
			t.Errorf("feed calls open after the only cache closed: got %d, want 0", n)
		}
		if !errors.Is(pending, cache.ErrClosed) {
			t.Errorf("Get waiting during Close: got %v, want ErrClosed", pending)
		}
		if _, _, err := c.Get(t.Context(), svc("a")); !errors.Is(err, cache.ErrClosed) {
			t.Errorf("Get after Close: got %v, want ErrClosed", err)
		}
		if s := c.Stats(); s.Entries != 0 || s.Evictions != 0 {
			t.Errorf("after Close: got %+v, want no entries and no evictions", s)
		}
		c.Close() // a second Close is harmless
		close(hold)
	})
}

func TestGetHitAllocs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		ctx := t.Context()
		get(t, c, web)
		synctest.Wait()

		hit := func() {
			if _, info, err := c.Get(ctx, web); err != nil || !info.Hit {
				t.Fatalf("Get: %+v, %v", info, err)
			}
		}
		if n := testing.AllocsPerRun(1000, hit); n != 0 {
			t.Errorf("allocations per fresh hit: got %v, want 0", n)
		}
		f.fail(errDown)
		time.Sleep(cfg.StaleAfter + time.Second)
		if _, info := get(t, c, web); !info.Stale {
			t.Fatalf("got %+v, want a stale hit", info)
		}
		if n := testing.AllocsPerRun(1000, hit); n != 0 {
			t.Errorf("allocations per stale hit: got %v, want 0", n)
		}
	})
}

func TestNew(t *testing.T) {
	f := newFake()
	hub := newHub(t, cache.DefaultConfig(), f.feed)
	withHub := cache.DefaultConfig()
	withHub.Hub = hub
	for _, tc := range []struct {
		name  string
		cfg   cache.Config
		fetch cache.Fetcher[*answer]
		want  string // in the error
	}{
		{"a zero Config", cache.Config{Hub: hub}, f.fetch, "MaxEntries"},
		{"no Hub", cache.DefaultConfig(), f.fetch, "Hub"},
		{"a nil Fetcher", withHub, nil, "Fetcher"},
	} {
		if _, err := cache.New(tc.cfg, tc.fetch, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %s: got %v, want an error about %s", tc.name, err, tc.want)
		}
	}
	if _, err := cache.NewHub(nil, cache.DefaultConfig(), nil); err == nil || !strings.Contains(err.Error(), "Feed") {
		t.Errorf("NewHub with a nil Feed: got %v, want an error about the Feed", err)
	}
}

func TestKeyString(t *testing.T) {
	for _, tc := range []struct {
		key  cache.Key
		want string
	}{
		{cache.Key{Kind: "service", Name: "web"}, "service web"},
		{cache.Key{Kind: "service", Name: "web", Tag: "v1", Datacenter: "dc2", Filter: "passing"}, "service web tag=v1 dc=dc2 filter=passing"},
	} {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("%#v.String(): got %q, want %q", tc.key, got, tc.want)
		}
	}
}

// TestMissesInFlightBounded: at most MaxEntries misses are fetched at
// once; a miss of another key fails at once, while a miss joining one in
// flight waits for it as usual.
func TestMissesInFlightBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		hold := make(chan struct{})
		f.setHold(hold)
		cfg := cache.DefaultConfig()
		cfg.MaxEntries = 2
		c := newCache(t, cfg, f)

		var wg sync.WaitGroup
		for _, name := range []string{"a", "b", "a"} {
			wg.Go(func() { get(t, c, svc(name)) })
		}
		synctest.Wait() // two fills in flight, three callers waiting
		start := time.Now()
		if _, _, err := c.Get(t.Context(), svc("c")); !errors.Is(err, cache.ErrOverloaded) || time.Since(start) != 0 {
			t.Errorf("a third key: got %v after %v, want ErrOverloaded at once", err, time.Since(start))
		}
		f.setHold(nil)
		close(hold)
		wg.Wait()
		synctest.Wait()     // and the feed's first reset has been refetched
		get(t, c, svc("c")) // the fills are done: room again
		if got := f.callsFor("c"); got != 1 {
			t.Errorf("fetches of c: got %d, want 1 (none for the refused miss)", got)
		}
		if s := c.Stats(); s.Misses != 5 {
			t.Errorf("misses: got %d, want 5 (the refused one counts)", s.Misses)
		}
	})
}
