package e2e

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSSECUnboundValidates signs the zone with a key made by "cairn
// dnssec keygen" and checks, with Unbound as the validating resolver and
// the DS that keygen printed as its trust anchor, that what a client agent
// answers validates: addresses, SRV, a name that does not exist and a type
// a name lacks (the compact denials of RFC 9824). The client agent holds no
// key of its own; it fetches the servers', which is the path applications
// rely on. Then the same answers, changed on the way, and a trust anchor of
// another key, must both make Unbound fail rather than pass them on.
func TestDNSSECUnboundValidates(t *testing.T) {
	t.Parallel()
	requireDig(t)
	bin := requireTool(t, "unbound", "unbound")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "cluster.key")
	anchor := dsLine(t, mustCLI(t, "", "dnssec", "keygen", "-out", keyFile))
	serverConf := writeFile(t, dir, "server.hcl",
		"dns_config { dnssec {\n  enabled = true\n  key_file = "+strconv.Quote(keyFile)+"\n} }\n")
	clientConf := writeFile(t, dir, "client.hcl", "dns_config { dnssec { enabled = true } }\n")

	lan := strconv.Itoa(freePort(t))
	agents := launchTogether(t, map[string][]string{
		"s1": {"-server", "-bootstrap-expect", "1", "-node", "s1", "-data-dir", t.TempDir(),
			"-serf-lan-port", lan, "-config-file", serverConf},
		"c1": {"-node", "c1", "-data-dir", t.TempDir(), "-serf-lan-port", strconv.Itoa(freePort(t)),
			"-retry-join", "127.0.0.1:" + lan, "-retry-interval", "1s", "-config-file", clientConf},
	})
	client := agents["c1"]
	// Until the client has fetched the key it answers unsigned, which
	// Unbound would hold as bogus for a while: no resolver may ask before.
	waitOutput(t, client, "signing DNS answers")
	if got := dsLine(t, mustCLI(t, "", "dnssec", "ds", "-dns-addr", "127.0.0.1:"+strconv.Itoa(client.dnsPort))); got != anchor {
		t.Fatalf("DS of the key the client serves: got %q, want keygen's %q", got, anchor)
	}
	mustCLI(t, client.httpAddr(), "services", "register", "-name", "web", "-port", "8080")
	// The registration reaches the servers asynchronously; a resolver
	// asking before would cache the denial.
	waitDig(t, client.dnsPort, "127.0.0.1", "web.service.dc1.cluster", "A", "+short")

	// Unbound asks over UDP, falling back to TCP on a truncated answer;
	// with tcp-upstream it asks over TCP only, the agent's other listener.
	for _, transport := range []struct{ name, option string }{
		{"UDP", ""},
		{"TCP", "tcp-upstream: yes"},
	} {
		t.Run("validated over "+transport.name, func(t *testing.T) {
			checkValidatesCluster(t, startValidatingUnbound(t, bin, anchor, client.dnsPort, transport.option))
		})

		// A proxy between Unbound and the agent changes every address in
		// the answer section and nothing else. Unbound must refuse the
		// changed answer as bogus while it still validates an untouched
		// one that comes through the same proxy, so the failure is the
		// signature's doing and not the proxy's.
		t.Run("tampered over "+transport.name, func(t *testing.T) {
			proxy := startTamperProxy(t, "127.0.0.1:"+strconv.Itoa(client.dnsPort), net.IPv4(127, 0, 0, 2))
			port := startValidatingUnbound(t, bin, anchor, proxy, transport.option)
			out := dig(t, port, "web.service.dc1.cluster", "A", "+dnssec")
			checkRejected(t, "web.service.dc1.cluster A, changed", out, "6 (DNSSEC Bogus)")
			// With checking disabled Unbound hands over what it got: the
			// changed address, which shows the proxy did its work.
			if out := dig(t, port, "web.service.dc1.cluster", "A", "+cd", "+short"); strings.TrimSpace(out) != "127.0.0.2" {
				t.Errorf("web.service.dc1.cluster A +cd through the proxy: got %q, want the changed 127.0.0.2", out)
			}
			out = dig(t, port, "web.service.dc1.cluster", "SRV", "+dnssec")
			checkValidated(t, "web.service.dc1.cluster SRV, unchanged", out)
		})
	}

	t.Run("wrong trust anchor", func(t *testing.T) {
		other := dsLine(t, mustCLI(t, "", "dnssec", "keygen", "-out", filepath.Join(t.TempDir(), "other.key")))
		port := startValidatingUnbound(t, bin, other, client.dnsPort, "")
		// No DNSKEY of the zone matches the anchor, so nothing under it
		// can be trusted, answer or denial. The first failure is the
		// missing key; after it Unbound holds the zone's keys as bogus.
		for _, name := range []string{"web.service.dc1.cluster", "nope.service.dc1.cluster"} {
			checkRejected(t, name+" A, another key's anchor", dig(t, port, name, "A", "+dnssec"),
				"9 (DNSKEY Missing)", "6 (DNSSEC Bogus)")
		}
	})
}

// TestDNSSECAutoKey has the server make its key (auto = true): nobody
// holds a key file, so the trust anchor comes from "cairn dnssec ds"
// asking the agent's DNS, and Unbound must validate with it.
func TestDNSSECAutoKey(t *testing.T) {
	t.Parallel()
	requireDig(t)
	bin := requireTool(t, "unbound", "unbound")
	conf := writeFile(t, t.TempDir(), "cairn.hcl", "dns_config { dnssec {\n  enabled = true\n  auto = true\n} }\n")
	a := startAgent(t, "-dev", "-config-file", conf)
	waitOutput(t, a, "signing DNS answers")
	anchor := dsLine(t, mustCLI(t, "", "dnssec", "ds", "-dns-addr", "127.0.0.1:"+strconv.Itoa(a.dnsPort)))
	// The key the leader made and logged is the one DNS serves.
	if tag := strings.Fields(anchor)[4]; !strings.Contains(a.out.String(), "key_tag="+tag+" ") {
		t.Errorf("DS %q: key tag %s is not the one the agent logged:\n%s", anchor, tag, a.out.String())
	}
	mustCLI(t, a.httpAddr(), "services", "register", "-name", "web", "-port", "8080")
	waitDig(t, a.dnsPort, "127.0.0.1", "web.service.dc1.cluster", "A", "+short")

	port := startValidatingUnbound(t, bin, anchor, a.dnsPort, "")
	out := dig(t, port, "web.service.dc1.cluster", "A", "+dnssec")
	checkValidated(t, "web.service.dc1.cluster A", out)
	if !answerHas(out, "A", "127.0.0.1") {
		t.Errorf("web.service.dc1.cluster A: the answer lacks 127.0.0.1:\n%s", out)
	}
	checkValidated(t, "nope.service.dc1.cluster A", dig(t, port, "nope.service.dc1.cluster", "A", "+dnssec"))
}

// dsLine returns the DS record from the "DS: " line that "cairn dnssec
// keygen" and "cairn dnssec ds" print, in the form Unbound's trust-anchor
// takes.
func dsLine(t *testing.T, out string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if ds, ok := strings.CutPrefix(strings.TrimSpace(line), "DS: "); ok {
			if f := strings.Fields(ds); len(f) != 8 || f[3] != "DS" {
				t.Fatalf("malformed DS line %q", line)
			}
			return ds
		}
	}
	t.Fatalf("no DS line in:\n%s", out)
	return ""
}

// writeFile writes text to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return p
}

// startValidatingUnbound runs Unbound with a stub zone sending cluster. to
// 127.0.0.1@upstreamPort and the DS record anchor as the zone's trust
// anchor (where the unsigned example has domain-insecure), and the server
// option extra (may be empty), and returns its port.
func startValidatingUnbound(t *testing.T, bin, anchor string, upstreamPort int, extra string) int {
	t.Helper()
	stub := "server:\n" +
		"    do-not-query-localhost: no\n" +
		"    private-domain: \"cluster.\"\n" +
		"    trust-anchor: \"" + anchor + "\"\n" +
		// Says in the log why an answer is bogus ("signature crypto
		// failed", "no signatures", …), shown should the test fail.
		"    val-log-level: 2\n" +
		// Puts that reason into the SERVFAIL too (EDE 6, DNSSEC Bogus), so
		// that the test can tell a rejected answer from one that never came.
		"    ede: yes\n" +
		"stub-zone:\n" +
		"    name: \"cluster.\"\n" +
		"    stub-addr: 127.0.0.1@" + strconv.Itoa(upstreamPort) + "\n"
	return startUnbound(t, bin, stub, extra)
}

// checkValidatesCluster asks Unbound on port, validating cluster. with the
// agent's key, for names that exist and names that do not, and checks that
// each answer, or denial, is validated (AD) and holds what the agent has.
func checkValidatesCluster(t *testing.T, port int) {
	t.Helper()
	for _, tc := range []struct {
		name, qtype, want string // want: the last field of an answer record, "" for none
	}{
		{"web.service.dc1.cluster", "A", "127.0.0.1"},
		{"web.service.dc1.cluster", "SRV", "c1.node.dc1.cluster."},
		{"web.service.cluster", "A", "127.0.0.1"},
		{"c1.node.dc1.cluster", "A", "127.0.0.1"},
		{"web.service.dc1.cluster", "AAAA", ""}, // NODATA: an NSEC listing A and SRV
		{"nope.service.dc1.cluster", "A", ""},   // NXDOMAIN, told as an NSEC with NXNAME
		{"dc1.cluster", "A", ""},                // an empty non-terminal
	} {
		out := dig(t, port, tc.name, tc.qtype, "+dnssec")
		checkValidated(t, tc.name+" "+tc.qtype, out)
		if tc.want != "" && !answerHas(out, tc.qtype, tc.want) {
			t.Errorf("%s %s: the answer lacks %s:\n%s", tc.name, tc.qtype, tc.want, out)
		}
		if tc.want == "" && len(digSection(out, "ANSWER")) != 0 {
			t.Errorf("%s %s: got an answer, want none:\n%s", tc.name, tc.qtype, out)
		}
	}
}

// waitDig asks the server on port the question args until the output holds
// want, up to readyTimeout.
func waitDig(t *testing.T, port int, want string, args ...string) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for got := ""; !strings.Contains(got, want); got = dig(t, port, args...) {
		if time.Now().After(deadline) {
			t.Fatalf("dig %s: got %q after %v, want %q", strings.Join(args, " "), got, readyTimeout, want)
		}
		time.Sleep(pollInterval)
	}
}

// digFlags returns the header flags of dig's output ("qr", "rd", "ad", …).
func digFlags(out string) []string {
	_, rest, ok := strings.Cut(out, ";; flags: ")
	if !ok {
		return nil
	}
	flags, _, _ := strings.Cut(rest, ";")
	return strings.Fields(flags)
}

// answerHas reports whether the answer section has a record of type qtype
// whose data ends in want.
func answerHas(out, qtype, want string) bool {
	for _, rr := range digSection(out, "ANSWER") {
		if len(rr) >= 5 && rr[3] == qtype && rr[len(rr)-1] == want {
			return true
		}
	}
	return false
}

// checkValidated fails the test unless Unbound answered without an error
// and set AD: it proved the answer, or the denial, from the trust anchor.
// A denial may arrive as NOERROR (the compact answer as the agent gave it)
// or NXDOMAIN (should Unbound turn NXNAME back into the rcode).
func checkValidated(t *testing.T, what, out string) {
	t.Helper()
	if s := digStatus(out); s != "NOERROR" && s != "NXDOMAIN" {
		t.Errorf("%s: got status %q, want NOERROR or NXDOMAIN:\n%s", what, s, out)
	} else if !slices.Contains(digFlags(out), "ad") {
		t.Errorf("%s: got flags %v, want ad (validated):\n%s", what, digFlags(out), out)
	}
}

// checkRejected fails the test unless Unbound answered SERVFAIL with one
// of the extended errors edes ("6 (DNSSEC Bogus)"): validation failed,
// rather than the question going unanswered.
func checkRejected(t *testing.T, what, out string, edes ...string) {
	t.Helper()
	ok := digStatus(out) == "SERVFAIL" && slices.ContainsFunc(edes, func(ede string) bool {
		return strings.Contains(out, "; EDE: "+ede)
	})
	if !ok {
		t.Errorf("%s: got status %q, want SERVFAIL with EDE %s:\n%s", what, digStatus(out), strings.Join(edes, " or "), out)
	}
}

// startTamperProxy runs a DNS proxy on a loopback port, UDP and TCP, that
// forwards each question to upstream and replaces the address of every A
// record in the answer section with addr, leaving the rest, signatures
// included, as they came. It returns the port; a cleanup stops it.
func startTamperProxy(t *testing.T, upstream string, addr net.IP) int {
	t.Helper()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		// Ask upstream over the transport the question came on, so that a
		// truncated UDP answer sends Unbound to TCP as it would without us.
		c := &dns.Client{Net: w.LocalAddr().Network(), Timeout: 2 * time.Second}
		resp, _, err := c.Exchange(req, upstream)
		if err != nil {
			return // no answer; Unbound retries or gives up
		}
		for _, rr := range resp.Answer {
			if a, ok := rr.(*dns.A); ok {
				a.A = addr
			}
		}
		_ = w.WriteMsg(resp) // Unbound retries a lost answer
	})
	pc, ln := listenUDPAndTCP(t)
	servers := []*dns.Server{
		{PacketConn: pc, Handler: handler},
		{Listener: ln, Handler: handler},
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			if err := s.ActivateAndServe(); err != nil {
				t.Errorf("tamper proxy: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Shutdown() // fails only for a server that never started, which Errorf reported
		}
		wg.Wait()
	})
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// listenUDPAndTCP binds a loopback UDP socket on a free port and a TCP
// listener on the same port, trying a few ports should another process
// hold the TCP one.
func listenUDPAndTCP(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	const attempts = 5
	var err error
	for range attempts {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			break
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			return pc, ln
		}
		pc.Close()
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	t.Fatalf("listen on a loopback port for UDP and TCP: %v", err)
	return nil, nil
}
