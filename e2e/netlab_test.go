package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// delayNet is a lab network whose nodes receive their gossip late: a hub
// namespace holding a bridge, one namespace per node joined to it by a
// veth pair (eth0 inside), and a veth from the host's namespace, where
// the test and agents without delay run. Everything is in 10.201.N.0/24,
// N picked among the blocks the host does not use (the fault suite takes
// 10.200.N): the host is .254, node i is .11+i. Nodes bind and advertise
// their own address, so that the servers, which admit RPC only from the
// addresses gossip knows, admit them.
//
// The delay sits inside a node's namespace: an iptables REDIRECT hands
// the UDP arriving on eth0 for its gossip port to a delayRelay listening
// there, which passes it on to the agent late. The relay runs in a copy
// of the test binary started in the namespace (see relayEnv), since a
// socket belongs to the namespace of the process that opens it.
type delayNet struct {
	ip, iptables string // the programs' paths
	hostIP       string
}

// delayNode is one node of a delayNet.
type delayNode struct {
	ns   string     // its namespace
	addr netip.Addr // its address, bound in the namespace
}

// newDelayNet builds the network with one namespace per name. A cleanup
// deletes it, after the cleanups registered later (relays, agents).
func newDelayNet(t *testing.T, names ...string) (*delayNet, map[string]delayNode) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "network namespaces need root")
	}
	n := &delayNet{ip: requireTool(t, "ip", "iproute2"), iptables: requireTool(t, "iptables", "iptables")}
	prefix := freeNetPrefix(t, n.ip, "10.201")
	n.hostIP = prefix + ".254"
	hub := newNetns(t, n.ip)
	var b [3]byte
	rand.Read(b[:])
	hostIf := "cdh" + hex.EncodeToString(b[:]) // interface names take at most 15 characters
	t.Cleanup(func() {
		// Gone with the hub's end of the pair, normally; this is for a run
		// that failed between creating the pair and moving its end.
		if exec.Command(n.ip, "link", "show", hostIf).Run() == nil {
			_ = exec.Command(n.ip, "link", "delete", hostIf).Run()
		}
	})
	n.must(t, "-n", hub, "link", "add", "br0", "type", "bridge")
	n.must(t, "-n", hub, "link", "set", "br0", "up")
	n.must(t, "link", "add", hostIf, "type", "veth", "peer", "name", "host", "netns", hub)
	n.must(t, "-n", hub, "link", "set", "host", "master", "br0", "up")
	n.must(t, "addr", "add", n.hostIP+"/24", "dev", hostIf)
	n.must(t, "link", "set", hostIf, "up")

	nodes := make(map[string]delayNode, len(names))
	for i, name := range names {
		node := delayNode{ns: newNetns(t, n.ip), addr: netip.MustParseAddr(fmt.Sprintf("%s.%d", prefix, 11+i))}
		hubEnd := "v" + strconv.Itoa(i) // in the hub namespace only: no clash with other runs
		n.must(t, "-n", hub, "link", "add", hubEnd, "type", "veth", "peer", "name", "eth0", "netns", node.ns)
		n.must(t, "-n", hub, "link", "set", hubEnd, "master", "br0", "up")
		n.must(t, "-n", node.ns, "addr", "add", node.addr.String()+"/24", "dev", "eth0")
		n.must(t, "-n", node.ns, "link", "set", "eth0", "up")
		nodes[name] = node
	}
	return n, nodes
}

// delayInbound delays by delay the UDP that node receives on port from
// the network, passing it on to target (the agent's port itself, or for a
// test of the path an echo elsewhere), until the test ends, and returns
// the relay doing it.
func (n *delayNet) delayInbound(t *testing.T, node delayNode, port int, target netip.AddrPort, delay time.Duration) *relayProc {
	t.Helper()
	const relayPort = 18301 // the namespace is the node's alone
	p := strconv.Itoa(port)
	rules := [][]string{
		// The node's own datagrams from the port must open no conntrack
		// entry: a peer's datagrams back to it, between the same two
		// ports, would match that entry as replies and pass by the
		// REDIRECT, which applies to new flows only.
		{"-t", "raw", "-A", "OUTPUT", "-p", "udp", "--sport", p, "-j", "CT", "--notrack"},
		// Only what arrives on eth0: the relay's own datagrams to the
		// agent come over lo.
		{"-t", "nat", "-A", "PREROUTING", "-i", "eth0", "-p", "udp", "--dport", p,
			"-j", "REDIRECT", "--to-ports", strconv.Itoa(relayPort)},
	}
	for _, r := range rules {
		full := append([]string{"netns", "exec", node.ns, n.iptables, "-w"}, r...)
		if out, err := exec.Command(n.ip, full...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(full, " "), err, bytes.TrimSpace(out))
		}
	}
	return startNetnsRelay(t, n.ip, node.ns, netip.AddrPortFrom(node.addr, relayPort), target, delay)
}

// freeNetPrefix returns a "<first>.N" /24 block that no address or route
// of the host's namespace touches, so that two runs, or a real network,
// do not collide with this one.
func freeNetPrefix(t *testing.T, ip, first string) string {
	t.Helper()
	addrs, err := exec.Command(ip, "-4", "-o", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip -4 addr show: %v", err)
	}
	routes, err := exec.Command(ip, "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatalf("ip -4 route show: %v", err)
	}
	for range 50 {
		p := fmt.Sprintf("%s.%d", first, 1+mrand.IntN(254))
		if !bytes.Contains(addrs, []byte(p+".")) && !bytes.Contains(routes, []byte(p+".")) {
			return p
		}
	}
	t.Fatalf("no free %s.N.0/24 block in 50 tries", first)
	return ""
}

// must runs ip with args and fails the test if it fails.
func (n *delayNet) must(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// relayEnv, set in the environment of the test binary, makes it a relay
// process (TestMain checks it first): "<listen> <target> <delay>" starts a
// delayRelay, which says "ready" on stdout once it listens; each line on
// stdin is a new delay, answered "ok"; the end of stdin stops it.
const relayEnv = "CAIRN_E2E_DELAY_RELAY"

// runRelayProcess is the relay process; it returns its exit code.
func runRelayProcess(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "%s: got %q, want <listen> <target> <delay>\n", relayEnv, spec)
		return 2
	}
	listen, err1 := netip.ParseAddrPort(f[0])
	target, err2 := netip.ParseAddrPort(f[1])
	delay, err3 := time.ParseDuration(f[2])
	if err1 != nil || err2 != nil || err3 != nil {
		fmt.Fprintf(os.Stderr, "%s: %q: %v %v %v\n", relayEnv, spec, err1, err2, err3)
		return 2
	}
	r, err := newDelayRelay(listen, target, delay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	defer r.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		d, err := time.ParseDuration(in.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay:", err)
			return 2
		}
		r.SetDelay(d)
		fmt.Println("ok")
	}
	return 0
}

// relayProc is a relay process, as the test sees it.
type relayProc struct {
	stdin io.WriteCloser
	lines chan string // its stdout, line by line; closed at its end
}

// relayAnswerTimeout bounds how long a relay process may take to start or
// to answer.
const relayAnswerTimeout = 10 * time.Second

// startNetnsRelay runs a relay process in the namespace ns and returns
// once it listens. A cleanup stops it.
func startNetnsRelay(t *testing.T, ip, ns string, listen, target netip.AddrPort, delay time.Duration) *relayProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ip, "netns", "exec", ns, self)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", relayEnv, listen, target, delay))
	cmd.WaitDelay = 5 * time.Second
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		t.Fatalf("relay stdin: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatalf("relay stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start the relay in %s: %v", ns, err)
	}
	r := &relayProc{stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(r.lines)
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the relay's signal to stop
		timeout := time.NewTimer(relayAnswerTimeout)
		defer timeout.Stop()
		select {
		case <-timeout.C:
			cancel()
		case <-r.drained():
		}
		err := cmd.Wait()
		cancel()
		if err != nil || t.Failed() {
			t.Logf("relay in %s (%v): stderr: %s", ns, err, stderr.String())
		}
	})
	r.expect(t, "ready")
	return r
}

// drained returns a channel closed once the relay's stdout has ended.
func (r *relayProc) drained() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range r.lines {
		}
		close(done)
	}()
	return done
}

// expect waits for the relay's next line and fails the test unless it is
// want.
func (r *relayProc) expect(t *testing.T, want string) {
	t.Helper()
	timeout := time.NewTimer(relayAnswerTimeout)
	defer timeout.Stop()
	select {
	case got, ok := <-r.lines:
		if !ok || got != want {
			t.Fatalf("relay process: got line %q (open %v), want %q", got, ok, want)
		}
	case <-timeout.C:
		t.Fatalf("relay process: no %q after %v", want, relayAnswerTimeout)
	}
}

// setDelay changes the relay's delay.
func (r *relayProc) setDelay(t *testing.T, d time.Duration) {
	t.Helper()
	if _, err := fmt.Fprintln(r.stdin, d); err != nil {
		t.Fatalf("relay process: %v", err)
	}
	r.expect(t, "ok")
}
