// Command crossdc measures DNS across datacenters (issue 7): how long a
// dc1 agent takes to answer a name of dc2 on a cache miss and on a hit,
// and how long a prepared query takes to fail over to dc2 once the last
// dc1 instance goes critical (and back once it passes again).
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/crossdc -cairn /tmp/cairn
//
// It starts two datacenters as separate processes on loopback, each one
// server and one client (dc1 on NET.81–82, dc2 on NET.91–92, default
// ports), the dc2 server joining dc1's over WAN gossip. Latency: it
// registers -names services on dc2's client, asks dc1's client for each
// <name>.service.dc2.cluster A once (a miss: dc1 client → dc1 server → a
// dc2 server), then -hits times more (hits, from the client's cache).
// Failover: it registers "pq" on both clients, dc1's with a TTL check,
// defines the prepared query pq on dc1 (Failover.Datacenters [dc2]) and,
// -rounds times, fails the TTL check and polls pq.query.cluster A on dc1's
// client every -poll until it answers dc2's address, then passes the check
// and polls until it answers dc1's again. Every agent is stopped with
// SIGTERM at the end, on a failure and on Ctrl-C; data and logs live in a
// temporary directory removed unless -keep is given or something failed.
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
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type config struct {
	cairn   string
	net     string
	names   int
	hits    int
	rounds  int
	poll    time.Duration
	timeout time.Duration
	keep    bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; dc1 uses .81–82, dc2 .91–92")
	flag.IntVar(&cfg.names, "names", 200, "services registered in dc2 and asked from dc1")
	flag.IntVar(&cfg.hits, "hits", 5, "questions per name once cached")
	flag.IntVar(&cfg.rounds, "rounds", 20, "prepared-query failover rounds")
	flag.DurationVar(&cfg.poll, "poll", time.Millisecond, "interval between DNS polls while failing over")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.Parse()
	if cfg.cairn == "" || cfg.names < 1 || cfg.hits < 1 || cfg.rounds < 0 || cfg.poll <= 0 {
		fmt.Fprintln(os.Stderr, "crossdc: -cairn is required; -names and -hits must be positive, -rounds not negative, -poll positive")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("crossdc", func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "crossdc")
	if err != nil {
		return err
	}
	for _, dc := range []string{"dc1", "dc2"} {
		if err := os.Mkdir(filepath.Join(work, dc), 0o755); err != nil {
			return err
		}
	}
	dc1 := loopback.New(bin, filepath.Join(work, "dc1"), cfg.net, 81, 1, 1, cfg.timeout)
	dc2 := loopback.New(bin, filepath.Join(work, "dc2"), cfg.net, 91, 1, 1, cfg.timeout)
	dc1.Datacenter, dc2.Datacenter = "dc1", "dc2"
	dc2.JoinWAN = dc1.Agent("s1").IP
	defer func() {
		dc2.Finish(err, cfg.keep)
		dc1.Finish(err, cfg.keep)
		if err == nil && !cfg.keep {
			os.RemoveAll(work)
		}
	}()
	fmt.Printf("starting dc1 on %s.81–82 and dc2 on %s.91–92 (work dir %s)\n", cfg.net, cfg.net, work)
	for _, c := range []*loopback.Cluster{dc1, dc2} {
		if err := c.StartAll(); err != nil {
			return err
		}
	}
	for _, c := range []*loopback.Cluster{dc1, dc2} {
		if err := c.Settle(ctx); err != nil {
			return err
		}
	}
	c1, c2 := dc1.Agent("c1"), dc2.Agent("c1")
	if err := dc1.Poll(ctx, 100*time.Millisecond, "dc2 known to dc1", func(ctx context.Context) (bool, error) {
		var dcs []string
		err := dc1.Call(ctx, c1, http.MethodGet, "/v1/catalog/datacenters", "", &dcs)
		return slices.Contains(dcs, "dc2"), err
	}); err != nil {
		return err
	}

	for i := range cfg.names {
		if err := dc2.Register(ctx, c2, fmt.Sprintf(`{"Name":"x%d","Port":80}`, i)); err != nil {
			return err
		}
	}
	// The last registration has reached dc2's catalog once dc1 sees it.
	last := fmt.Sprintf("x%d.service.dc2.cluster.", cfg.names-1)
	if err := dc1.Poll(ctx, 10*time.Millisecond, "the last dc2 service answered in dc1", func(ctx context.Context) (bool, error) {
		addrs, _, err := ask(ctx, c1, last)
		return len(addrs) == 1, err
	}); err != nil {
		return err
	}
	var miss, hit []time.Duration
	for i := range cfg.names - 1 {
		name := fmt.Sprintf("x%d.service.dc2.cluster.", i)
		for j := range 1 + cfg.hits {
			addrs, d, err := ask(ctx, c1, name)
			if err != nil || len(addrs) != 1 || addrs[0] != c2.IP {
				return fmt.Errorf("%s: answered %v, %v; want %s", name, addrs, err, c2.IP)
			}
			if j == 0 {
				miss = append(miss, d)
			} else {
				hit = append(hit, d)
			}
		}
	}

	var over, back []time.Duration
	if cfg.rounds > 0 {
		if over, back, err = failover(ctx, cfg, dc1, dc2); err != nil {
			return err
		}
	}

	fmt.Printf("\n%-44s %6s %8s %8s %8s %8s\n", "summary (ms)", "n", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		what string
		d    []time.Duration
	}{
		{"dc1 client, <name>.service.dc2 A, miss", miss},
		{"dc1 client, <name>.service.dc2 A, hit", hit},
		{"prepared query: dc1 critical → dc2 answers", over},
		{"prepared query: dc1 passing → dc1 answers", back},
	} {
		if len(row.d) == 0 {
			continue
		}
		slices.Sort(row.d)
		fmt.Printf("%-44s %6d %8.2f %8.2f %8.2f %8.2f\n", row.what, len(row.d),
			loopback.Ms(row.d, 0.5), loopback.Ms(row.d, 0.9), loopback.Ms(row.d, 0.99), loopback.Ms(row.d, 1))
	}
	fmt.Println("miss: the first question for a name (the dc1 client asks a dc1 server, which forwards to the dc2 server); hit: later questions, from the client's cache")
	fmt.Println("failover: from the TTL check's PUT /v1/agent/check/fail (or pass) on dc1's client to pq.query.cluster A answering the other datacenter's address, polled every", cfg.poll)
	return nil
}

// failover runs the prepared-query rounds and returns, per round, the time
// from failing dc1's instance to dc2's answer, and from passing it again to
// dc1's.
func failover(ctx context.Context, cfg config, dc1, dc2 *loopback.Cluster) (over, back []time.Duration, err error) {
	c1, c2 := dc1.Agent("c1"), dc2.Agent("c1")
	if err := dc2.Register(ctx, c2, `{"Name":"pq","Port":80}`); err != nil {
		return nil, nil, err
	}
	if err := dc1.Register(ctx, c1, `{"Name":"pq","Port":80,"Check":{"CheckID":"pq-ttl","TTL":"1h"}}`); err != nil {
		return nil, nil, err
	}
	if err := dc1.Call(ctx, c1, http.MethodPost, "/v1/query", `{"Name":"pq","Service":{"Service":"pq","Failover":{"Datacenters":["dc2"]}}}`, nil); err != nil {
		return nil, nil, err
	}
	check := func(state string) error {
		return dc1.Call(ctx, c1, http.MethodPut, "/v1/agent/check/"+state+"/pq-ttl", "", nil)
	}
	// answers times from the check's update until pq.query answers want.
	answers := func(state, want string) (time.Duration, error) {
		start := time.Now()
		if err := check(state); err != nil {
			return 0, err
		}
		for {
			addrs, _, err := ask(ctx, c1, "pq.query.cluster.")
			if err == nil && len(addrs) == 1 && addrs[0] == want {
				return time.Since(start), nil
			}
			if time.Since(start) > cfg.timeout {
				return 0, fmt.Errorf("pq.query.cluster did not answer %s within %s of the check turning %s (last: %v, %v)", want, cfg.timeout, state, addrs, err)
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(cfg.poll):
			}
		}
	}
	if _, err := answers("pass", c1.IP); err != nil {
		return nil, nil, err
	}
	for range cfg.rounds {
		d, err := answers("fail", c2.IP)
		if err != nil {
			return nil, nil, err
		}
		over = append(over, d)
		if d, err = answers("pass", c1.IP); err != nil {
			return nil, nil, err
		}
		back = append(back, d)
	}
	return over, back, nil
}

// ask asks a's DNS for name's A records and returns the addresses and how
// long the answer took.
func ask(ctx context.Context, a *loopback.Agent, name string) ([]string, time.Duration, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	cl := &dns.Client{Timeout: 5 * time.Second}
	r, rtt, err := cl.ExchangeContext(ctx, m, a.DNSAddr())
	if err != nil {
		return nil, 0, err
	}
	if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		return nil, rtt, errors.New(dns.RcodeToString[r.Rcode])
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out, rtt, nil
}
