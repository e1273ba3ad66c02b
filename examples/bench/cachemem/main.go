// Command cachemem measures what 10,000 distinct cached DNS names cost an
// agent: its resident memory (VmRSS) and CPU before and after they are
// asked, and how fast it answers them again (issue 6's target: 10,000
// distinct cached names under 100 MB RSS).
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/cachemem -cairn /tmp/cairn
//
// It starts one server (s1) and one client (c1) as separate processes on
// loopback (NET.61, NET.62, default ports), registers -services services
// on c1, each with -tags tags, and asks c1's DNS -names distinct questions
// with -workers concurrent askers: half of them (by default, -missing)
// for names no service has, which the cache keeps as negative entries,
// the rest for the services and their tags (<tag>.<service>.service…, each
// a cache key of its own). Every cached name, positive or negative, is an
// entry, kept fresh through the agent's one change feed. Then it watches c1
// (and s1, which serves its feed and refetches) for -window, asks every name again
// to time the cached answers, and prints the cache metrics if the agent
// serves them (GET /v1/agent/metrics?format=prometheus). With -on s1 the
// names are asked of the server's DNS instead (its cache reads its own
// state store). Data and logs live in a temporary directory removed
// unless -keep is given or something failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/miekg/dns"
)

type config struct {
	cairn    string
	net      string
	on       string
	names    int
	services int
	tags     int
	missing  float64
	workers  int
	window   time.Duration
	timeout  time.Duration
	keep     bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; agents use .61 and .62")
	flag.StringVar(&cfg.on, "on", "c1", "`agent` whose DNS is asked: c1 (the client) or s1 (the server)")
	flag.IntVar(&cfg.names, "names", 10_000, "distinct names to ask")
	flag.IntVar(&cfg.services, "services", 100, "services registered on c1 (one instance each)")
	flag.IntVar(&cfg.tags, "tags", 49, "tags of each service; <tag>.<service> names count as distinct names")
	flag.Float64Var(&cfg.missing, "missing", 0.5, "fraction of the names that no service has")
	flag.IntVar(&cfg.workers, "workers", 8, "concurrent DNS askers")
	flag.DurationVar(&cfg.window, "window", 20*time.Second, "how long the agents are watched once every name has been asked")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.Parse()
	existing := cfg.names - int(float64(cfg.names)*cfg.missing)
	if cfg.cairn == "" || (cfg.on != "c1" && cfg.on != "s1") || cfg.names < 1 || cfg.services < 1 || cfg.tags < 0 ||
		cfg.missing < 0 || cfg.missing > 1 || cfg.workers < 1 || cfg.window < time.Second || existing > cfg.services*(1+cfg.tags) {
		fmt.Fprintln(os.Stderr, "cachemem: -cairn is required; -on is c1 or s1; counts must be positive, -missing in [0,1], -window at least 1s, and services×(1+tags) must cover the existing names")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("cachemem", func(ctx context.Context) error { return run(ctx, cfg, existing) })
}

// question is one name to ask and whether it should have an answer.
type question struct {
	name   string
	exists bool
}

// usage is a process's figures at one point.
type usage struct {
	phase        string
	rss, threads [2]int64   // RSS mean in KiB; index 0 is s1, 1 is c1
	cpuPct       [2]float64 // over the phase's window
	rssMax       [2]int64
}

func run(ctx context.Context, cfg config, existing int) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "cachemem")
	if err != nil {
		return err
	}
	c := loopback.New(bin, work, cfg.net, 61, 1, 1, cfg.timeout)
	defer func() { c.Finish(err, cfg.keep) }()
	fmt.Printf("starting s1 and c1 on %s.61–62 (work dir %s)\n", cfg.net, work)
	if err := c.StartAll(); err != nil {
		return err
	}
	if err := c.Settle(ctx); err != nil {
		return err
	}
	s1, c1 := c.Agent("s1"), c.Agent("c1")
	procs := []*loopback.Agent{s1, c1}
	asked := c.Agent(cfg.on)

	var rows []usage
	idle, err := watch(ctx, c, procs, "idle, nothing cached", 5*time.Second)
	if err != nil {
		return err
	}
	rows = append(rows, idle)

	tags := make([]string, cfg.tags)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	tagJSON := `"` + strings.Join(tags, `","`) + `"`
	if cfg.tags == 0 {
		tagJSON = ""
	}
	for i := range cfg.services {
		body := fmt.Sprintf(`{"Name":"svc-%d","Port":%d,"Address":"127.0.8.%d","Tags":[%s]}`, i, 10000+i, 1+i%250, tagJSON)
		if err := c.Register(ctx, c1, body); err != nil {
			return err
		}
	}
	fmt.Printf("  registered %d services with %d tags each on c1\n", cfg.services, cfg.tags)

	// The questions: existing names walk services first, then tags, so
	// that every service is asked for; the rest are names nobody has.
	var qs []question
	for i := range existing {
		svc, tag := i%cfg.services, i/cfg.services
		name := fmt.Sprintf("svc-%d.service.dc1.cluster.", svc)
		if tag > 0 {
			name = fmt.Sprintf("t%d.%s", tag-1, name)
		}
		qs = append(qs, question{name, true})
	}
	for i := range cfg.names - existing {
		qs = append(qs, question{fmt.Sprintf("nosuch-%d.service.dc1.cluster.", i), false})
	}

	begin := time.Now()
	first, err := askAll(ctx, asked, qs, cfg.workers)
	if err != nil {
		return err
	}
	fmt.Printf("  asked %s's DNS %d distinct names (%d existing, %d missing) in %s: %d answered as expected, %d not; latency p50 %.2f ms, p99 %.2f ms (misses: each fetches)\n",
		asked.Name, len(qs), existing, len(qs)-existing, time.Since(begin).Round(time.Millisecond), first.ok, first.bad, first.p50, first.p99)

	after, err := watch(ctx, c, procs, fmt.Sprintf("%d names cached on %s", len(qs), asked.Name), cfg.window)
	if err != nil {
		return err
	}
	again, err := askAll(ctx, asked, qs, cfg.workers)
	if err != nil {
		return err
	}
	fmt.Printf("  asked the %d names again: %d answered as expected, %d not; latency p50 %.2f ms, p99 %.2f ms (hits)\n",
		len(qs), again.ok, again.bad, again.p50, again.p99)
	rows = append(rows, after)

	fmt.Printf("\n%-30s %10s %10s %9s %10s %10s %9s\n", "summary", "c1 RSS", "c1 max", "c1 CPU%", "s1 RSS", "s1 max", "s1 CPU%")
	for _, r := range rows {
		fmt.Printf("%-30s %6.1f MiB %6.1f MiB %9.2f %6.1f MiB %6.1f MiB %9.2f\n", r.phase,
			mib(r.rss[1]), mib(r.rssMax[1]), r.cpuPct[1], mib(r.rss[0]), mib(r.rssMax[0]), r.cpuPct[0])
	}
	entries := printMetrics(ctx, c, asked)
	what := "cache entry (cairn_cache_entries)"
	if entries <= 0 {
		entries, what = len(qs), "name asked"
	}
	i := slices.Index(procs, asked)
	fmt.Printf("%s: %d names asked, %d cache entries; RSS grew by %.0f bytes per %s; threads: c1 %d → %d, s1 %d → %d\n",
		asked.Name, len(qs), entries, float64(after.rss[i]-idle.rss[i])*1024/float64(entries), what,
		idle.threads[1], after.threads[1], idle.threads[0], after.threads[0])
	fmt.Printf("RSS is VmRSS (mean over the window, sampled every second); CPU is utime+stime from /proc/PID/stat over the window, %% of one core\n")
	fmt.Printf("log lines with level=WARN or level=ERROR: c1 %d + %d, s1 %d + %d\n",
		c.CountLog(c1, "level=WARN"), c.CountLog(c1, "level=ERROR"), c.CountLog(s1, "level=WARN"), c.CountLog(s1, "level=ERROR"))
	return nil
}

// watch samples procs every second for window: CPU over the window, RSS
// mean and max, threads at the end.
func watch(ctx context.Context, c *loopback.Cluster, procs []*loopback.Agent, phase string, window time.Duration) (usage, error) {
	u := usage{phase: phase}
	var cpu0, cpu1 [2]time.Duration
	begin := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	n := 0
	for {
		for i, a := range procs {
			cpu, rss, threads, err := loopback.Sample(a.PID())
			if err != nil {
				return u, err
			}
			if n == 0 {
				cpu0[i] = cpu
			}
			cpu1[i], u.threads[i] = cpu, threads
			u.rss[i] += rss
			u.rssMax[i] = max(u.rssMax[i], rss)
		}
		n++
		if time.Since(begin) >= window {
			break
		}
		select {
		case <-ctx.Done():
			return u, ctx.Err()
		case <-tick.C:
		}
		if err := c.Alive(); err != nil {
			return u, err
		}
	}
	wall := time.Since(begin)
	for i := range procs {
		u.rss[i] /= int64(n)
		u.cpuPct[i] = 100 * (cpu1[i] - cpu0[i]).Seconds() / wall.Seconds()
	}
	fmt.Printf("  %-30s c1 RSS %.1f MiB, CPU %.2f%%; s1 RSS %.1f MiB, CPU %.2f%% (over %s)\n",
		phase, mib(u.rss[1]), u.cpuPct[1], mib(u.rss[0]), u.cpuPct[0], wall.Round(time.Millisecond))
	return u, nil
}

type askResult struct {
	ok, bad  int
	p50, p99 float64 // ms
}

// askAll asks a's DNS every question with workers concurrent askers and
// counts the answers that match (an A record for an existing name,
// NXDOMAIN for a missing one).
func askAll(ctx context.Context, a *loopback.Agent, qs []question, workers int) (askResult, error) {
	var (
		next, ok, bad atomic.Int64
		mu            sync.Mutex
		lat           []time.Duration
		wg            sync.WaitGroup
		firstErr      atomic.Pointer[error]
	)
	for range workers {
		wg.Go(func() {
			cl := &dns.Client{Timeout: 5 * time.Second}
			var mine []time.Duration
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(qs) {
					break
				}
				m := new(dns.Msg)
				m.SetQuestion(qs[i].name, dns.TypeA)
				t := time.Now()
				r, _, err := cl.ExchangeContext(ctx, m, a.DNSAddr())
				mine = append(mine, time.Since(t))
				switch {
				case err != nil:
					firstErr.CompareAndSwap(nil, &err)
					bad.Add(1)
				case qs[i].exists && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0,
					!qs[i].exists && r.Rcode == dns.RcodeNameError:
					ok.Add(1)
				default:
					bad.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return askResult{}, err
	}
	if e := firstErr.Load(); e != nil && bad.Load() == int64(len(qs)) {
		return askResult{}, fmt.Errorf("every DNS question failed: %w", *e)
	}
	slices.Sort(lat)
	return askResult{int(ok.Load()), int(bad.Load()), loopback.Ms(lat, 0.5), loopback.Ms(lat, 0.99)}, nil
}

// printMetrics prints the cairn_cache_ lines of a's Prometheus metrics,
// or says that the agent does not serve them, and returns the value of
// cairn_cache_entries (-1 when there is none).
func printMetrics(ctx context.Context, c *loopback.Cluster, a *loopback.Agent) int {
	body, status, err := c.Get(ctx, a, http.MethodGet, "/v1/agent/metrics?format=prometheus", "")
	if err == nil && status != http.StatusOK {
		err = errors.New(http.StatusText(status))
	}
	if err != nil {
		fmt.Printf("%s's cache metrics: not available (GET /v1/agent/metrics?format=prometheus: %v)\n", a.Name, err)
		return -1
	}
	fmt.Printf("%s's cache metrics (GET /v1/agent/metrics?format=prometheus):\n", a.Name)
	entries := -1
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, "cairn_cache_") {
			continue
		}
		fmt.Print("  ", line)
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cairn_cache_entries "); ok {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				entries = int(n)
			}
		}
	}
	return entries
}

func mib(kib int64) float64 { return float64(kib) / 1024 }
