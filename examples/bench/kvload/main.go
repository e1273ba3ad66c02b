// Command kvload measures cairn's key/value store on a real multi-process
// cluster on loopback and prints the figures: reads per second through a
// client agent (default consistency and ?stale), writes per second through
// Raft with each count of writers in -writers (with p50 and p99 latency
// and the agents' CPU time per write),
// how long one change takes to reach
// 1,000 blocking watchers of its key, and a server's memory per 100,000
// keys of 100 bytes.
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/kvload -cairn /tmp/cairn
//	go run ./examples/bench/kvload -cairn /tmp/cairn -phases writes -writers 1,8,32 -duration 5s -group-commit=false
//
// It starts three servers (s1–s3) and one client (c1) as separate
// processes on NET.51–NET.54, and sends every request to c1's HTTP API,
// as an application on that machine would. Agents are stopped at the end;
// the work directory is removed unless -keep or a failure.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type config struct {
	cairn    string
	net      string
	duration time.Duration
	readers  int
	writers  []int
	phases   map[string]bool
	watchers int
	keys     int
	timeout  time.Duration
	keep     bool
	debug    bool
	// groupCommit turns on performance.raft_group_commit.
	groupCommit bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; agents use .51–.54")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each read and write phase runs")
	flag.IntVar(&cfg.readers, "readers", 16, "concurrent readers")
	writers := flag.String("writers", "1,16", "comma-separated `counts` of concurrent writers, one write phase each")
	phases := flag.String("phases", "reads,writes,fanout,memory", "comma-separated `phases` to run: reads, writes, fanout, memory")
	flag.IntVar(&cfg.watchers, "watchers", 1000, "blocking watchers of one key")
	flag.IntVar(&cfg.keys, "keys", 100000, "keys of 100 bytes written for the memory figure (0 skips it)")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.BoolVar(&cfg.groupCommit, "group-commit", true, "performance.raft_group_commit of the agents (-group-commit=false: each write its own Raft entry)")
	flag.BoolVar(&cfg.debug, "enable-debug", false, "run the agents with -enable-debug, to profile them (/debug/pprof/ on their HTTP API) while it runs")
	flag.Parse()
	var err error
	cfg.writers, err = counts(*writers)
	cfg.phases = map[string]bool{}
	for p := range strings.SplitSeq(*phases, ",") {
		cfg.phases[strings.TrimSpace(p)] = true
	}
	if err != nil || cfg.cairn == "" || cfg.duration <= 0 || cfg.readers < 1 || cfg.watchers < 1 || cfg.keys < 0 {
		fmt.Fprintln(os.Stderr, "kvload: -cairn is required; -duration, -readers, -writers and -watchers must be positive, -keys not negative")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("kvload", func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "kvload")
	if err != nil {
		return err
	}
	c := loopback.New(bin, work, cfg.net, 51, 3, 1, cfg.timeout)
	if cfg.debug {
		c.Args = append(c.Args, "-enable-debug")
	}
	if !cfg.groupCommit {
		path := filepath.Join(work, "group-commit.hcl")
		if err := os.WriteFile(path, []byte("performance {\n  raft_group_commit = false\n}\n"), 0o644); err != nil {
			return err
		}
		c.Args = append(c.Args, "-config-file", path)
	}
	c.IdleConnsPerHost(max(cfg.readers, slices.Max(cfg.writers), cfg.watchers) + 8)
	defer func() { c.Finish(err, cfg.keep) }()

	fmt.Printf("starting 3 servers and 1 client on %s.51–54 (work dir %s)\n", cfg.net, work)
	if err := c.StartAll(); err != nil {
		return err
	}
	if err := c.Settle(ctx); err != nil {
		return err
	}
	c1 := c.Agent("c1")
	value := strings.Repeat("v", 100)
	if err := put(ctx, c, c1, "bench/read", value); err != nil {
		return err
	}

	for _, q := range []string{"", "?stale"} {
		if !cfg.phases["reads"] {
			break
		}
		n, err := hammer(ctx, cfg.readers, cfg.duration, func(ctx context.Context, _, _ int) error {
			return get(ctx, c, c1, "/v1/kv/bench/read"+q)
		})
		if err != nil {
			return fmt.Errorf("reads%s: %w", q, err)
		}
		fmt.Printf("reads %-7s %d readers: %8.0f reads/s  (GET /v1/kv/bench/read%s on c1, %s)\n",
			orDefault(q), cfg.readers, float64(n)/cfg.duration.Seconds(), q, cfg.duration)
	}
	for _, w := range cfg.writers {
		if !cfg.phases["writes"] {
			break
		}
		var (
			latMu sync.Mutex
			lat   []time.Duration
		)
		cpuBefore := clusterCPU(c)
		n, err := hammer(ctx, w, cfg.duration, func(ctx context.Context, worker, i int) error {
			begin := time.Now()
			err := put(ctx, c, c1, fmt.Sprintf("bench/w%d/%d", worker, i), value)
			latMu.Lock()
			lat = append(lat, time.Since(begin))
			latMu.Unlock()
			return err
		})
		if err != nil {
			return fmt.Errorf("writes with %d writers: %w", w, err)
		}
		cpu := clusterCPU(c) - cpuBefore
		slices.Sort(lat)
		fmt.Printf("writes, %2d writers:     %8.0f writes/s, p50 %.1f ms, p99 %.1f ms, %.0f µs CPU per write (PUT of distinct 100-byte keys on c1, each returns once committed)\n",
			w, float64(n)/cfg.duration.Seconds(), loopback.Ms(lat, 0.5), loopback.Ms(lat, 0.99), float64(cpu.Microseconds())/float64(max(n, 1)))
	}
	if cfg.phases["fanout"] {
		if err := fanOut(ctx, c, c1, cfg.watchers); err != nil {
			return fmt.Errorf("fan-out: %w", err)
		}
	}
	if cfg.keys > 0 && cfg.phases["memory"] {
		if err := memory(ctx, c, c1, cfg); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	return nil
}

func orDefault(q string) string {
	if q == "" {
		return "default"
	}
	return strings.TrimPrefix(q, "?")
}

// hammer runs op from workers goroutines, each calling it again as soon as
// it returns, for d, and returns how many calls succeeded; the first
// failure ends it.
func hammer(ctx context.Context, workers int, d time.Duration, op func(ctx context.Context, worker, i int) error) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		done  atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if err := op(ctx, w, i); err != nil {
					if ctx.Err() == nil {
						errMu.Lock()
						first = cmpErr(first, err)
						errMu.Unlock()
						cancel()
					}
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return done.Load(), first
}

func cmpErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}

func get(ctx context.Context, c *loopback.Cluster, a *loopback.Agent, path string) error {
	return c.Call(ctx, a, http.MethodGet, path, "", nil)
}

func put(ctx context.Context, c *loopback.Cluster, a *loopback.Agent, key, value string) error {
	var ok bool
	if err := c.Call(ctx, a, http.MethodPut, "/v1/kv/"+key, value, &ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("PUT %s answered false", key)
	}
	return nil
}

// fanOut starts n blocking GETs of one key through c1, all at its current
// index, writes the key once they are all waiting, and reports how long
// after the write each returned.
func fanOut(ctx context.Context, c *loopback.Cluster, c1 *loopback.Agent, n int) error {
	if err := put(ctx, c, c1, "bench/watch", "0"); err != nil {
		return err
	}
	var meta []struct{ ModifyIndex uint64 }
	if err := c.Call(ctx, c1, http.MethodGet, "/v1/kv/bench/watch", "", &meta); err != nil || len(meta) != 1 {
		return fmt.Errorf("read the watched key: %v", err)
	}
	url := "http://" + c1.IP + ":8500/v1/kv/bench/watch?wait=60s&index=" + strconv.FormatUint(meta[0].ModifyIndex, 10)
	// An agent takes at most 200 connections from one address (limits {
	// http_max_conns_per_client }), as applications on many hosts would
	// not all share one: the watchers come from 127.0.1.x, 100 each.
	clients := make([]*http.Client, (n+99)/100)
	for i := range clients {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(i+1))}
		d := &net.Dialer{LocalAddr: local}
		clients[i] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 100}}
	}
	var (
		started sync.WaitGroup
		wg      sync.WaitGroup
		mu      sync.Mutex
		ended   []time.Time
		failed  error
	)
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			started.Done()
			status, err := getStatus(ctx, clients[i/100], url)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d", status)
			}
			if err != nil {
				failed = cmpErr(failed, err)
				return
			}
			ended = append(ended, time.Now())
		})
	}
	started.Wait()
	// The goroutines have started; give their requests time to reach the
	// agent and block there (a blocking read returns at once only when
	// the index has moved, which it has not).
	time.Sleep(2 * time.Second)
	wrote := time.Now()
	if err := put(ctx, c, c1, "bench/watch", "1"); err != nil {
		return err
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	lat := make([]time.Duration, len(ended))
	for i, e := range ended {
		lat[i] = e.Sub(wrote)
	}
	slices.Sort(lat)
	fmt.Printf("fan-out, %d watchers: all returned %.1f ms after the write (p50 %.1f ms, p99 %.1f ms; from the PUT's start)\n",
		n, loopback.Ms(lat, 1), loopback.Ms(lat, 0.5), loopback.Ms(lat, 0.99))
	return nil
}

// memory writes cfg.keys keys of 100 bytes and reports the growth of the
// leader's RSS (after Go has had the chance to return freed memory; RSS is
// what an operator sees).
func memory(ctx context.Context, c *loopback.Cluster, c1 *loopback.Agent, cfg config) error {
	name := c.Leader(ctx, c1)
	if name == "" {
		return fmt.Errorf("no leader known")
	}
	srv := c.Agent(name)
	_, before, _, err := loopback.Sample(srv.PID())
	if err != nil {
		return err
	}
	value := strings.Repeat("m", 100)
	var next atomic.Int64
	begin := time.Now()
	_, err = hammer(ctx, slices.Max(cfg.writers), cfg.timeout, func(ctx context.Context, _, _ int) error {
		i := next.Add(1)
		if i > int64(cfg.keys) {
			return errDone
		}
		return put(ctx, c, c1, fmt.Sprintf("mem/%07d", i), value)
	})
	if err != nil && err != errDone {
		return err
	}
	took := time.Since(begin)
	_, after, _, err := loopback.Sample(srv.PID())
	if err != nil {
		return err
	}
	fmt.Printf("memory: leader %s RSS %d MiB → %d MiB after %d keys of 100 bytes (+%.0f MiB; written in %s)\n",
		srv.Name, before/1024, after/1024, cfg.keys, float64(after-before)/1024, took.Round(time.Second))
	return nil
}

var errDone = fmt.Errorf("all keys written")

// clusterCPU is the CPU time (user and system) every agent has used: per
// write, a figure that a machine loaded by other work changes less than
// the rate.
func clusterCPU(c *loopback.Cluster) time.Duration {
	var total time.Duration
	for _, a := range c.Agents {
		if cpu, _, _, err := loopback.Sample(a.PID()); err == nil {
			total += cpu
		}
	}
	return total
}

// counts parses a comma-separated list of positive counts.
func counts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("count %q: must be a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// getStatus GETs url with client and returns the status, the body read.
func getStatus(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}
