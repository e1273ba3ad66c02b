package cache_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/cache"
)

// TestConcurrentUse runs, in real time and for the race detector, many
// callers over more keys than fit, in two datacenters, while the catalog
// changes and the servers come and go, with timings short enough that
// every path (fill, hit, refetch, feed backoff, idle and LRU eviction,
// stale, a datacenter's feed stopping and starting again) runs many
// times. Once nobody asks, every entry goes idle and both feeds stop.
func TestConcurrentUse(t *testing.T) {
	f := newFake()
	cfg := cache.DefaultConfig()
	cfg.MaxEntries = 20
	cfg.MaxBytes = 20 * (entrySize + 10)
	cfg.Size = func(v any) int { return 10 * len(v.(*answer).instances) }
	cfg.IdleTimeout = 50 * time.Millisecond
	cfg.BlockingWait = 20 * time.Millisecond
	cfg.FetchTimeout = 100 * time.Millisecond
	cfg.StaleAfter = time.Millisecond
	cfg.MaxStale = 30 * time.Millisecond
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 5*time.Millisecond
	c := newCache(t, cfg, f)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // the catalog changes, and the servers come and go
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			f.register("s"+strconv.Itoa(i%50), strconv.Itoa(i))
			if i%40 == 0 {
				f.fail(errDown)
			} else if i%40 == 20 {
				f.fail(nil)
			}
		}
	})
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := cache.Key{Kind: "service", Name: "s" + strconv.Itoa((g*7+i)%50), Datacenter: "dc" + strconv.Itoa(1+g%2)}
				e, info, err := c.Get(t.Context(), key)
				switch {
				case err != nil && !errors.Is(err, errDown):
					t.Errorf("Get(%v): %v", key, err)
				case err == nil && (e == nil || info.Hit && e.Value == nil):
					t.Errorf("Get(%v): got %+v %+v, want an entry", key, e, info)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	s := c.Stats()
	if s.Entries > cfg.MaxEntries || s.Bytes > cfg.MaxBytes {
		t.Errorf("stats: got %+v, want at most %d entries and %d bytes", s, cfg.MaxEntries, cfg.MaxBytes)
	}
	if s.Hits == 0 || s.Misses == 0 || s.Evictions == 0 {
		t.Errorf("stats: got %+v, want hits, misses and evictions", s)
	}
	t.Logf("%+v", s)

	// Nobody asks any more: within IdleTimeout and a tick every entry
	// is dropped, and then both datacenters' feed calls end. With the
	// servers up, a feed still followed is in a call nearly all the time
	// and makes one every BlockingWait, so no call open and none made
	// for several BlockingWaits means the feeds stopped.
	f.fail(nil)
	calls := func() int { return len(f.feedMinIndexes("dc1")) + len(f.feedMinIndexes("dc2")) }
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := calls()
		if c.Stats().Entries == 0 && f.openFeeds("dc1") == 0 && f.openFeeds("dc2") == 0 {
			time.Sleep(5 * cfg.BlockingWait)
			if calls() == before && f.openFeeds("dc1") == 0 && f.openFeeds("dc2") == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the last Get: %d entries, %d and %d feed calls open, want none",
				c.Stats().Entries, f.openFeeds("dc1"), f.openFeeds("dc2"))
		}
		time.Sleep(time.Millisecond)
	}
}

// entrySize is what the cache adds to Size for a key of these tests
// (entryOverhead plus the key's bytes), roughly.
const entrySize = 1<<10 + 16
