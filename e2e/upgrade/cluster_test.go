package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairndns/cairn/e2e/e2etest"
)

// agent is one cairn agent process on a loopback address of its own. Its
// methods are called from the test's goroutine only; the load reads only
// its address.
type agent struct {
	name    string
	server  bool
	ip      string
	dataDir string
	logPath string
	args    []string // the same for every release: the upgrade keeps the config
	env     []string // added to the test's environment

	rel     release // what it runs now
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited
	exitErr error         // set before done is closed
}

// running reports whether the process is started and has not exited.
func (a *agent) running() bool {
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// cluster is three servers (s1–s3) and two clients (c1, c2), each on an
// address of one LoopbackNet.
type cluster struct {
	t       *testing.T
	net     e2etest.LoopbackNet
	servers []*agent
	clients []*agent
	all     []*agent
	http    *http.Client // for the test's own checks, not the load
}

// newCluster starts every agent on rel and returns once the cluster has
// settled. Cleanups kill every agent and print the tails of their logs
// when the test failed.
func newCluster(t *testing.T, rel release) *cluster {
	t.Helper()
	names := []string{"s1", "s2", "s3", "c1", "c2"}
	n := e2etest.NewLoopbackNet(t, names...)
	work := t.TempDir()
	c := &cluster{t: t, net: n, http: &http.Client{Timeout: 3 * time.Second}}
	p := n.Ports
	for _, name := range names {
		a := &agent{name: name, server: name[0] == 's', ip: n.IP[name],
			dataDir: filepath.Join(work, name), logPath: filepath.Join(work, name+".log")}
		a.args = []string{"agent", "-node", name, "-bind", a.ip, "-client", a.ip, "-data-dir", a.dataDir,
			"-dns-port", strconv.Itoa(p.DNS), "-http-port", strconv.Itoa(p.HTTP), "-server-port", strconv.Itoa(p.Server),
			"-serf-lan-port", strconv.Itoa(p.SerfLAN), "-serf-wan-port", strconv.Itoa(p.SerfWAN), "-retry-interval", "1s"}
		for _, s := range names[:3] {
			a.args = append(a.args, "-retry-join", net.JoinHostPort(n.IP[s], strconv.Itoa(p.SerfLAN)))
		}
		if a.server {
			a.args = append(a.args, "-server", "-bootstrap-expect", "3")
			c.servers = append(c.servers, a)
		} else {
			c.clients = append(c.clients, a)
		}
		c.all = append(c.all, a)
	}
	t.Cleanup(func() {
		for _, a := range c.all {
			if a.running() {
				_ = a.cmd.Process.Kill()
				<-a.done
			}
		}
		if t.Failed() {
			for _, a := range c.all {
				t.Logf("last lines of %s's log (%s):\n%s", a.name, a.logPath, logTail(a.logPath, 60))
			}
		}
	})
	for _, a := range c.all {
		c.start(a, rel)
	}
	c.settle(90 * time.Second)
	return c
}

// httpURL is the base URL of the agent's HTTP API.
func (c *cluster) httpURL(a *agent) string {
	return "http://" + net.JoinHostPort(a.ip, strconv.Itoa(c.net.Ports.HTTP))
}

// dnsAddr is the agent's DNS address.
func (c *cluster) dnsAddr(a *agent) string {
	return net.JoinHostPort(a.ip, strconv.Itoa(c.net.Ports.DNS))
}

// rpcAddr is a server's RPC address, as /v1/status/leader names it.
func (c *cluster) rpcAddr(a *agent) string {
	return net.JoinHostPort(a.ip, strconv.Itoa(c.net.Ports.Server))
}

// start runs the agent's process on rel, its output appended to its log.
func (c *cluster) start(a *agent, rel release) {
	c.t.Helper()
	log, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(log, "=== upgrade test: %s starts %s (%s)\n", a.name, rel.name, rel.bin)
	cmd := exec.Command(rel.bin, a.args...)
	cmd.Stdout, cmd.Stderr = log, log
	if len(a.env) > 0 {
		cmd.Env = append(os.Environ(), a.env...)
	}
	// Should the test process die without its cleanups (go test's
	// -timeout), its agents die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		c.t.Fatalf("start %s on %s: %v", a.name, rel.name, err)
	}
	done := make(chan struct{})
	a.cmd, a.done, a.rel = cmd, done, rel
	go func() {
		a.exitErr = cmd.Wait()
		log.Close()
		close(done)
	}()
}

// terminate stops the agent as an operator upgrading it would (SIGTERM)
// and waits for it to exit with status 0.
func (c *cluster) terminate(a *agent) {
	c.t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("SIGTERM %s: %v", a.name, err)
	}
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the agent's log: where its shutdown hangs.
		_ = a.cmd.Process.Signal(syscall.SIGQUIT)
		<-a.done
		c.t.Fatalf("%s (%s) still running 30s after SIGTERM; its goroutines are in its log", a.name, a.rel.name)
	}
	if a.exitErr != nil {
		c.t.Errorf("%s (%s) exited with %v after SIGTERM, want status 0", a.name, a.rel.name, a.exitErr)
	}
}

// get sends a GET to the agent's HTTP API and decodes a 200's JSON body
// into out.
func (c *cluster) get(a *agent, path string, out any) error {
	resp, err := c.http.Get(c.httpURL(a) + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s on %s: %d %s", path, a.name, resp.StatusCode, bytes.TrimSpace(body))
	}
	return json.Unmarshal(body, out)
}

// send sends a request with a JSON body (nil: none) to the agent's HTTP
// API; anything but a 200 is an error.
func (c *cluster) send(a *agent, method, path string, body any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.httpURL(a)+path, r)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s on %s: %d %s", method, path, a.name, resp.StatusCode, bytes.TrimSpace(out))
	}
	return nil
}

// settled reports whether the cluster is whole: every agent runs and
// names the same leader, every server has three Raft peers, and every
// agent sees all five alive in LAN gossip.
func (c *cluster) settled() error {
	want := ""
	for _, a := range c.all {
		if !a.running() {
			return fmt.Errorf("%s is not running (%v)", a.name, a.exitErr)
		}
		var leader string
		if err := c.get(a, "/v1/status/leader", &leader); err != nil {
			return err
		}
		if leader == "" || (want != "" && leader != want) {
			return fmt.Errorf("%s names leader %q, others %q", a.name, leader, want)
		}
		want = leader
		if a.server {
			var peers []string
			if err := c.get(a, "/v1/status/peers", &peers); err != nil {
				return err
			}
			if len(peers) != len(c.servers) {
				return fmt.Errorf("%s has Raft peers %v", a.name, peers)
			}
		}
		var members []struct {
			Name   string
			Status int
		}
		if err := c.get(a, "/v1/agent/members", &members); err != nil {
			return err
		}
		alive := 0
		for _, m := range members {
			if m.Status == 1 { // serf's StatusAlive
				alive++
			}
		}
		if alive < len(c.all) {
			return fmt.Errorf("%s sees %d of %d agents alive: %+v", a.name, alive, len(c.all), members)
		}
	}
	return nil
}

// settle waits until settled holds, failing the test after limit, and
// returns how long it took.
func (c *cluster) settle(limit time.Duration) time.Duration {
	c.t.Helper()
	begin := time.Now()
	if err := poll(limit, 100*time.Millisecond, c.settled); err != nil {
		c.t.Fatalf("cluster not settled: %v", err)
	}
	return time.Since(begin)
}

// leader returns the server every server names as the leader.
func (c *cluster) leader() (*agent, error) {
	var named string
	for _, s := range c.servers {
		var l string
		if err := c.get(s, "/v1/status/leader", &l); err != nil {
			return nil, err
		}
		if l == "" || (named != "" && l != named) {
			return nil, fmt.Errorf("no agreed leader: %s names %q, another %q", s.name, l, named)
		}
		named = l
	}
	for _, s := range c.servers {
		if c.rpcAddr(s) == named {
			return s, nil
		}
	}
	return nil, fmt.Errorf("leader %q is none of the servers", named)
}

// transferLeadership asks the cluster to make to the leader, and waits
// until every server names it.
func (c *cluster) transferLeadership(to *agent) {
	c.t.Helper()
	var conf struct {
		Servers []struct{ ID, Node string }
	}
	if err := c.get(to, "/v1/operator/raft/configuration", &conf); err != nil {
		c.t.Fatal(err)
	}
	id := ""
	for _, s := range conf.Servers {
		if s.Node == to.name {
			id = s.ID
		}
	}
	if id == "" {
		c.t.Fatalf("%s is not in the Raft configuration %+v", to.name, conf.Servers)
	}
	err := poll(30*time.Second, 500*time.Millisecond, func() error {
		if l, err := c.leader(); err == nil && l == to {
			return nil
		}
		return c.send(to, http.MethodPost, "/v1/operator/raft/transfer-leader?id="+id, nil)
	})
	if err == nil {
		err = poll(30*time.Second, 100*time.Millisecond, func() error {
			l, err := c.leader()
			if err == nil && l != to {
				err = fmt.Errorf("the leader is %s", l.name)
			}
			return err
		})
	}
	if err != nil {
		c.t.Fatalf("transfer Raft leadership to %s (%s): %v", to.name, to.rel.name, err)
	}
}

// poll calls cond every interval until it returns nil or limit passes,
// and returns its last error then, saying so.
func poll(limit, interval time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still after %v: %w", limit, err)
		case <-tick.C:
		}
	}
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
