package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUnboundStubZone resolves the tour's names through Unbound, the
// validating resolver of many Linux machines, loaded with
// examples/stub-zones/unbound.conf: a stub zone sending cluster. to the
// agent. Unbound minimises QNAMEs by default, so before it asks the agent
// for web.service.dc1.cluster. it asks for dc1.cluster. and
// service.dc1.cluster.
func TestUnboundStubZone(t *testing.T) {
	t.Parallel()
	requireDig(t)
	bin := requireTool(t, "unbound", "unbound")
	a := startAgent(t, "-dev")
	mustCLI(t, a.httpAddr(), "services", "register", "-name", "web", "-port", "8080", "-tag", "v1")
	stub := exampleConfig(t, "unbound.conf", "127.0.0.1@8600", "127.0.0.1@"+strconv.Itoa(a.dnsPort))

	t.Run("default", func(t *testing.T) {
		checkResolvesCluster(t, startUnbound(t, bin, stub, ""))
	})

	// In its default, relaxed mode Unbound stops minimising when the agent
	// answers NXDOMAIN to dc1.cluster. and asks for the full name, which
	// would hide an empty non-terminal answered wrongly; in strict mode it
	// believes the NXDOMAIN (RFC 8020), so this passes only when the agent
	// answers empty non-terminals with NOERROR and no records.
	t.Run("strict QNAME minimisation", func(t *testing.T) {
		checkResolvesCluster(t, startUnbound(t, bin, stub, "qname-minimisation-strict: yes"))
	})

	// An answer over 512 bytes: the agent sends a client that has not
	// returned one of its DNS cookies (Unbound sends none) at most 512
	// bytes over UDP, with TC set, and Unbound asks again over TCP; dig,
	// which sends a client cookie, does the same when asking the agent.
	t.Run("large answer through TC and TCP", func(t *testing.T) {
		const n = 40 // 40 A records: 640 bytes of answers
		for i := range n {
			id := strconv.Itoa(i + 1)
			mustCLI(t, a.httpAddr(), "services", "register", "-name", "big", "-id", "big-"+id, "-port", "80", "-address", "10.0.3."+id)
		}
		for _, port := range []int{startUnbound(t, bin, stub, ""), a.dnsPort} {
			out := dig(t, port, "big.service.dc1.cluster", "A")
			if got := len(digSection(out, "ANSWER")); got != n || digStatus(out) != "NOERROR" {
				t.Errorf("dig big.service.dc1.cluster A on port %d: got %d answers, want %d:\n%s", port, got, n, out)
			}
			if port == a.dnsPort && !strings.Contains(out, "Truncated, retrying in TCP mode") {
				t.Errorf("dig big.service.dc1.cluster A from the agent: answered over UDP, want TC and TCP:\n%s", out)
			}
		}
	})
}

// startUnbound runs Unbound in the foreground on a free loopback port with
// the stub-zone configuration stub and the server option extra (may be
// empty), and returns its port. It runs as the current user, without
// chroot, trust anchor or remote control, from a temporary directory.
func startUnbound(t *testing.T, bin, stub, extra string) int {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "unbound.conf")
	return startResolver(t, func(port int) []string {
		text := "server:\n" +
			"    interface: 127.0.0.1\n" +
			"    port: " + strconv.Itoa(port) + "\n" +
			"    do-ip6: no\n" +
			"    do-daemonize: no\n" +
			"    username: \"\"\n" +
			"    chroot: \"\"\n" +
			"    directory: \"" + dir + "\"\n" +
			"    pidfile: \"" + filepath.Join(dir, "unbound.pid") + "\"\n" +
			"    use-syslog: no\n" +
			"    logfile: \"\"\n" +
			// Level 2 logs each question Unbound sends upstream and the kind
			// of answer, shown should the test fail.
			"    verbosity: 2\n" +
			// DNS rebinding protection, on in many setups, would drop the
			// agent's 127.0.0.1 but for the example's private-domain.
			"    private-address: 127.0.0.0/8\n" +
			"    " + extra + "\n" +
			"remote-control:\n" +
			"    control-enable: no\n" +
			"\n" + stub
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("write %s: %v", conf, err)
		}
		return []string{bin, "-d", "-c", conf}
	})
}
