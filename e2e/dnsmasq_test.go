package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestDnsmasqServer resolves the tour's names through dnsmasq, the
// forwarder of many small networks and laptops, loaded with
// examples/stub-zones/dnsmasq.conf: a server= line sending cluster. to the
// agent.
func TestDnsmasqServer(t *testing.T) {
	t.Parallel()
	requireDig(t)
	bin := requireTool(t, "dnsmasq", "dnsmasq-base")
	a := startAgent(t, "-dev")
	mustCLI(t, a.httpAddr(), "services", "register", "-name", "web", "-port", "8080", "-tag", "v1")

	conf := filepath.Join(t.TempDir(), "dnsmasq.conf")
	text := exampleConfig(t, "dnsmasq.conf", "127.0.0.1#8600", "127.0.0.1#"+strconv.Itoa(a.dnsPort))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatalf("write %s: %v", conf, err)
	}
	port := startResolver(t, func(port int) []string {
		// Nothing but the example: no upstream from resolv.conf, no
		// /etc/hosts, only the loopback address. -d keeps it in the
		// foreground, logging to stderr. DNS rebinding protection, on in
		// many setups, would drop the agent's 127.0.0.1 but for the
		// example's rebind-domain-ok.
		return []string{bin, "-d", "--no-resolv", "--no-hosts", "--log-queries", "--stop-dns-rebind",
			"-p", strconv.Itoa(port), "--listen-address=127.0.0.1", "--bind-interfaces",
			"--conf-file=" + conf}
	})
	checkResolvesCluster(t, port)
}
