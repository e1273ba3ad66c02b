package cache_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/cache"
)

var web = cache.Key{Kind: "service", Name: "web", Datacenter: "dc1"}

func svc(name string) cache.Key { return cache.Key{Kind: "service", Name: name, Datacenter: "dc1"} }

// newCache returns a cache over f; the caller defers Close (inside a
// bubble, before the bubble ends).
func newCache(t *testing.T, cfg cache.Config, f *fakeCatalog) *cache.Cache[*answer] {
	t.Helper()
	c, err := cache.New(cfg, f.fetch, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
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
		defer c.Close()

		e, info := get(t, c, web)
		if info != (cache.Info{}) {
			t.Errorf("first Get info: got %+v, want a miss", info)
		}
		wantInstances(t, e, "10.0.0.1")
		if e.Index != 1 || !e.Fetched.Equal(time.Now()) {
			t.Errorf("entry: got index %d fetched %v, want 1 at %v", e.Index, e.Fetched, time.Now())
		}
		synctest.Wait() // the refresh is now blocked at index 1
		calls := f.callsFor("web")
		if calls != 2 {
			t.Errorf("fetches after the fill: got %d, want 2 (the fill, the blocking refresh)", calls)
		}

		time.Sleep(time.Second)
		e2, info := get(t, c, web)
		if e2 != e || info != (cache.Info{Hit: true}) {
			t.Errorf("second Get: got %p %+v, want the same entry %p as a fresh hit", e2, info, e)
		}
		if got := f.callsFor("web"); got != calls {
			t.Errorf("fetches after a hit: got %d, want %d", got, calls)
		}
		if s := c.Stats(); s.Hits != 1 || s.Misses != 1 || s.Entries != 1 || s.Evictions != 0 {
			t.Errorf("stats: got %+v, want 1 hit, 1 miss, 1 entry", s)
		}
	})
}

func TestRefreshOnIndexChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)
		defer c.Close()
		old, _ := get(t, c, web)

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
		// A change elsewhere in the table moves the index too: a new
		// entry, same value.
		f.register("db", "10.0.1.1")
		synctest.Wait()
		if e, _ := get(t, c, web); e.Index != 3 {
			t.Errorf("index after an unrelated change: got %d, want 3", e.Index)
		}
		if got, want := f.minIndexes(), []uint64{0, 1, 2, 3}; !slices.Equal(got, want) {
			t.Errorf("minIndex of the fetches: got %v, want %v", got, want)
		}
		if s := c.Stats(); s.Misses != 1 {
			t.Errorf("misses: got %d, want 1", s.Misses)
		}
	})
}

// TestBlockingWaitEnds checks that a blocking query that ends without a
// change publishes nothing and is simply asked again.
func TestBlockingWaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		defer c.Close()
		e, _ := get(t, c, web)

		time.Sleep(cfg.BlockingWait * 11 / 10) // past the longest jittered wait
		synctest.Wait()
		e2, info := get(t, c, web)
		if e2 != e || info != (cache.Info{Hit: true}) {
			t.Errorf("after an empty wait: got %p %+v, want the same entry %p, fresh", e2, info, e)
		}
		if got := f.callsFor("web"); got != 3 {
			t.Errorf("fetches: got %d, want 3 (fill, a wait that ended, the next one)", got)
		}
	})
}

func TestNegativeEntryTurnsPositive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)
		defer c.Close()
		api := svc("api")

		e, _ := get(t, c, api)
		wantInstances(t, e) // none: a negative entry, cached like any other
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
		defer c.Close()

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
		f.setHold(nil)
		close(hold)
		wg.Wait()

		if got := f.plainReads(); got != 1 {
			t.Errorf("fetches for %d concurrent misses: got %d, want 1", n, got)
		}
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
		defer c.Close()

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
	})
}

func TestFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		hold := make(chan struct{}) // never closed: servers that do not answer
		f.setHold(hold)
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		defer c.Close()

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
			if minIndex == 0 {
				<-release
				return &answer{instances: []string{"10.0.0.1"}}, 1, nil
			}
			<-ctx.Done()
			return nil, 0, ctx.Err()
		}
		cfg := cache.DefaultConfig()
		c, err := cache.New(cfg, fetch, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

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
		defer c.Close()

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
		synctest.Wait() // one fill in flight, four refreshes blocked

		c.Close()
		// Close has waited for every goroutine it owns: none of the
		// cache's is left (synctest.Test would also report them).
		wg.Wait()
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
		defer c.Close()
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
	if _, err := cache.New(cache.Config{}, f.fetch, nil); err == nil {
		t.Error("New with a zero Config: got no error")
	}
	if _, err := cache.New[*answer](cache.DefaultConfig(), nil, nil); err == nil {
		t.Error("New with a nil Fetcher: got no error")
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
