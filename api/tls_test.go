package api_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// clearEnv empties the variables DefaultConfig reads.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{api.AddressEnv, api.TokenEnv, api.HTTPSEnv, api.CACertEnv, api.ClientCertEnv, api.ClientKeyEnv, api.TLSServerNameEnv} {
		t.Setenv(v, "")
	}
}

func TestDefaultConfigTLSFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv(api.AddressEnv, "10.0.0.1:8501")
	t.Setenv(api.CACertEnv, "/ca.pem")
	t.Setenv(api.ClientCertEnv, "/cert.pem")
	t.Setenv(api.ClientKeyEnv, "/key.pem")
	t.Setenv(api.TLSServerNameEnv, "server.dc1.cluster")
	cfg := api.DefaultConfig()
	if want := (api.TLSConfig{CAFile: "/ca.pem", CertFile: "/cert.pem", KeyFile: "/key.pem", ServerName: "server.dc1.cluster"}); cfg.TLS != want {
		t.Errorf("got TLS %+v, want %+v", cfg.TLS, want)
	}
	for _, tc := range []struct{ ssl, want string }{
		{"", "http://10.0.0.1:8501"}, {"false", "http://10.0.0.1:8501"}, {"0", "http://10.0.0.1:8501"},
		{"true", "https://10.0.0.1:8501"}, {"1", "https://10.0.0.1:8501"},
	} {
		t.Setenv(api.HTTPSEnv, tc.ssl)
		cfg := api.DefaultConfig()
		cfg.TLS = api.TLSConfig{} // the files do not exist
		c, err := api.NewClient(cfg)
		if err != nil {
			t.Errorf("CAIRN_HTTP_SSL=%q: %v", tc.ssl, err)
			continue
		}
		if got := c.Address(); got != tc.want {
			t.Errorf("CAIRN_HTTP_SSL=%q: got address %q, want %q", tc.ssl, got, tc.want)
		}
	}
	// An address with a scheme keeps it.
	t.Setenv(api.HTTPSEnv, "true")
	t.Setenv(api.AddressEnv, "http://10.0.0.1:8500")
	if c, err := api.NewClient(api.Config{Address: "http://10.0.0.1:8500", Scheme: "https"}); err != nil || c.Address() != "http://10.0.0.1:8500" {
		t.Errorf("an http:// address with Scheme https: got %v, %v", c, err)
	}

	// A value that is no boolean is an error, not plain HTTP.
	t.Setenv(api.HTTPSEnv, "yes")
	_, err := api.NewClient(api.DefaultConfig())
	var ce *api.ConfigError
	if !errors.As(err, &ce) || ce.Field != api.HTTPSEnv || !strings.Contains(err.Error(), `"yes"`) {
		t.Errorf("CAIRN_HTTP_SSL=yes: got %v, want a *api.ConfigError naming it", err)
	}
}

func TestNewClientConfigErrors(t *testing.T) {
	ca := tlsutiltest.NewCA(t)
	cert, key := ca.Issue(t, false, "dc1")
	_, otherKey := ca.Issue(t, false, "dc1")
	https := func(tc api.TLSConfig) api.Config { return api.Config{Address: "https://127.0.0.1:8501", TLS: tc} }
	for _, tc := range []struct {
		name  string
		cfg   api.Config
		field string
		want  string
	}{
		{"bad scheme", api.Config{Address: "h:1", Scheme: "ftp"}, "Scheme", `"ftp"`},
		{"bad address", api.Config{Address: "ftp://h:1"}, "Address", `"ftp://h:1"`},
		{"token with a newline", api.Config{Address: "h:1", Token: "s3cr3t\n"}, "Token", "control character"},
		{"no CA file", https(api.TLSConfig{CAFile: "/nonexistent/ca.pem"}), "TLS.CAFile", "/nonexistent/ca.pem"},
		{"CA file without certificate", https(api.TLSConfig{CAFile: key}), "TLS.CAFile", "holds no PEM certificate"},
		{"cert without key", https(api.TLSConfig{CertFile: cert}), "TLS.KeyFile", "missing"},
		{"key without cert", https(api.TLSConfig{KeyFile: key}), "TLS.CertFile", "missing"},
		{"no cert file", https(api.TLSConfig{CertFile: "/nonexistent/c.pem", KeyFile: key}), "TLS.CertFile", "/nonexistent/c.pem"},
		{"key as cert", https(api.TLSConfig{CertFile: key, KeyFile: key}), "TLS.CertFile", "holds no PEM certificate"},
		{"no key file", https(api.TLSConfig{CertFile: cert, KeyFile: "/nonexistent/k.pem"}), "TLS.KeyFile", "/nonexistent/k.pem"},
		{"key of another cert", https(api.TLSConfig{CertFile: cert, KeyFile: otherKey}), "TLS.KeyFile", "does not match"},
		{"TLS with a caller's client", api.Config{Address: "https://h:1", HTTPClient: &http.Client{}, TLS: api.TLSConfig{CAFile: ca.CertFile}}, "TLS", "HTTPClient"},
	} {
		_, err := api.NewClient(tc.cfg)
		var ce *api.ConfigError
		switch {
		case !errors.As(err, &ce):
			t.Errorf("%s: got %v (%T), want a *api.ConfigError", tc.name, err, err)
		case ce.Field != tc.field || !strings.Contains(ce.Reason, tc.want):
			t.Errorf("%s: got %q, want field %s and a reason with %q", tc.name, err, tc.field, tc.want)
		case strings.Contains(err.Error(), "s3cr3t"):
			t.Errorf("%s: the error %q shows the token", tc.name, err)
		}
	}
	_, err := api.NewClient(https(api.TLSConfig{CAFile: "/nonexistent/ca.pem"}))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want it to wrap fs.ErrNotExist", err)
	}
	// TLS settings are not read for plain HTTP.
	if _, err := api.NewClient(api.Config{Address: "http://h:1", TLS: api.TLSConfig{CAFile: "/nonexistent/ca.pem"}}); err != nil {
		t.Errorf("TLS files with an http address: %v", err)
	}
}

func TestHTTPSWithClientCertificate(t *testing.T) {
	ca := tlsutiltest.NewCA(t)
	serverCert, serverKey := ca.Issue(t, true, "dc1")
	pair, err := tls.LoadX509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	var (
		mu                  sync.Mutex
		gotToken, gotClient string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotToken = r.Header.Get("X-Consul-Token")
		gotClient = r.TLS.PeerCertificates[0].Subject.CommonName
		mu.Unlock()
		io.WriteString(w, `"10.0.0.1:8300"`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	t.Cleanup(srv.Close)

	cert, key := ca.Issue(t, false, "dc1")
	c, err := api.NewClient(api.Config{
		Address: strings.TrimPrefix(srv.URL, "https://"), Scheme: "https", Token: "tok",
		TLS: api.TLSConfig{CAFile: ca.CertFile, CertFile: cert, KeyFile: key, ServerName: "server.dc1.cluster"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if leader, err := c.Status().Leader(context.Background()); err != nil || leader != "10.0.0.1:8300" {
		t.Fatalf("Leader over HTTPS: got %q, %v", leader, err)
	}
	mu.Lock()
	if gotToken != "tok" || gotClient != "client.dc1.cluster" {
		t.Errorf("the agent saw token %q from %q, want tok from client.dc1.cluster", gotToken, gotClient)
	}
	mu.Unlock()

	// Without the CA the agent's certificate is refused, and the error
	// points at the TLS settings.
	c, err = api.NewClient(api.Config{Address: srv.URL, TLS: api.TLSConfig{CertFile: cert, KeyFile: key}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Status().Leader(context.Background())
	var ue *api.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "unknown authority") || !strings.Contains(err.Error(), "-ca-file") {
		t.Errorf("without the CA: got %v, want an *api.UnreachableError about the authority and the TLS settings", err)
	}
}
