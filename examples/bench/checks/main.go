// Command checks measures health checks on a real multi-process cairn
// cluster on loopback and prints the figures: how long an instance whose
// HTTP check target fails takes to leave another agent's DNS answers (and
// to come back), and what a client agent costs in CPU and memory while it
// runs a thousand HTTP checks.
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/checks -cairn /tmp/cairn
//
// It starts three servers (s1–s3) and two clients (c1, c2) as separate
// processes, each on its own loopback address (NET.41–NET.45) with the
// default ports, and runs the HTTP target of every check itself, on
// 127.0.0.1, so it can stop and start it. Every agent is stopped with
// SIGTERM at the end, on a failure and on Ctrl-C. Data and logs live in a
// temporary directory that is removed unless -keep is given or something
// failed (then the logs' tails are printed and the directory is kept).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type config struct {
	cairn    string
	net      string
	rounds   int
	interval time.Duration
	services int
	window   time.Duration
	baseline time.Duration
	timeout  time.Duration
	keep     bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; agents use .41–.45")
	flag.IntVar(&cfg.rounds, "rounds", 5, "target stops and starts to time")
	flag.DurationVar(&cfg.interval, "interval", time.Second, "interval of the web service's HTTP check")
	flag.IntVar(&cfg.services, "services", 1000, "services with a 10s HTTP check registered on c1 for the cost figure (0: skip it)")
	flag.DurationVar(&cfg.window, "window", time.Minute, "how long c1's CPU and memory are measured with the services' checks running")
	flag.DurationVar(&cfg.baseline, "baseline", 20*time.Second, "how long c1 and the leader are measured idle first, for comparison (0: skip)")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait (cluster formed, record gone, checks passing) after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.Parse()
	if cfg.cairn == "" || cfg.rounds < 0 || cfg.services < 0 || cfg.interval <= 0 || cfg.window < time.Second || cfg.baseline < 0 {
		fmt.Fprintln(os.Stderr, "checks: -cairn is required; counts must not be negative, -interval positive, -window at least 1s")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("checks", func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "checks")
	if err != nil {
		return err
	}
	tgt := &target{addr: "127.0.0.1:0", hits: map[string]int{}}
	if err := tgt.start(); err != nil {
		return err
	}
	// Three servers and two clients, s1–s3 then c1, c2, whose HTTP client
	// keeps as many idle connections to each as there are workers.
	c := loopback.New(bin, work, cfg.net, 41, 3, 2, cfg.timeout)
	c.IdleConnsPerHost(workers)
	defer func() {
		c.Finish(err, cfg.keep)
		tgt.stop()
	}()

	fmt.Printf("starting 3 servers and 2 clients on %s.41–45; HTTP target on %s (work dir %s)\n", cfg.net, tgt.addr, work)
	if err := c.StartAll(); err != nil {
		return err
	}
	if err := c.Settle(ctx); err != nil {
		return err
	}

	var rows []row
	if cfg.rounds > 0 {
		down, up, err := measureFlips(ctx, c, tgt, cfg)
		if err != nil {
			return fmt.Errorf("target to DNS: %w", err)
		}
		rows = []row{{"target down → gone", down.total}, {"  after failing probe*", down.afterProbe},
			{"target up → back", up.total}, {"  after passing probe", up.afterProbe}}
	}
	var usages []usageRow
	if cfg.services > 0 {
		if usages, err = measureCost(ctx, c, tgt, cfg); err != nil {
			return fmt.Errorf("agent cost: %w", err)
		}
	}
	printSummary(os.Stdout, cfg, rows, usages)
	return nil
}

// target is the HTTP server every check probes. It counts the requests it
// answers by path, and can be stopped and started again on the same port.
type target struct {
	addr string // 127.0.0.1:0 until the first start, then its port
	srv  *http.Server
	wg   sync.WaitGroup // the goroutine serving srv
	mu   sync.Mutex
	hits map[string]int // requests answered, by path
	web  []time.Time    // when each request to /web arrived
}

func (t *target) start() error {
	ln, err := net.Listen("tcp", t.addr) // Go sets SO_REUSEADDR: TIME_WAIT does not block a restart
	if err != nil {
		return fmt.Errorf("HTTP target: %w", err)
	}
	t.addr = ln.Addr().String()
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
	srv := t.srv
	t.wg.Go(func() { _ = srv.Serve(ln) }) // returns ErrServerClosed on stop
	return nil
}

// stop closes the listener and every connection, so probes are refused.
func (t *target) stop() {
	if t.srv != nil {
		_ = t.srv.Close()
		t.wg.Wait()
		t.srv = nil
	}
}

func (t *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	t.hits[r.URL.Path]++
	if r.URL.Path == "/web" {
		t.web = append(t.web, time.Now())
	}
	t.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

// webProbes returns when each request to /web arrived.
func (t *target) webProbes() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.web)
}

// snapshot copies the request counts.
func (t *target) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.hits)
}

const webName = "web.service.dc1.cluster."

// flips times one change of the target (stop or start) until c2's DNS
// reflects it steadily: from the change, and from the probe that saw it.
type flips struct{ total, afterProbe []time.Duration }

// measureFlips registers web on c1 with an HTTP check on the target, then
// stops and starts the target cfg.rounds times. Each change waits a random
// part of the interval first: otherwise every change would come the same
// time after a probe (each round ends a fixed streak after the previous
// probe's effect) and the samples would all be one phase of the interval.
func measureFlips(ctx context.Context, c *loopback.Cluster, t *target, cfg config) (down, up flips, err error) {
	c1, c2 := c.Agent("c1"), c.Agent("c2")
	body := fmt.Sprintf(`{"Name":"web","Port":8080,"Check":{"HTTP":"http://%s/web","Interval":"%s","Timeout":"500ms"}}`, t.addr, cfg.interval)
	if err := c.Register(ctx, c1, body); err != nil {
		return down, up, err
	}
	want := func(records int) func(context.Context) bool {
		return func(ctx context.Context) bool {
			n, ok := loopback.SRVCount(ctx, c2, webName)
			return ok && n == records
		}
	}
	if err := c.Poll(ctx, 20*time.Millisecond, "web answered steadily by c2's DNS", loopback.Steady(want(1), nil)); err != nil {
		return down, up, err
	}
	pause := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rand.N(cfg.interval)):
			return nil
		}
	}
	for round := 1; round <= cfg.rounds; round++ {
		var at time.Time
		if err := pause(); err != nil {
			return down, up, err
		}
		begin := time.Now()
		t.stop()
		// The failing probe is refused, so the target never sees it: it
		// is the first run one interval after the last one it answered
		// (the runner waits the interval from the end of a run).
		probes := t.webProbes()
		probe := probes[len(probes)-1]
		for !probe.After(begin) {
			probe = probe.Add(cfg.interval)
		}
		if err := c.Poll(ctx, 20*time.Millisecond, "c2's DNS to drop web", loopback.Steady(want(0), &at)); err != nil {
			return down, up, fmt.Errorf("round %d, target stopped: %w", round, err)
		}
		down.total, down.afterProbe = append(down.total, at.Sub(begin)), append(down.afterProbe, at.Sub(probe))
		fmt.Printf("round %d: target stopped → web gone from c2's DNS after %s (%s after the failing probe, estimated); ",
			round, at.Sub(begin).Round(time.Millisecond), at.Sub(probe).Round(time.Millisecond))

		if err := pause(); err != nil {
			return down, up, err
		}
		begin = time.Now()
		if err := t.start(); err != nil {
			return down, up, err
		}
		if err := c.Poll(ctx, 20*time.Millisecond, "c2's DNS to answer web again", loopback.Steady(want(1), &at)); err != nil {
			return down, up, fmt.Errorf("round %d, target started: %w", round, err)
		}
		probes = t.webProbes()
		i, _ := slices.BinarySearchFunc(probes, begin, time.Time.Compare)
		probe = probes[min(i, len(probes)-1)]
		up.total, up.afterProbe = append(up.total, at.Sub(begin)), append(up.afterProbe, at.Sub(probe))
		fmt.Printf("started → back after %s (%s after the passing probe)\n",
			at.Sub(begin).Round(time.Millisecond), at.Sub(probe).Round(time.Millisecond))
	}
	// The cost figure counts only its own services' probes.
	return down, up, c.Call(ctx, c1, http.MethodPut, "/v1/agent/service/deregister/web", "", nil)
}

// workers is how many registrations run at once.
const workers = 16

// usageRow is one process measured over one window.
type usageRow struct {
	who, phase       string
	cpuPct           float64 // of one core
	rssMean, rssMax  int64   // kB
	requests, checks int     // target requests in the window; distinct checks among them
}

// measureCost measures c1 and the leader idle (cfg.baseline), registers
// cfg.services services with a 10s HTTP check on c1, waits until every
// check passes in the catalog, and measures both over cfg.window.
func measureCost(ctx context.Context, c *loopback.Cluster, t *target, cfg config) ([]usageRow, error) {
	c1 := c.Agent("c1")
	var addr string
	if err := c.Call(ctx, c.Agents[0], http.MethodGet, "/v1/status/leader", "", &addr); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(c.Agents[:3], func(a *loopback.Agent) bool { return addr == a.RPCAddr() })
	if i < 0 {
		return nil, fmt.Errorf("leader %q is none of the servers", addr)
	}
	procs := []*loopback.Agent{c1, c.Agents[i]}
	var rows []usageRow
	if cfg.baseline > 0 {
		fmt.Printf("\nmeasuring c1 and the leader %s idle for %s\n", procs[1].Name, cfg.baseline)
		r, err := usage(ctx, c, t, procs, "idle", cfg.baseline)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}

	fmt.Printf("registering %d services with a 10s HTTP check on c1 (%d workers)\n", cfg.services, workers)
	begin := time.Now()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	regCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for range workers {
		wg.Go(func() {
			for regCtx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(cfg.services) {
					return
				}
				body := fmt.Sprintf(`{"Name":"bench-%d","Port":%d,"Check":{"HTTP":"http://%s/bench-%d","Interval":"10s","Timeout":"2s"}}`,
					i, 10000+i, t.addr, i)
				if err := c.Register(regCtx, c1, body); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(regCtx); err != nil {
		return nil, err
	}
	took := time.Since(begin)
	fmt.Printf("  registered in %s (%.0f reg/s)\n", took.Round(time.Millisecond), float64(cfg.services)/took.Seconds())

	// Every check starts critical and passes at its first run (within one
	// interval, jittered); wait for those pushes to reach the catalog so
	// the window holds only steady-state probing.
	err := c.Poll(ctx, 500*time.Millisecond, "every bench check passing in the catalog", func(ctx context.Context) (bool, error) {
		var checks []struct{ ServiceName string }
		if err := c.Call(ctx, procs[1], http.MethodGet, "/v1/health/state/passing", "", &checks); err != nil {
			return false, err
		}
		n := 0
		for _, ch := range checks {
			if strings.HasPrefix(ch.ServiceName, "bench-") {
				n++
			}
		}
		return n == cfg.services, nil
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("  all %d checks passing in the leader's catalog %s after registering began\n", cfg.services, time.Since(begin).Round(time.Millisecond))

	fmt.Printf("measuring c1 and the leader %s for %s\n", procs[1].Name, cfg.window)
	r, err := usage(ctx, c, t, procs, fmt.Sprintf("%d checks", cfg.services), cfg.window)
	if err != nil {
		return nil, err
	}
	return append(rows, r...), nil
}

// usage measures procs over window from /proc: CPU time (utime+stime) at
// both ends, VmRSS every second; and the requests the target answered.
func usage(ctx context.Context, c *loopback.Cluster, t *target, procs []*loopback.Agent, phase string, window time.Duration) ([]usageRow, error) {
	cpu0, cpu1 := make([]time.Duration, len(procs)), make([]time.Duration, len(procs))
	rows := make([]usageRow, len(procs))
	hits0, begin := t.snapshot(), time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		for i, a := range procs {
			cpu, rss, _, err := loopback.Sample(a.PID())
			if err != nil {
				return nil, err
			}
			if n == 0 {
				cpu0[i] = cpu
			}
			cpu1[i], rows[i].rssMean, rows[i].rssMax = cpu, rows[i].rssMean+rss, max(rows[i].rssMax, rss)
		}
		if time.Since(begin) >= window {
			for i := range rows {
				rows[i].rssMean /= int64(n + 1)
			}
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if err := c.Alive(); err != nil {
			return nil, err
		}
	}
	wall, hits1 := time.Since(begin), t.snapshot()
	requests, checks := 0, 0
	for path, n := range hits1 {
		if d := n - hits0[path]; d > 0 {
			requests, checks = requests+d, checks+1
		}
	}
	for i, a := range procs {
		r := &rows[i]
		r.who, r.phase, r.requests, r.checks = a.Name, phase, requests, checks
		cpu := cpu1[i] - cpu0[i]
		r.cpuPct = 100 * cpu.Seconds() / wall.Seconds()
		fmt.Printf("  %-3s %-12s CPU %6.2f%% of one core (%s in %s)  RSS mean %.1f MiB, max %.1f MiB\n",
			r.who, r.phase, r.cpuPct, cpu, wall.Round(time.Millisecond), mib(r.rssMean), mib(r.rssMax))
	}
	fmt.Printf("  target: %d requests from %d distinct checks in %s\n", requests, checks, wall.Round(time.Millisecond))
	return rows, nil
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// row is one latency line of the summary table.
type row struct {
	what    string
	samples []time.Duration
}

func printSummary(w io.Writer, cfg config, rows []row, usages []usageRow) {
	fmt.Fprintln(w)
	if len(rows) > 0 {
		fmt.Fprintf(w, "%-24s %4s %9s %9s %9s %9s\n", "summary (ms)", "n", "min", "median", "p90", "max")
		for _, r := range rows {
			s := r.samples
			slices.Sort(s)
			fmt.Fprintf(w, "%-24s %4d %9.1f %9.1f %9.1f %9.1f\n", r.what, len(s), loopback.Ms(s, 0), loopback.Ms(s, 0.5), loopback.Ms(s, 0.9), loopback.Ms(s, 1))
		}
		fmt.Fprintf(w, "gone/back: c1 probes web every %s (timeout 500ms); after a random wait the target is stopped (started), then c2's DNS is asked for web SRV every 20ms until it holds none (one) %d times in a row; the time is that streak's first answer\n",
			cfg.interval, loopback.SteadyStreak)
		fmt.Fprintln(w, "* the failing probe is refused, so its time is estimated as the last answered probe + the interval")
		fmt.Fprintf(w, "floor: gone ≈ the wait for the next probe, up to %s (a closed port refuses at once; the 500ms timeout counts only for a target that hangs) + the after-probe part (push to the servers, Raft commit, c2's read); median ≈ %s + that\n\n",
			cfg.interval, cfg.interval/2)
	}
	if len(usages) > 0 {
		fmt.Fprintf(w, "%-8s %-12s %8s %10s %10s %9s %8s\n", "process", "phase", "CPU %", "RSS mean", "RSS max", "requests", "checks")
		for _, r := range usages {
			fmt.Fprintf(w, "%-8s %-12s %8.2f %7.1f MiB %6.1f MiB %9d %8d\n",
				r.who, r.phase, r.cpuPct, mib(r.rssMean), mib(r.rssMax), r.requests, r.checks)
		}
		fmt.Fprintf(w, "CPU is utime+stime from /proc/PID/stat (%d ticks a second) over the window, as %% of one core; RSS is VmRSS sampled every second; requests are those the target answered in the window (expected %d × window/10s)\n",
			loopback.ClockTicks(), cfg.services)
	}
}
