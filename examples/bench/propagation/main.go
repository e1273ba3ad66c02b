// Command propagation measures how long a new registration on one agent
// takes to be answered by another agent's DNS, in a real multi-process
// cluster on loopback, and prints p50/p99/max (issue 6's target: p99 ≤
// 100ms).
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/propagation -cairn /tmp/cairn
//
// It starts three servers (s1–s3) and two clients (c1 = A, c2 = B) as
// separate processes, each on its own loopback address (NET.51–NET.55)
// with the default ports. Each round registers a fresh service on A
// (PUT /v1/agent/service/register) and, from the moment the PUT is sent,
// asks B's DNS for the service's A record every -poll until an answer
// holds one. Two cases:
//
//   - asked before (the realistic one, -rounds): B has been asked for the
//     name before the registration, so its cache holds a negative entry
//     that B refetches when the change feed it follows (one stream from a
//     server) names the service; the registration reaches B then.
//   - never asked (-cold rounds): B's first question for the name is the
//     first poll, sent with the PUT, so it is a cache miss that fetches
//     (and caches whatever the server it asks has applied by then).
//
// Rounds start after a random pause of 10–60ms, so they do not keep one
// phase against Raft's heartbeats. Every agent is stopped with SIGTERM at
// the end, on a failure and on Ctrl-C; data and logs live in a temporary
// directory removed unless -keep is given or something failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/miekg/dns"
)

type config struct {
	cairn   string
	net     string
	rounds  int
	cold    int
	poll    time.Duration
	timeout time.Duration
	keep    bool
	verbose bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cairn, "cairn", "", "path of the cairn `binary` to run (required)")
	flag.StringVar(&cfg.net, "net", "127.0.0", "first three `octets` of the loopback addresses; agents use .51–.55")
	flag.IntVar(&cfg.rounds, "rounds", 200, "registrations of a name B was asked for before")
	flag.IntVar(&cfg.cold, "cold", 50, "registrations of a name B was never asked for (0: skip)")
	flag.DurationVar(&cfg.poll, "poll", time.Millisecond, "interval between B's DNS questions")
	flag.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up on any one wait after this long")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (data and logs)")
	flag.BoolVar(&cfg.verbose, "v", false, "print every round")
	flag.Parse()
	if cfg.cairn == "" || cfg.rounds < 1 || cfg.cold < 0 || cfg.poll <= 0 {
		fmt.Fprintln(os.Stderr, "propagation: -cairn is required; -rounds and -poll must be positive, -cold not negative")
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("propagation", func(ctx context.Context) error { return run(ctx, cfg) })
}

// sample is one round: from sending the PUT to B's first answer holding
// the service, the PUT's own latency, and B's answer counted from the
// PUT's return (negative when B answered before the PUT returned).
type sample struct{ total, put, afterPut time.Duration }

func run(ctx context.Context, cfg config) (err error) {
	bin, work, err := loopback.Prepare(cfg.cairn, "propagation")
	if err != nil {
		return err
	}
	c := loopback.New(bin, work, cfg.net, 51, 3, 2, cfg.timeout)
	defer func() { c.Finish(err, cfg.keep) }()

	fmt.Printf("starting 3 servers and 2 clients on %s.51–55 (work dir %s)\n", cfg.net, work)
	if err := c.StartAll(); err != nil {
		return err
	}
	if err := c.Settle(ctx); err != nil {
		return err
	}
	a, b := c.Agent("c1"), c.Agent("c2")
	p := &prober{c: c, a: a, b: b, poll: cfg.poll}

	// One round first, not counted: connections, the servers' first reads.
	if _, err := p.round(ctx, "prop-warmup", true); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	topology := func() string {
		return fmt.Sprintf("leader %s; A (c1) holds RPC connections to %v, B (c2) to %v",
			c.Leader(ctx, a), c.RPCPeers(a), c.RPCPeers(b))
	}
	before := topology()
	fmt.Println("  " + before)
	cases := []struct {
		what, prefix string
		rounds       int
		asked        bool
	}{{"asked before", "prop-w", cfg.rounds, true}, {"never asked", "prop-c", cfg.cold, false}}
	var rows [][]sample
	for _, k := range cases {
		fmt.Printf("%s: %d rounds\n", k.what, k.rounds)
		var samples []sample
		for i := range k.rounds {
			name := fmt.Sprintf("%s-%d", k.prefix, i)
			s, err := p.round(ctx, name, k.asked)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", k.what, i+1, err)
			}
			samples = append(samples, s)
			if cfg.verbose {
				fmt.Printf("  %3d %-14s B answered after %6.1f ms (PUT %5.1f ms, after PUT %6.1f ms)\n",
					i+1, name, msf(s.total), msf(s.put), msf(s.afterPut))
			}
		}
		rows = append(rows, samples)
	}

	if after := topology(); after != before {
		fmt.Println("  now " + after)
	}
	fmt.Printf("\n%-38s %5s %8s %8s %8s %8s %8s %8s\n", "summary (ms)", "n", "min", "p50", "p90", "p99", "max", "mean")
	for i, samples := range rows {
		if len(samples) == 0 {
			continue
		}
		for _, part := range []struct {
			what string
			get  func(sample) time.Duration
		}{
			{"PUT on A → B answers", func(s sample) time.Duration { return s.total }},
			{"  PUT latency", func(s sample) time.Duration { return s.put }},
			{"  PUT returned → B answers", func(s sample) time.Duration { return s.afterPut }},
		} {
			d := make([]time.Duration, len(samples))
			var sum time.Duration
			for j, s := range samples {
				d[j] = part.get(s)
				sum += d[j]
			}
			slices.Sort(d)
			fmt.Printf("%-38s %5d %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", cases[i].what+": "+part.what, len(d),
				loopback.Ms(d, 0), loopback.Ms(d, 0.5), loopback.Ms(d, 0.9), loopback.Ms(d, 0.99), loopback.Ms(d, 1),
				msf(sum/time.Duration(len(d))))
		}
	}
	fmt.Printf("each round: PUT /v1/agent/service/register of a fresh name on c1 (A); c2's (B's) DNS asked for <name>.service.dc1.cluster A every %s from the PUT's start until an answer holds an A record\n", cfg.poll)
	fmt.Println("asked before: B was asked for the name (NXDOMAIN, a negative cache entry, refetched when B's change feed names it) 10–60ms before the PUT")
	fmt.Println("never asked: B's first question for the name is the first poll, sent as the PUT starts (a cache miss)")
	return nil
}

type prober struct {
	c    *loopback.Cluster
	a, b *loopback.Agent
	poll time.Duration
	dns  dns.Client
}

// round registers name on A and times B's DNS until it answers for it.
// When asked, B is asked for the name first and must say it has none.
func (p *prober) round(ctx context.Context, name string, asked bool) (sample, error) {
	if asked {
		n, ok := p.ask(ctx, name)
		if !ok || n != 0 {
			return sample{}, fmt.Errorf("first answer of B (c2) for %s: %d A records (usable answer: %v), want a negative answer", name, n, ok)
		}
	}
	pause := time.Duration(10+rand.IntN(51)) * time.Millisecond
	select {
	case <-ctx.Done():
		return sample{}, ctx.Err()
	case <-time.After(pause):
	}

	type putResult struct {
		at  time.Time
		err error
	}
	putDone := make(chan putResult, 1)
	body := fmt.Sprintf(`{"Name":%q,"Port":8080,"Address":"127.0.9.9"}`, name)
	begin := time.Now()
	go func() {
		err := p.c.Register(ctx, p.a, body)
		putDone <- putResult{time.Now(), err}
	}()
	var answered time.Time
	err := p.c.Poll(ctx, p.poll, "B's DNS to answer for "+name, func(ctx context.Context) (bool, error) {
		n, _ := p.ask(ctx, name)
		answered = time.Now()
		return n > 0, nil
	})
	put := <-putDone
	if put.err != nil {
		return sample{}, put.err
	}
	if err != nil {
		return sample{}, err
	}
	return sample{total: answered.Sub(begin), put: put.at.Sub(begin), afterPut: answered.Sub(put.at)}, nil
}

// ask asks B's DNS for name's A records. ok is false when there was no
// usable answer (timeout, SERVFAIL).
func (p *prober) ask(ctx context.Context, name string) (n int, ok bool) {
	m := new(dns.Msg)
	m.SetQuestion(name+".service.dc1.cluster.", dns.TypeA)
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	r, _, err := p.dns.ExchangeContext(ctx, m, p.b.DNSAddr())
	if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError) {
		return 0, false
	}
	for _, rr := range r.Answer {
		if _, isA := rr.(*dns.A); isA {
			n++
		}
	}
	return n, true
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
