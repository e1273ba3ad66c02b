package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/e2e/e2etest"
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

// newExampleNet puts the named agents on a LoopbackNet of their own.
func newExampleNet(t *testing.T, names ...string) exampleNet {
	t.Helper()
	n := e2etest.NewLoopbackNet(t, names...)
	return exampleNet{names: n.Names, ip: n.IP, dns: n.Ports.DNS, http: n.Ports.HTTP, server: n.Ports.Server,
		serfLAN: n.Ports.SerfLAN, serfWAN: n.Ports.SerfWAN}
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
