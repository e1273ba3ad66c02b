package cache_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/cairndns/cairn/cache"
)

// benchFetch answers at once.
func benchFetch(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*answer, uint64, error) {
	return &answer{instances: []string{"10.0.0.1"}}, 1, nil
}

// benchFeed resets on its first call and then blocks until its ctx ends:
// a catalog that never changes, so that nothing is refetched during a
// benchmark but the one refetch of everything after the first call.
func benchFeed(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	if minIndex == 0 {
		return 1, nil, true, nil
	}
	<-ctx.Done()
	return 0, nil, false, ctx.Err()
}

// benchKeys returns n distinct service keys.
func benchKeys(n int) []cache.Key {
	keys := make([]cache.Key, n)
	for i := range keys {
		keys[i] = svc("service-" + strconv.Itoa(i))
	}
	return keys
}

// BenchmarkGetHit measures Get on cached keys: one hot key, and a
// thousand, each serially and from every P at once (b.RunParallel). The
// hit path takes no lock; compare BenchmarkLRUGetBaseline, a golang-lru
// Cache.Get (one mutex, a list move) per question.
func BenchmarkGetHit(b *testing.B) {
	for _, n := range []int{1, 1000} {
		keys := benchKeys(n)
		c := newCacheWith(b, cache.DefaultConfig(), benchFetch, feedFunc(benchFeed).feed)
		ctx := context.Background()
		for _, k := range keys {
			if _, _, err := c.Get(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, info, _ := c.Get(ctx, keys[i%n]); !info.Hit {
					b.Fatal("miss")
				}
				i++
			}
		})
		b.Run("keys="+strconv.Itoa(n)+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(n)
				for pb.Next() {
					if _, info, _ := c.Get(ctx, keys[i%n]); !info.Hit {
						b.Error("miss")
						return
					}
					i++
				}
			})
		})
		c.Close()
	}
}

// BenchmarkLRUGetBaseline is the alternative BenchmarkGetHit is compared
// with: golang-lru's thread-safe Cache.Get as the lookup of every hit.
func BenchmarkLRUGetBaseline(b *testing.B) {
	for _, n := range []int{1, 1000} {
		keys := benchKeys(n)
		l, err := lru.New[cache.Key, *cache.Entry[*answer]](10_000)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			l.Add(k, &cache.Entry[*answer]{Value: &answer{}})
		}
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := l.Get(keys[i%n]); !ok {
					b.Fatal("miss")
				}
				i++
			}
		})
		b.Run("keys="+strconv.Itoa(n)+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(n)
				for pb.Next() {
					if _, ok := l.Get(keys[i%n]); !ok {
						b.Error("miss")
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkGetMiss measures a miss with a Fetcher that answers at once:
// the cache's own cost of a fill (the fetch goroutine, the insert, the
// hub's count of the datacenter's entries), with evictions at MaxEntries.
func BenchmarkGetMiss(b *testing.B) {
	cfg := cache.DefaultConfig()
	cfg.MaxEntries = 1000
	c := newCacheWith(b, cfg, benchFetch, feedFunc(benchFeed).feed)
	keys := benchKeys(100_000)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := c.Get(ctx, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
