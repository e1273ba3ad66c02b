// Command watchload measures what a server spends on the blocking queries
// that keep agents' caches fresh: it holds -watchers blocking queries open
// against one server, as that many agents would, while a writer makes one
// catalog change per -every, and prints the server's CPU and memory over
// -window, beside a quiet -baseline with the same queries open (issue 6's
// target: a server with 1,000 agents' blocking queries open stays under
// one core at one catalog change per second).
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/watchload -cairn /tmp/cairn
//
// It starts one server (s1) as a process on loopback (NET.71, default
// ports, Raft on disk) and a client (c1, NET.72) whose address the RPC
// connections come from (the server port admits only gossip members),
// registers -names services through the server's RPC port
// (Catalog.Register), each with one instance on a node of its own
// (as agents on many machines would have them), and starts the watchers:
// watcher i asks Catalog.ServiceInstances for watch-(i mod names) with
// MinQueryIndex = the index of its last answer, MaxQueryTime -wait and
// AllowStale, the call an agent's cache refresh makes, and asks again as
// soon as an answer comes. (The HTTP health endpoints do not honour
// ?index and ?wait yet, so the RPC path is the only blocking one; it is
// also the one agents use.) Watchers are spread over -conns RPC
// connections (yamux sessions): 1,000 agents would hold 1,000. The writer
// registers and deregisters, in turn, a second instance of watch-0 on a
// node of its own (Catalog.Register and Catalog.Deregister, each committed
// through Raft), so with -names 1 every change answers every watcher, and
// with -names 1000 it answers the watchers of watch-0 only.
//
// With -feed, each watcher does what an agent's cache does since it follows
// the change feed: it holds one Catalog.Feed stream open and, when a change
// names its service, reads that service once (Catalog.ServiceInstances, a
// plain stale read). Its answers are those reads.
//
// The server is stopped with SIGTERM at the end, on a failure and on
// Ctrl-C; data and logs live in a temporary directory removed unless -keep
// is given or something failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/rpc"
)

type config struct {
	cairn    string
	net      string
	watchers int
	conns    int
	names    int
	every    time.Duration
	window   time.Duration
	baseline time.Duration
	wait     time.Duration
	timeout  time.Duration
	keep     bool
	feed     bool
	profile  string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback address; the server uses .71")
	flag.IntVar(&cfg.watchers, "watchers", 1000, "blocking queries held open")
	flag.IntVar(&cfg.conns, "conns", 1000, "RPC connections the watchers are spread over (one per simulated agent by default)")
	flag.IntVar(&cfg.names, "names", 1, "distinct services watched (watcher i watches watch-(i mod names)); the writer changes watch-0")
	flag.DurationVar(&cfg.every, "every", time.Second, "interval between catalog changes")
	flag.DurationVar(&cfg.window, "window", time.Minute, "how long the server is measured with changes")
	flag.DurationVar(&cfg.baseline, "baseline", 20*time.Second, "how long it is measured first with the queries open and no changes (0: skip)")
	flag.DurationVar(&cfg.wait, "wait", 5*time.Minute, "MaxQueryTime of each blocking query")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.BoolVar(&cfg.feed, "feed", false, "watch as agents' caches do: one Catalog.Feed stream each, and a read when it names the service")
	flag.StringVar(&cfg.profile, "profile", "", "write the server's CPU profile over the changes window to `file` (the server runs with -enable-debug)")
	flag.Parse()
	if cfg.cairn == "" || cfg.watchers < 1 || cfg.conns < 1 || cfg.names < 1 || cfg.every <= 0 || cfg.window < time.Second || cfg.baseline < 0 || cfg.wait <= 0 {
		fmt.Fprintln(os.Stderr, "watchload: -cairn is required; counts and durations must be positive (-baseline may be 0), -window at least 1s")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("watchload", func(ctx context.Context) error { return run(ctx, cfg) })
}

// measured is one window's figures.
type measured struct {
	phase           string
	wall            time.Duration
	cpuPct, selfPct float64 // the server's, and this process's, % of one core
	rssMean, rssMax int64   // the server's, KiB
	threads         int64
	changes         int
	answers, errs   int64 // answers with a new index, failed calls
	delays          []time.Duration
}

// load is the watchers' shared state.
type load struct {
	answers, errs atomic.Int64
	open          atomic.Int64 // watchers that have their first index and are blocked
	lastWrite     atomic.Int64 // UnixNano when the latest change was sent
	mu            sync.Mutex
	delays        []time.Duration // from the latest change's sending to an answer
}

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "watchload")
	if err != nil {
		return err
	}
	// c1 is there for its address: the server port admits RPC only from
	// alive gossip members, so the watchers' connections are made from
	// c1's address, as if c1's host ran them.
	c := loopback.New(bin, work, cfg.net, 71, 1, 1, cfg.timeout)
	// The connections and queries stand for as many agents, all from
	// c1's address.
	limits := filepath.Join(work, "limits.hcl")
	if err := os.WriteFile(limits, []byte("limits { rpc_max_conns_per_client = 0  rpc_max_calls_per_client = 0 }\n"), 0o600); err != nil {
		return err
	}
	c.Args = []string{"-config-file", limits}
	if cfg.profile != "" {
		c.Args = append(c.Args, "-enable-debug")
	}
	defer func() { c.Finish(err, cfg.keep) }()
	fmt.Printf("starting s1 on %s.71 and c1 on %s.72 (work dir %s)\n", cfg.net, cfg.net, work)
	if err := c.StartAll(); err != nil {
		return err
	}
	if err := c.Settle(ctx); err != nil {
		return err
	}
	s1 := c.Agent("s1")

	pools := make([]*rpc.Pool, cfg.conns)
	pc := rpc.DefaultPoolConfig()
	pc.SourceAddr = c.Agent("c1").IP
	for i := range pools {
		if pools[i], err = rpc.NewPool(pc, nil); err != nil {
			return err
		}
		defer pools[i].Close()
	}
	call := func(ctx context.Context, p *rpc.Pool, method string, args, reply any) error {
		return p.Call(ctx, s1.RPCAddr(), method, args, reply)
	}
	for i := range cfg.names {
		reg := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
			Node: fmt.Sprintf("node-%d", i), Address: fmt.Sprintf("127.0.%d.%d", 100+i/250, 1+i%250),
			Service: &catalog.Service{ID: "w", Service: fmt.Sprintf("watch-%d", i), Port: 8080},
		}}
		if err := call(ctx, pools[0], rpc.MethodCatalogRegister, reg, nil); err != nil {
			return fmt.Errorf("register watch-%d: %w", i, err)
		}
	}
	fmt.Printf("  registered %d services (one instance each, on nodes of their own) through %s's RPC port\n", cfg.names, s1.Name)

	var (
		l  load
		wg sync.WaitGroup
	)
	wctx, stopWatchers := context.WithCancel(ctx)
	defer func() { stopWatchers(); wg.Wait() }()
	for i := range cfg.watchers {
		wg.Go(func() {
			w := watcher
			if cfg.feed {
				w = feedWatcher
			}
			w(wctx, &l, pools[i%cfg.conns], s1.RPCAddr(), fmt.Sprintf("watch-%d", i%cfg.names), cfg.wait)
		})
	}
	err = c.Poll(ctx, 100*time.Millisecond, "every watcher's query to be open", func(context.Context) (bool, error) {
		return l.open.Load() == int64(cfg.watchers), nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("  %d blocking queries open over %d connections (%d services watched)\n", cfg.watchers, cfg.conns, cfg.names)

	var rows []measured
	if cfg.baseline > 0 {
		m, err := measure(ctx, c, s1, &l, "queries open, no changes", cfg.baseline, 0, nil)
		if err != nil {
			return err
		}
		rows = append(rows, m)
	}
	flip := false
	write := func(ctx context.Context) error {
		flip = !flip
		l.lastWrite.Store(time.Now().UnixNano())
		if flip {
			return call(ctx, pools[0], rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
				Node: "churn", Address: "127.0.99.1", Service: &catalog.Service{ID: "w", Service: "watch-0", Port: 8081}}}, nil)
		}
		return call(ctx, pools[0], rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{
			Deregistration: catalog.DeregisterRequest{Node: "churn", ServiceID: "w"}}, nil)
	}
	profiled := make(chan error, 1)
	if cfg.profile != "" {
		go func() { profiled <- profile(ctx, c, s1, cfg.window-time.Second, cfg.profile) }()
	} else {
		profiled <- nil
	}
	m, err := measure(ctx, c, s1, &l, fmt.Sprintf("1 change per %s", cfg.every), cfg.window, cfg.every, write)
	if perr := <-profiled; err == nil && perr != nil {
		err = fmt.Errorf("server profile: %w", perr)
	}
	if err != nil {
		return err
	}
	rows = append(rows, m)

	what := "Catalog.ServiceInstances"
	if cfg.feed {
		what = "a Catalog.Feed stream, and ServiceInstances when named"
	}
	fmt.Printf("\n%d blocking queries (%s, AllowStale, MaxQueryTime %s) over %d connections, %d services watched\n",
		cfg.watchers, what, cfg.wait, cfg.conns, cfg.names)
	fmt.Printf("%-26s %8s %8s %10s %10s %8s %8s %9s %8s %9s %9s %9s\n",
		"s1 (server)", "CPU %", "self %", "RSS mean", "RSS max", "threads", "changes", "answers", "errors", "p50 ms", "p99 ms", "max ms")
	for _, r := range rows {
		p50, p99, mx := "-", "-", "-"
		if len(r.delays) > 0 {
			p50 = fmt.Sprintf("%.1f", loopback.Ms(r.delays, 0.5))
			p99 = fmt.Sprintf("%.1f", loopback.Ms(r.delays, 0.99))
			mx = fmt.Sprintf("%.1f", loopback.Ms(r.delays, 1))
		}
		fmt.Printf("%-26s %8.2f %8.2f %6.1f MiB %6.1f MiB %8d %8d %9d %8d %9s %9s %9s\n", r.phase, r.cpuPct, r.selfPct,
			float64(r.rssMean)/1024, float64(r.rssMax)/1024, r.threads, r.changes, r.answers, r.errs, p50, p99, mx)
	}
	fmt.Println("CPU % is the server's utime+stime from /proc/PID/stat over the window, in % of one core (the machine has 2); self % is this program's (the watchers and the writer)")
	fmt.Println("answers are blocking queries that returned a new index; p50/p99/max: from a change's sending to each such answer (every watcher of watch-0 gets one per change)")
	return nil
}

// watcher holds one blocking query open on addr for service, asking again
// as soon as an answer comes, until ctx ends. A failed call is retried
// after 100ms, as a cache's refresh backs off.
func watcher(ctx context.Context, l *load, p *rpc.Pool, addr, service string, wait time.Duration) {
	var index uint64
	for ctx.Err() == nil {
		args := &rpc.ServiceInstancesRequest{Service: service, QueryOptions: rpc.QueryOptions{
			MinQueryIndex: index, MaxQueryTime: wait, AllowStale: true}}
		var reply rpc.ServiceInstancesResponse
		err := p.Call(ctx, addr, rpc.MethodCatalogServiceInstances, args, &reply)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			l.errs.Add(1)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		case index == 0:
			l.open.Add(1) // counted once it has an index: its next call blocks
		case reply.Index > index:
			d := time.Since(time.Unix(0, l.lastWrite.Load()))
			l.answers.Add(1)
			l.mu.Lock()
			l.delays = append(l.delays, d)
			l.mu.Unlock()
		}
		index = reply.Index
	}
}

// feedWatcher follows the change feed on addr as an agent's cache does
// (one stream, a reply with no news every 3s when quiet), reading service
// whenever a change names it, until ctx ends.
func feedWatcher(ctx context.Context, l *load, p *rpc.Pool, addr, service string, _ time.Duration) {
	var index uint64
	opened := false
	for ctx.Err() == nil {
		err := followFeed(ctx, p, addr, &index, func(reply *rpc.ChangesResponse) error {
			if !opened {
				opened = true
				l.open.Add(1)
				return nil
			}
			if !reply.Changes.Reset && !slices.Contains(reply.Changes.Services, service) {
				return nil
			}
			var inst rpc.ServiceInstancesResponse
			err := p.Call(ctx, addr, rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{
				Service: service, QueryOptions: rpc.QueryOptions{AllowStale: true}}, &inst)
			if err == nil {
				d := time.Since(time.Unix(0, l.lastWrite.Load()))
				l.answers.Add(1)
				l.mu.Lock()
				l.delays = append(l.delays, d)
				l.mu.Unlock()
			}
			return err
		})
		if ctx.Err() != nil {
			return
		}
		l.errs.Add(1)
		fmt.Fprintln(os.Stderr, "feed:", err)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// followFeed starts a feed stream at *index and hands each reply to
// handle until either fails.
func followFeed(ctx context.Context, p *rpc.Pool, addr string, index *uint64, handle func(*rpc.ChangesResponse) error) error {
	args := &rpc.ChangesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: *index, MaxQueryTime: 3 * time.Second, AllowStale: true}}
	st, err := p.Stream(ctx, addr, rpc.MethodCatalogFeed, args)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		var reply rpc.ChangesResponse
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := st.Recv(rctx, &reply)
		cancel()
		if err != nil {
			return err
		}
		*index = reply.Index
		if err := handle(&reply); err != nil {
			return err
		}
	}
}

// measure runs for window, calling write (when not nil) every every, and
// samples the server every second.
func measure(ctx context.Context, c *loopback.Cluster, s *loopback.Agent, l *load, phase string,
	window, every time.Duration, write func(context.Context) error) (measured, error) {
	m := measured{phase: phase}
	cpu0, _, _, err := loopback.Sample(s.PID())
	if err != nil {
		return m, err
	}
	self0, _, _, err := loopback.Sample(os.Getpid())
	if err != nil {
		return m, err
	}
	answers0, errs0 := l.answers.Load(), l.errs.Load()
	l.mu.Lock()
	l.delays = l.delays[:0]
	l.mu.Unlock()

	begin := time.Now()
	sample := time.NewTicker(time.Second)
	defer sample.Stop()
	var writes <-chan time.Time
	if write != nil {
		t := time.NewTicker(every)
		defer t.Stop()
		writes = t.C
	}
	n := 0
	for time.Since(begin) < window {
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-writes:
			if err := write(ctx); err != nil {
				return m, fmt.Errorf("catalog change: %w", err)
			}
			m.changes++
		case <-sample.C:
			_, rss, threads, err := loopback.Sample(s.PID())
			if err != nil {
				return m, errors.Join(err, c.Alive())
			}
			m.rssMean += rss
			m.rssMax, m.threads = max(m.rssMax, rss), threads
			n++
		}
	}
	m.wall = time.Since(begin)
	cpu1, _, _, err := loopback.Sample(s.PID())
	if err != nil {
		return m, err
	}
	self1, _, _, err := loopback.Sample(os.Getpid())
	if err != nil {
		return m, err
	}
	m.rssMean /= int64(max(n, 1))
	m.cpuPct = 100 * (cpu1 - cpu0).Seconds() / m.wall.Seconds()
	m.selfPct = 100 * (self1 - self0).Seconds() / m.wall.Seconds()
	m.answers, m.errs = l.answers.Load()-answers0, l.errs.Load()-errs0
	l.mu.Lock()
	m.delays = slices.Clone(l.delays)
	l.mu.Unlock()
	slices.Sort(m.delays)
	fmt.Printf("  %-26s s1 CPU %.2f%% of one core, RSS %.1f MiB; %d changes, %d answers, %d errors (over %s)\n",
		phase, m.cpuPct, float64(m.rssMean)/1024, m.changes, m.answers, m.errs, m.wall.Round(time.Millisecond))
	return m, nil
}

// profile writes s's CPU profile over the next d to file.
func profile(ctx context.Context, c *loopback.Cluster, s *loopback.Agent, d time.Duration, file string) error {
	body, status, err := c.Get(ctx, s, http.MethodGet, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(int(d.Seconds()), 1)), "")
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %s", status, body)
	}
	return os.WriteFile(file, body, 0o644)
}
