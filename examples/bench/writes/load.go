package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

// result is one measured run: one system, one kind of write, one writer
// count, one round.
type result struct {
	writes   int // answered 200
	errors   int
	firstErr string
	elapsed  time.Duration
	p50, p99 float64 // ms, over the answered writes
	cpuPer   float64 // the three servers' CPU per answered write, µs
}

func (r result) perSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.writes) / r.elapsed.Seconds()
}

// load runs writers goroutines, writer w sending op's writes to server
// w mod 3, each the next as soon as the last is answered, for d; writes
// sent before d ends are waited for and counted. seq numbers the writes
// so that no two runs on one cluster write the same key or service.
func load(ctx context.Context, hc *http.Client, c *cluster, op string, writers int, d time.Duration, seq *int) result {
	build := c.sys.write[op]
	var (
		mu   sync.Mutex
		lat  []time.Duration
		res  result
		wg   sync.WaitGroup
		base = *seq
	)
	*seq += 1 << 24 // more writes than one writer sends in any run
	cpu0 := serversCPU(c)
	begin := time.Now()
	end := begin.Add(d)
	for w := range writers {
		wg.Go(func() {
			var mine []time.Duration
			errs, first := 0, ""
			for i := base; time.Now().Before(end) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				err := send(ctx, hc, build, c.bases[w%len(c.bases)], w, i)
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					if errs >= maxErrors {
						break // a broken cluster: stop rather than spin
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			res.errors += errs
			if res.firstErr == "" {
				res.firstErr = first
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(begin)
	res.writes = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		res.p50, res.p99 = loopback.Ms(lat, 0.5), loopback.Ms(lat, 0.99)
		if cpu1 := serversCPU(c); cpu0 >= 0 && cpu1 >= 0 {
			res.cpuPer = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(len(lat))
		}
	}
	return res
}

// maxErrors ends a writer's run: past it the cluster is broken, and the
// run's figures say so through its error count.
const maxErrors = 1000

// send sends one write and wants a 200.
func send(ctx context.Context, hc *http.Client, build func(context.Context, string, int, int) (*http.Request, error), base string, w, i int) error {
	req, err := build(ctx, base, w, i)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d: %.200s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return nil
}

// serversCPU is the CPU time the cluster's server processes have used,
// or -1 when one could not be read.
func serversCPU(c *cluster) time.Duration {
	var sum time.Duration
	for _, pid := range c.pids() {
		cpu, _, _, err := loopback.Sample(pid)
		if err != nil {
			return -1
		}
		sum += cpu
	}
	return sum
}
