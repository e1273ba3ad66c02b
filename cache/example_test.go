package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairndns/cairn/cache"
)

func Example() {
	// A Fetcher over a catalog that never changes: plain reads answer,
	// blocking queries wait until their ctx ends (Close ends them).
	fetch := func(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) ([]string, uint64, error) {
		if minIndex > 0 {
			<-ctx.Done()
			return nil, 0, ctx.Err()
		}
		if key.Name == "web" {
			return []string{"10.0.0.1", "10.0.0.2"}, 42, nil
		}
		return nil, 42, nil // no such name: a negative entry
	}
	c, err := cache.New(cache.DefaultConfig(), fetch, nil)
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
