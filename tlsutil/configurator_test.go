package tlsutil_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/tlsutil"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// result is what one side of a handshake saw.
type result struct {
	state tls.ConnectionState
	err   error
}

// handshake runs a TLS handshake between the two configs over a pipe.
// After it, the server writes a byte the client reads, so that a refusal
// the server sends after the client's last handshake message (TLS 1.3
// sends a refused client certificate's alert then) reaches the client's
// result too.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) (server, client result) {
	t.Helper()
	sc, cc := net.Pipe()
	deadline := time.Now().Add(5 * time.Second)
	_ = sc.SetDeadline(deadline)
	_ = cc.SetDeadline(deadline)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer sc.Close()
		s := tls.Server(sc, serverCfg)
		server.err = s.Handshake()
		server.state = s.ConnectionState()
		if server.err == nil {
			_, server.err = s.Write([]byte{'k'})
		}
	})
	c := tls.Client(cc, clientCfg)
	client.err = c.Handshake()
	client.state = c.ConnectionState()
	if client.err == nil {
		_, client.err = io.ReadFull(c, make([]byte, 1))
	}
	cc.Close()
	wg.Wait()
	return server, client
}

func leafCN(r result) string {
	if len(r.state.PeerCertificates) == 0 {
		return ""
	}
	return r.state.PeerCertificates[0].Subject.CommonName
}

func TestServerHostnameVerification(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	server1 := ca.Configurator(t, true, "dc1")
	server2 := ca.Configurator(t, true, "dc2")
	client1 := ca.Configurator(t, false, "dc1")

	for _, tc := range []struct {
		name     string
		server   *tlsutil.Configurator
		dialer   *tlsutil.Configurator
		dc       string
		ok       bool
		isServer bool // what PeerIsServer says of the dialer, for dc1
	}{
		{"dc1 server dials dc1 server", server1, server1, "dc1", true, true},
		{"client dials dc1 server", server1, client1, "", true, false},
		{"dc2 server where dc1 is expected", server2, client1, "dc1", false, false},
		{"dc2 server where dc2 is expected", server2, server1, "dc2", true, true},
		{"client cert served as a dc1 server", client1, server1, "dc1", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := handshake(t, tc.server.IncomingRPC(), tc.dialer.OutgoingRPC(tc.dc))
			if ok := s.err == nil && c.err == nil; ok != tc.ok {
				t.Fatalf("handshake: got server error %v, client error %v; want success %v", s.err, c.err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if got := tc.server.PeerIsServer(s.state, "dc1"); got != tc.isServer {
				t.Errorf("PeerIsServer(dialer %s, dc1): got %v, want %v", leafCN(s), got, tc.isServer)
			}
			if tc.server.PeerIsServer(s.state, "dc9") {
				t.Errorf("PeerIsServer(dialer %s, dc9): got true", leafCN(s))
			}
		})
	}
}

func TestWithoutHostnameVerification(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfg := ca.Config(t, false, "dc1")
	cfg.VerifyServerHostname = false
	client, err := tlsutil.NewConfigurator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Any certificate of the CA passes, a client agent's too: the reason
	// to turn VerifyServerHostname on.
	for _, peer := range []*tlsutil.Configurator{ca.Configurator(t, true, "dc2"), ca.Configurator(t, false, "dc1")} {
		if s, c := handshake(t, peer.IncomingRPC(), client.OutgoingRPC("dc1")); s.err != nil || c.err != nil {
			t.Errorf("handshake: server %v, client %v", s.err, c.err)
		}
	}
	// Without VerifyOutgoing either, outgoing connections are plain.
	cfg.VerifyOutgoing = false
	plain, err := tlsutil.NewConfigurator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.OutgoingRPC("dc1"); got != nil {
		t.Errorf("OutgoingRPC without VerifyOutgoing: got a config, want nil")
	}
}

func TestOtherCARefused(t *testing.T) {
	t.Parallel()
	ours, theirs := tlsutiltest.NewCA(t), tlsutiltest.NewCA(t)
	server := ours.Configurator(t, true, "dc1")

	// A client of another CA refuses our server.
	s, c := handshake(t, server.IncomingRPC(), theirs.Configurator(t, true, "dc1").OutgoingRPC("dc1"))
	if c.err == nil {
		t.Errorf("client of another CA: handshake succeeded, want the server's certificate refused")
	}
	// A client trusting our CA with a certificate of another is refused
	// by the server.
	cfg := ours.Config(t, false, "dc1")
	cfg.CertFile, cfg.KeyFile = theirs.Issue(t, false, "dc1")
	cfg.CAFile = ""
	cfg.VerifyIncoming = false
	mixedCfg := cfg
	mixedCfg.CAFile = ours.CertFile
	if _, err := tlsutil.NewConfigurator(mixedCfg); err == nil || !strings.Contains(err.Error(), "does not verify against CAFile") {
		t.Errorf("a certificate of another CA than CAFile: got %v, want it refused at load", err)
	}
	out := ours.Configurator(t, false, "dc1").OutgoingRPC("dc1")
	theirCert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	out.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &theirCert, nil }
	s, c = handshake(t, server.IncomingRPC(), out)
	if s.err == nil || c.err == nil {
		t.Errorf("client certificate of another CA: got server error %v, client error %v; want both to fail", s.err, c.err)
	}
}

func TestVerifyIncomingOff(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfg := ca.Config(t, true, "dc1")
	cfg.VerifyIncoming = false
	server, err := tlsutil.NewConfigurator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if server.RequireTLS() || !server.Enabled() {
		t.Errorf("got RequireTLS %v, Enabled %v; want false, true", server.RequireTLS(), server.Enabled())
	}
	// A dialer without a certificate gets in, but is nobody.
	anon := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "server.dc1.cluster"}
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	anon.RootCAs.AppendCertsFromPEM(caPEM)
	s, c := handshake(t, server.IncomingRPC(), anon)
	if s.err != nil || c.err != nil {
		t.Fatalf("handshake without a client certificate: server %v, client %v", s.err, c.err)
	}
	if server.PeerIsServer(s.state, "") {
		t.Error("PeerIsServer of a peer without a certificate: got true")
	}
	// A server that dials presents its certificate, verified.
	s, _ = handshake(t, server.IncomingRPC(), ca.Configurator(t, true, "dc1").OutgoingRPC(""))
	if !server.PeerIsServer(s.state, "") {
		t.Error("PeerIsServer of a dc1 server with VerifyIncoming off: got false")
	}
}

// writeCert issues a new certificate of ca for a dc1 server and copies
// it over certFile and keyFile, with a modification time of its own.
func writeCert(t *testing.T, ca *tlsutiltest.CA, certFile, keyFile string, mod time.Time) {
	t.Helper()
	newCert, newKey := ca.Issue(t, true, "dc1")
	for _, f := range [][2]string{{newCert, certFile}, {newKey, keyFile}} {
		data, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f[1], mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

func serial(t *testing.T, r result) string {
	t.Helper()
	if r.err != nil || len(r.state.PeerCertificates) == 0 {
		t.Fatalf("handshake: %v", r.err)
	}
	return r.state.PeerCertificates[0].SerialNumber.String()
}

func TestReload(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfg := ca.Config(t, true, "dc1")
	server, err := tlsutil.NewConfigurator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dialer := ca.Configurator(t, true, "dc1")
	// Configs taken once, as a listener and a Raft layer keep theirs.
	incoming, outgoing := server.IncomingRPC(), dialer.OutgoingRPC("dc1")
	_, c := handshake(t, incoming, outgoing)
	first := serial(t, c)

	writeCert(t, ca, cfg.CertFile, cfg.KeyFile, time.Now().Add(time.Hour))
	if err := server.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	_, c = handshake(t, incoming, outgoing)
	second := serial(t, c)
	if second == first {
		t.Fatalf("after Reload the handshake still sees serial %s", first)
	}

	// Invalid files: an error naming the file, and the old certificate
	// stays.
	if err := os.WriteFile(cfg.CertFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := server.Reload(); err == nil || !strings.Contains(err.Error(), "CertFile") {
		t.Errorf("Reload of a bad CertFile: got %v, want an error naming CertFile", err)
	}
	if err := os.Remove(cfg.CAFile); err != nil {
		t.Fatal(err)
	}
	if err := server.Reload(); err == nil || !strings.Contains(err.Error(), "CAFile") {
		t.Errorf("Reload without CAFile: got %v, want an error naming CAFile", err)
	}
	_, c = handshake(t, incoming, outgoing)
	if got := serial(t, c); got != second {
		t.Errorf("after failed reloads: got serial %s, want %s (the last good one)", got, second)
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfg := ca.Config(t, true, "dc1")
	server, err := tlsutil.NewConfigurator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dialer := ca.Configurator(t, true, "dc1")
	incoming, outgoing := server.IncomingRPC(), dialer.OutgoingRPC("dc1")
	_, c := handshake(t, incoming, outgoing)
	first := serial(t, c)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { server.Watch(ctx, 10*time.Millisecond, nil) })
	defer wg.Wait()
	defer cancel()

	writeCert(t, ca, cfg.CertFile, cfg.KeyFile, time.Now().Add(time.Hour))
	waittest.For(t, 5*time.Second, "the watched certificate is served", func() error {
		if _, c := handshake(t, incoming, outgoing); serial(t, c) == first {
			return errors.New("still the first certificate")
		}
		return nil
	})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	good := ca.Config(t, true, "dc1")
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if err := tlsutil.DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey := tlsutiltest.NewCA(t).Issue(t, true, "dc1")
	for _, tc := range []struct {
		name   string
		change func(*tlsutil.Config)
		want   []string
	}{
		{"VerifyIncoming without files", func(c *tlsutil.Config) { c.CAFile, c.CertFile, c.KeyFile = "", "", "" },
			[]string{"VerifyIncoming: needs CAFile", "VerifyIncoming: needs CertFile", "VerifyOutgoing: needs CAFile", "VerifyServerHostname: needs CAFile"}},
		{"CertFile without KeyFile", func(c *tlsutil.Config) { c.KeyFile = "" }, []string{"KeyFile: must be set with CertFile"}},
		{"KeyFile without CertFile", func(c *tlsutil.Config) { c.CertFile = "" }, []string{"CertFile: must be set with KeyFile"}},
		{"missing CA", func(c *tlsutil.Config) { c.CAFile = "/nonexistent/ca.pem" }, []string{"CAFile", "no such file"}},
		{"invalid CA", func(c *tlsutil.Config) { c.CAFile = garbage }, []string{"CAFile", "certificate 1"}},
		{"key of another certificate", func(c *tlsutil.Config) { c.KeyFile = otherKey }, []string{"CertFile", "KeyFile", "private key does not match"}},
		{"certificate of another CA", func(c *tlsutil.Config) { c.CertFile, c.KeyFile = otherCert, otherKey }, []string{"does not verify against CAFile"}},
		{"TLS 1.1", func(c *tlsutil.Config) { c.MinVersion = "tls11" }, []string{"MinVersion", "deprecated"}},
		{"bad version", func(c *tlsutil.Config) { c.MinVersion = "ssl3" }, []string{"MinVersion", "not a TLS version"}},
		{"no datacenter", func(c *tlsutil.Config) { c.Datacenter = "" }, []string{"Datacenter: must be set"}},
		{"dotted datacenter", func(c *tlsutil.Config) { c.Datacenter = "a.b" }, []string{"Datacenter", "one DNS label"}},
		{"bad domain", func(c *tlsutil.Config) { c.Domain = "a b" }, []string{"Domain"}},
	} {
		cfg := good
		tc.change(&cfg)
		err := cfg.Validate()
		if err == nil {
			t.Errorf("%s: Validate: got nil", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %q, want it to contain %q", tc.name, err, w)
			}
		}
		if _, nerr := tlsutil.NewConfigurator(cfg); nerr == nil {
			t.Errorf("%s: NewConfigurator accepted what Validate refused", tc.name)
		}
	}
	for _, v := range []string{"", "tls12", "TLS13", "TLSv1_2", "tlsv1_3"} {
		if _, err := tlsutil.ParseMinVersion(v); err != nil {
			t.Errorf("ParseMinVersion(%q): %v", v, err)
		}
	}
}

func TestNotEnabled(t *testing.T) {
	t.Parallel()
	c, err := tlsutil.NewConfigurator(tlsutil.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.Enabled() || c.RequireTLS() {
		t.Errorf("got Enabled %v, RequireTLS %v; want false, false", c.Enabled(), c.RequireTLS())
	}
	if c.IncomingRPC() != nil || c.IncomingHTTPS() != nil || c.OutgoingRPC("dc1") != nil {
		t.Error("a configurator without files hands out TLS configs for RPC or an HTTPS listener")
	}
	if c.OutgoingHTTPS() == nil {
		t.Error("OutgoingHTTPS: got nil, want a config with the system's roots")
	}
}

func TestHTTPS(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	// A client agent serves HTTPS with its client certificate.
	agent := ca.Configurator(t, false, "dc1")
	cli := ca.Configurator(t, false, "dc1")
	out := cli.OutgoingHTTPS()
	out.ServerName = "localhost"
	if s, c := handshake(t, agent.IncomingHTTPS(), out); s.err != nil || c.err != nil {
		t.Errorf("HTTPS with a client certificate: server %v, client %v", s.err, c.err)
	}
	// VerifyIncoming: a CLI without a certificate is refused.
	bare := &tls.Config{RootCAs: out.RootCAs, ServerName: "localhost"}
	if s, _ := handshake(t, agent.IncomingHTTPS(), bare); s.err == nil {
		t.Error("HTTPS with VerifyIncoming: a client without a certificate got in")
	}
}
