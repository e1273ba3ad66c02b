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

func TestFeedRefetchesOnlyWhatChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.0.9")
		c := newCache(t, cache.DefaultConfig(), f)

		get(t, c, web)
		get(t, c, svc("api"))
		synctest.Wait() // the feed's first call reset; both were refetched; it now blocks
		webCalls, apiCalls := f.callsFor("web"), f.callsFor("api")

		f.register("web", "10.0.0.2")
		synctest.Wait()
		e, info := get(t, c, web)
		if !info.Hit {
			t.Fatalf("after a change: %+v, want a hit", info)
		}
		wantInstances(t, e, "10.0.0.1", "10.0.0.2")
		if got := f.callsFor("web"); got != webCalls+1 {
			t.Errorf("web fetches: got %d, want %d (one refetch)", got, webCalls+1)
		}
		if got := f.callsFor("api"); got != apiCalls {
			t.Errorf("api fetches: got %d, want %d (api did not change)", got, apiCalls)
		}
		// Fills are plain reads; a refetch asks for the index the feed
		// reported (the change's 3: minIndex 2), never past it to block
		// for news. (The fills and the first reset may come in any order.)
		if mins := f.minIndexes(); len(mins) == 0 || mins[len(mins)-1] != 2 || slices.Max(mins) != 2 {
			t.Errorf("fetch minIndexes %v: want the change's refetch last at minIndex 2, none above", mins)
		}
		// One feed for the datacenter, however many entries.
		before := f.feedCalls()
		f.register("web", "10.0.0.3")
		synctest.Wait()
		if got := f.feedCalls() - before; got != 1 {
			t.Errorf("feed calls for one change: got %d, want 1", got)
		}
	})
}

// A change that lands while an entry is being read must not be lost, both
// for a fill and for a refetch already running.
func TestFeedChangeDuringAReadIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newCache(t, cache.DefaultConfig(), f)
		get(t, c, svc("other")) // the feed is running before the fill below
		synctest.Wait()

		late := make(chan struct{})
		f.setLate(late)
		done := make(chan *cache.Entry[*answer])
		go func() {
			e, _ := get(t, c, web)
			done <- e
		}()
		synctest.Wait()               // the fill has read 10.0.0.1 and waits
		f.register("web", "10.0.0.2") // the feed names web while the fill is in flight
		synctest.Wait()
		f.setLate(nil)
		close(late)
		wantInstances(t, <-done, "10.0.0.1") // what the fill read
		synctest.Wait()
		e, _ := get(t, c, web)
		wantInstances(t, e, "10.0.0.1", "10.0.0.2")

		// Now a refetch in flight when the next change lands.
		late = make(chan struct{})
		f.setLate(late)
		f.register("web", "10.0.0.3")
		synctest.Wait() // the refetch has read .3 and waits
		f.register("web", "10.0.0.4")
		synctest.Wait()
		f.setLate(nil)
		close(late)
		synctest.Wait()
		e, _ = get(t, c, web)
		wantInstances(t, e, "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")
	})
}

func TestFeedOutageServesStaleAndCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		get(t, c, web)
		synctest.Wait()

		f.fail(errDown)
		time.Sleep(cfg.StaleAfter + time.Second)
		e, info := get(t, c, web)
		if !info.Hit || !info.Stale || info.Age < cfg.StaleAfter {
			t.Fatalf("during the outage: %+v, want a stale hit older than StaleAfter", info)
		}
		wantInstances(t, e, "10.0.0.1")
		if _, _, err := c.Get(t.Context(), svc("unseen")); !errors.Is(err, errDown) {
			t.Fatalf("an unseen name during the outage: err %v, want %v", err, errDown)
		}
		if c.Stats().RefreshErrors == 0 {
			t.Error("RefreshErrors: got 0, want the feed's failures counted")
		}

		f.fail(nil)
		f.register("web", "10.0.0.2") // changed while the feed was down
		time.Sleep(cfg.RetryMax)      // the feed's backoff has ended
		synctest.Wait()
		e, info = get(t, c, web)
		if info.Stale || info.Age != 0 {
			t.Fatalf("after the outage: %+v, want a fresh hit", info)
		}
		wantInstances(t, e, "10.0.0.1", "10.0.0.2")
	})
}

func TestFeedDropsAfterMaxStaleAndWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.MaxStale = time.Minute
		cfg.StaleAfter = time.Second
		c := newCache(t, cfg, f)
		get(t, c, web)
		synctest.Wait()

		f.fail(errDown)
		for range 3 { // used meanwhile, so only staleness can drop it
			time.Sleep(30 * time.Second)
			c.Get(t.Context(), web)
		}
		synctest.Wait()
		if n := c.Stats().Entries; n != 0 {
			t.Fatalf("entries past MaxStale: got %d, want 0", n)
		}
		if _, _, err := c.Get(t.Context(), web); !errors.Is(err, errDown) {
			t.Fatalf("past MaxStale: err %v, want %v", err, errDown)
		}

		f.fail(nil)
		time.Sleep(cfg.RetryMax)
		get(t, c, web)
		if n := c.Stats().Entries; n != 1 {
			t.Fatalf("entries: got %d, want 1", n)
		}
		time.Sleep(cfg.IdleTimeout + 2*time.Second)
		synctest.Wait()
		if s := c.Stats(); s.Entries != 0 || s.Evictions != 2 {
			t.Fatalf("after IdleTimeout: %+v, want no entries and 2 evictions", s)
		}
	})
}

func TestFeedResetRefetchesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.0.9")
		c := newCache(t, cache.DefaultConfig(), f)
		get(t, c, web)
		get(t, c, svc("api"))
		synctest.Wait()

		// A restored server: an older index and other data.
		f.restore(1, map[string][]string{"web": {"10.0.0.7"}})
		time.Sleep(time.Second)
		synctest.Wait()
		e, _ := get(t, c, web)
		wantInstances(t, e, "10.0.0.7")
		e, _ = get(t, c, svc("api"))
		wantInstances(t, e)
	})
}

// TestFeedRefreshAfter: a value that depends on data the feed does not
// follow is refetched once older than its RefreshAfter; others are not.
func TestFeedRefreshAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.0.9")
		cfg := cache.DefaultConfig()
		cfg.RefreshAfter = func(v any) time.Duration {
			if a := v.(*answer); len(a.instances) > 0 && a.instances[0] == "10.0.0.1" {
				return 3 * time.Second
			}
			return 0
		}
		c := newCache(t, cfg, f)
		get(t, c, web)
		get(t, c, svc("api"))
		synctest.Wait()

		// Changed behind the feed's back: no index, no log entry.
		f.mu.Lock()
		f.names["web"] = []string{"10.0.0.2"}
		f.names["api"] = []string{"10.0.0.8"}
		f.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		e, _ := get(t, c, web)
		wantInstances(t, e, "10.0.0.2")
		e, _ = get(t, c, svc("api"))
		wantInstances(t, e, "10.0.0.9") // RefreshAfter 0: only the feed refreshes it
	})
}

// TestHubSharedByCaches: two caches on one Hub follow one feed per
// datacenter between them, and both see a change it names.
func TestHubSharedByCaches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.Hub = newHub(t, cfg, f.feed)
		a, b := newCache(t, cfg, f), newCache(t, cfg, f)
		get(t, a, web)
		get(t, b, web)
		synctest.Wait()

		before := f.feedCalls()
		f.register("web", "10.0.0.2")
		synctest.Wait()
		if got := f.feedCalls() - before; got != 1 {
			t.Errorf("feed calls for one change with two caches: got %d, want 1", got)
		}
		for _, c := range []*cache.Cache[*answer]{a, b} {
			e, _ := get(t, c, web)
			wantInstances(t, e, "10.0.0.1", "10.0.0.2")
		}
	})
}

// TestFeedBackoffOnErrors counts the calls of a feed that fails at once:
// with RetryMin 100ms doubling to RetryMax 30s, each wait jittered into
// [d/2, d], the n-th retry comes between the sums of the halved and the
// full waits, which bounds the count at any time.
func TestFeedBackoffOnErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.IdleTimeout = 10 * time.Hour // this test is about retries only
		c := newCache(t, cfg, f)
		e, _ := get(t, c, web)
		synctest.Wait()
		base := f.feedCalls() - 1 // the blocked call is the first to fail

		f.fail(errDown) // the blocked call fails now, then every retry at once
		for _, step := range []struct {
			at       time.Duration
			min, max int
		}{
			// failures at 0, then after waits of up to .1 .2 .4 s (at
			// least .05 .1 .2 .4 s): 4 or 5 within the first second.
			{time.Second, 4, 5},
			// Up to 51.1s for the first 9 waits, at least 25.55s for 9,
			// 40.55s for 10, 55.55s for 11, 70.55s for 12.
			{time.Minute, 10, 12},
			// From then on one every 15 to 30s.
			{time.Hour, 10 + 118, 12 + 240},
		} {
			time.Sleep(step.at - time.Since(e.Fetched))
			synctest.Wait()
			got := f.feedCalls() - base
			if got < step.min || got > step.max {
				t.Errorf("failed feed calls after %v: got %d, want %d to %d", step.at, got, step.min, step.max)
			}
			if s := c.Stats(); s.RefreshErrors != uint64(got) {
				t.Errorf("RefreshErrors after %v: got %d, want %d", step.at, s.RefreshErrors, got)
			}
		}

		f.fail(nil)
		time.Sleep(cfg.RetryMax)
		synctest.Wait()
		e2, info := get(t, c, web)
		if info != (cache.Info{Hit: true}) || e2.Index != e.Index {
			t.Errorf("after the servers came back: got %+v at index %d, want a fresh hit at %d", info, e2.Index, e.Index)
		}
	})
}

func TestFeedServeStaleAndItsMaximum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.MaxStale = time.Hour
		cfg.IdleTimeout = 10 * time.Hour // this test is about staleness only
		c := newCache(t, cfg, f)
		get(t, c, web)

		// The feed's last success at t0, then the servers go away.
		time.Sleep(10 * time.Second)
		f.register("web", "10.0.0.2")
		synctest.Wait()
		t0 := time.Now()
		f.fail(errDown)
		synctest.Wait()

		for _, step := range []struct {
			at    time.Duration
			stale bool
		}{
			{0, false},
			{cfg.StaleAfter - time.Second, false},
			{cfg.StaleAfter + time.Second, true},
			{cfg.MaxStale - time.Second, true},
		} {
			time.Sleep(step.at - time.Since(t0))
			e, info := get(t, c, web)
			if want := (cache.Info{Hit: true, Stale: step.stale, Age: step.at}); info != want {
				t.Errorf("%v after the last contact: got %+v, want %+v", step.at, info, want)
			}
			wantInstances(t, e, "10.0.0.1", "10.0.0.2")
		}
		if s := c.Stats(); s.StaleAnswers != 2 {
			t.Errorf("StaleAnswers: got %d, want 2", s.StaleAnswers)
		}

		// Past MaxStale the entry is gone and Get is a miss that fails
		// at once with the fetch's error.
		time.Sleep(2 * time.Second)
		start := time.Now()
		_, _, err := c.Get(t.Context(), web)
		if !errors.Is(err, errDown) || time.Since(start) != 0 {
			t.Errorf("Get past MaxStale: got %v after %v, want %v at once", err, time.Since(start), errDown)
		}
		time.Sleep(cfg.RetryMax)
		synctest.Wait()
		if s := c.Stats(); s.Entries != 0 || s.Evictions != 1 {
			t.Errorf("stats past MaxStale: got %+v, want no entries, 1 eviction", s)
		}

		// Servers back: the first question tries the feed again at once
		// (it is still refused: the feed's last try failed); within
		// RetryMin the names answer.
		f.fail(nil)
		if _, _, err := c.Get(t.Context(), web); !errors.Is(err, cache.ErrFeedFailing) {
			t.Errorf("servers back, before the feed's next try: got %v, want %v", err, cache.ErrFeedFailing)
		}
		time.Sleep(cfg.RetryMin)
		synctest.Wait()
		if e, info := get(t, c, web); info.Hit || e.Index != 2 {
			t.Errorf("servers back: got %+v index %d, want a miss filled at index 2", info, e.Index)
		}
	})
}

// TestNonBlockingFeedDoesNotSpin checks that a feed that answers at once
// without a change is paced at RetryMin, and one that answers index 0 is
// asked to block at index 1.
func TestNonBlockingFeedDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			calls int
			mins  []uint64
		)
		feed := feedFunc(func(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if len(mins) < 3 {
				mins = append(mins, minIndex)
			}
			return 0, func(cache.Key) bool { return false }, false, nil
		})
		f := newFake()
		cfg := cache.DefaultConfig()
		c := newCacheWith(t, cfg, f.fetch, feed.feed)
		get(t, c, web)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// One call per jittered RetryMin (90 to 110ms) over 10s.
		mu.Lock()
		defer mu.Unlock()
		if n := calls; n < 90 || n > 113 {
			t.Errorf("feed calls in 10s: got %d, want 90 to 113", n)
		}
		if want := []uint64{0, 1, 1}; !slices.Equal(mins, want) {
			t.Errorf("minIndex: got %v, want %v", mins, want)
		}
		if got := f.callsFor("web"); got != 2 {
			t.Errorf("fetches: got %d, want 2 (the fill, the refetch after the first call)", got)
		}
		if s := c.Stats(); s.RefreshErrors != 0 {
			t.Errorf("RefreshErrors: got %d, want 0", s.RefreshErrors)
		}
	})
}

// TestFeedFailingPastMaxStaleServFailsUntilItWorks: servers that answer
// reads but not the feed (an RPC they do not serve: a version outside the
// supported range) are treated as unreachable ones: the entries are served
// stale up to MaxStale; past it every question of the datacenter, cached
// or not, fails with ErrFeedFailing and the feed's error (SERVFAIL) rather
// than answering what may never be brought up to date; once the feed
// works again, the names answer again, current.
func TestFeedFailingPastMaxStaleServFailsUntilItWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.1.1")
		cfg := cache.DefaultConfig()
		cfg.MaxStale = time.Hour
		cfg.IdleTimeout = 10 * time.Hour
		c := newCache(t, cfg, f)
		get(t, c, web)
		synctest.Wait()
		errMethod := errors.New(`rpc: can't find method "Catalog.Feed"`)
		f.failFeed(errMethod)
		synctest.Wait()
		t0 := time.Now()
		f.register("web", "10.0.0.2") // unseen: the feed is down

		time.Sleep(cfg.MaxStale - time.Minute)
		if e, info := get(t, c, web); !info.Stale || !info.Hit {
			t.Errorf("before MaxStale: got %+v, want a stale hit", info)
		} else {
			wantInstances(t, e, "10.0.0.1")
		}
		api := cache.Key{Kind: web.Kind, Datacenter: web.Datacenter, Name: "api"}
		if _, _, err := c.Get(t.Context(), api); err != nil {
			t.Errorf("a miss before MaxStale: got %v, want it filled", err)
		}

		time.Sleep(time.Until(t0.Add(cfg.MaxStale + cfg.RetryMax)))
		synctest.Wait()
		for _, k := range []cache.Key{web, api, {Kind: web.Kind, Datacenter: web.Datacenter, Name: "never-asked"}} {
			_, _, err := c.Get(t.Context(), k)
			if !errors.Is(err, cache.ErrFeedFailing) || !errors.Is(err, errMethod) {
				t.Errorf("%s past MaxStale: got %v, want %v wrapping %v", k.Name, err, cache.ErrFeedFailing, errMethod)
			}
		}
		// Still failing hours later: still refused, never frozen.
		time.Sleep(5 * time.Hour)
		synctest.Wait()
		if _, _, err := c.Get(t.Context(), web); !errors.Is(err, cache.ErrFeedFailing) {
			t.Errorf("hours past MaxStale: got %v, want %v", err, cache.ErrFeedFailing)
		}

		f.failFeed(nil)
		time.Sleep(cfg.RetryMax)
		synctest.Wait()
		e, _, err := c.Get(t.Context(), web)
		if err != nil {
			t.Fatalf("the feed back: got %v, want an answer", err)
		}
		wantInstances(t, e, "10.0.0.1", "10.0.0.2")
	})
}
