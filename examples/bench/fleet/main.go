// Command fleet measures how a cairn datacenter's costs grow with its
// number of client agents, at each of -sizes (100, 300 and 1,000 by
// default), and prints the figures and their curve (issue 19's targets at
// 1,000 agents: a dead agent's services leave DNS everywhere within 10s,
// gossip under 2 KB/s per agent, servers under one core with every
// agent's change feed open at 10 changes a second).
//
//	go build -o /tmp/cairn ./cmd/cairn && go run ./examples/bench/fleet -cairn /tmp/cairn
//
// Three servers run as processes (loopback's Cluster, on 127.0.0.141–143
// with the default ports), so that their CPU is theirs alone. The client
// agents all run in this process (package agent, as the cairn binary runs
// it), each on its own loopback address (NET.x.y) with the default ports
// and its own data directory: a thousand processes would not fit in the
// machine's memory, a thousand agents sharing one binary's do. Each
// registers one service of its own (own-<node>) through its HTTP API.
//
// The fleet grows from one size to the next; at each size, once every
// member is in the catalog and passing:
//
//   - gossip: for -gossip-window with no catalog changes, the LAN gossip bytes the
//     members send (memberlist's udp.sent and tcp.sent counters, which
//     go-metrics adds up over the whole process), divided by the members
//     and the window; the servers' CPU then is the idle baseline.
//   - feeds: every member holds its change feed (each has asked its DNS
//     for the service hot, which starts it). For -window each, the servers'
//     CPU while a writer changes, -rate times a second, the service cold
//     (no member caches it: the feeds wake, nothing is refetched) and then
//     hot (every member refetches it after every change).
//   - storm: every agent (servers and members) registers -storm-each
//     services (storm-0, storm-1, …) through its own HTTP API, all at once
//     (or offered evenly over -storm-over), at most -storm-conns at a time
//     per agent; their latency from the moment each was due (how many took
//     more than 30s, and the slowest), the time until the leader's catalog
//     holds all of them, and the time until every agent's DNS answers every
//     storm name with every agent's instance (each agent has asked for each
//     name once before, so its cache must catch up). They are deregistered
//     afterwards.
//   - deaths: -deaths members, one at a time, are stopped without leaving
//     (their sockets close as a killed process's would); the time until the
//     leader marks the node critical, and until every other member's DNS
//     has stopped answering for the dead member's service. Each is then
//     started again, and the time until every member answers for it again
//     is the rejoin figure.
//
// -phases picks which of gossip, feeds, storm and deaths run (all by
// default); the storm alone at 200 members:
//
//	go run ./examples/bench/fleet -cairn /tmp/cairn -sizes 197 -phases storm
//
// Servers are stopped with SIGTERM at the end, members shut down; data and
// logs live in a temporary directory removed unless -keep is given or
// something failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type options struct {
	cairn     string
	net       string
	sizes     []int
	parallel  int
	window    time.Duration
	gossipWin time.Duration
	quiet     time.Duration
	rate      int
	phases    []string
	// The storm: registrations per agent, how long they are spread over
	// (0: all at once), and at most how many each agent is sent at a time.
	stormEach  int
	stormOver  time.Duration
	stormConns int
	deaths     int
	timeout    time.Duration
	profiles   string
	gogc       int
	keep       bool
	// gossip is every agent's gossip_lan block (servers' and members').
	probeInterval, probeTimeout time.Duration
	suspicionMult               int
}

func main() {
	var o options
	sizes := "100,300,1000"
	flag.StringVar(&o.cairn, "cairn", "", "path of the cairn `binary` the servers run (required)")
	flag.StringVar(&o.net, "net", "127.1", "first two `octets` of the members' loopback addresses")
	flag.StringVar(&sizes, "sizes", sizes, "comma-separated fleet `sizes` to measure at, growing")
	flag.IntVar(&o.parallel, "parallel", 16, "members started (and asked) at a time")
	flag.DurationVar(&o.window, "window", 60*time.Second, "length of each feed window")
	flag.DurationVar(&o.gossipWin, "gossip-window", 3*time.Minute, "length of the idle window gossip bytes are counted over: push/pull syncs come minutes apart")
	flag.DurationVar(&o.quiet, "quiet", 30*time.Second, "wait this long after the fleet settles before the gossip window")
	flag.IntVar(&o.rate, "rate", 10, "catalog changes a second during the feed windows")
	phases := strings.Join(allPhases, ",")
	flag.StringVar(&phases, "phases", phases, "comma-separated `phases` to run at each size, among "+phases)
	flag.IntVar(&o.stormEach, "storm-each", 50, "services every agent registers in the storm")
	flag.DurationVar(&o.stormOver, "storm-over", 0, "how long the storm's registrations are spread over (0: all at once)")
	flag.IntVar(&o.stormConns, "storm-conns", 16, "at most this many of an agent's storm registrations in flight at once")
	flag.IntVar(&o.deaths, "deaths", 3, "members killed, one at a time, at each size")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on any one wait after this long")
	flag.StringVar(&o.profiles, "profiles", "", "write this process's CPU profiles over each idle window and storm to `directory`/fleet-N-{grow,idle,storm}.cpu.pprof")
	flag.IntVar(&o.gogc, "gogc", 400, "this process's GOGC: the members share one heap, so each collection scans all of them; memory is what this machine has plenty of")
	lan := config.DefaultGossipLAN()
	flag.DurationVar(&o.probeInterval, "probe-interval", lan.ProbeInterval, "every agent's gossip_lan probe_interval")
	flag.DurationVar(&o.probeTimeout, "probe-timeout", lan.ProbeTimeout, "every agent's gossip_lan probe_timeout")
	flag.IntVar(&o.suspicionMult, "suspicion-mult", lan.SuspicionMult, "every agent's gossip_lan suspicion_mult")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (data and logs)")
	flag.Parse()
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 || (len(o.sizes) > 0 && n <= o.sizes[len(o.sizes)-1]) || n > 200*250 {
			fmt.Fprintf(os.Stderr, "fleet: -sizes: %q is not a growing list of sizes from 2 to 50000\n", sizes)
			os.Exit(2)
		}
		o.sizes = append(o.sizes, n)
	}
	for s := range strings.SplitSeq(phases, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allPhases, s) {
			fmt.Fprintf(os.Stderr, "fleet: -phases: %q is not one of %s\n", s, strings.Join(allPhases, ", "))
			os.Exit(2)
		}
		o.phases = append(o.phases, s)
	}
	if o.cairn == "" || o.parallel < 1 || o.window < time.Second || o.gossipWin < time.Second || o.rate < 1 || o.stormEach < 1 || o.stormOver < 0 ||
		o.stormConns < 1 || o.deaths < 0 || o.deaths >= o.sizes[0] {
		fmt.Fprintln(os.Stderr, "fleet: -cairn is required; -parallel, -rate, -storm-each and -storm-conns must be positive, -storm-over not negative, -window and -gossip-window at least 1s, -deaths below the first size")
		flag.Usage()
		os.Exit(2)
	}
	debug.SetGCPercent(o.gogc)
	loopback.Main("fleet", func(ctx context.Context) error { return run(ctx, o) })
}

var allPhases = []string{"gossip", "feeds", "storm", "deaths"}

// bench is one run: the servers, the fleet and what was measured.
type bench struct {
	o       options
	c       *loopback.Cluster
	servers []*loopback.Agent
	f       *fleet
	curve   []point
}

// point is the figures at one fleet size, for the curve.
type point struct {
	n                    int
	gossipOut, gossipUDP float64 // bytes/s sent per member, all and over UDP
	serverGossip         float64 // bytes/s one server sends on LAN gossip, the busiest
	cpuIdle, cpuCold     float64 // the busiest server's CPU, in cores
	cpuHot               float64
	memberCPU            float64 // this process's CPU per member, in cores
	rssPerMember         float64 // MiB
	stormAck99, stormMax time.Duration
	stormPast            int // registrations answered more than 30s after they were due
	stormCatalog         time.Duration
	stormDNS             time.Duration   // every agent's DNS answering every storm name fully
	critical, gone       []time.Duration // per death
	back                 []time.Duration
}

func run(ctx context.Context, o options) (err error) {
	bin, work, err := loopback.Prepare(o.cairn, "fleet")
	if err != nil {
		return err
	}
	b := &bench{o: o, c: loopback.New(bin, work, "127.0.0", 141, 3, 0, o.timeout)}
	b.servers = b.c.Agents
	// A counter not moved for the retention time (1m by default) leaves
	// the metrics and starts again from 0: a server may push/pull less
	// often than that.
	conf := filepath.Join(work, "server.hcl")
	hcl := fmt.Sprintf("telemetry { prometheus_retention_time = \"24h\" }\ngossip_lan { probe_interval = %q  probe_timeout = %q  suspicion_mult = %d }\n",
		o.probeInterval, o.probeTimeout, o.suspicionMult)
	if err := os.WriteFile(conf, []byte(hcl), 0o644); err != nil {
		return err
	}
	b.c.Args = []string{"-config-file", conf}
	var gossipAddrs []string
	for _, s := range b.servers {
		gossipAddrs = append(gossipAddrs, s.IP)
	}
	if b.f, err = newFleet(work, gossipAddrs, o); err != nil {
		return err
	}
	defer func() {
		b.f.shutdown()
		b.c.Finish(err, o.keep)
	}()
	fmt.Printf("command: go run ./examples/bench/fleet %s\n%s, work dir %s\n", strings.Join(os.Args[1:], " "), loopback.LoadAverage(), work)
	if err := b.c.StartAll(); err != nil {
		return err
	}
	if _, err := b.c.WaitLeader(ctx, b.servers, ""); err != nil {
		return err
	}
	for _, n := range o.sizes {
		p, err := b.measure(ctx, n)
		if err != nil {
			return fmt.Errorf("at %d members: %w", n, err)
		}
		b.curve = append(b.curve, p)
	}
	b.printCurve()
	return nil
}

// measure grows the fleet to n members and takes every figure at that
// size.
func (b *bench) measure(ctx context.Context, n int) (point, error) {
	p := point{n: n}
	fmt.Printf("\n== %d members (%s)\n", n, loopback.LoadAverage())
	begin := time.Now()
	if err := b.grow(ctx, n); err != nil {
		return p, err
	}
	fmt.Printf("  grown and settled in %s\n", time.Since(begin).Round(time.Millisecond))
	if b.runs("gossip") {
		if err := b.gossip(ctx, &p); err != nil {
			return p, err
		}
	}
	if b.runs("feeds") {
		if err := b.feeds(ctx, &p); err != nil {
			return p, err
		}
	}
	if b.runs("storm") {
		if err := b.storm(ctx, &p); err != nil {
			return p, err
		}
	}
	for k := range b.o.deaths {
		if !b.runs("deaths") {
			break
		}
		// Spread over the fleet: the first, one in the middle, the last…
		victim := b.f.members[(k*(n-1))/max(1, b.o.deaths-1)]
		if err := b.death(ctx, victim, &p); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (b *bench) runs(phase string) bool { return slices.Contains(b.o.phases, phase) }

func (b *bench) printCurve() {
	fmt.Printf("\n%8s %12s %12s %14s %10s %10s %10s %12s %10s %10s %10s %6s %10s %10s %12s %12s %12s\n", "members",
		"gossip", "gossip UDP", "server gossip", "CPU idle", "CPU cold", "CPU hot", "member CPU",
		"RSS/member", "storm p99", "storm max", ">30s", "catalog", "DNS", "critical", "gone (max)", "back")
	for _, p := range b.curve {
		// A phase not run shows as "-".
		col := func(phase, format string, v ...any) string {
			if !b.runs(phase) {
				return "-"
			}
			return fmt.Sprintf(format, v...)
		}
		ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		fmt.Printf("%8d %12s %12s %14s %10s %10s %10s %12s %10s %10s %10s %6s %10s %10s %12s %12s %12s\n", p.n,
			col("gossip", "%.0f/s", p.gossipOut), col("gossip", "%.0f/s", p.gossipUDP), col("gossip", "%.0f/s", p.serverGossip),
			col("gossip", "%.2f", p.cpuIdle), col("feeds", "%.2f", p.cpuCold), col("feeds", "%.2f", p.cpuHot),
			col("gossip", "%.4f", p.memberCPU), col("gossip", "%.1fMi", p.rssPerMember),
			col("storm", "%s", ms(p.stormAck99)), col("storm", "%s", ms(p.stormMax)), col("storm", "%d", p.stormPast),
			col("storm", "%s", ms(p.stormCatalog)), col("storm", "%s", ms(p.stormDNS)),
			span(p.critical), span(p.gone), span(p.back))
	}
	fmt.Println("\n(bytes are per member per second; CPU in cores, the busiest server; storm: latency p99 and max from when each registration")
	fmt.Println("was due, how many took over 30s, and the time until the leader's catalog holds all and until every agent's DNS answers for all;")
	fmt.Println("critical, gone and back (a restarted member answered for everywhere) are min–max over the deaths)")
}

// span is "min–max" of ds, or "-" when there are none.
func span(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.1f–%.1fs", s[0].Seconds(), s[len(s)-1].Seconds())
}
