package cache_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/cache"
)

// newFedCache returns a cache over f that follows f's feed.
func newFedCache(t *testing.T, cfg cache.Config, f *fakeCatalog) *cache.Cache[*answer] {
	t.Helper()
	cfg.Feed = f.feed
	return newCache(t, cfg, f)
}

func TestFeedRefetchesOnlyWhatChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.0.9")
		c := newFedCache(t, cache.DefaultConfig(), f)
		defer c.Close()

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
		// No entry holds a blocking query: every fetch is a plain read.
		if mins := f.minIndexes(); slices.ContainsFunc(mins, func(m uint64) bool { return m != 0 }) {
			t.Errorf("fetch minIndexes %v: want only plain reads with a feed", mins)
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

func TestFeedFillsANegativeEntryOnRegistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("other", "10.0.0.9") // past index 1: see Feed
		c := newFedCache(t, cache.DefaultConfig(), f)
		defer c.Close()

		e, _ := get(t, c, web)
		wantInstances(t, e)
		synctest.Wait()
		f.register("web", "10.0.0.1")
		synctest.Wait()
		e, info := get(t, c, web)
		if !info.Hit {
			t.Fatalf("info %+v, want a hit", info)
		}
		wantInstances(t, e, "10.0.0.1")
	})
}

// A change that lands while an entry is being read must not be lost, both
// for a fill and for a refetch already running.
func TestFeedChangeDuringAReadIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		c := newFedCache(t, cache.DefaultConfig(), f)
		defer c.Close()
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
		c := newFedCache(t, cfg, f)
		defer c.Close()
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
		c := newFedCache(t, cfg, f)
		defer c.Close()
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
		c := newFedCache(t, cache.DefaultConfig(), f)
		defer c.Close()
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
		c := newFedCache(t, cfg, f)
		defer c.Close()
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
		hub, err := cache.NewHub(f.feed, cache.DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hub.Close()
		cfg := cache.DefaultConfig()
		cfg.Hub = hub
		a, b := newCache(t, cfg, f), newCache(t, cfg, f)
		defer b.Close()
		defer a.Close()
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
