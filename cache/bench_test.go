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

// benchFetch answers plain reads at once and holds blocking queries until
// their ctx ends, so that refresh loops sleep through a benchmark.
func benchFetch(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*answer, uint64, error) {
	if minIndex == 0 {
		return &answer{instances: []string{"10.0.0.1"}}, 1, nil
	}
	<-ctx.Done()
	return nil, 0, ctx.Err()
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
		c, err := cache.New(cache.DefaultConfig(), benchFetch, nil)
		if err != nil {
			b.Fatal(err)
		}
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
// refresh loop's start), with evictions at MaxEntries.
func BenchmarkGetMiss(b *testing.B) {
	cfg := cache.DefaultConfig()
	cfg.MaxEntries = 1000
	c, err := cache.New(cfg, benchFetch, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
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
