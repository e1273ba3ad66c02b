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

// TestBackoffOnErrors counts refresh attempts against fetches that fail
// at once: with RetryMin 100ms doubling to RetryMax 30s, each wait
// jittered into [d/2, d], the n-th retry comes between the sums of the
// halved and the full waits, which bounds the count at any time.
func TestBackoffOnErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.IdleTimeout = 10 * time.Hour // this test is about retries only
		c := newCache(t, cfg, f)
		defer c.Close()
		e, _ := get(t, c, web)
		synctest.Wait()
		base := f.callsFor("web") - 1 // the fill; the blocked refresh is the first to fail

		f.fail(errDown) // the blocked refresh fails now, then every retry at once
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
			got := f.callsFor("web") - base
			if got < step.min || got > step.max {
				t.Errorf("failed refreshes after %v: got %d, want %d to %d", step.at, got, step.min, step.max)
			}
			if s := c.Stats(); s.RefreshErrors != uint64(got) {
				t.Errorf("RefreshErrors after %v: got %d, want %d", step.at, s.RefreshErrors, got)
			}
		}

		f.fail(nil)
		time.Sleep(cfg.RetryMax)
		synctest.Wait()
		e2, info := get(t, c, web)
		if e2 != e || info != (cache.Info{Hit: true}) {
			t.Errorf("after the servers came back: got %p %+v, want the same entry %p, fresh", e2, info, e)
		}
	})
}

func TestServeStaleAndItsMaximum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.MaxStale = time.Hour
		cfg.IdleTimeout = 10 * time.Hour // this test is about staleness only
		c := newCache(t, cfg, f)
		defer c.Close()
		get(t, c, web)

		// A successful refresh at t, then the servers go away.
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
				t.Errorf("%v after the last refresh: got %+v, want %+v", step.at, info, want)
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

		f.fail(nil)
		if e, info := get(t, c, web); info.Hit || e.Index != 2 {
			t.Errorf("servers back: got %+v index %d, want a miss filled at index 2", info, e.Index)
		}
	})
}

// TestStaleDroppedByRefreshLoop checks that an entry nobody asks for
// while its refresh fails is dropped by the loop itself soon after
// MaxStale, and that its refresh stops.
func TestStaleDroppedByRefreshLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.MaxStale = time.Hour
		cfg.IdleTimeout = 10 * time.Hour
		c := newCache(t, cfg, f)
		defer c.Close()
		get(t, c, web)
		synctest.Wait()
		f.fail(errDown)

		time.Sleep(cfg.MaxStale + cfg.RetryMax)
		synctest.Wait()
		calls := f.callsFor("web")
		if s := c.Stats(); s.Entries != 0 || s.Evictions != 1 {
			t.Errorf("after MaxStale: got %+v, want no entries, 1 eviction", s)
		}
		time.Sleep(time.Hour)
		if got := f.callsFor("web"); got != calls {
			t.Errorf("fetches after the drop: got %d more, want none", got-calls)
		}
	})
}

// TestIndexBackwards follows Consul's rule: an index lower than the one
// asked for is accepted, and the next fetch is a plain read.
func TestIndexBackwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		for i := range 5 {
			f.register("web", "10.0.0."+string(rune('1'+i)))
		}
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		defer c.Close()
		if e, _ := get(t, c, web); e.Index != 5 {
			t.Fatalf("index: got %d, want 5", e.Index)
		}

		// A server restored from an older snapshot answers: index 2.
		f.restore(2, map[string][]string{"web": {"10.0.0.1", "10.0.0.2"}})
		time.Sleep(cfg.BlockingWait * 11 / 10) // it blocks until the wait ends
		synctest.Wait()
		e, _ := get(t, c, web)
		if e.Index != 2 {
			t.Errorf("index after the restore: got %d, want 2", e.Index)
		}
		wantInstances(t, e, "10.0.0.1", "10.0.0.2")
		if got, want := f.minIndexes(), []uint64{0, 5, 0, 2}; !slices.Equal(got, want) {
			t.Errorf("minIndex of the fetches: got %v, want %v (a plain read after the index went back)", got, want)
		}

		f.register("web", "10.0.0.9")
		synctest.Wait()
		if e, _ := get(t, c, web); e.Index != 3 {
			t.Errorf("index after the next change: got %d, want 3", e.Index)
		}
	})
}

// TestNonBlockingFetcherDoesNotSpin checks that a fetcher that answers at
// once without a change (it ignores minIndex) is paced at RetryMin, and
// one that answers index 0 is asked to block at index 1.
func TestNonBlockingFetcherDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			calls int
			mins  []uint64
		)
		fetch := func(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*answer, uint64, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if len(mins) < 3 {
				mins = append(mins, minIndex)
			}
			return &answer{}, 0, nil
		}
		cfg := cache.DefaultConfig()
		c, err := cache.New(cfg, fetch, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, _, err := c.Get(t.Context(), web); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// One fetch per jittered RetryMin (90 to 110ms) over 10s.
		mu.Lock()
		defer mu.Unlock()
		if n := calls; n < 90 || n > 113 {
			t.Errorf("fetches in 10s: got %d, want 90 to 113", n)
		}
		if want := []uint64{0, 1, 1}; !slices.Equal(mins, want) {
			t.Errorf("minIndex: got %v, want %v", mins, want)
		}
		if s := c.Stats(); s.RefreshErrors != 0 {
			t.Errorf("RefreshErrors: got %d, want 0", s.RefreshErrors)
		}
	})
}
