package cache

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestStateStaysBounded drives what names from the network drive (new
// keys, in ever new datacenters) past MaxEntries, with the refetch
// workers kept from the queue (the test holds the cache's lock, as busy
// workers facing servers that time out would leave it), and checks what
// the cache and its hub keep: the refetch queue stays within twice
// MaxEntries, and the hub follows only datacenters that have entries.
// (The misses in flight are bounded by MaxEntries too; see
// TestMissesInFlightBounded.)
func TestStateStaysBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxEntries = 4
	hub, err := NewHub(func(string) Follower { return blockingFeed{} }, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	cfg.Hub = hub
	fetch := func(context.Context, Key, uint64, time.Duration) (int, uint64, error) { return 0, 1, nil }
	c, err := New(cfg, fetch, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	followed := func() int {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		return len(hub.dcs)
	}
	var queued, dcs int // the most seen
	c.mu.Lock()
	for i := range 1000 {
		// Each is queued at once (named by the feed while filled) and
		// evicts the oldest, which stays in the queue.
		c.insertLocked(Key{Kind: "service", Name: "n", Datacenter: "dc" + strconv.Itoa(i)}, &Entry[int]{Index: 1}, true)
		queued, dcs = max(queued, len(c.queue)), max(dcs, followed())
	}
	c.mu.Unlock() // before any Fatal: the deferred Close takes it
	if queued > 2*cfg.MaxEntries {
		t.Errorf("slots queued: got up to %d, want at most %d", queued, 2*cfg.MaxEntries)
	}
	if dcs > cfg.MaxEntries {
		t.Errorf("datacenters followed: got up to %d, want at most %d (one per entry)", dcs, cfg.MaxEntries)
	}

	c.Close()
	if n := followed(); n != 0 {
		t.Errorf("after Close: %d datacenters followed, want none", n)
	}
}

// blockingFeed is a Follower whose calls block until their ctx ends.
type blockingFeed struct{}

func (blockingFeed) Next(ctx context.Context, _ uint64, _ time.Duration) (uint64, func(Key) bool, bool, error) {
	<-ctx.Done()
	return 0, nil, false, ctx.Err()
}

func (blockingFeed) Stop() {}
