package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDNSSECKeygenAndDS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dnssec.pem")
	stdout, stderr, code := runCLI(t, "dnssec", "keygen", "-out", file, "-domain", "example.test")
	if code != 0 || stderr != "" {
		t.Fatalf("keygen: exit code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"DNSKEY: example.test.", "IN DNSKEY 257 3 13 ", "DS: example.test. 3600 IN DS ", `Unbound: trust-anchor: "example.test. 3600 IN DS `} {
		if !strings.Contains(strings.ReplaceAll(stdout, "\t", " "), want) {
			t.Errorf("keygen printed\n%s\nwant it to contain %q", stdout, want)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v, %v; want mode 0600", fi, err)
	}
	ds, stderr, code := runCLI(t, "dnssec", "ds", "-key-file", file, "-domain", "example.test")
	if code != 0 || stderr != "" {
		t.Fatalf("ds: exit code %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, strings.TrimSpace(ds)) {
		t.Errorf("ds printed\n%s\nwhich keygen did not:\n%s", ds, stdout)
	}
	_, stderr, code = runCLI(t, "dnssec", "keygen", "-out", file)
	if code == 0 || !strings.Contains(stderr, "not replacing") {
		t.Errorf("keygen over an existing file: exit code %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "dnssec", "keygen")
	wantUsage(t, stderr, code, "needs -out")
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code = runCLI(t, "dnssec", "ds", "-key-file", bad); code == 0 || !strings.Contains(stderr, "neither PEM nor") {
		t.Errorf("ds of a bad file: exit code %d, stderr %q", code, stderr)
	}
}
