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
// callers over more keys than fit, while the catalog changes and the
// servers come and go, with timings short enough that every path (fill,
// hit, refresh, backoff, idle and LRU eviction, stale) runs many times.
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
	defer c.Close()

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
				key := svc("s" + strconv.Itoa((g*7+i)%50))
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
}

// entrySize is what the cache adds to Size for a key of these tests
// (entryOverhead plus the key's bytes), roughly.
const entrySize = 3<<10 + 16
