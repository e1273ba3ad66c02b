// Command cluster measures a real multi-process cairn cluster on loopback
// and prints the figures: how long a leader failover takes, how long a
// killed client's services stay in another agent's DNS answers, and how
// many registrations per second one client agent commits.
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/cluster -cairn /tmp/cairn
//
// It starts three servers (s1–s3) and two clients (c1, c2) as separate
// processes, each on its own loopback address (NET.31–NET.35) with the
// default ports, so every figure includes real sockets, gossip, Raft and
// fsyncs. Every agent is stopped with SIGTERM at the end, on a failure and
// on Ctrl-C. Data and logs live in a temporary directory that is removed
// unless -keep is given or something failed (then the logs' tails are
// printed and the directory is kept).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type config struct {
	cairn     string
	net       string
	failovers int
	deaths    int
	duration  time.Duration
	n         int
	workers   int
	timeout   time.Duration
	keep      bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; agents use .31–.35")
	flag.IntVar(&cfg.failovers, "failovers", 5, "leader failovers to measure")
	flag.IntVar(&cfg.deaths, "deaths", 1, "client deaths to measure (c1 is restarted between them)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each registration phase runs")
	flag.IntVar(&cfg.n, "n", 0, "registrations per phase instead of -duration (0: use -duration)")
	flag.IntVar(&cfg.workers, "workers", 16, "concurrent registrations in the second phase")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait (cluster formed, leader elected, record gone) after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.Parse()
	if cfg.cairn == "" || cfg.failovers < 0 || cfg.deaths < 0 || cfg.workers < 1 || cfg.duration <= 0 || cfg.n < 0 {
		fmt.Fprintln(os.Stderr, "cluster: -cairn is required; counts must not be negative, -workers and -duration positive")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("cluster", func(ctx context.Context) error { return run(ctx, cfg) })
}

// row is one line of the summary table.
type row struct {
	what    string
	samples []time.Duration // sorted
	rate    string          // registrations only
}

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "cluster")
	if err != nil {
		return err
	}
	// Three servers and two clients, s1–s3 then c1, c2; one HTTP client
	// for everything, with enough idle keep-alive connections for the
	// concurrent phase, so the figures hold no TCP handshakes.
	c := loopback.New(bin, work, cfg.net, 31, 3, 2, cfg.timeout)
	c.IdleConnsPerHost(max(cfg.workers, 2))
	defer func() { c.Finish(err, cfg.keep) }()

	fmt.Printf("starting 3 servers and 2 clients on %s.31–35 (work dir %s)\n", cfg.net, work)
	if err := c.StartAll(); err != nil {
		return err
	}
	if err := settle(ctx, c, "cluster start"); err != nil {
		return err
	}

	var rows []row
	if cfg.failovers > 0 {
		samples, err := measureFailovers(ctx, c, cfg.failovers)
		if err != nil {
			return fmt.Errorf("leader failover: %w", err)
		}
		rows = append(rows, report("leader failover",
			"kill -9 the leader, poll a surviving server's /v1/status/leader every 10ms until it names another leader", samples, ""))
	}
	if cfg.deaths > 0 {
		samples, err := measureDeaths(ctx, c, cfg.deaths)
		if err != nil {
			return fmt.Errorf("death to DNS: %w", err)
		}
		rows = append(rows, report("death to DNS",
			"kill -9 client c1, poll c2's DNS for deadsvc SRV every 20ms until its answers hold no SRV record 25 times in a row; the time is that streak's first", samples, ""))
	}
	for _, workers := range []int{1, cfg.workers} {
		what := fmt.Sprintf("register, %d worker(s)", workers)
		samples, elapsed, err := measureRegistrations(ctx, c, cfg, workers)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		rate := fmt.Sprintf("%.0f reg/s", float64(len(samples))/elapsed.Seconds())
		rows = append(rows, report(what,
			"PUT /v1/agent/service/register of distinct services on c2; each returns once committed through Raft", samples, rate))
	}
	printSummary(os.Stdout, rows)
	return nil
}

// settle waits until the cluster has settled (loopback's Settled, which
// also needs every agent alive in gossip: measuring before that would
// measure a cluster still healing) and says how long it took.
func settle(ctx context.Context, c *loopback.Cluster, why string) error {
	begin := time.Now()
	if err := c.Poll(ctx, 100*time.Millisecond, why+": one leader on all agents, 3 Raft peers, all agents alive in gossip", c.Settled); err != nil {
		return err
	}
	fmt.Printf("  %s: settled after %s\n", why, time.Since(begin).Round(time.Millisecond))
	return nil
}

// leader returns what a's /v1/status/leader names ("ip:8300", "" for none).
func leader(ctx context.Context, c *loopback.Cluster, a *loopback.Agent) (string, error) {
	var addr string
	err := c.Call(ctx, a, http.MethodGet, "/v1/status/leader", "", &addr)
	return addr, err
}

// measureFailovers kills the leader rounds times and times how long a
// surviving server takes to name another one. Between rounds the killed
// server is restarted and the cluster allowed to settle, so each round
// starts from three healthy voters.
func measureFailovers(ctx context.Context, c *loopback.Cluster, rounds int) ([]time.Duration, error) {
	var samples []time.Duration
	for round := 1; round <= rounds; round++ {
		addr, err := leader(ctx, c, c.Agents[0])
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(c.Agents[:3], func(a *loopback.Agent) bool { return addr == a.RPCAddr() })
		if i < 0 {
			return nil, fmt.Errorf("round %d: leader %q is none of the servers", round, addr)
		}
		old := c.Agents[i]
		watcher := c.Agents[0] // the first surviving server
		if watcher == old {
			watcher = c.Agents[1]
		}
		var took time.Duration
		begin := time.Now()
		if err := c.Kill(old); err != nil {
			return nil, err
		}
		err = c.Poll(ctx, 10*time.Millisecond, watcher.Name+" naming a new leader", func(ctx context.Context) (bool, error) {
			l, err := leader(ctx, c, watcher)
			took = time.Since(begin)
			return err == nil && l != "" && l != addr, err
		})
		if err != nil {
			return nil, fmt.Errorf("round %d, after killing %s: %w", round, old.Name, err)
		}
		samples = append(samples, took)
		fmt.Printf("failover %d: killed leader %s; %s named a new leader after %s\n", round, old.Name, watcher.Name, took.Round(time.Millisecond))

		if err := c.Start(old); err != nil {
			return nil, err
		}
		if err := settle(ctx, c, old.Name+" restarted"); err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
	}
	return samples, nil
}

const deadName = "deadsvc.service.dc1.cluster."

// measureDeaths registers deadsvc on c1, kills c1 once c2 answers for it,
// and times how long c2 keeps answering. Between rounds c1 is restarted.
func measureDeaths(ctx context.Context, c *loopback.Cluster, rounds int) ([]time.Duration, error) {
	c1, c2 := c.Agent("c1"), c.Agent("c2")
	var samples []time.Duration
	for round := 1; round <= rounds; round++ {
		if round > 1 {
			if err := c.Start(c1); err != nil {
				return nil, err
			}
			if err := settle(ctx, c, "c1 restarted"); err != nil {
				return nil, fmt.Errorf("round %d: %w", round, err)
			}
		}
		// Registering again after a restart is harmless (the same ID) and
		// does not rely on c1 reloading its persisted services.
		err := c.Poll(ctx, 100*time.Millisecond, "deadsvc registered on c1", func(ctx context.Context) (bool, error) {
			err := c.Register(ctx, c1, `{"Name":"deadsvc","Port":9999}`)
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
		// c2's DNS reads from any server, and a follower may not have
		// applied a write yet, so one answer proves little: both before
		// and after the kill, wait for a steady streak of answers.
		err = c.Poll(ctx, 20*time.Millisecond, "deadsvc answered steadily by c2's DNS", loopback.Steady(func(ctx context.Context) bool {
			n, _ := loopback.SRVCount(ctx, c2, deadName)
			return n > 0
		}, nil))
		if err != nil {
			return nil, err
		}
		begin := time.Now()
		if err := c.Kill(c1); err != nil {
			return nil, err
		}
		var goneAt time.Time
		err = c.Poll(ctx, 20*time.Millisecond, "c2's DNS to drop deadsvc for good", loopback.Steady(func(ctx context.Context) bool {
			n, ok := loopback.SRVCount(ctx, c2, deadName)
			return ok && n == 0
		}, &goneAt))
		if err != nil {
			return nil, fmt.Errorf("round %d, after killing c1: %w", round, err)
		}
		took := goneAt.Sub(begin)
		samples = append(samples, took)
		fmt.Printf("death %d: killed c1; c2's DNS dropped deadsvc after %s\n", round, took.Round(time.Millisecond))
	}
	return samples, nil
}

// seq numbers the bench services across both phases, so every
// registration creates a service rather than updating one.
var seq atomic.Int64

// measureRegistrations registers distinct services on c2 from workers
// goroutines until cfg.duration passes (or cfg.n are done) and returns
// each one's latency and the wall time of the phase. The first error
// stops the phase.
func measureRegistrations(ctx context.Context, c *loopback.Cluster, cfg config, workers int) ([]time.Duration, time.Duration, error) {
	c2 := c.Agent("c2")
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu      sync.Mutex
		samples []time.Duration
		issued  atomic.Int64 // registrations started in this phase
		wg      sync.WaitGroup
	)
	begin := time.Now()
	end := begin.Add(cfg.duration)
	more := func() bool {
		if cfg.n > 0 {
			return issued.Add(1) <= int64(cfg.n)
		}
		return time.Now().Before(end)
	}
	for range workers {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil && more() {
				i := seq.Add(1)
				body := fmt.Sprintf(`{"Name":"bench","ID":"bench-%d","Port":%d}`, i, 1000+i%50000)
				t := time.Now()
				if err := c.Register(ctx, c2, body); err != nil {
					cancel(err)
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			samples = append(samples, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	if len(samples) == 0 {
		return nil, 0, errors.New("no registration completed")
	}
	return samples, elapsed, nil
}

// report sorts samples, prints them with how they were taken, and returns
// their summary row.
func report(what, method string, samples []time.Duration, rate string) row {
	slices.Sort(samples)
	fmt.Printf("\n%s: %s\n  n=%d  min %.1f ms  median %.1f ms  p90 %.1f ms  p99 %.1f ms  max %.1f ms  %s\n\n",
		what, method, len(samples), loopback.Ms(samples, 0), loopback.Ms(samples, 0.5), loopback.Ms(samples, 0.9), loopback.Ms(samples, 0.99), loopback.Ms(samples, 1), rate)
	return row{what, samples, rate}
}

func printSummary(w io.Writer, rows []row) {
	fmt.Fprintf(w, "%-24s %6s %9s %9s %9s %9s %9s  %s\n", "summary (ms)", "n", "min", "median", "p90", "p99", "max", "rate")
	for _, r := range rows {
		s := r.samples
		fmt.Fprintf(w, "%-24s %6d %9.1f %9.1f %9.1f %9.1f %9.1f  %s\n",
			r.what, len(s), loopback.Ms(s, 0), loopback.Ms(s, 0.5), loopback.Ms(s, 0.9), loopback.Ms(s, 0.99), loopback.Ms(s, 1), r.rate)
	}
}
