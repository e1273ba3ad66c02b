// Command scale measures a cairn datacenter holding a large catalog (by
// default 100,000 service instances over 5,000 nodes, 200 service names of
// 500 instances each) and prints the figures: registrations per second,
// each server's RSS, a snapshot's size and save and restore times, a leader
// failover with that state, a restarted server catching up, and a client
// agent's first DNS answers.
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/scale -cairn /tmp/cairn
//
// It starts three servers (s1–s3) as processes on loopback (NET.101–103,
// the default ports), registers the catalog through PUT
// /v1/catalog/register on all three, then starts one client (c1, NET.104)
// at the end. The agents run with enable_debug, so that a forced GC
// (/debug/pprof/heap?gc=1) tells the live heap apart from garbage; with
// -profiles DIR the leader's heap profile is kept there. Every agent is
// stopped with SIGTERM at the end, on a failure and on Ctrl-C; data and
// logs are removed unless -keep is given or something failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	nodes    int
	perNode  int
	services int
	workers  int
	misses   int
	checks   bool
	timeout  time.Duration
	profiles string
	keep     bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; agents use .101–.104")
	flag.IntVar(&cfg.nodes, "nodes", 5000, "nodes to register")
	flag.IntVar(&cfg.perNode, "per-node", 20, "service instances on each node")
	flag.IntVar(&cfg.services, "services", 200, "distinct service names the instances are spread over")
	flag.IntVar(&cfg.workers, "workers", 32, "concurrent registrations")
	flag.IntVar(&cfg.misses, "misses", 20, "service names asked once each of the running client (cache misses)")
	flag.BoolVar(&cfg.checks, "checks", true, "register each instance with a passing HTTP check (with an output line, as real ones have)")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "give up on any one wait after this long")
	flag.StringVar(&cfg.profiles, "profiles", "", "keep the leader's heap profile after registration in this `directory`")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.Parse()
	if cfg.cairn == "" || cfg.nodes < 1 || cfg.perNode < 1 || cfg.services < 1 || cfg.workers < 1 || cfg.misses < 1 ||
		cfg.misses >= cfg.services {
		fmt.Fprintln(os.Stderr, "scale: -cairn is required; sizes must be positive, -misses below -services")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("scale", func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "scale")
	if err != nil {
		return err
	}
	// enable_debug lets us force a GC before reading RSS; nothing else in
	// the agents' configuration differs from the defaults.
	conf := filepath.Join(work, "debug.hcl")
	if err := os.WriteFile(conf, []byte("enable_debug = true\n"), 0o644); err != nil {
		return err
	}
	c := loopback.New(bin, work, cfg.net, 101, 3, 1, cfg.timeout)
	c.Args = []string{"-config-file", conf}
	c.IdleConnsPerHost(cfg.workers)
	defer func() { c.Finish(err, cfg.keep) }()
	servers := c.Agents[:3]
	var t loopback.Table

	fmt.Printf("command: %s\nload before: %s\n", command(), loopback.LoadAverage())
	fmt.Printf("starting 3 servers on %s.101–103 (work dir %s)\n", cfg.net, work)
	for _, s := range servers {
		if err := c.Start(s); err != nil {
			return err
		}
	}
	if _, err := c.WaitLeader(ctx, servers, ""); err != nil {
		return err
	}

	total := cfg.nodes * cfg.perNode
	fmt.Printf("registering %d instances (%d nodes × %d, %d names of ~%d, checks %v) with %d workers\n",
		total, cfg.nodes, cfg.perNode, cfg.services, total/cfg.services, cfg.checks, cfg.workers)
	if err := register(ctx, c, cfg, servers, &t); err != nil {
		return err
	}
	if err := waitCounts(ctx, c, servers, cfg, "after registration"); err != nil {
		return err
	}
	leader, err := c.WaitLeader(ctx, servers, "")
	if err != nil {
		return err
	}
	if err := memory(ctx, c, servers, leader, "after registration", cfg.profiles, &t); err != nil {
		return err
	}

	follower := servers[(slices.Index(servers, leader)+1)%3]
	if err := snapshot(ctx, c, bin, work, follower, &t); err != nil {
		return err
	}
	if err := waitCounts(ctx, c, servers, cfg, "after restore"); err != nil {
		return err
	}
	if err := memory(ctx, c, servers, leader, "after restore", "", &t); err != nil {
		return err
	}

	if err := failover(ctx, c, servers, cfg, &t); err != nil {
		return err
	}
	if err := clientAnswers(ctx, c, cfg, &t); err != nil {
		return err
	}
	fmt.Printf("load after: %s\n", loopback.LoadAverage())
	t.Print(os.Stdout)
	fmt.Printf("\ncommand: %s\n", command())
	return nil
}

// command is how this run was started, as go run would be typed (the
// binary's own name is a temporary path then).
func command() string {
	return strings.Join(append([]string{"go run ./examples/bench/scale"}, os.Args[1:]...), " ")
}

// instance is the i-th registration: node i/perNode, and a service name
// chosen round-robin, so that every name has total/services instances
// spread over many nodes.
func instance(cfg config, i int) string {
	node, slot := i/cfg.perNode, i%cfg.perNode
	check := ""
	if cfg.checks {
		check = fmt.Sprintf(`,"Check":{"CheckID":"service:inst-%d","Name":"Service 'svc-%03d' check","Status":"passing","ServiceID":"inst-%d","Type":"http",`+
			`"Output":"HTTP GET http://10.%d.%d.%d:%d/health: 200 OK Output: {\"status\":\"ok\",\"uptime\":%d}"}`,
			slot, i%cfg.services, slot, 1+node>>16, node>>8&255, node&255, 20000+slot, i*7919%100000)
	}
	return fmt.Sprintf(`{"Node":"node-%05d","Address":"10.%d.%d.%d","Service":{"ID":"inst-%d","Service":"svc-%03d","Port":%d}%s}`,
		node, 1+node>>16, node>>8&255, node&255, slot, i%cfg.services, 20000+slot, check)
}

// register sends every registration, spread over the servers, from
// cfg.workers goroutines; a failed one is retried up to three times (and
// counted), so one error does not end the run but is reported.
func register(ctx context.Context, c *loopback.Cluster, cfg config, servers []*loopback.Agent, t *loopback.Table) error {
	total := cfg.nodes * cfg.perNode
	var (
		next     atomic.Int64
		failures atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	begin := time.Now()
	for w := range cfg.workers {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= total {
					break
				}
				if i > 0 && i%20000 == 0 {
					fmt.Printf("  %d registered after %s\n", i, time.Since(begin).Round(time.Second))
				}
				body := instance(cfg, i)
				var err error
				for range 4 {
					t0 := time.Now()
					if err = c.Call(ctx, servers[(i+w)%len(servers)], http.MethodPut, "/v1/catalog/register", body, nil); err == nil {
						mine = append(mine, time.Since(t0))
						break
					}
					failures.Add(1)
				}
				if err != nil {
					mu.Lock()
					firstErr = cmp(firstErr, err)
					mu.Unlock()
					break
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if firstErr != nil {
		return fmt.Errorf("registration failed four times: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	slices.Sort(lat)
	t.Add(fmt.Sprintf("register %d instances, %d workers", total, cfg.workers),
		fmt.Sprintf("%.0f reg/s (%s)", float64(len(lat))/elapsed.Seconds(), elapsed.Round(100*time.Millisecond)), "")
	t.Add("  latency p50 / p99 / max",
		fmt.Sprintf("%.1f / %.1f / %.1f ms", loopback.Ms(lat, 0.5), loopback.Ms(lat, 0.99), loopback.Ms(lat, 1)), "")
	t.Add("  failed attempts (retried)", strconv.FormatInt(failures.Load(), 10), "0")
	return nil
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// waitCounts waits until every server holds the whole catalog: a
// follower may trail the last writes for a moment.
func waitCounts(ctx context.Context, c *loopback.Cluster, servers []*loopback.Agent, cfg config, when string) error {
	begin := time.Now()
	var last error
	err := c.Poll(ctx, 100*time.Millisecond, "every server to hold the catalog "+when, func(ctx context.Context) (bool, error) {
		for _, s := range servers {
			if last = checkCounts(ctx, c, s, cfg); last != nil {
				return false, last
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("  every server holds the catalog %s (%s)\n", when, time.Since(begin).Round(time.Millisecond))
	return nil
}

// checkCounts makes sure the catalog holds what was registered, as a's
// stale read sees it: every node, and the last service's instances.
func checkCounts(ctx context.Context, c *loopback.Cluster, a *loopback.Agent, cfg config) error {
	var nodes []struct{ Node string }
	if err := c.Call(ctx, a, http.MethodGet, "/v1/catalog/nodes?stale", "", &nodes); err != nil {
		return err
	}
	name := fmt.Sprintf("svc-%03d", cfg.services-1)
	var insts []struct{ ServiceID string }
	if err := c.Call(ctx, a, http.MethodGet, "/v1/catalog/service/"+name+"?stale", "", &insts); err != nil {
		return err
	}
	want := cfg.nodes * cfg.perNode / cfg.services
	if len(nodes) < cfg.nodes || len(insts) != want {
		return fmt.Errorf("%s holds %d nodes (want %d and the servers) and %d instances of %s (want %d)",
			a.Name, len(nodes), cfg.nodes, len(insts), name, want)
	}
	return nil
}

var heapStat = regexp.MustCompile(`(?m)^# (HeapAlloc|HeapInuse|Sys) = (\d+)$`)

// memory reports each server's RSS, then forces a GC on each (the heap
// profile's gc=1) and reports the RSS and live heap again 10 s later, so
// that garbage not yet collected is told apart from what the state holds.
func memory(ctx context.Context, c *loopback.Cluster, servers []*loopback.Agent, leader *loopback.Agent, when, profiles string, t *loopback.Table) error {
	rss := func() ([]int64, error) {
		var out []int64
		for _, s := range servers {
			_, kib, _, err := loopback.Sample(s.PID())
			if err != nil {
				return nil, err
			}
			out = append(out, kib)
		}
		return out, nil
	}
	before, err := rss()
	if err != nil {
		return err
	}
	heaps := make([]string, len(servers))
	for i, s := range servers {
		b, status, err := c.Get(ctx, s, http.MethodGet, "/debug/pprof/heap?gc=1&debug=1", "")
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("heap profile of %s: status %d: %v", s.Name, status, err)
		}
		stats := map[string]string{}
		for _, m := range heapStat.FindAllSubmatch(b, -1) {
			stats[string(m[1])] = mib(string(m[2]))
		}
		heaps[i] = fmt.Sprintf("%s: %s/%s", s.Name, stats["HeapAlloc"], stats["HeapInuse"])
		if profiles != "" && s == leader {
			if err := saveProfile(ctx, c, s, filepath.Join(profiles, "heap-"+strings.ReplaceAll(when, " ", "-")+".pb.gz")); err != nil {
				return err
			}
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
	}
	after, err := rss()
	if err != nil {
		return err
	}
	list := func(kib []int64) string {
		var parts []string
		for i, k := range kib {
			mark := ""
			if servers[i] == leader {
				mark = "*"
			}
			parts = append(parts, fmt.Sprintf("%s%s %d", servers[i].Name, mark, k>>10))
		}
		return strings.Join(parts, ", ") + " MiB"
	}
	t.Add("server RSS "+when+" (* leader)", list(before), "< 1024 MiB")
	t.Add("  10 s after a forced GC", list(after), "< 1024 MiB")
	t.Add("  live heap after the GC (alloc/inuse MiB)", strings.Join(heaps, ", "), "")
	return nil
}

func mib(bytes string) string {
	n, _ := strconv.ParseInt(bytes, 10, 64)
	return strconv.FormatInt(n>>20, 10)
}

func saveProfile(ctx context.Context, c *loopback.Cluster, a *loopback.Agent, path string) error {
	b, status, err := c.Get(ctx, a, http.MethodGet, "/debug/pprof/heap", "")
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("heap profile of %s: status %d: %v", a.Name, status, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fmt.Printf("  heap profile of %s kept in %s\n", a.Name, path)
	return os.WriteFile(path, b, 0o644)
}

// snapshot saves an archive through a follower's HTTP API with the CLI
// (so it travels over the RPC from the leader), then restores it the same
// way into the same cluster.
func snapshot(ctx context.Context, c *loopback.Cluster, bin, work string, via *loopback.Agent, t *loopback.Table) error {
	file := filepath.Join(work, "backup.snap")
	addr := "http://" + via.IP + ":8500"
	cli := func(verb string) (time.Duration, error) {
		begin := time.Now()
		out, err := exec.CommandContext(ctx, bin, "snapshot", verb, "-http-addr", addr, file).CombinedOutput()
		took := time.Since(begin)
		if err != nil {
			return 0, fmt.Errorf("cairn snapshot %s through %s: %w: %s", verb, via.Name, err, strings.TrimSpace(string(out)))
		}
		return took, nil
	}
	saved, err := cli("save")
	if err != nil {
		return err
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	t.Add("cairn snapshot save (through follower "+via.Name+")",
		fmt.Sprintf("%s, %.1f MiB", saved.Round(time.Millisecond), float64(st.Size())/(1<<20)), "")
	restored, err := cli("restore")
	if err != nil {
		return err
	}
	t.Add("cairn snapshot restore (through "+via.Name+")", restored.Round(time.Millisecond).String(), "< 10 s")
	return nil
}

// failover kills the leader with SIGKILL and times, through a surviving
// server polled every 20 ms, until it names a new leader and until a
// catalog write through it succeeds. Then it restarts the killed server
// and times until it answers for the whole catalog again (its Raft
// snapshot read back from disk, or sent by the leader).
func failover(ctx context.Context, c *loopback.Cluster, servers []*loopback.Agent, cfg config, t *loopback.Table) error {
	old, err := c.WaitLeader(ctx, servers, "")
	if err != nil {
		return err
	}
	watcher := servers[(slices.Index(servers, old)+1)%3]
	var elected, wrote time.Duration
	begin := time.Now()
	if err := c.Kill(old); err != nil {
		return err
	}
	probe := `{"Node":"failover-probe","Address":"10.255.0.1"}`
	err = c.Poll(ctx, 20*time.Millisecond, watcher.Name+" naming a new leader and taking a write", func(ctx context.Context) (bool, error) {
		if elected == 0 {
			if l := c.Leader(ctx, watcher); l == "" || l == old.Name {
				return false, nil
			}
			elected = time.Since(begin)
		}
		if err := c.Call(ctx, watcher, http.MethodPut, "/v1/catalog/register", probe, nil); err != nil {
			return false, err
		}
		wrote = time.Since(begin)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("after killing leader %s: %w", old.Name, err)
	}
	t.Add("failover: kill -9 leader "+old.Name+", new leader named", elected.Round(time.Millisecond).String(), "")
	t.Add("  a write through "+watcher.Name+" succeeds", wrote.Round(time.Millisecond).String(), "< 3 s")

	begin = time.Now()
	if err := c.Start(old); err != nil {
		return err
	}
	err = c.Poll(ctx, 50*time.Millisecond, old.Name+" restarted to hold the catalog", func(ctx context.Context) (bool, error) {
		return checkCounts(ctx, c, old, cfg) == nil, nil
	})
	if err != nil {
		return err
	}
	t.Add("  "+old.Name+" restarted: answers for the whole catalog", time.Since(begin).Round(time.Millisecond).String(), "")
	_, err = c.WaitLeader(ctx, servers, "")
	return err
}

// clientAnswers starts the client c1 and times until its DNS answers a
// service name, then asks it names it has not cached yet (each a fetch
// from a server) and reports what an answer of ~500 instances costs.
func clientAnswers(ctx context.Context, c *loopback.Cluster, cfg config, t *loopback.Table) error {
	c1 := c.Agent("c1")
	begin := time.Now()
	if err := c.Start(c1); err != nil {
		return err
	}
	first := fmt.Sprintf("svc-%03d.service.cluster.", 0)
	err := c.Poll(ctx, 10*time.Millisecond, "c1's DNS answering "+first, func(ctx context.Context) (bool, error) {
		n, _ := loopback.SRVCount(ctx, c1, first)
		return n > 0, nil
	})
	if err != nil {
		return err
	}
	t.Add("client c1: process start to first DNS answer", time.Since(begin).Round(time.Millisecond).String(), "")

	var miss, hit []time.Duration
	for i := 1; i <= cfg.misses; i++ {
		name := fmt.Sprintf("svc-%03d.service.cluster.", i)
		for _, into := range []*[]time.Duration{&miss, &hit} {
			took, r, err := ask(ctx, c1, name, dns.TypeSRV, "udp", false)
			if err != nil {
				return fmt.Errorf("asking c1 for %s: %w", name, err)
			}
			if len(r.Answer) == 0 {
				return fmt.Errorf("c1 answered %s with no records (rcode %s)", name, dns.RcodeToString[r.Rcode])
			}
			*into = append(*into, took)
		}
	}
	slices.Sort(miss)
	slices.Sort(hit)
	t.Add(fmt.Sprintf("  first question, not cached (n=%d) p50 / max", len(miss)),
		fmt.Sprintf("%.2f / %.2f ms", loopback.Ms(miss, 0.5), loopback.Ms(miss, 1)), "")
	t.Add("  the same question again (cached) p50 / max",
		fmt.Sprintf("%.2f / %.2f ms", loopback.Ms(hit, 0.5), loopback.Ms(hit, 1)), "")

	per := cfg.nodes * cfg.perNode / cfg.services
	for _, q := range []struct {
		net  string
		edns bool
	}{{"udp", false}, {"udp", true}, {"tcp", false}} {
		took, r, err := ask(ctx, c1, first, dns.TypeSRV, q.net, q.edns)
		if err != nil {
			return fmt.Errorf("asking c1 for %s over %s: %w", first, q.net, err)
		}
		how := q.net
		if q.edns {
			how += "+EDNS0(4096)"
		}
		t.Add(fmt.Sprintf("  SRV of a %d-instance service, %s", per, how),
			fmt.Sprintf("%d SRV, %d B, TC=%v, %.2f ms", len(r.Answer), r.Len(), r.Truncated, float64(took)/float64(time.Millisecond)), "")
	}
	for _, path := range []string{"/v1/catalog/nodes", "/v1/health/state/any"} {
		t.Add("  GET "+path+" through c1", bigRead(ctx, c1, path), "")
	}
	_, kib, _, err := loopback.Sample(c1.PID())
	if err != nil {
		return err
	}
	t.Add(fmt.Sprintf("  client RSS with %d names of %d cached", cfg.misses+1, per), fmt.Sprintf("%d MiB", kib>>10), "")
	return nil
}

// bigRead GETs path from a's HTTP API (which fetches it from a server over
// RPC) and says how it went: status, size and time, or the error.
func bigRead(ctx context.Context, a *loopback.Agent, path string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.IP+":8500"+path, nil)
	if err != nil {
		return err.Error()
	}
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	took := time.Since(begin)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d, %.1f MiB, %s", resp.StatusCode, float64(n)/(1<<20), took.Round(time.Millisecond))
}

// ask sends one question to a's DNS and returns how long the answer took.
func ask(ctx context.Context, a *loopback.Agent, name string, qtype uint16, network string, edns bool) (time.Duration, *dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns {
		m.SetEdns0(4096, false)
	}
	cl := &dns.Client{Net: network, Timeout: 5 * time.Second, UDPSize: 4096}
	begin := time.Now()
	r, _, err := cl.ExchangeContext(ctx, m, a.DNSAddr())
	took := time.Since(begin)
	if err != nil {
		return 0, nil, err
	}
	if r.Rcode != dns.RcodeSuccess {
		return 0, nil, errors.New("rcode " + dns.RcodeToString[r.Rcode])
	}
	return took, r, nil
}
