package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairndns/cairn/cache"
)

func Example() {
	// A Fetcher over a catalog: plain reads of a name's instances.
	fetch := func(ctx context.Context, key cache.Key, _ uint64, _ time.Duration) ([]string, uint64, error) {
		if key.Name == "web" {
			return []string{"10.0.0.1", "10.0.0.2"}, 42, nil
		}
		return nil, 42, nil // no such name: a negative entry
	}
	// A Feed over a catalog that never changes (staticFeed, below), the same
	// for every datacenter.
	feed := func(string) cache.Follower { return staticFeed{} }

	// One hub for every cache of the agent: one feed call per datacenter.
	cfg := cache.DefaultConfig()
	hub, err := cache.NewHub(feed, cfg, nil)
	if err != nil {
		panic(err)
	}
	defer hub.Close() // after the caches: defers run last first
	cfg.Hub = hub
	c, err := cache.New(cfg, fetch, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx := context.Background()
	for _, name := range []string{"web", "web", "nosuch"} {
		e, info, err := c.Get(ctx, cache.Key{Kind: "service", Datacenter: "dc1", Name: name})
		if err != nil {
			panic(err)
		}
		fmt.Println(name, e.Value, e.Index, "hit:", info.Hit)
	}
	// Output:
	// web [10.0.0.1 10.0.0.2] 42 hit: false
	// web [10.0.0.1 10.0.0.2] 42 hit: true
	// nosuch [] 42 hit: false
}

// staticFeed is a Feed over a catalog that never changes: its first call
// (minIndex 0) answers at once, later ones block until their wait or ctx
// ends (the hub's, when the datacenter's last entry goes or it closes).
// It keeps nothing open between calls, so Stop has nothing to do.
type staticFeed struct{}

func (staticFeed) Next(ctx context.Context, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	if minIndex > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return 0, nil, false, ctx.Err()
		}
	}
	return 42, func(cache.Key) bool { return false }, false, nil
}

func (staticFeed) Stop() {}
