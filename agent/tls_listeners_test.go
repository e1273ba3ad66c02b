package agent_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/porttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// withFile applies an HCL config file of the given content onto cfg, as
// -config-file does.
func withFile(t *testing.T, cfg config.Config, hcl string) config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := config.LoadFile(path, &cfg); err != nil {
		t.Fatalf("load %s: %v", hcl, err)
	}
	return cfg
}

// tlsFiles is the tls.defaults keys naming a server certificate of ca for
// dc1.
func tlsFiles(t *testing.T, ca *tlsutiltest.CA) string {
	cert, key := ca.Issue(t, true, "dc1")
	return fmt.Sprintf("ca_file = %q\n    cert_file = %q\n    key_file = %q", ca.CertFile, cert, key)
}

// tlsClient is a TLS client config trusting ca, verifying the name of a
// dc1 server's certificate, and presenting a client agent's certificate
// of ca when withCert.
func tlsClient(t *testing.T, ca *tlsutiltest.CA, withCert bool) *tls.Config {
	t.Helper()
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tc := &tls.Config{RootCAs: pool, ServerName: "server.dc1.cluster", MinVersion: tls.VersionTLS12}
	if withCert {
		certFile, keyFile := ca.Issue(t, false, "dc1")
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc
}

// httpsGet asks GET path of the HTTPS API at addr with tc and returns the
// status code, or the error.
func httpsGet(addr, path string, tc *tls.Config) (int, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("https://" + addr + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// rpcHandshake opens a TLS connection to the server port at addr with tc,
// as an agent does (the TLS byte, then the handshake), and returns the
// handshake's error. TLS 1.2 at most: in TLS 1.3 a server's refusal of
// the client's certificate (or of its lack of one) arrives after the
// client's handshake has returned, with the first read.
func rpcHandshake(addr string, tc *tls.Config) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte{rpc.TLSByte}); err != nil {
		return err
	}
	tc = tc.Clone()
	tc.MaxVersion = tls.VersionTLS12
	return tls.Client(conn, tc).Handshake()
}

// TestHTTPSOnly: with ports { http = -1 } the agent serves its API over
// HTTPS only: nothing listens on its client address but DNS and HTTPS,
// and HTTPS answers.
func TestHTTPSOnly(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	const clientAddr = "127.0.0.105" // this test's own: it lists every listener there
	cfg := agenttest.Config(t)
	cfg.ClientAddr = clientAddr
	cfg = withFile(t, cfg, `
ports {
  http = -1
  https = 0
}
tls {
  defaults {
    `+tlsFiles(t, ca)+`
  }
}
`)
	a := agenttest.Start(t, cfg)
	if addr := a.HTTPAddr(); addr != nil {
		t.Fatalf("plain HTTP: got a listener on %s, want none", addr)
	}
	httpsPort := a.HTTPSAddr().(*net.TCPAddr).Port
	dnsPort := a.DNSAddr().(*net.UDPAddr).Port
	want := []int{httpsPort, dnsPort}
	slices.Sort(want)
	if got := porttest.ListeningTCP(t, netip.MustParseAddr(clientAddr)); !slices.Equal(got, want) {
		t.Fatalf("TCP listeners on %s: got ports %v, want DNS and HTTPS only: %v", clientAddr, got, want)
	}
	code, err := httpsGet(a.HTTPSAddr().String(), "/v1/agent/self", tlsClient(t, ca, false))
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/agent/self over HTTPS: got %d, %v; want 200", code, err)
	}
}

// TestNoHTTPAPI: with plain HTTP and HTTPS both off (allowed, as in
// Consul) the agent starts and answers DNS, and serves no API.
func TestNoHTTPAPI(t *testing.T) {
	t.Parallel()
	cfg := withFile(t, agenttest.Config(t), "ports {\n  http = -1\n}\n")
	a := agenttest.Start(t, cfg)
	if a.HTTPAddr() != nil || a.HTTPSAddr() != nil {
		t.Fatalf("got HTTP %v and HTTPS %v, want neither", a.HTTPAddr(), a.HTTPSAddr())
	}
	waittest.For(t, tlsWait, "DNS to answer for the agent's own node", func() error {
		if rc := dnsRcode(t, a, "test.node.cluster"); rc != dns.RcodeSuccess {
			return fmt.Errorf("got %s, want NOERROR", dns.RcodeToString[rc])
		}
		return nil
	})
}

// TestVerifyIncomingPerListener: verify_incoming of tls.defaults holds
// for each listener unless its own block (tls.https, tls.internal_rpc)
// says otherwise, so client certificates can be required on the server
// port and not of HTTPS clients (browsers, curl, the UI, DoH), or the
// other way round.
func TestVerifyIncomingPerListener(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, blocks   string
		httpsNeedsCert bool
		rpcNeedsCert   bool
	}{
		{"https off", "https { verify_incoming = false }", false, true},
		{"internal_rpc off", "internal_rpc { verify_incoming = false }", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ca := tlsutiltest.NewCA(t)
			cfg := withFile(t, agenttest.ServerConfig(t, "s1", 1), `
ports { https = 0 }
tls {
  defaults {
    `+tlsFiles(t, ca)+`
    verify_incoming = true
  }
  `+tc.blocks+`
}
`)
			a := agenttest.Start(t, cfg)
			rpcAddr := net.JoinHostPort("127.0.0.1", fmt.Sprint(cfg.Ports.Server))

			code, err := httpsGet(a.HTTPSAddr().String(), "/v1/status/leader", tlsClient(t, ca, false))
			if answered := err == nil && code == http.StatusOK; answered == tc.httpsNeedsCert {
				t.Errorf("HTTPS, a client without a certificate: got %d, %v; want answered %v", code, err, !tc.httpsNeedsCert)
			}
			code, err = httpsGet(a.HTTPSAddr().String(), "/v1/status/leader", tlsClient(t, ca, true))
			if err != nil || code != http.StatusOK {
				t.Errorf("HTTPS, a client with a certificate of the CA: got %d, %v; want 200", code, err)
			}

			err = rpcHandshake(rpcAddr, tlsClient(t, ca, false))
			if refused := err != nil; refused != tc.rpcNeedsCert {
				t.Errorf("server port, a TLS client without a certificate: got handshake error %v; want refused %v", err, tc.rpcNeedsCert)
			}
			if err := rpcHandshake(rpcAddr, tlsClient(t, ca, true)); err != nil {
				t.Errorf("server port, a TLS client with a certificate of the CA: %v", err)
			}
		})
	}
}
