// Package loopback runs a cairn cluster as separate processes on loopback
// addresses, for the measuring programs under examples/bench: one process
// per agent, each on its own address with the default ports (HTTP 8500,
// DNS 8600, server RPC 8300, gossip 8301), so every figure includes real
// sockets, gossip, Raft and fsyncs.
//
// A Cluster starts its agents, waits for conditions by polling (never by
// sleeping), reads a process's CPU time and RSS from /proc, and stops
// every agent with SIGTERM (SIGKILL after 15s) in Finish, which also
// removes the work directory, or keeps it and prints the logs' tails when
// the measurement failed. It is used from one goroutine, except Call,
// Register and Poll, which may be called concurrently.
package loopback

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Agent is one cairn process. done is closed by the goroutine that waits
// for the process; exitErr is set before.
type Agent struct {
	Name, IP string
	Server   bool
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
	wantUp   bool // false once we stop it: its exit is then expected
}

// PID is the agent's process ID (0 before Start).
func (a *Agent) PID() int {
	if a.cmd == nil || a.cmd.Process == nil {
		return 0
	}
	return a.cmd.Process.Pid
}

// DNSAddr is the agent's DNS address (UDP and TCP).
func (a *Agent) DNSAddr() string { return a.IP + ":8600" }

// RPCAddr is a server's RPC address.
func (a *Agent) RPCAddr() string { return a.IP + ":8300" }

// Cluster is a set of agents: servers s1…sN, then clients c1…cM.
type Cluster struct {
	Agents []*Agent
	// Datacenter, when set, is every agent's -datacenter; JoinWAN, when
	// set, is the WAN address its servers join (-retry-join-wan), so that
	// two Clusters make two datacenters. Set both before StartAll.
	Datacenter, JoinWAN string
	// Args, when set, are appended to every agent's command line (a
	// -config-file, say). Set before StartAll.
	Args    []string
	bin     string
	work    string
	timeout time.Duration
	http    *http.Client
	waiters sync.WaitGroup // the goroutines waiting for each process
}

// New returns a cluster of servers and clients, not started, whose agents
// use the addresses net.first, net.first+1, …; bin is the cairn binary,
// work a directory for data and logs; timeout bounds every Poll.
func New(bin, work, net string, first, servers, clients int, timeout time.Duration) *Cluster {
	c := &Cluster{bin: bin, work: work, timeout: timeout, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute},
	}}
	for i := range servers + clients {
		name := fmt.Sprintf("s%d", i+1)
		if i >= servers {
			name = fmt.Sprintf("c%d", i-servers+1)
		}
		c.Agents = append(c.Agents, &Agent{Name: name, IP: fmt.Sprintf("%s.%d", net, first+i), Server: i < servers})
	}
	return c
}

// Agent returns the agent called name, or nil.
func (c *Cluster) Agent(name string) *Agent {
	for _, a := range c.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func (c *Cluster) servers() []*Agent {
	var s []*Agent
	for _, a := range c.Agents {
		if a.Server {
			s = append(s, a)
		}
	}
	return s
}

// StartAll starts every agent. Every agent is told of every server, as a
// real deployment's retry_join would be; the servers bootstrap once all
// of them have met.
func (c *Cluster) StartAll() error {
	for _, a := range c.Agents {
		if err := c.Start(a); err != nil {
			return err
		}
	}
	return nil
}

// Start starts a, as StartAll does; again after Kill, with the same flags
// and data directory, its log appended to.
func (c *Cluster) Start(a *Agent) error {
	args := []string{"agent", "-node", a.Name, "-bind", a.IP, "-client", a.IP,
		"-data-dir", filepath.Join(c.work, a.Name), "-retry-interval", "1s"}
	for _, s := range c.servers() {
		args = append(args, "-retry-join", s.IP)
	}
	if a.Server {
		args = append(args, "-server", "-bootstrap-expect", strconv.Itoa(len(c.servers())))
		if c.JoinWAN != "" {
			args = append(args, "-retry-join-wan", c.JoinWAN)
		}
	}
	if c.Datacenter != "" {
		args = append(args, "-datacenter", c.Datacenter)
	}
	return c.start(a, append(args, c.Args...))
}

// Kill sends SIGKILL to a and waits until it is gone, so its ports are
// free; its exit is expected from then on.
func (c *Cluster) Kill(a *Agent) error {
	a.wantUp = false
	if err := a.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", a.Name, err)
	}
	<-a.done
	return nil
}

// IdleConnsPerHost sets how many idle keep-alive connections the HTTP
// client keeps to each agent (16 unless set), so that many concurrent
// callers hold no TCP handshakes. Call it before any request.
func (c *Cluster) IdleConnsPerHost(n int) {
	c.http.Transport.(*http.Transport).MaxIdleConnsPerHost = n
}

func (c *Cluster) start(a *Agent, args []string) error {
	log, err := os.OpenFile(c.logPath(a), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", a.Name, err)
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

// Finish stops every agent; then it removes the work directory, unless
// err is not nil (the logs' tails are printed and the directory kept) or
// keep is set.
func (c *Cluster) Finish(err error, keep bool) {
	c.stopAll()
	switch {
	case err != nil:
		c.printLogs(os.Stderr)
		fmt.Fprintf(os.Stderr, "data and logs kept in %s\n", c.work)
	case keep:
		fmt.Printf("data and logs kept in %s\n", c.work)
	default:
		os.RemoveAll(c.work)
	}
}

// stopAll sends SIGTERM to every running agent, waits up to 15s, then
// kills what is left.
func (c *Cluster) stopAll() {
	for _, a := range c.Agents {
		if a.cmd != nil {
			a.wantUp = false
			_ = a.cmd.Process.Signal(syscall.SIGTERM) // fails only when already gone
		}
	}
	deadline := time.After(15 * time.Second)
	for _, a := range c.Agents {
		if a.cmd == nil {
			continue
		}
		select {
		case <-a.done:
		case <-deadline:
			fmt.Fprintf(os.Stderr, "%s did not stop within 15s of SIGTERM; killing it\n", a.Name)
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	}
	c.waiters.Wait()
}

// Alive fails when an agent we did not stop has exited (a crash, or a
// port already taken), so waits end at once instead of at their deadline.
func (c *Cluster) Alive() error {
	for _, a := range c.Agents {
		if !a.wantUp {
			continue
		}
		select {
		case <-a.done:
			return fmt.Errorf("agent %s exited unexpectedly: %v (log %s)", a.Name, a.exitErr, c.logPath(a))
		default:
		}
	}
	return nil
}

func (c *Cluster) logPath(a *Agent) string { return filepath.Join(c.work, a.Name+".log") }

// CountLog returns how many lines of a's log contain s.
func (c *Cluster) CountLog(a *Agent, s string) int {
	b, err := os.ReadFile(c.logPath(a))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(s))
}

func (c *Cluster) printLogs(w io.Writer) {
	for _, a := range c.Agents {
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

// Poll calls cond every interval until it returns true, an agent we did
// not stop exits, ctx ends or the cluster's timeout passes. It neither
// sleeps first nor backs off. Errors from cond only explain a timeout.
func (c *Cluster) Poll(ctx context.Context, every time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last error
	for {
		if err := c.Alive(); err != nil {
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

// Call sends method http://IP:8500/path to a's HTTP API with body (none
// when empty) and decodes a 200 response into out (when not nil).
func (c *Cluster) Call(ctx context.Context, a *Agent, method, path, body string, out any) error {
	b, status, err := c.Get(ctx, a, method, path, body)
	switch {
	case err != nil:
		return err
	case status != http.StatusOK:
		return fmt.Errorf("%s %s on %s: status %d: %s", method, path, a.Name, status, bytes.TrimSpace(b))
	case out != nil && json.Unmarshal(b, out) != nil:
		return fmt.Errorf("%s %s on %s: undecodable response %q", method, path, a.Name, b)
	}
	return nil
}

// Get sends method http://IP:8500/path to a's HTTP API and returns the
// body (up to 16 MiB) and status, whatever the status.
func (c *Cluster) Get(ctx context.Context, a *Agent, method, path, body string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+a.IP+":8500"+path, strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s on %s: %w", method, path, a.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s on %s: %w", method, path, a.Name, err)
	}
	return b, resp.StatusCode, nil
}

// Register PUTs one service registration to a's agent API.
func (c *Cluster) Register(ctx context.Context, a *Agent, body string) error {
	return c.Call(ctx, a, http.MethodPut, "/v1/agent/service/register", body, nil)
}

// Settle waits until every server names the same leader and has every
// server as a Raft peer, and every agent sees every agent alive in
// gossip; it says how long that took.
func (c *Cluster) Settle(ctx context.Context) error {
	begin := time.Now()
	err := c.Poll(ctx, 100*time.Millisecond, "one leader and all peers on every server, all agents alive in gossip", c.Settled)
	if err != nil {
		return err
	}
	fmt.Printf("  cluster settled after %s\n", time.Since(begin).Round(time.Millisecond))
	return nil
}

// Settled is Settle's condition, for callers that poll it themselves: every
// agent names the same leader, every server has every server as a Raft
// peer, and every agent sees every agent alive in gossip.
func (c *Cluster) Settled(ctx context.Context) (bool, error) {
	want := ""
	for _, a := range c.Agents {
		var leader string
		if err := c.Call(ctx, a, http.MethodGet, "/v1/status/leader", "", &leader); err != nil || leader == "" || (want != "" && leader != want) {
			return false, err
		}
		want = leader
		if a.Server {
			var peers []string
			if err := c.Call(ctx, a, http.MethodGet, "/v1/status/peers", "", &peers); err != nil || len(peers) != len(c.servers()) {
				return false, err
			}
		}
		var members []struct{ Status int }
		if err := c.Call(ctx, a, http.MethodGet, "/v1/agent/members", "", &members); err != nil {
			return false, err
		}
		alive := 0
		for _, m := range members {
			if m.Status == 1 { // serf's StatusAlive, sent as Consul does
				alive++
			}
		}
		if alive < len(c.Agents) {
			return false, nil
		}
	}
	return true, nil
}

// clockTicks is sysconf(_SC_CLK_TCK), the unit of /proc/PID/stat's
// times, as getconf tells it; 100 (Linux on every common architecture)
// when getconf fails.
var clockTicks = sync.OnceValue(func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && perr == nil && n > 0 {
		return n
	}
	fmt.Fprintln(os.Stderr, "getconf CLK_TCK failed; assuming 100 ticks a second")
	return 100
})

// ClockTicks is the unit of /proc/PID/stat's times, in ticks a second.
func ClockTicks() int64 { return clockTicks() }

// Sample reads pid's CPU time (utime+stime, fields 14 and 15 of
// /proc/PID/stat), VmRSS in KiB and thread count (from /proc/PID/status).
func Sample(pid int) (cpu time.Duration, rssKiB, threads int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name (field 2) is parenthesised and may hold spaces:
	// count from its closing parenthesis, where field 3 starts.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, stat)
	}
	cpu = time.Duration(utime+stime) * time.Second / time.Duration(clockTicks())
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, err1 = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, err2 = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err1 != nil || err2 != nil || rssKiB == 0 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS or Threads", pid)
	}
	return cpu, rssKiB, threads, nil
}

// Ms returns the q-quantile of sorted samples in milliseconds, by nearest
// rank: the smallest sample with at least q of them at or below it.
func Ms(sorted []time.Duration, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)]) / float64(time.Millisecond)
}

// Main runs a bench program's run with a context that Ctrl-C and SIGTERM
// cancel (so its agents are stopped), and exits 1 with the program's name
// and the error when run fails.
func Main(name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Prepare checks the cairn binary at path (Binary) and makes the bench's
// work directory, a new temporary one named after it.
func Prepare(path, bench string) (bin, work string, err error) {
	if bin, err = Binary(path); err != nil {
		return "", "", err
	}
	if work, err = os.MkdirTemp("", "cairn-bench-"+bench+"-"); err != nil {
		return "", "", err
	}
	return bin, work, nil
}

// Binary checks that path is a file and returns its absolute path.
func Binary(path string) (string, error) {
	bin, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("cairn binary: %w", err)
	}
	return bin, nil
}

// RPCPeers returns the names of the servers a's process has an
// established TCP connection to on the RPC port (8300): the servers its RPC
// calls (and so its cache's blocking queries) go to. It matches the socket
// inodes of /proc/PID/fd against /proc/net/tcp.
func (c *Cluster) RPCPeers(a *Agent) []string {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", a.PID()))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", a.PID(), fd.Name()))
		if inode, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil
	}
	// Addresses are hex IPv4 in the kernel's byte order (little-endian on
	// every machine this runs on) and a hex port: 127.0.0.51:8300 is
	// 3300007F:206C. State 01 is ESTABLISHED; field 10 is the inode.
	hexAddr := func(ip string) string {
		var o [4]int
		if _, err := fmt.Sscanf(ip, "%d.%d.%d.%d", &o[0], &o[1], &o[2], &o[3]); err != nil {
			return ""
		}
		return fmt.Sprintf("%02X%02X%02X%02X:206C", o[3], o[2], o[1], o[0])
	}
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "01" || !inodes[f[9]] {
			continue
		}
		for _, s := range c.servers() {
			if s != a && f[2] == hexAddr(s.IP) && !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Leader returns the name of the server a names as the leader ("" when
// it names none or an address that is no server of c).
func (c *Cluster) Leader(ctx context.Context, a *Agent) string {
	var addr string
	if err := c.Call(ctx, a, http.MethodGet, "/v1/status/leader", "", &addr); err != nil {
		return ""
	}
	for _, s := range c.servers() {
		if s.RPCAddr() == addr {
			return s.Name
		}
	}
	return ""
}
