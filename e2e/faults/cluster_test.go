package faults

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The agents' ports: every agent has a namespace of its own, so all use
// the defaults.
const (
	httpPort   = "8500"
	dnsPort    = "8600"
	serverPort = 8300
)

// agent is one cairn agent process in its namespace. Its methods are
// called from the scenario's goroutine only.
type agent struct {
	name    string
	server  bool
	node    netNode
	dataDir string
	logPath string
	args    []string
	env     []string // added to the test's environment (a test-only clock offset)

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited
	exitErr error         // set before done is closed
}

// httpURL is the base URL of the agent's HTTP API.
func (a *agent) httpURL() string { return "http://" + net.JoinHostPort(a.node.ip, httpPort) }

// dnsAddr is the agent's DNS address.
func (a *agent) dnsAddr() string { return net.JoinHostPort(a.node.ip, dnsPort) }

// rpcAddr is a server's RPC address, as /v1/status/leader names it.
func (a *agent) rpcAddr() string { return fmt.Sprintf("%s:%d", a.node.ip, serverPort) }

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

// cluster is three servers (s1–s3) and clients (c1, c2, …), each in its
// own namespace of one network.
type cluster struct {
	t       *testing.T
	net     *network
	servers []*agent
	clients []*agent
	all     []*agent
	http    *http.Client // for the test's own probes, not the workload
}

// newCluster builds the network and starts every agent, the servers with
// serverHCL as a config file ("": none) and those named in clocks with
// that clock offset; it returns once the cluster has settled. Cleanups
// kill every agent and print the tails of their logs when the test failed.
func newCluster(t *testing.T, serverHCL string, clocks map[string]time.Duration) *cluster {
	t.Helper()
	return newClusterOf(t, []string{"s1", "s2", "s3", "c1", "c2"}, serverHCL, clocks)
}

// newClusterOf is newCluster with the agents named: three servers, whose
// names start with "s", and clients.
func newClusterOf(t *testing.T, names []string, serverHCL string, clocks map[string]time.Duration) *cluster {
	t.Helper()
	nw, nodes := newNetwork(t, names, 11)
	work := t.TempDir()
	c := &cluster{t: t, net: nw, http: &http.Client{Timeout: 2 * time.Second}}
	for _, name := range names {
		a := &agent{name: name, server: name[0] == 's', node: nodes[name],
			dataDir: filepath.Join(work, name), logPath: filepath.Join(work, name+".log")}
		c.all = append(c.all, a)
		if a.server {
			c.servers = append(c.servers, a)
		} else {
			c.clients = append(c.clients, a)
		}
	}
	serverFile := filepath.Join(work, "server.hcl")
	if serverHCL != "" {
		if err := os.WriteFile(serverFile, []byte(serverHCL), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range c.all {
		a.args = []string{"agent", "-node", a.name, "-bind", a.node.ip, "-client", a.node.ip,
			"-data-dir", a.dataDir, "-retry-interval", "1s"}
		for _, s := range c.servers {
			a.args = append(a.args, "-retry-join", s.node.ip)
		}
		if a.server {
			a.args = append(a.args, "-server", "-bootstrap-expect", "3")
			if serverHCL != "" {
				a.args = append(a.args, "-config-file", serverFile)
			}
		}
		if d, ok := clocks[a.name]; ok {
			a.env = clockEnv(d) // clock_test.go
		}
	}
	t.Cleanup(func() {
		for _, a := range c.all {
			if a.running() {
				_ = a.cmd.Process.Kill() // also ends a stopped process
				<-a.done
			}
		}
		if t.Failed() {
			for _, a := range c.all {
				t.Logf("last lines of %s's log:\n%s", a.name, logTail(a.logPath, 40))
			}
		}
	})
	for _, a := range c.all {
		c.start(a)
	}
	c.settle(60 * time.Second)
	return c
}

// start runs the agent's process in its namespace, its log appended to.
func (c *cluster) start(a *agent) {
	c.t.Helper()
	log, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	// "ip netns exec" execs the agent in place: its PID is the agent's,
	// so signals reach it.
	cmd := exec.Command(c.net.ip, append([]string{"netns", "exec", a.node.ns, cairnBin}, a.args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if len(a.env) > 0 {
		cmd.Env = append(os.Environ(), a.env...)
	}
	// Should the test process die without its cleanups (go test's
	// -timeout), its agents die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		c.t.Fatalf("start %s: %v", a.name, err)
	}
	done := make(chan struct{})
	a.cmd, a.done = cmd, done
	go func() {
		a.exitErr = cmd.Wait()
		log.Close()
		close(done)
	}()
}

// kill sends SIGKILL and waits until the process is gone.
func (c *cluster) kill(a *agent) {
	c.t.Helper()
	if err := a.cmd.Process.Kill(); err != nil {
		c.t.Fatalf("kill -9 %s: %v", a.name, err)
	}
	<-a.done
}

// terminate stops the agent as an operator would (SIGTERM: it leaves
// gracefully) and waits for it to exit, killing it after 20s.
func (c *cluster) terminate(a *agent) {
	c.t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("SIGTERM %s: %v", a.name, err)
	}
	select {
	case <-a.done:
		return
	case <-time.After(20 * time.Second):
	}
	// SIGQUIT makes the Go runtime write every goroutine's stack to the
	// agent's log, kept as evidence: where its shutdown hangs.
	c.t.Errorf("%s still running 20s after SIGTERM; its goroutines go to its log (SIGQUIT), then it is killed", a.name)
	_ = a.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		c.kill(a)
	}
}

// signal sends sig (SIGSTOP, SIGCONT) to the agent.
func (c *cluster) signal(a *agent, sig syscall.Signal) {
	c.t.Helper()
	if err := a.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to %s: %v", sig, a.name, err)
	}
}

// get sends a GET to the agent's HTTP API and decodes a 200's JSON body
// into out.
func (c *cluster) get(a *agent, path string, out any) error {
	resp, err := c.http.Get(a.httpURL() + path)
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

// settled reports whether the cluster is whole again: raftSettled and
// gossipSettled.
func (c *cluster) settled() error {
	if err := c.raftSettled(); err != nil {
		return err
	}
	return c.gossipSettled()
}

// raftSettled reports whether every agent runs and names the same leader
// and every server has three Raft peers; the error says what is missing.
func (c *cluster) raftSettled() error {
	want := ""
	for _, a := range c.all {
		if !a.running() {
			return fmt.Errorf("%s is not running", a.name)
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
	}
	return nil
}

// gossipSettled reports whether every agent sees all of them alive in LAN
// gossip (which is where clients find the servers they may use).
func (c *cluster) gossipSettled() error {
	for _, a := range c.all {
		var members []struct {
			Name   string
			Status int
		}
		if err := c.get(a, "/v1/agent/members", &members); err != nil {
			return err
		}
		var notAlive []string
		for _, m := range members {
			if m.Status != 1 { // serf's StatusAlive
				notAlive = append(notAlive, m.Name)
			}
		}
		if len(members)-len(notAlive) < len(c.all) {
			return fmt.Errorf("%s sees %d of %d agents alive (not alive: %v)", a.name, len(members)-len(notAlive), len(c.all), notAlive)
		}
	}
	return nil
}

// settle waits until settled holds, failing the test after limit.
func (c *cluster) settle(limit time.Duration) time.Duration {
	c.t.Helper()
	begin := time.Now()
	err := poll(limit, 100*time.Millisecond, c.settled)
	if err != nil {
		c.t.Fatalf("cluster not settled after %v: %v", limit, err)
	}
	return time.Since(begin)
}

// leader returns the server every running server names as the leader.
func (c *cluster) leader() (*agent, error) {
	var named string
	for _, s := range c.servers {
		if !s.running() {
			continue
		}
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
		if s.rpcAddr() == named {
			return s, nil
		}
	}
	return nil, fmt.Errorf("leader %q is none of the servers", named)
}

// serverOf returns the servers the client has an established connection
// to on the RPC port: the one its calls (and its cache's change feed) go
// to. The client is alone in its namespace, so the namespace's TCP table
// (/proc/PID/net/tcp) holds only its sockets.
func (c *cluster) serverOf(client *agent) []*agent {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", client.cmd.Process.Pid))
	if err != nil {
		return nil
	}
	var out []*agent
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		// sl local_address rem_address st …; 01 is ESTABLISHED.
		if len(f) < 4 || f[3] != "01" {
			continue
		}
		ip, port, ok := parseProcAddr(f[2])
		if !ok || port != serverPort {
			continue
		}
		for _, s := range c.servers {
			if s.node.ip == ip && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// parseProcAddr parses /proc/net/tcp's "0100007F:206C": an IPv4 address
// in the kernel's (little-endian) byte order and a hex port.
func parseProcAddr(s string) (string, int, bool) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok || len(hexIP) != 8 {
		return "", 0, false
	}
	b, err := hex.DecodeString(hexIP)
	if err != nil {
		return "", 0, false
	}
	var port int
	if _, err := fmt.Sscanf(hexPort, "%X", &port); err != nil {
		return "", 0, false
	}
	return net.IPv4(b[3], b[2], b[1], b[0]).String(), port, true
}

// poll calls cond every interval until it returns nil or limit passes,
// and returns its last error then.
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
			return errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// logSize is the length of the file at path (0 when it cannot be read),
// for logFrom.
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logFrom returns the file at path from byte off on.
func logFrom(path string, off int64) string {
	b, err := os.ReadFile(path)
	if err != nil || off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
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
