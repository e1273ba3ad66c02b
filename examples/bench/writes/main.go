// Command writes measures replicated writes through the HTTP API of three
// servers with their data on disk (every write fsynced before it is
// answered), for cairn beside Consul and etcd: KV writes, and service
// registrations (cairn and Consul), at several counts of concurrent
// writers, spread over the three servers. It prints a table per kind of
// write and writer count: writes per second, p50 and p99 latency and the
// servers' CPU per write of each system in each round, then their medians.
//
//	go build -o /tmp/cairn ./cmd/cairn
//	go run ./examples/bench/writes -cairn /tmp/cairn
//
// Runs are interleaved: each round starts each system's three servers
// afresh, runs every kind of write at every writer count against it, and
// stops it before the next system starts, so only one system runs at a
// time; the order of the systems turns by one every round, so none always
// goes first. See README.md beside this file.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

type options struct {
	systems, ops     []string
	writers          []int
	duration, warmup time.Duration
	rounds           int
	cairn, consul    string
	etcd, net        string
	timeout          time.Duration
	keep             bool
	profile          string
}

// firstOctet is where each system's three servers' addresses start in
// -net: one system runs at a time, but a server's ports may linger a
// moment after it stops.
var firstOctet = map[string]int{"cairn": 11, "consul": 21, "etcd": 31}

func main() {
	var o options
	systems, ops, writers := "cairn,consul,etcd", "kv,register", "1,8,32,128"
	flag.StringVar(&systems, "systems", systems, "comma-separated `systems` to measure: cairn, consul, etcd")
	flag.StringVar(&ops, "ops", ops, "comma-separated kinds of `write`: kv, register (etcd takes kv only)")
	flag.StringVar(&writers, "writers", writers, "comma-separated concurrent writer `counts`")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long each measured run lasts")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "writes at the run's writer count before each measured run, not counted")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every system once")
	flag.StringVar(&o.cairn, "cairn", "", "path of the cairn `binary` (required with cairn)")
	flag.StringVar(&o.consul, "consul", "", "path of the consul `binary` (default: the one e2e/consulcli/build-consul.sh builds and caches)")
	flag.StringVar(&o.etcd, "etcd", "etcd", "path of the etcd `binary` (Debian's etcd-server)")
	flag.StringVar(&o.net, "net", "127.0.4", "first three `octets` of the servers' loopback addresses: cairn on .11–.13, consul .21–.23, etcd .31–.33")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up on a cluster that is not ready after this long")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (data and logs)")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of each cairn server over each measured run into `dir` (cairn runs with -enable-debug)")
	flag.Parse()
	var err error
	if o.systems, err = names(systems, "cairn", "consul", "etcd"); err == nil {
		o.ops, err = names(ops, "kv", "register")
	}
	if err == nil {
		o.writers, err = counts(writers)
	}
	if err == nil && (o.duration <= 0 || o.warmup < 0 || o.rounds < 1) {
		err = fmt.Errorf("-duration and -rounds must be positive, -warmup not negative")
	}
	if err == nil && slices.Contains(o.systems, "cairn") && o.cairn == "" {
		err = fmt.Errorf("-cairn is required to measure cairn")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writes:", err)
		flag.Usage()
		os.Exit(2)
	}
	loopback.Main("writes", func(ctx context.Context) error { return run(ctx, o) })
}

// names splits a comma-separated list and checks each is one of valid.
func names(list string, valid ...string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(valid, s) || slices.Contains(out, s) {
			return nil, fmt.Errorf("%q: want distinct names among %s", s, strings.Join(valid, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

func counts(list string) ([]int, error) {
	var out []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("-writers: %q is not a count from 1 to 1000", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// key names one table: a kind of write at a writer count.
type key struct {
	op      string
	writers int
}

func run(ctx context.Context, o options) error {
	sys, err := resolve(o)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "cairn-bench-writes-")
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 4096, MaxIdleConnsPerHost: slices.Max(o.writers) + 8, IdleConnTimeout: time.Minute,
	}}
	fmt.Printf("command: go run ./examples/bench/writes %s\n%s, work dir %s\n", strings.Join(os.Args[1:], " "), loopback.LoadAverage(), work)
	results := map[key]map[string][]result{}
	for r := range o.rounds {
		order := append(slices.Clone(sys[r%len(sys):]), sys[:r%len(sys)]...)
		for _, s := range order {
			if err := turn(ctx, hc, o, s, work, r, results); err != nil {
				return fmt.Errorf("round %d, %s: %w (work dir kept: %s)", r+1, s.name, err, work)
			}
		}
	}
	report(os.Stdout, o, results)
	if !o.keep {
		os.RemoveAll(work)
	}
	return nil
}

// resolve finds each system's binary.
func resolve(o options) ([]*system, error) {
	var out []*system
	for _, name := range o.systems {
		switch name {
		case "cairn":
			bin, err := loopback.Binary(o.cairn)
			if err != nil {
				return nil, err
			}
			out = append(out, cairnSystem(bin, o.profile != ""))
		case "consul":
			bin := o.consul
			if bin == "" {
				// Builds it the first time (a few minutes), then prints the
				// cached binary's path.
				b, err := exec.Command("bash", "e2e/consulcli/build-consul.sh").Output()
				if err != nil {
					return nil, fmt.Errorf("e2e/consulcli/build-consul.sh (run from the repository's root, or pass -consul): %w", err)
				}
				bin = strings.TrimSpace(string(b))
			}
			if _, err := os.Stat(bin); err != nil {
				return nil, fmt.Errorf("consul binary: %w", err)
			}
			out = append(out, consulSystem(bin))
		case "etcd":
			bin, err := exec.LookPath(o.etcd)
			if err != nil {
				return nil, fmt.Errorf("etcd binary (apt-get install etcd-server, with a policy-rc.d that keeps its service from starting): %w", err)
			}
			out = append(out, etcdSystem(bin))
		}
	}
	return out, nil
}

// turn is one system's part of round r: its servers started afresh, every
// kind of write at every writer count, its servers stopped.
func turn(ctx context.Context, hc *http.Client, o options, s *system, work string, r int, results map[key]map[string][]result) error {
	var ips []string
	for i := range 3 {
		ips = append(ips, fmt.Sprintf("%s.%d", o.net, firstOctet[s.name]+i))
	}
	begin := time.Now()
	c, err := start(ctx, s, work, ips, hc, o.timeout)
	if err != nil {
		if c != nil {
			c.stop(true)
		}
		return err
	}
	fmt.Printf("round %d: %s servers on %s ready after %s (%s)\n", r+1, s.name, strings.Join(ips, ", "),
		time.Since(begin).Round(time.Millisecond), loopback.LoadAverage())
	seq := 0
	for _, op := range o.ops {
		if s.write[op] == nil {
			continue
		}
		for _, w := range o.writers {
			if o.warmup > 0 {
				load(ctx, hc, c, op, w, o.warmup, &seq)
			}
			stopProfiles := profile(ctx, hc, o, s, c, fmt.Sprintf("r%d-%s-%d", r+1, op, w))
			res := load(ctx, hc, c, op, w, o.duration, &seq)
			stopProfiles()
			if err := c.alive(); err != nil {
				c.stop(true)
				return err
			}
			if ctx.Err() != nil {
				c.stop(true)
				return ctx.Err()
			}
			k := key{op, w}
			if results[k] == nil {
				results[k] = map[string][]result{}
			}
			results[k][s.name] = append(results[k][s.name], res)
			fmt.Printf("  %-8s %3d %-7s %8.0f writes/s  p50 %7.2f ms  p99 %7.2f ms  %6.0f µs CPU/write  %d errors%s\n",
				op, w, plural(w, "writer")+":", res.perSec(), res.p50, res.p99, res.cpuPer, res.errors, firstErr(res))
		}
	}
	c.stop(o.keep)
	return nil
}

func firstErr(r result) string {
	if r.firstErr == "" {
		return ""
	}
	return " (the first: " + r.firstErr + ")"
}
