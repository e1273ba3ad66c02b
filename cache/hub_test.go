package cache_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/cache"
)

// api2 is a key in a second datacenter; the fake catalog is the same in
// every datacenter, and no dc1 key of these tests is named api.
var api2 = cache.Key{Kind: "service", Name: "api", Datacenter: "dc2"}

// TestHubStopsAndResumesADatacenter: once a datacenter's last entry goes
// idle its feed call ends and no other starts; the next miss there
// follows it again, from index 0, and its changes arrive again.
func TestHubStopsAndResumesADatacenter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		f.register("api", "10.0.2.1")
		cfg := cache.DefaultConfig()
		c := newCache(t, cfg, f)
		get(t, c, web)
		get(t, c, api2)
		synctest.Wait()
		if a, b := f.openFeeds("dc1"), f.openFeeds("dc2"); a != 1 || b != 1 {
			t.Fatalf("feed calls open: got dc1 %d, dc2 %d, want 1 each", a, b)
		}

		// web is asked for every minute, api in dc2 never again.
		for range 11 {
			time.Sleep(time.Minute)
			get(t, c, web)
		}
		synctest.Wait()
		if s := c.Stats(); s.Entries != 1 || s.Evictions != 1 {
			t.Fatalf("after IdleTimeout: got %+v, want 1 entry (web), 1 eviction", s)
		}
		if a, b := f.openFeeds("dc1"), f.openFeeds("dc2"); a != 1 || b != 0 {
			t.Errorf("feed calls open once dc2's last entry went: got dc1 %d, dc2 %d, want 1 and 0", a, b)
		}
		if a, b := f.stopsFor("dc1"), f.stopsFor("dc2"); a != 0 || b != 1 {
			t.Errorf("followers stopped once dc2's last entry went: got dc1 %d, dc2 %d, want 0 and 1", a, b)
		}
		dc2Calls, apiCalls := len(f.feedMinIndexes("dc2")), f.callsFor("api")
		f.register("api", "10.0.2.2")
		for range 60 { // an hour of dc1 in use: dc2's feed stays stopped
			time.Sleep(time.Minute)
			get(t, c, web)
		}
		synctest.Wait()
		if got := len(f.feedMinIndexes("dc2")); got != dc2Calls {
			t.Errorf("dc2 feed calls after its last entry went: got %d more, want none", got-dc2Calls)
		}
		if got := f.callsFor("api"); got != apiCalls {
			t.Errorf("fetches of the dropped dc2 entry: got %d more, want none", got-apiCalls)
		}

		// The next miss in dc2 follows it again, from the start.
		if e, info := get(t, c, api2); info.Hit {
			t.Errorf("Get in dc2: got %+v, want a miss", info)
		} else {
			wantInstances(t, e, "10.0.2.1", "10.0.2.2")
		}
		synctest.Wait()
		if got := f.openFeeds("dc2"); got != 1 {
			t.Errorf("dc2 feed calls open after the miss: got %d, want 1", got)
		}
		if mins := f.feedMinIndexes("dc2")[dc2Calls:]; len(mins) == 0 || mins[0] != 0 {
			t.Errorf("dc2 feed calls after the miss: minIndex %v, want a first one at 0", mins)
		}
		f.register("api", "10.0.2.3")
		synctest.Wait()
		e, info := get(t, c, api2)
		if !info.Hit {
			t.Errorf("after a change: got %+v, want a hit", info)
		}
		wantInstances(t, e, "10.0.2.1", "10.0.2.2", "10.0.2.3")
	})
}

// TestHubStopsOnEviction: a datacenter whose last entry is evicted for
// room is no longer followed, while one whose entry makes way for another
// of its own keeps its feed call (no stop and restart, which would
// refetch all of it).
func TestHubStopsOnEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.MaxEntries = 1
		c := newCache(t, cfg, f)
		get(t, c, api2)
		synctest.Wait()
		get(t, c, web) // evicts api2
		synctest.Wait()
		if a, b := f.openFeeds("dc1"), f.openFeeds("dc2"); a != 1 || b != 0 {
			t.Errorf("feed calls open after dc2's only entry was evicted: got dc1 %d, dc2 %d, want 1 and 0", a, b)
		}

		get(t, c, svc("db")) // evicts web, in the same datacenter
		synctest.Wait()
		if got, want := f.feedMinIndexes("dc1"), []uint64{0, 1}; !slices.Equal(got, want) {
			t.Errorf("dc1 feed calls' minIndex: got %v, want %v (one feed, never restarted)", got, want)
		}
		if s := c.Stats(); s.Entries != 1 || s.Evictions != 2 {
			t.Errorf("stats: got %+v, want 1 entry, 2 evictions", s)
		}
	})
}

// TestHubStopsAfterMaxStale: an entry nobody asks for while its feed
// fails is dropped soon after MaxStale, and then the feed's retries stop.
func TestHubStopsAfterMaxStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.MaxStale = time.Hour
		cfg.IdleTimeout = 10 * time.Hour // only staleness may drop it
		c := newCache(t, cfg, f)
		get(t, c, web)
		synctest.Wait()
		f.fail(errDown)

		time.Sleep(cfg.MaxStale + cfg.RetryMax)
		synctest.Wait()
		if s := c.Stats(); s.Entries != 0 || s.Evictions != 1 {
			t.Errorf("after MaxStale: got %+v, want no entries, 1 eviction", s)
		}
		// The failing feed is still tried, so that the datacenter
		// answers again once it works, until no one has asked for it for
		// IdleTimeout.
		time.Sleep(cfg.IdleTimeout + cfg.RetryMax)
		synctest.Wait()
		calls := f.feedCalls()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := f.feedCalls(); got != calls {
			t.Errorf("feed calls once the datacenter went idle: got %d more, want none", got-calls)
		}
		if got := f.openFeeds("dc1"); got != 0 {
			t.Errorf("feed calls open: got %d, want 0", got)
		}
	})
}

// TestHubFollowsWhileAnyCacheHasEntries: with two caches on one hub, a
// datacenter is followed while either has an entry of it.
func TestHubFollowsWhileAnyCacheHasEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.register("web", "10.0.0.1")
		cfg := cache.DefaultConfig()
		cfg.Hub = newHub(t, cfg, f.feed)
		a, b := newCache(t, cfg, f), newCache(t, cfg, f)
		get(t, a, web)
		get(t, b, web)

		// b's entry is asked for, a's is not: a drops its own.
		for range 11 {
			time.Sleep(time.Minute)
			get(t, b, web)
		}
		synctest.Wait()
		if na, nb := a.Stats().Entries, b.Stats().Entries; na != 0 || nb != 1 {
			t.Fatalf("entries: got a %d, b %d, want 0 and 1", na, nb)
		}
		if got := f.openFeeds("dc1"); got != 1 {
			t.Errorf("feed calls open while b has an entry: got %d, want 1", got)
		}
		f.register("web", "10.0.0.2")
		synctest.Wait()
		if e, _ := get(t, b, web); len(e.Value.instances) != 2 {
			t.Errorf("b after a change: got %q, want both instances", e.Value.instances)
		}

		time.Sleep(cfg.IdleTimeout + time.Second) // now b's goes too
		synctest.Wait()
		if got := f.openFeeds("dc1"); got != 0 {
			t.Errorf("feed calls open once neither cache has an entry: got %d, want 0", got)
		}
	})
}
