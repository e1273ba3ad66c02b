package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSOverTLSAndHTTPS starts a dev agent with a certificate made by
// `cairn tls ca create` and `cairn tls cert create`, DNS over TLS and the
// HTTPS API on, and checks that kdig over TLS (RFC 7858), curl resolving
// through DoH, and a DoH client's GET and POST (RFC 8484) get what dig
// gets over UDP.
func TestDNSOverTLSAndHTTPS(t *testing.T) {
	t.Parallel()
	requireDig(t)
	kdig := requireTool(t, "kdig", "knot-dnsutils")
	curl := requireTool(t, "curl", "curl")

	dir := t.TempDir()
	cairnIn(t, dir, "tls", "ca", "create")
	cairnIn(t, dir, "tls", "cert", "create", "-server")
	caFile := filepath.Join(dir, "cairn-agent-ca.pem")
	certFile, keyFile := filepath.Join(dir, "dc1-server-cairn-0.pem"), filepath.Join(dir, "dc1-server-cairn-0-key.pem")
	dotPort, httpsPort := freePort(t), freePort(t)
	conf := filepath.Join(dir, "tls.hcl")
	hcl := fmt.Sprintf(`tls {
  defaults { ca_file = %q  cert_file = %q  key_file = %q }
}
ports { https = %d  dns_tls = %d }
`, caFile, certFile, keyFile, httpsPort, dotPort)
	if err := os.WriteFile(conf, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "-dev", "-config-file", conf)
	mustCLI(t, a.httpAddr(), "services", "register", "-id", "web1", "-name", "web", "-port", "8080")
	mustCLI(t, a.httpAddr(), "services", "register", "-id", "web2", "-name", "web", "-port", "8081")

	udpSRV := shortLines(dig(t, a.dnsPort, "+short", "web.service.cluster", "SRV"))
	if len(udpSRV) != 2 {
		t.Fatalf("dig over UDP: got %q, want two SRV records", udpSRV)
	}
	udpA := shortLines(dig(t, a.dnsPort, "+short", "web.service.cluster", "A"))

	// DNS over TLS: kdig verifies the certificate against the CA.
	out := run(t, kdig, "+tls", "+tls-ca="+caFile, "+tls-hostname=localhost", "@127.0.0.1", "-p", strconv.Itoa(dotPort),
		"+short", "+time=5", "web.service.cluster", "SRV")
	if got := shortLines(out); !slices.Equal(got, udpSRV) {
		t.Errorf("kdig +tls: got %q, want UDP's %q", got, udpSRV)
	}
	// Without TLS the port does not answer DNS.
	if out, err := exec.Command(kdig, "+tcp", "@127.0.0.1", "-p", strconv.Itoa(dotPort), "+short", "+time=2", "+retry=0",
		"web.service.cluster", "SRV").CombinedOutput(); err == nil && len(shortLines(string(out))) > 0 {
		t.Errorf("plain TCP to the DNS over TLS port: got %q, want no answer", out)
	}

	// DNS over HTTPS: curl resolves the name through /dns-query only
	// (--doh-url), verifying the certificate with the CA, then connects.
	dohURL := "https://127.0.0.1:" + strconv.Itoa(httpsPort) + "/dns-query"
	out = run(t, curl, "-sS", "-o", "/dev/null", "-w", "%{remote_ip}", "--max-time", "10",
		"--doh-url", dohURL, "--cacert", caFile, "http://web.service.cluster:"+strconv.Itoa(a.httpPort)+"/v1/status/leader")
	if !slices.Contains(udpA, strings.TrimSpace(out)) {
		t.Errorf("curl --doh-url: connected to %q, want an address of dig's %q", out, udpA)
	}

	// A DoH client: GET and POST get the same SRV answers as UDP.
	client := dohClient(t, caFile)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		reply, resp := dohExchange(t, client, method, dohURL, "web.service.cluster.", dns.TypeSRV)
		var got []string
		for _, rr := range reply.Answer {
			if srv, ok := rr.(*dns.SRV); ok {
				got = append(got, fmt.Sprintf("%d %d %d %s", srv.Priority, srv.Weight, srv.Port, srv.Target))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, udpSRV) {
			t.Errorf("DoH %s: got %q, want UDP's %q", method, got, udpSRV)
		}
		if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "application/dns-message" || cc != "max-age=0" {
			t.Errorf("DoH %s: got Content-Type %q, Cache-Control %q; want application/dns-message, max-age=0 (TTL 0)", method, ct, cc)
		}
	}
	// /dns-query is not served on plain HTTP.
	q := new(dns.Msg)
	q.SetQuestion("web.service.cluster.", dns.TypeSRV)
	wire, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + a.httpAddr() + "/dns-query?dns=" + base64.RawURLEncoding.EncodeToString(wire))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/dns-query over plain HTTP: got %d, want 404", resp.StatusCode)
	}
}

// cairnIn runs the cairn CLI in dir (where `cairn tls` writes its files).
func cairnIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(cairnBin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// run runs a program, killed after 20s, and returns its stdout; failing
// to run or a non-zero exit fails the test.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// shortLines returns the records of +short output, sorted.
func shortLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, ";") {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// dohClient is an HTTP client trusting the CA of caFile.
func dohClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", caFile)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
}

// dohExchange asks name, qtype at url by GET or POST (RFC 8484, ID 0) and
// returns the reply, failing the test unless it is a 200 carrying one.
func dohExchange(t *testing.T, c *http.Client, method, url, name string, qtype uint16) (*dns.Msg, *http.Response) {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.Id = 0
	wire, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	var req *http.Request
	if method == http.MethodGet {
		req, err = http.NewRequest(method, url+"?dns="+base64.RawURLEncoding.EncodeToString(wire), nil)
	} else {
		req, err = http.NewRequest(method, url, bytes.NewReader(wire))
		if req != nil {
			req.Header.Set("Content-Type", "application/dns-message")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/dns-message")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("DoH %s: %v", method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DoH %s: got %d %q (%v), want 200", method, resp.StatusCode, body, err)
	}
	reply := new(dns.Msg)
	if err := reply.Unpack(body); err != nil {
		t.Fatalf("DoH %s: the reply does not unpack: %v", method, err)
	}
	return reply, resp
}
