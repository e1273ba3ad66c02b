package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/tlsutil"
)

// These tests change the working directory (t.Chdir), so none of them
// runs in parallel.

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: not PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

func wantMode(t *testing.T, file string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: got mode %v, want %v", file, got, want)
	}
}

func TestTLSCACreate(t *testing.T) {
	t.Chdir(t.TempDir())
	stdout, stderr, code := runCLI(t, "tls", "ca", "create", "-domain", "corp", "-days", "30", "-name-constraint")
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	if want := "==> Saved cairn-agent-ca.pem\n==> Saved cairn-agent-ca-key.pem\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	ca := readCert(t, "cairn-agent-ca.pem")
	if !ca.IsCA || !slices.Equal(ca.PermittedDNSDomains, []string{"corp", "localhost"}) {
		t.Errorf("got IsCA %v, permitted domains %q; want a CA constrained to corp and localhost", ca.IsCA, ca.PermittedDNSDomains)
	}
	wantMode(t, "cairn-agent-ca.pem", 0o644)
	wantMode(t, "cairn-agent-ca-key.pem", 0o600)

	// Never over an existing CA.
	before, err := os.ReadFile("cairn-agent-ca-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, "tls", "ca", "create")
	wantError(t, stderr, code, "cairn-agent-ca.pem exists")
	if stdout != "" {
		t.Errorf("got stdout %q, want none", stdout)
	}
	after, err := os.ReadFile("cairn-agent-ca-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Error("the CA key was replaced")
	}
}

func TestTLSCertCreate(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, stderr, code := runCLI(t, "tls", "ca", "create"); code != 0 {
		t.Fatalf("ca create: exit code %d, stderr %q", code, stderr)
	}
	for _, tc := range []struct {
		args      []string
		wantFile  string
		wantNames string
	}{
		{[]string{"-server"}, "dc1-server-cairn-0", "server.dc1.cluster, localhost, 127.0.0.1"},
		{[]string{"-server"}, "dc1-server-cairn-1", "server.dc1.cluster, localhost, 127.0.0.1"},
		{[]string{"-client"}, "dc1-client-cairn-0", "client.dc1.cluster, localhost, 127.0.0.1"},
		{[]string{"-server", "-dc", "dc2", "-additional-dnsname", "cairn.example.com", "-additional-ipaddress", "10.1.2.3",
			"-additional-ipaddress", "::1"},
			"dc2-server-cairn-0", "server.dc2.cluster, localhost, cairn.example.com, 127.0.0.1, 10.1.2.3, ::1"},
		{[]string{"-server", "-dc", "dc2", "-node", "s1", "-additional-dnsname", "s1.example.com"},
			"dc2-server-cairn-1", "server.dc2.cluster, localhost, s1.server.dc2.cluster, s1.example.com, 127.0.0.1"},
	} {
		stdout, stderr, code := runCLI(t, append([]string{"tls", "cert", "create"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit code %d, stderr %q", tc.args, code, stderr)
		}
		want := "==> Using cairn-agent-ca.pem and cairn-agent-ca-key.pem\n" +
			"==> Saved " + tc.wantFile + ".pem\n==> Saved " + tc.wantFile + "-key.pem\n" +
			"==> Valid for " + tc.wantNames + "\n"
		if stdout != want {
			t.Errorf("%v: got stdout %q, want %q", tc.args, stdout, want)
		}
		wantMode(t, tc.wantFile+".pem", 0o644)
		wantMode(t, tc.wantFile+"-key.pem", 0o600)
	}

	// The files make a working TLS configuration.
	cfg := tlsutil.DefaultConfig()
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "cairn-agent-ca.pem", "dc2-server-cairn-0.pem", "dc2-server-cairn-0-key.pem"
	cfg.VerifyIncoming, cfg.VerifyOutgoing, cfg.VerifyServerHostname = true, true, true
	if err := cfg.Validate(); err != nil {
		t.Errorf("a configuration of the files made: %v", err)
	}
	if cert := readCert(t, "dc1-client-cairn-0.pem"); cert.Subject.CommonName != "client.dc1.cluster" {
		t.Errorf("client certificate: got CN %q", cert.Subject.CommonName)
	}

	// Another CA, named by -ca and -key.
	if err := os.Mkdir("other", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir("other")
	if _, stderr, code := runCLI(t, "tls", "ca", "create"); code != 0 {
		t.Fatalf("ca create: exit code %d, stderr %q", code, stderr)
	}
	_, stderr, code := runCLI(t, "tls", "cert", "create", "-client", "-ca", "../cairn-agent-ca.pem")
	wantError(t, stderr, code, "CAKey: does not match")
	if _, err := os.Stat("dc1-client-cairn-0.pem"); err == nil {
		t.Error("a certificate was written despite the error")
	}
	stdout, stderr, code := runCLI(t, "tls", "cert", "create", "-client", "-ca", "../cairn-agent-ca.pem", "-key", "../cairn-agent-ca-key.pem")
	if code != 0 || !strings.Contains(stdout, "Using ../cairn-agent-ca.pem and ../cairn-agent-ca-key.pem") {
		t.Errorf("cert create with -ca and -key: exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestTLSErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"tls", "nope"}, []string{`unknown command "cairn tls nope"`}},
		{[]string{"tls", "ca", "nope"}, []string{`unknown command "cairn tls ca nope"`}},
		{[]string{"tls", "ca", "create", "extra"}, []string{`unexpected argument "extra"`, `"cairn tls ca create -h"`}},
		{[]string{"tls", "ca", "create", "-days", "0"}, []string{"-days must be positive"}},
		{[]string{"tls", "ca", "create", "-bogus"}, []string{"-bogus", `"cairn tls ca create -h"`}},
		{[]string{"tls", "cert", "create"}, []string{"one of -server or -client"}},
		{[]string{"tls", "cert", "create", "-server", "-client"}, []string{"one of -server or -client"}},
		{[]string{"tls", "cert", "create", "-server", "-additional-ipaddress", "10.0.0"}, []string{`-additional-ipaddress "10.0.0"`}},
		{[]string{"tls", "cert", "create", "-server", "-days", "-3"}, []string{"-days must be positive"}},
		{[]string{"tls", "cert", "create", "-client", "-node", "c1"}, []string{"-node is for a server's certificate", "-additional-dnsname"}},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}
	// Without a CA in the directory.
	_, stderr, code := runCLI(t, "tls", "cert", "create", "-server")
	wantError(t, stderr, code, "CA certificate (-ca)", "cairn-agent-ca.pem")
	if _, stderr, code := runCLI(t, "tls", "ca", "create", "-domain", "bad domain"); code != exitError || !strings.Contains(stderr, "Domain") {
		t.Errorf("ca create -domain \"bad domain\": exit code %d, stderr %q; want an error naming Domain", code, stderr)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("failed commands left %d files", len(entries))
	}
}

func TestTLSHelp(t *testing.T) {
	for _, args := range [][]string{{"tls", "-h"}, {"tls", "ca", "-h"}, {"tls", "ca", "create", "-h"}, {"tls", "cert", "-h"}, {"tls", "cert", "create", "-h"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: got exit code %d, stderr %q", args, code, stderr)
		}
		name := "cairn " + strings.Join(args[:len(args)-1], " ")
		if !strings.Contains(stdout, "USAGE:") || !strings.Contains(stdout, name) {
			t.Errorf("%v: got help %q, want USAGE naming %q", args, stdout, name)
		}
	}
}

// TestHTTPSOnlyAgentThroughTheCLI follows the secure steps for one agent:
// a CA, a server certificate naming the address the agent is reached at
// (-additional-ipaddress), plain HTTP off and HTTPS on. The CLI reaches it
// at https://<that address>, trusting the CA alone: the certificate
// verifies for the address.
func TestHTTPSOnlyAgentThroughTheCLI(t *testing.T) {
	t.Chdir(t.TempDir())
	const addr = "127.0.0.5"
	mustRun(t, "tls", "ca", "create")
	mustRun(t, "tls", "cert", "create", "-server", "-additional-ipaddress", addr)
	mustRun(t, "tls", "cert", "create", "-server")
	if err := readCert(t, "dc1-server-cairn-0.pem").VerifyHostname(addr); err != nil {
		t.Fatalf("the certificate made with -additional-ipaddress %s: %v", addr, err)
	}
	if err := readCert(t, "dc1-server-cairn-1.pem").VerifyHostname(addr); err == nil {
		t.Fatalf("a certificate made without -additional-ipaddress is valid for %s too", addr)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	hcl := fmt.Sprintf(`
ports {
  http = -1
  https = 0
}
tls {
  defaults {
    ca_file = %q
    cert_file = %q
    key_file = %q
    verify_outgoing = true
  }
  internal_rpc {
    verify_incoming = true
    verify_server_hostname = true
  }
}
`, filepath.Join(dir, "cairn-agent-ca.pem"), filepath.Join(dir, "dc1-server-cairn-0.pem"), filepath.Join(dir, "dc1-server-cairn-0-key.pem"))
	if err := os.WriteFile("agent.hcl", []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := agenttest.Config(t)
	cfg.NodeName, cfg.ClientAddr = "secure", addr
	if err := config.LoadFile("agent.hcl", &cfg); err != nil {
		t.Fatal(err)
	}
	a := agenttest.Start(t, cfg)
	if a.HTTPAddr() != nil {
		t.Fatalf("plain HTTP listens on %s with ports.http = -1", a.HTTPAddr())
	}
	url := "https://" + a.HTTPSAddr().String()

	t.Setenv(api.AddressEnv, url)
	t.Setenv(api.CACertEnv, "cairn-agent-ca.pem")
	if out := mustRun(t, "members"); !strings.Contains(out, "secure") {
		t.Errorf("members over HTTPS: got %q, want the agent listed", out)
	}
	t.Setenv(api.CACertEnv, "")
	_, stderr, code := runCLI(t, "members")
	wantError(t, stderr, code, "certificate")
}
