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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// row is one line of the summary table.
type row struct {
	what    string
	samples []time.Duration // sorted
	rate    string          // registrations only
}

func run(ctx context.Context, cfg config) (err error) {
	bin, err := filepath.Abs(cfg.cairn)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("cairn binary: %w", err)
	}
	work, err := os.MkdirTemp("", "cairn-bench-cluster-")
	if err != nil {
		return err
	}
	c := newCluster(bin, work, cfg)
	defer func() {
		c.stopAll()
		switch {
		case err != nil:
			c.printLogs(os.Stderr)
			fmt.Fprintf(os.Stderr, "data and logs kept in %s\n", work)
		case cfg.keep:
			fmt.Printf("data and logs kept in %s\n", work)
		default:
			os.RemoveAll(work)
		}
	}()

	fmt.Printf("starting 3 servers and 2 clients on %s.31–35 (work dir %s)\n", cfg.net, work)
	for _, a := range c.agents {
		if err := c.start(a); err != nil {
			return err
		}
	}
	if err := c.settle(ctx, "cluster start"); err != nil {
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

// agent is one cairn process. done is closed by the goroutine that waits
// for the process; exitErr is set before.
type agent struct {
	name, ip string
	server   bool
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
	wantUp   bool // false once we kill or stop it: its exit is then expected
}

type cluster struct {
	bin, work string
	agents    []*agent
	http      *http.Client
	timeout   time.Duration
	waiters   sync.WaitGroup // the goroutines waiting for each process
	// seq numbers the bench services across both phases, so every
	// registration creates a service rather than updating one.
	seq atomic.Int64
}

func newCluster(bin, work string, cfg config) *cluster {
	c := &cluster{bin: bin, work: work, timeout: cfg.timeout}
	for i, name := range []string{"s1", "s2", "s3", "c1", "c2"} {
		c.agents = append(c.agents, &agent{name: name, ip: fmt.Sprintf("%s.%d", cfg.net, 31+i), server: name[0] == 's'})
	}
	// One client for everything, with enough idle keep-alive connections
	// for the concurrent phase, so the figures hold no TCP handshakes.
	c.http = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns: 64, MaxIdleConnsPerHost: max(cfg.workers, 2), IdleConnTimeout: time.Minute,
		},
	}
	return c
}

// start runs a (again, after a kill: same flags and data dir, log appended).
func (c *cluster) start(a *agent) error {
	// Every agent is told of every server, as a real deployment's
	// retry_join would be.
	args := []string{"agent", "-node", a.name, "-bind", a.ip, "-client", a.ip,
		"-data-dir", filepath.Join(c.work, a.name), "-retry-interval", "1s"}
	for _, s := range c.agents {
		if s.server {
			args = append(args, "-retry-join", s.ip)
		}
	}
	if a.server {
		args = append(args, "-server", "-bootstrap-expect", "3")
	}
	log, err := os.OpenFile(c.logPath(a), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", a.name, err)
	}
	a.cmd, a.done, a.wantUp = cmd, make(chan struct{}), true
	done := a.done
	c.waiters.Go(func() {
		a.exitErr = cmd.Wait()
		log.Close()
		close(done)
	})
	return nil
}

// kill sends SIGKILL to a and waits until it is gone, so its ports are free.
func (c *cluster) kill(a *agent) error {
	a.wantUp = false
	if err := a.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", a.name, err)
	}
	<-a.done
	return nil
}

// stopAll sends SIGTERM to every running agent, waits up to 15s, then
// kills what is left.
func (c *cluster) stopAll() {
	for _, a := range c.agents {
		if a.cmd != nil {
			a.wantUp = false
			_ = a.cmd.Process.Signal(syscall.SIGTERM) // fails only when already gone
		}
	}
	deadline := time.After(15 * time.Second)
	for _, a := range c.agents {
		if a.cmd == nil {
			continue
		}
		select {
		case <-a.done:
		case <-deadline:
			fmt.Fprintf(os.Stderr, "%s did not stop within 15s of SIGTERM; killing it\n", a.name)
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	}
	c.waiters.Wait()
}

// alive fails when an agent we did not stop has exited (a crash, or a
// port already taken), so waits end at once instead of at their deadline.
func (c *cluster) alive() error {
	for _, a := range c.agents {
		if !a.wantUp {
			continue
		}
		select {
		case <-a.done:
			return fmt.Errorf("agent %s exited unexpectedly: %v (log %s)", a.name, a.exitErr, c.logPath(a))
		default:
		}
	}
	return nil
}

func (c *cluster) logPath(a *agent) string { return filepath.Join(c.work, a.name+".log") }

func (c *cluster) printLogs(w io.Writer) {
	for _, a := range c.agents {
		b, err := os.ReadFile(c.logPath(a))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		fmt.Fprintf(w, "--- last lines of %s\n", c.logPath(a))
		for _, l := range lines[max(0, len(lines)-25):] {
			fmt.Fprintln(w, "  ", l)
		}
	}
}

// poll calls cond every interval until it returns true, an agent we did
// not stop exits, ctx ends or c.timeout passes. It measures, so it neither
// sleeps first nor backs off. Errors from cond only explain a timeout:
// while a cluster forms or elects, requests do fail.
func (c *cluster) poll(ctx context.Context, every time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last error
	for {
		if err := c.alive(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := cond(callCtx)
		callCancel()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// call sends method http://IP:8500/path to a's HTTP API with body (none
// when empty) and decodes a 200 response into out (when not nil).
func (c *cluster) call(ctx context.Context, a *agent, method, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+a.ip+":8500"+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	fail := func(err error) error { return fmt.Errorf("%s %s on %s: %w", method, path, a.name, err) }
	resp, err := c.http.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil:
		return fail(err)
	case resp.StatusCode != http.StatusOK:
		return fail(fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b)))
	case out != nil && json.Unmarshal(b, out) != nil:
		return fail(fmt.Errorf("undecodable response %q", b))
	}
	return nil
}

// leader returns what a's /v1/status/leader names ("ip:8300", "" for none).
func (c *cluster) leader(ctx context.Context, a *agent) (string, error) {
	var addr string
	err := c.call(ctx, a, http.MethodGet, "/v1/status/leader", "", &addr)
	return addr, err
}

// converged reports whether every running server names the same leader
// and has three Raft peers.
func (c *cluster) converged(ctx context.Context) (bool, error) {
	want := ""
	for _, a := range c.agents[:3] {
		l, err := c.leader(ctx, a)
		if err != nil || l == "" || (want != "" && l != want) {
			return false, err
		}
		want = l
		var peers []string
		if err := c.call(ctx, a, http.MethodGet, "/v1/status/peers", "", &peers); err != nil || len(peers) != 3 {
			return false, err
		}
	}
	return true, nil
}

// settled is converged, plus every running agent seeing every running
// agent alive in gossip. Measuring before that would measure a cluster
// still healing (a restarted agent rejoining gossip).
func (c *cluster) settled(ctx context.Context) (bool, error) {
	if ok, err := c.converged(ctx); !ok {
		return false, err
	}
	var up []*agent
	for _, a := range c.agents {
		if a.wantUp {
			up = append(up, a)
		}
	}
	for _, a := range up {
		var members []struct{ Status int }
		if err := c.call(ctx, a, http.MethodGet, "/v1/agent/members", "", &members); err != nil {
			return false, err
		}
		alive := 0
		for _, m := range members {
			if m.Status == 1 { // serf's StatusAlive, sent as Consul does
				alive++
			}
		}
		if alive < len(up) {
			return false, nil
		}
	}
	return true, nil
}

// settle waits until the cluster has settled and says how long it took.
func (c *cluster) settle(ctx context.Context, why string) error {
	begin := time.Now()
	if err := c.poll(ctx, 100*time.Millisecond, why+": one leader on all servers, 3 Raft peers, all agents alive in gossip", c.settled); err != nil {
		return err
	}
	fmt.Printf("  %s: settled after %s\n", why, time.Since(begin).Round(time.Millisecond))
	return nil
}

// measureFailovers kills the leader rounds times and times how long a
// surviving server takes to name another one. Between rounds the killed
// server is restarted and the cluster allowed to settle, so each round
// starts from three healthy voters.
func measureFailovers(ctx context.Context, c *cluster, rounds int) ([]time.Duration, error) {
	var samples []time.Duration
	for round := 1; round <= rounds; round++ {
		addr, err := c.leader(ctx, c.agents[0])
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(c.agents[:3], func(a *agent) bool { return addr == a.ip+":8300" })
		if i < 0 {
			return nil, fmt.Errorf("round %d: leader %q is none of the servers", round, addr)
		}
		old := c.agents[i]
		watcher := c.agents[0] // the first surviving server
		if watcher == old {
			watcher = c.agents[1]
		}
		var took time.Duration
		begin := time.Now()
		if err := c.kill(old); err != nil {
			return nil, err
		}
		err = c.poll(ctx, 10*time.Millisecond, watcher.name+" naming a new leader", func(ctx context.Context) (bool, error) {
			l, err := c.leader(ctx, watcher)
			took = time.Since(begin)
			return err == nil && l != "" && l != addr, err
		})
		if err != nil {
			return nil, fmt.Errorf("round %d, after killing %s: %w", round, old.name, err)
		}
		samples = append(samples, took)
		fmt.Printf("failover %d: killed leader %s; %s named a new leader after %s\n", round, old.name, watcher.name, took.Round(time.Millisecond))

		if err := c.start(old); err != nil {
			return nil, err
		}
		if err := c.settle(ctx, old.name+" restarted"); err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
	}
	return samples, nil
}

const deadName = "deadsvc.service.dc1.cluster."

// srvCount asks a's DNS for deadsvc's SRV records. ok is false when there
// was no usable answer (timeout, SERVFAIL): that proves nothing either way.
func srvCount(ctx context.Context, a *agent) (n int, ok bool) {
	m := new(dns.Msg)
	m.SetQuestion(deadName, dns.TypeSRV)
	r, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).ExchangeContext(ctx, m, net.JoinHostPort(a.ip, "8600"))
	if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError) {
		return 0, false
	}
	for _, rr := range r.Answer {
		if _, isSRV := rr.(*dns.SRV); isSRV {
			n++
		}
	}
	return n, true
}

// measureDeaths registers deadsvc on c1, kills c1 once c2 answers for it,
// and times how long c2 keeps answering. Between rounds c1 is restarted.
func measureDeaths(ctx context.Context, c *cluster, rounds int) ([]time.Duration, error) {
	c1, c2 := c.agents[3], c.agents[4]
	var samples []time.Duration
	for round := 1; round <= rounds; round++ {
		if round > 1 {
			if err := c.start(c1); err != nil {
				return nil, err
			}
			if err := c.settle(ctx, "c1 restarted"); err != nil {
				return nil, fmt.Errorf("round %d: %w", round, err)
			}
		}
		// Registering again after a restart is harmless (the same ID) and
		// does not rely on c1 reloading its persisted services.
		err := c.poll(ctx, 100*time.Millisecond, "deadsvc registered on c1", func(ctx context.Context) (bool, error) {
			err := c.register(ctx, c1, `{"Name":"deadsvc","Port":9999}`)
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
		// c2's DNS reads from any server, and a follower may not have
		// applied a write yet, so one answer proves little: both before
		// and after the kill, wait for a steady streak of answers.
		err = c.poll(ctx, 20*time.Millisecond, "deadsvc answered steadily by c2's DNS", steady(func(ctx context.Context) bool {
			n, _ := srvCount(ctx, c2)
			return n > 0
		}, nil))
		if err != nil {
			return nil, err
		}
		begin := time.Now()
		if err := c.kill(c1); err != nil {
			return nil, err
		}
		var goneAt time.Time
		err = c.poll(ctx, 20*time.Millisecond, "c2's DNS to drop deadsvc for good", steady(func(ctx context.Context) bool {
			n, ok := srvCount(ctx, c2)
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

// steadyStreak is how many answers in a row (at 20ms, half a second) make
// an answer steady.
const steadyStreak = 25

// steady turns a check into a poll condition that holds once the check
// passed steadyStreak times in a row. When since is not nil, it gets the
// time the streak's first check returned.
func steady(check func(context.Context) bool, since *time.Time) func(context.Context) (bool, error) {
	streak := 0
	return func(ctx context.Context) (bool, error) {
		if !check(ctx) {
			streak = 0
			return false, nil
		}
		if streak == 0 && since != nil {
			*since = time.Now()
		}
		streak++
		return streak >= steadyStreak, nil
	}
}

// register PUTs one service registration to a's agent API.
func (c *cluster) register(ctx context.Context, a *agent, body string) error {
	return c.call(ctx, a, http.MethodPut, "/v1/agent/service/register", body, nil)
}

// measureRegistrations registers distinct services on c2 from workers
// goroutines until cfg.duration passes (or cfg.n are done) and returns
// each one's latency and the wall time of the phase. The first error
// stops the phase.
func measureRegistrations(ctx context.Context, c *cluster, cfg config, workers int) ([]time.Duration, time.Duration, error) {
	c2 := c.agents[4]
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
				i := c.seq.Add(1)
				body := fmt.Sprintf(`{"Name":"bench","ID":"bench-%d","Port":%d}`, i, 1000+i%50000)
				t := time.Now()
				if err := c.register(ctx, c2, body); err != nil {
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
		what, method, len(samples), ms(samples, 0), ms(samples, 0.5), ms(samples, 0.9), ms(samples, 0.99), ms(samples, 1), rate)
	return row{what, samples, rate}
}

// ms returns the q-quantile of sorted samples in milliseconds, by nearest
// rank: the smallest sample with at least q of them at or below it.
func ms(sorted []time.Duration, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)]) / float64(time.Millisecond)
}

func printSummary(w io.Writer, rows []row) {
	fmt.Fprintf(w, "%-24s %6s %9s %9s %9s %9s %9s  %s\n", "summary (ms)", "n", "min", "median", "p90", "p99", "max", "rate")
	for _, r := range rows {
		s := r.samples
		fmt.Fprintf(w, "%-24s %6d %9.1f %9.1f %9.1f %9.1f %9.1f  %s\n",
			r.what, len(s), ms(s, 0), ms(s, 0.5), ms(s, 0.9), ms(s, 0.99), ms(s, 1), r.rate)
	}
}
