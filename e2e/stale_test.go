package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// staleWindow is how long TestUnboundKeepsResolvingWithoutServers keeps
// asking once every server is gone.
const staleWindow = 15 * time.Second

// TestUnboundKeepsResolvingWithoutServers is serve-stale (RFC 8767) seen
// from a stub resolver: Unbound, pointed at a client agent by the stub-zone
// example, keeps resolving the names the agent has answered before while
// every server of the datacenter is down, at once and without an error,
// because the agent answers from its cache and never waits on the network
// for a name it holds. A name it never saw fails (SERVFAIL) rather than
// hang.
func TestUnboundKeepsResolvingWithoutServers(t *testing.T) {
	t.Parallel()
	requireDig(t)
	bin := requireTool(t, "unbound", "unbound")
	lan := strconv.Itoa(freePort(t))
	agents := launchTogether(t, map[string][]string{
		"s1": {"-server", "-bootstrap-expect", "1", "-node", "s1", "-data-dir", t.TempDir(), "-serf-lan-port", lan},
		"c1": {"-node", "c1", "-data-dir", t.TempDir(), "-serf-lan-port", strconv.Itoa(freePort(t)),
			"-retry-join", "127.0.0.1:" + lan, "-retry-interval", "1s"},
	})
	client := agents["c1"]
	mustCLI(t, client.httpAddr(), "services", "register", "-name", "web", "-port", "8080")
	stub := exampleConfig(t, "unbound.conf", "127.0.0.1@8600", "127.0.0.1@"+strconv.Itoa(client.dnsPort))
	port := startUnbound(t, bin, stub, "")
	const want = "1 1 8080 c1.node.dc1.cluster."
	deadline := time.Now().Add(readyTimeout)
	for got := ""; !strings.Contains(got, want); got = dig(t, port, "web.service.dc1.cluster", "SRV", "+short") {
		if time.Now().After(deadline) {
			t.Fatalf("Unbound does not resolve web.service.dc1.cluster SRV: got %q", got)
		}
		time.Sleep(pollInterval)
	}

	// Every server of the datacenter gone at once.
	if err := agents["s1"].cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the server: %v", err)
	}
	<-agents["s1"].done
	start := time.Now()
	asked, slowest := 0, time.Duration(0)
	for time.Since(start) < staleWindow {
		before := time.Now()
		out := dig(t, port, "web.service.dc1.cluster", "SRV")
		took := time.Since(before)
		slowest = max(slowest, took)
		asked++
		if digStatus(out) != "NOERROR" || !strings.Contains(out, want) {
			t.Fatalf("%v after the servers went down, Unbound answered:\n%s", time.Since(start).Round(time.Millisecond), out)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("Unbound answered all %d questions over %v without a server, the slowest in %v (dig's whole run)",
		asked, staleWindow, slowest.Round(time.Millisecond))

	// A name the agent never answered: no server to ask, so it fails.
	if out := dig(t, client.dnsPort, "db.service.dc1.cluster", "SRV"); digStatus(out) != "SERVFAIL" {
		t.Errorf("a name never asked, without servers: got status %q, want SERVFAIL:\n%s", digStatus(out), out)
	}
}
