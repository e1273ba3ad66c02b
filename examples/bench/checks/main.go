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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checks:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) (err error) {
	bin, err := filepath.Abs(cfg.cairn)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("cairn binary: %w", err)
	}
	work, err := os.MkdirTemp("", "cairn-bench-checks-")
	if err != nil {
		return err
	}
	tgt := &target{addr: "127.0.0.1:0", hits: map[string]int{}}
	if err := tgt.start(); err != nil {
		return err
	}
	c := newCluster(bin, work, cfg)
	defer func() {
		c.stopAll()
		tgt.stop()
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

	fmt.Printf("starting 3 servers and 2 clients on %s.41–45; HTTP target on %s (work dir %s)\n", cfg.net, tgt.addr, work)
	for _, a := range c.agents {
		if err := c.start(a); err != nil {
			return err
		}
	}
	begin := time.Now()
	if err := c.poll(ctx, 100*time.Millisecond, "a leader named by every agent, 5 members alive on every agent", c.settled); err != nil {
		return err
	}
	fmt.Printf("  cluster settled after %s\n", time.Since(begin).Round(time.Millisecond))

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

// agent is one cairn process. done is closed by the goroutine that waits
// for the process; exitErr is set before.
type agent struct {
	name, ip string
	server   bool
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
}

type cluster struct {
	bin, work string
	agents    []*agent // s1, s2, s3, c1, c2
	http      *http.Client
	timeout   time.Duration
	waiters   sync.WaitGroup // the goroutines waiting for each process
}

func newCluster(bin, work string, cfg config) *cluster {
	c := &cluster{bin: bin, work: work, timeout: cfg.timeout}
	for i, name := range []string{"s1", "s2", "s3", "c1", "c2"} {
		c.agents = append(c.agents, &agent{name: name, ip: fmt.Sprintf("%s.%d", cfg.net, 41+i), server: name[0] == 's'})
	}
	c.http = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: workers, IdleConnTimeout: time.Minute},
	}
	return c
}

// start runs a; every agent is told of every server, as a real
// deployment's retry_join would be.
func (c *cluster) start(a *agent) error {
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
	a.cmd, a.done = cmd, make(chan struct{})
	done := a.done
	c.waiters.Go(func() {
		a.exitErr = cmd.Wait()
		log.Close()
		close(done)
	})
	return nil
}

// stopAll sends SIGTERM to every agent, waits up to 15s, then kills what
// is left.
func (c *cluster) stopAll() {
	for _, a := range c.agents {
		if a.cmd != nil {
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

// alive fails when an agent has exited (a crash, or a port already taken),
// so waits end at once instead of at their deadline.
func (c *cluster) alive() error {
	for _, a := range c.agents {
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

// poll calls cond every interval until it returns true, an agent exits,
// ctx ends or c.timeout passes. It measures, so it neither sleeps first
// nor backs off. Errors from cond only explain a timeout.
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
		callCtx, callCancel := context.WithTimeout(ctx, 5*time.Second)
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
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
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

// settled reports whether every agent names a leader and sees all five
// agents alive in gossip.
func (c *cluster) settled(ctx context.Context) (bool, error) {
	for _, a := range c.agents {
		var leader string
		if err := c.call(ctx, a, http.MethodGet, "/v1/status/leader", "", &leader); err != nil || leader == "" {
			return false, err
		}
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
		if alive < len(c.agents) {
			return false, nil
		}
	}
	return true, nil
}

const webName = "web.service.dc1.cluster."

// srvCount asks a's DNS for web's SRV records. ok is false when there was
// no usable answer (timeout, SERVFAIL): that proves nothing either way.
func srvCount(ctx context.Context, a *agent) (n int, ok bool) {
	m := new(dns.Msg)
	m.SetQuestion(webName, dns.TypeSRV)
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

// steadyStreak is how many answers in a row (at 20ms, half a second) make
// an answer steady: c2 reads from one server, which may lag the leader.
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

// flips times one change of the target (stop or start) until c2's DNS
// reflects it steadily: from the change, and from the probe that saw it.
type flips struct{ total, afterProbe []time.Duration }

// measureFlips registers web on c1 with an HTTP check on the target, then
// stops and starts the target cfg.rounds times. Each change waits a random
// part of the interval first: otherwise every change would come the same
// time after a probe (each round ends a fixed streak after the previous
// probe's effect) and the samples would all be one phase of the interval.
func measureFlips(ctx context.Context, c *cluster, t *target, cfg config) (down, up flips, err error) {
	c1, c2 := c.agents[3], c.agents[4]
	body := fmt.Sprintf(`{"Name":"web","Port":8080,"Check":{"HTTP":"http://%s/web","Interval":"%s","Timeout":"500ms"}}`, t.addr, cfg.interval)
	if err := c.call(ctx, c1, http.MethodPut, "/v1/agent/service/register", body, nil); err != nil {
		return down, up, err
	}
	want := func(records int) func(context.Context) bool {
		return func(ctx context.Context) bool {
			n, ok := srvCount(ctx, c2)
			return ok && n == records
		}
	}
	if err := c.poll(ctx, 20*time.Millisecond, "web answered steadily by c2's DNS", steady(want(1), nil)); err != nil {
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
		if err := c.poll(ctx, 20*time.Millisecond, "c2's DNS to drop web", steady(want(0), &at)); err != nil {
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
		if err := c.poll(ctx, 20*time.Millisecond, "c2's DNS to answer web again", steady(want(1), &at)); err != nil {
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
	return down, up, c.call(ctx, c1, http.MethodPut, "/v1/agent/service/deregister/web", "", nil)
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
func measureCost(ctx context.Context, c *cluster, t *target, cfg config) ([]usageRow, error) {
	c1 := c.agents[3]
	var addr string
	if err := c.call(ctx, c.agents[0], http.MethodGet, "/v1/status/leader", "", &addr); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(c.agents[:3], func(a *agent) bool { return addr == a.ip+":8300" })
	if i < 0 {
		return nil, fmt.Errorf("leader %q is none of the servers", addr)
	}
	procs := []*agent{c1, c.agents[i]}
	var rows []usageRow
	if cfg.baseline > 0 {
		fmt.Printf("\nmeasuring c1 and the leader %s idle for %s\n", procs[1].name, cfg.baseline)
		r, err := c.usage(ctx, t, procs, "idle", cfg.baseline)
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
				if err := c.call(regCtx, c1, http.MethodPut, "/v1/agent/service/register", body, nil); err != nil {
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
	err := c.poll(ctx, 500*time.Millisecond, "every bench check passing in the catalog", func(ctx context.Context) (bool, error) {
		var checks []struct{ ServiceName string }
		if err := c.call(ctx, procs[1], http.MethodGet, "/v1/health/state/passing", "", &checks); err != nil {
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

	fmt.Printf("measuring c1 and the leader %s for %s\n", procs[1].name, cfg.window)
	r, err := c.usage(ctx, t, procs, fmt.Sprintf("%d checks", cfg.services), cfg.window)
	if err != nil {
		return nil, err
	}
	return append(rows, r...), nil
}

// usage measures procs over window from /proc: CPU time (utime+stime) at
// both ends, VmRSS every second; and the requests the target answered.
func (c *cluster) usage(ctx context.Context, t *target, procs []*agent, phase string, window time.Duration) ([]usageRow, error) {
	cpu0, cpu1 := make([]time.Duration, len(procs)), make([]time.Duration, len(procs))
	rows := make([]usageRow, len(procs))
	hits0, begin := t.snapshot(), time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		for i, a := range procs {
			cpu, rss, err := sample(a.cmd.Process.Pid)
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
		if err := c.alive(); err != nil {
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
		r.who, r.phase, r.requests, r.checks = a.name, phase, requests, checks
		cpu := cpu1[i] - cpu0[i]
		r.cpuPct = 100 * cpu.Seconds() / wall.Seconds()
		fmt.Printf("  %-3s %-12s CPU %6.2f%% of one core (%s in %s)  RSS mean %.1f MiB, max %.1f MiB\n",
			r.who, r.phase, r.cpuPct, cpu, wall.Round(time.Millisecond), mib(r.rssMean), mib(r.rssMax))
	}
	fmt.Printf("  target: %d requests from %d distinct checks in %s\n", requests, checks, wall.Round(time.Millisecond))
	return rows, nil
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// clockTicks is sysconf(_SC_CLK_TCK), the unit of /proc/PID/stat's
// times, as getconf tells it; 100 (Linux on every common architecture)
// when getconf fails.
var clockTicks = func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && perr == nil && n > 0 {
		return n
	}
	fmt.Fprintln(os.Stderr, "checks: getconf CLK_TCK failed; assuming 100 ticks a second")
	return 100
}()

// sample reads pid's CPU time (utime+stime, fields 14 and 15 of
// /proc/PID/stat) and VmRSS in kB (from /proc/PID/status).
func sample(pid int) (cpu time.Duration, rss int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is parenthesised and may hold spaces:
	// count from its closing parenthesis, where field 3 starts.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	cpu = time.Duration(utime+stime) * time.Second / time.Duration(clockTicks)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return cpu, rss, err
		}
	}
	return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// row is one latency line of the summary table.
type row struct {
	what    string
	samples []time.Duration
}

// ms returns the q-quantile of sorted samples in milliseconds, by nearest
// rank: the smallest sample with at least q of them at or below it.
func ms(sorted []time.Duration, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)]) / float64(time.Millisecond)
}

func printSummary(w io.Writer, cfg config, rows []row, usages []usageRow) {
	fmt.Fprintln(w)
	if len(rows) > 0 {
		fmt.Fprintf(w, "%-24s %4s %9s %9s %9s %9s\n", "summary (ms)", "n", "min", "median", "p90", "max")
		for _, r := range rows {
			s := r.samples
			slices.Sort(s)
			fmt.Fprintf(w, "%-24s %4d %9.1f %9.1f %9.1f %9.1f\n", r.what, len(s), ms(s, 0), ms(s, 0.5), ms(s, 0.9), ms(s, 1))
		}
		fmt.Fprintf(w, "gone/back: c1 probes web every %s (timeout 500ms); after a random wait the target is stopped (started), then c2's DNS is asked for web SRV every 20ms until it holds none (one) %d times in a row; the time is that streak's first answer\n",
			cfg.interval, steadyStreak)
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
			clockTicks, cfg.services)
	}
}
