package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOneServerDatacenters is the classic small setup, started all at
// once as a boot or a compose file would: dc1 is one server
// (-bootstrap-expect 1) and a client joining it, dc2 one server WAN-joined
// to dc1's and a client. A service registered on dc2's client is answered
// by dig on dc1's client within 10 s of the agents' start.
func TestOneServerDatacenters(t *testing.T) {
	t.Parallel()
	requireDig(t)
	type node struct{ name, dc, lan, wan, rpc string }
	port := func() string { return strconv.Itoa(freePort(t)) }
	dc1s := node{"dc1-s1", "dc1", port(), port(), port()}
	dc2s := node{"dc2-s1", "dc2", port(), port(), port()}
	server := func(n node, extra ...string) []string {
		return append([]string{"-server", "-bootstrap-expect", "1", "-node", n.name, "-datacenter", n.dc,
			"-data-dir", t.TempDir(), "-server-port", n.rpc, "-serf-lan-port", n.lan, "-serf-wan-port", n.wan,
			"-retry-interval", "5s"}, extra...)
	}
	client := func(name, dc string, s node) []string {
		return []string{"-node", name, "-datacenter", dc, "-data-dir", t.TempDir(), "-serf-lan-port", port(),
			"-retry-join", "127.0.0.1:" + s.lan, "-retry-interval", "5s"}
	}
	args := map[string][]string{
		"dc1-s1": server(dc1s, "-retry-join-wan", "127.0.0.1:"+dc2s.wan),
		"dc1-c1": client("dc1-c1", "dc1", dc1s),
		"dc2-s1": server(dc2s, "-retry-join-wan", "127.0.0.1:"+dc1s.wan),
		"dc2-c1": client("dc2-c1", "dc2", dc2s),
	}

	start := time.Now()
	agents := launchTogether(t, args)
	t.Logf("all four agents ready %s after their start", time.Since(start).Round(time.Millisecond))

	mustCLI(t, agents["dc2-c1"].httpAddr(), "services", "register", "-name", "web", "-port", "8080")
	deadline := start.Add(10 * time.Second)
	for {
		out := dig(t, agents["dc1-c1"].dnsPort, "web.service.dc2.cluster", "SRV")
		if strings.Contains(out, "8080 dc2-c1.node.dc2.cluster.") {
			t.Logf("dc1's client answers for dc2 %s after the agents' start", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dc1's client does not answer web.service.dc2.cluster within 10 s of the start:\n%s", out)
		}
		time.Sleep(pollInterval)
	}
	for _, name := range []string{"dc1-c1", "dc2-c1", "dc1-s1", "dc2-s1"} {
		agents[name].stop(t)
	}
}
