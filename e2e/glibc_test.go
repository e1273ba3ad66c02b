package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGlibcResolver resolves the tour's names with glibc's stub resolver,
// as every C program and most runtimes do, through getent. glibc only
// talks to port 53 of the nameservers in /etc/resolv.conf, so the agent
// runs on port 53 in a network namespace of its own, whose resolv.conf
// (/etc/netns/<name>/resolv.conf, which "ip netns exec" mounts over
// /etc/resolv.conf) names it. That needs root and ip from iproute2.
func TestGlibcResolver(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "a network namespace needs root")
	}
	ip := requireTool(t, "ip", "iproute2")
	ns := newNetns(t, ip)

	a := startNetnsAgent(t, ip, ns)
	if got, want := netnsRun(t, ip, ns, cairnBin, "services", "register", "-name", "web", "-port", "8080"),
		"Registered service: web\n"; got != want {
		t.Errorf("register: got %q, want %q", got, want)
	}

	for _, name := range []string{"web.service.dc1.cluster", "web.service.cluster", "e2e.node.dc1.cluster"} {
		out := netnsRun(t, ip, ns, "getent", "hosts", name)
		if got, want := strings.Fields(out), []string{"127.0.0.1", name}; !slices.Equal(got, want) {
			t.Errorf("getent hosts %s: got %q, want %q", name, out, "127.0.0.1  "+name)
		}
	}

	// getaddrinfo, which ahosts calls, returns one address per socket type;
	// the canonical name comes with the first.
	out := netnsRun(t, ip, ns, "getent", "ahosts", "web.service.dc1.cluster")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got, want := strings.Fields(lines[0]), []string{"127.0.0.1", "STREAM", "web.service.dc1.cluster"}; !slices.Equal(got, want) {
		t.Errorf("getent ahosts web.service.dc1.cluster: got first line %q, want %q", lines[0], strings.Join(want, " "))
	}
	for _, line := range lines {
		if f := strings.Fields(line); len(f) < 2 || f[0] != "127.0.0.1" {
			t.Errorf("getent ahosts web.service.dc1.cluster: got line %q, want 127.0.0.1 and a socket type", line)
		}
	}

	// getent exits 2 when the name is not found.
	_, stderr, code := netnsExec(t, ip, ns, "getent", "hosts", "nope.service.dc1.cluster")
	if code != 2 {
		t.Errorf("getent hosts nope.service.dc1.cluster: got exit code %d (stderr %q), want 2", code, stderr)
	}

	a.stop(t)
}

// netnsHTTPAddr is the agent's HTTP address in the namespace, which has no
// other listener.
const netnsHTTPAddr = "127.0.0.1:8500"

// newNetns creates a network namespace with its loopback interface up and
// a resolv.conf naming 127.0.0.1, and returns its name. A cleanup deletes
// both, after the cleanups registered later have stopped what runs in it.
// A machine where that fails skips the test, unless CAIRN_E2E=1.
func newNetns(t *testing.T, ip string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	ns := "cairn-e2e-" + hex.EncodeToString(b[:])

	if out, err := exec.Command(ip, "netns", "add", ns).CombinedOutput(); err != nil {
		skipOrFail(t, "ip netns add %s: %v: %s", ns, err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "delete", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", ns, err, bytes.TrimSpace(out))
		}
	})
	if out, err := exec.Command(ip, "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s link set lo up: %v: %s", ns, err, bytes.TrimSpace(out))
	}

	const etcNetns = "/etc/netns"
	_, err := os.Stat(etcNetns)
	createdEtcNetns := errors.Is(err, os.ErrNotExist)
	dir := filepath.Join(etcNetns, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		skipOrFail(t, "create %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
		if createdEtcNetns {
			os.Remove(etcNetns) // only if empty: another namespace may have arrived
		}
	})
	resolv := "nameserver 127.0.0.1\noptions attempts:1 timeout:2\n"
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(resolv), 0o644); err != nil {
		t.Fatalf("write resolv.conf: %v", err)
	}
	return ns
}

// startNetnsAgent runs "cairn agent -dev" on DNS port 53 in the network
// namespace ns and returns once it is ready: its catalog lists its node and
// its DNS server listens. A cleanup kills it if the test has not stopped
// it and shows its output if the test failed.
func startNetnsAgent(t *testing.T, ip, ns string) *agentProc {
	t.Helper()
	return startNetnsAgentWith(t, ip, ns, nodeName, "127.0.0.1", 53, "-dev")
}

// startNetnsAgentWith runs "cairn agent -node node <args>" in the network
// namespace ns, with its HTTP API on netnsHTTPAddr and DNS on dnsPort, and
// returns once it is ready: its catalog lists node at addr and its DNS
// server listens. A cleanup kills it if the test has not stopped it and
// shows its output if the test failed.
func startNetnsAgentWith(t *testing.T, ip, ns, node, addr string, dnsPort int, args ...string) *agentProc {
	t.Helper()
	// "ip netns exec" execs the agent in place, so signals reach it.
	full := append([]string{"netns", "exec", ns, cairnBin, "agent", "-node", node,
		"-dns-port", strconv.Itoa(dnsPort), "-http-port", "8500"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ip, full...)
	a := &agentProc{dnsPort: dnsPort, httpPort: 8500, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("ip %s: %v", strings.Join(full, " "), err)
	}
	go func() {
		a.waitErr = cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-a.done
		if t.Failed() {
			t.Logf("output of ip %s:\n%s", strings.Join(full, " "), a.out.String())
		}
	})

	// The test cannot reach the namespace's loopback address itself, so it
	// asks from inside: the CLI for the node, ss for the DNS listener.
	ready := func() bool {
		out, _, code := netnsExec(t, ip, ns, cairnBin, "catalog", "nodes")
		if code != 0 || !tableRow(out, node, addr, "dc1") {
			return false
		}
		out, _, code = netnsExec(t, ip, ns, "ss", "-H", "-l", "-t", "-n", "sport", "=", ":"+strconv.Itoa(dnsPort))
		return code == 0 && strings.TrimSpace(out) != ""
	}
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for !ready() {
		select {
		case <-a.done:
			t.Fatalf("agent in namespace %s exited before it was ready: %v", ns, a.waitErr)
		case <-timeout.C:
			t.Fatalf("agent in namespace %s not ready after %v", ns, readyTimeout)
		case <-tick.C:
		}
	}
	return a
}

// netnsExec runs the command args in the network namespace ns, with the
// CLI pointed at the agent there, and returns its output and exit code.
func netnsExec(t *testing.T, ip, ns string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, netnsHTTPAddr, ip, append([]string{"netns", "exec", ns}, args...)...)
}

// netnsRun is netnsExec for a command that must succeed silently on stderr.
func netnsRun(t *testing.T, ip, ns string, args ...string) string {
	t.Helper()
	stdout, stderr, code := netnsExec(t, ip, ns, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("%s in namespace %s: got exit code %d, stderr %q, want 0 and none", strings.Join(args, " "), ns, code, stderr)
	}
	return stdout
}
