package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exampleNet is where one run of an example script puts its agents: a
// loopback address of its own for each and the same five ports on every
// address, passed to the script in its environment (see examples/lib.sh).
// They are picked per run, so that two runs of the tests on one host, or a
// cairn or Consul agent holding the default ports, do not collide.
type exampleNet struct {
	names []string          // the agents, in the order the script takes ADDRS
	ip    map[string]string // agent name → address

	// The ports of every agent.
	dns, http, server, serfLAN, serfWAN int
}

// newExampleNet picks consecutive addresses for the named agents in a
// random 127.a.b.0/24 (a ≠ 0: 127.0.x.x is where other services live) and
// five ports that freePort has found free on 127.0.0.1 (so no wildcard
// listener holds them either), and checks that every port is free for TCP
// and UDP on every address. A block where one is taken is passed over.
func newExampleNet(t *testing.T, names ...string) exampleNet {
	t.Helper()
	for range 20 {
		a, b := 1+rand.IntN(254), rand.IntN(256)
		first := 1 + rand.IntN(255-len(names)) // hosts first … first+len-1 within 1…254
		n := exampleNet{names: names, ip: make(map[string]string, len(names)),
			dns: freePort(t), http: freePort(t), server: freePort(t), serfLAN: freePort(t), serfWAN: freePort(t)}
		for i, name := range names {
			n.ip[name] = fmt.Sprintf("127.%d.%d.%d", a, b, first+i)
		}
		if n.free(t) {
			return n
		}
	}
	t.Fatal("found no block of loopback addresses with the ports free in 20 tries")
	return exampleNet{}
}

// free reports whether every port of n is free for TCP and UDP on every
// address of n. An address that cannot be bound at all fails the test: the
// examples need the whole of 127.0.0.0/8 on the loopback interface, as
// Linux has it.
func (n exampleNet) free(t *testing.T) bool {
	t.Helper()
	for _, name := range n.names {
		for _, port := range []int{n.dns, n.http, n.server, n.serfLAN, n.serfWAN} {
			addr := net.JoinHostPort(n.ip[name], strconv.Itoa(port))
			ln, err := net.Listen("tcp", addr)
			if err == nil {
				ln.Close()
				var pc net.PacketConn
				if pc, err = net.ListenPacket("udp", addr); err == nil {
					pc.Close()
				}
			}
			switch {
			case errors.Is(err, syscall.EADDRINUSE):
				return false
			case err != nil:
				t.Fatalf("bind %s for an example's agent: %v", addr, err)
			}
		}
	}
	return true
}

// env is the script's environment that puts the agents on n.
func (n exampleNet) env() []string {
	addrs := make([]string, len(n.names))
	for i, name := range n.names {
		addrs[i] = n.ip[name]
	}
	return []string{
		"ADDRS=" + strings.Join(addrs, " "),
		"DNS_PORT=" + strconv.Itoa(n.dns),
		"HTTP_PORT=" + strconv.Itoa(n.http),
		"SERVER_PORT=" + strconv.Itoa(n.server),
		"SERF_LAN_PORT=" + strconv.Itoa(n.serfLAN),
		"SERF_WAN_PORT=" + strconv.Itoa(n.serfWAN),
	}
}

// addr is the regular expression of the agent's address, followed by
// ":port" unless port is 0.
func (n exampleNet) addr(name string, port int) string {
	if port == 0 {
		return regexp.QuoteMeta(n.ip[name]) + `\b`
	}
	return regexp.QuoteMeta(net.JoinHostPort(n.ip[name], strconv.Itoa(port))) + `\b`
}

// runExample runs an example script with the built binary, a temporary
// work directory, TIMEOUT=stepTimeout seconds and the named agents on an
// exampleNet of their own, and fails the test if it exits non-zero or
// takes longer than limit. Should an agent find one of its ports taken
// (by a process that took it after it was picked), the script runs again
// on fresh ones. env adds to the script's environment. It returns the
// output and where the agents were.
func runExample(t *testing.T, script string, agents []string, limit time.Duration, stepTimeout string, env ...string) (string, exampleNet) {
	t.Helper()
	requireDig(t)
	const attempts = 3
	for i := 1; ; i++ {
		n := newExampleNet(t, agents...)
		out, err := runScript(t, script, limit, n, append([]string{"TIMEOUT=" + stepTimeout}, env...)...)
		if err == nil {
			return out, n
		}
		if i == attempts || !strings.Contains(out, "address already in use") {
			t.Fatalf("%s (attempt %d): %v\n%s", script, i, err, out)
		}
		t.Logf("%s: an agent found its port taken; running it again on fresh ports:\n%s", script, out)
	}
}

// runScript runs the script once, its agents on n, and returns its output.
func runScript(t *testing.T, script string, limit time.Duration, n exampleNet, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "CAIRN="+cairnBin, "WORK="+t.TempDir())
	cmd.Env = append(append(cmd.Env, n.env()...), env...) // the last one wins
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// wantOutput checks that the output of script matches every regular
// expression in want.
func wantOutput(t *testing.T, script, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(got) {
			t.Errorf("%s output lacks %s:\n%s", script, w, got)
		}
	}
}
