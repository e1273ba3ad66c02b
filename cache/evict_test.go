package cache_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/cache"
)

func TestIdleEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.2.1")
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		get(t, c, web)
		get(t, c, svc("api"))

		// api is asked for every minute, web never again.
		for range 30 {
			time.Sleep(time.Minute)
			if _, info := get(t, c, svc("api")); !info.Hit {
				t.Fatalf("api asked every minute: got %+v, want a hit", info)
			}
		}
		synctest.Wait()
		if s := c.Stats(); s.Entries != 1 || s.Evictions != 1 || s.Misses != 2 {
			t.Errorf("after 30m: got %+v, want 1 entry (api), 1 eviction, 2 misses", s)
		}
		calls := f.callsFor("web")
		f.register("web", "10.0.0.2") // the feed names it, but it is gone
		synctest.Wait()
		if got := f.callsFor("web"); got != calls {
			t.Errorf("fetches of the idle entry after it was dropped: got %d more, want none", got-calls)
		}
		if _, info := get(t, c, web); info.Hit {
			t.Errorf("Get of the dropped entry: got %+v, want a miss", info)
		}
	})
}

// TestIdleEvictionOnTime checks that an idle entry goes at IdleTimeout
// (the sweep, every tick), not when its feed call happens to return.
func TestIdleEvictionOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		get(t, c, web)

		time.Sleep(cfg.IdleTimeout - time.Second)
		synctest.Wait()
		if s := c.Stats(); s.Entries != 1 {
			t.Errorf("just before IdleTimeout: got %d entries, want 1", s.Entries)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if s := c.Stats(); s.Entries != 0 || s.Evictions != 1 {
			t.Errorf("at IdleTimeout: got %+v, want no entries, 1 eviction", s)
		}
	})
}

// TestLRUBound checks the entry bound and its second chance: the victim
// is the oldest entry not asked for since it was listed.
func TestLRUBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		cfg := cache.DefaultConfig()
		cfg.MaxEntries = 3
		c := newCache(t, cfg, f)
		for _, name := range []string{"a", "b", "c"} {
			get(t, c, svc(name))
			time.Sleep(time.Second)
		}
		get(t, c, svc("a")) // a is the oldest, but used
		get(t, c, svc("d")) // evicts b
		synctest.Wait()
		if s := c.Stats(); s.Entries != 3 || s.Evictions != 1 {
			t.Errorf("after a 4th entry: got %+v, want 3 entries, 1 eviction", s)
		}
		bCalls := f.callsFor("b")
		time.Sleep(time.Second)
		for _, name := range []string{"a", "c", "d"} {
			if _, info := get(t, c, svc(name)); !info.Hit {
				t.Errorf("Get(%s): got %+v, want a hit", name, info)
			}
		}
		f.register("b", "10.0.0.2") // the feed names it, but it is gone
		synctest.Wait()
		if got := f.callsFor("b"); got != bCalls {
			t.Errorf("fetches of the evicted entry: got %d more, want none", got-bCalls)
		}
		if _, info := get(t, c, svc("b")); info.Hit {
			t.Errorf("Get(b): got %+v, want a miss (evicted)", info)
		}
		if s := c.Stats(); s.Entries != 3 {
			t.Errorf("entries: got %d, want 3", s.Entries)
		}
	})
}

func TestBytesBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		for _, name := range []string{"a", "b", "c"} {
			f.register(name, "10.0.0.1")
		}
		f.register("big", "1", "2", "3", "4")
		// 10,000 bytes an instance dwarfs the per-entry overhead: two
		// one-instance entries fit in 30,000 bytes, three do not.
		const perInstance = 10_000
		cfg := cache.DefaultConfig()
		cfg.Size = func(v any) int { return perInstance * len(v.(*answer).instances) }
		cfg.MaxBytes = 30_000
		c := newCache(t, cfg, f)

		get(t, c, svc("a"))
		get(t, c, svc("b"))
		s := c.Stats()
		if s.Entries != 2 || s.Bytes < 2*perInstance || s.Bytes > cfg.MaxBytes {
			t.Fatalf("two entries: got %+v, want 2 entries within MaxBytes", s)
		}
		time.Sleep(time.Second)
		get(t, c, svc("c")) // evicts a, the oldest
		if s := c.Stats(); s.Entries != 2 || s.Evictions != 1 || s.Bytes > cfg.MaxBytes {
			t.Errorf("a third entry: got %+v, want 2 entries, 1 eviction, within MaxBytes", s)
		}

		// A refetch that grows c evicts b.
		f.register("c", "10.0.0.2")
		synctest.Wait()
		if s := c.Stats(); s.Entries != 1 || s.Evictions != 2 || s.Bytes > cfg.MaxBytes {
			t.Errorf("c grown: got %+v, want 1 entry, 2 evictions, within MaxBytes", s)
		}

		// An entry larger than MaxBytes is answered but not kept.
		for range 2 {
			e, info := get(t, c, svc("big"))
			if info.Hit || len(e.Value.instances) != 4 {
				t.Errorf("Get(big): got %+v with %d instances, want a miss with 4", info, len(e.Value.instances))
			}
		}
		if s := c.Stats(); s.Entries != 1 || s.Evictions != 4 {
			t.Errorf("after big twice: got %+v, want 1 entry (c), 4 evictions", s)
		}

		// c growing past MaxBytes on its own is dropped.
		f.register("c", "3", "4")
		synctest.Wait()
		if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Evictions != 5 {
			t.Errorf("c past MaxBytes: got %+v, want no entries, 0 bytes, 5 evictions", s)
		}
	})
}
