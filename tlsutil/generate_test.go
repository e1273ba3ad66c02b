package tlsutil_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/tlsutil"
)

func parseCert(t *testing.T, certPEM string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", certPEM)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newCA(t *testing.T, opts tlsutil.CAOptions) (certPEM, keyPEM string, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCA(opts)
	if err != nil {
		t.Fatalf("GenerateCA: %v", err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(parseCert(t, certPEM))
	return certPEM, keyPEM, pool
}

func TestGenerateCA(t *testing.T) {
	t.Parallel()
	certPEM, keyPEM, _ := newCA(t, tlsutil.CAOptions{})
	ca := parseCert(t, certPEM)
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.MaxPathLen != 0 || !ca.MaxPathLenZero {
		t.Errorf("got IsCA %v, BasicConstraintsValid %v, MaxPathLen %d (zero %v), want a CA of path length 0",
			ca.IsCA, ca.BasicConstraintsValid, ca.MaxPathLen, ca.MaxPathLenZero)
	}
	if ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("got key usage %b, want CertSign", ca.KeyUsage)
	}
	pub, ok := ca.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("got public key %T, want ECDSA P-256", ca.PublicKey)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !strings.HasPrefix(ca.Subject.CommonName, "Cairn Agent CA ") {
		t.Errorf("got CN %q, want Cairn Agent CA <serial>", ca.Subject.CommonName)
	}
	if days := time.Until(ca.NotAfter).Hours() / 24; days < 1824 || days > 1826 {
		t.Errorf("got %0.1f days of validity, want 1825", days)
	}
	if len(ca.PermittedDNSDomains) != 0 {
		t.Errorf("got name constraints %v without NameConstraint", ca.PermittedDNSDomains)
	}
	if block, _ := pem.Decode([]byte(keyPEM)); block == nil || block.Type != "EC PRIVATE KEY" {
		t.Errorf("got key PEM %q, want an EC PRIVATE KEY block", keyPEM)
	}

	// A second CA has another serial, so another name.
	other, _, _ := newCA(t, tlsutil.CAOptions{Domain: "example.org.", Days: 10})
	oca := parseCert(t, other)
	if oca.Subject.CommonName == ca.Subject.CommonName {
		t.Errorf("two CAs share the name %q", ca.Subject.CommonName)
	}
	if days := time.Until(oca.NotAfter).Hours() / 24; days < 9 || days > 11 {
		t.Errorf("Days 10: got %0.1f days", days)
	}
}

func TestGenerateCert(t *testing.T) {
	t.Parallel()
	caPEM, caKey, roots := newCA(t, tlsutil.CAOptions{})
	for _, tc := range []struct {
		name     string
		opts     tlsutil.CertOptions
		wantCN   string
		wantDNS  []string
		wantIPs  []string
		wantDays float64
	}{
		{
			name:     "server",
			opts:     tlsutil.CertOptions{Server: true},
			wantCN:   "server.dc1.cluster",
			wantDNS:  []string{"server.dc1.cluster", "localhost"},
			wantIPs:  []string{"127.0.0.1"},
			wantDays: 365,
		},
		{
			name: "server with extra names",
			opts: tlsutil.CertOptions{Server: true, Datacenter: "DC2", Domain: "corp.example.", Days: 30,
				DNSNames:    []string{"cairn.corp.example", "localhost"},
				IPAddresses: []net.IP{net.ParseIP("10.0.0.7"), net.ParseIP("127.0.0.1")}},
			wantCN:   "server.dc2.corp.example",
			wantDNS:  []string{"server.dc2.corp.example", "localhost", "cairn.corp.example"},
			wantIPs:  []string{"127.0.0.1", "10.0.0.7"},
			wantDays: 30,
		},
		{
			name:     "client",
			opts:     tlsutil.CertOptions{Datacenter: "dc3"},
			wantCN:   "client.dc3.cluster",
			wantDNS:  []string{"client.dc3.cluster", "localhost"},
			wantIPs:  []string{"127.0.0.1"},
			wantDays: 365,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.CA, tc.opts.CAKey = caPEM, caKey
			certPEM, keyPEM, err := tlsutil.GenerateCert(tc.opts)
			if err != nil {
				t.Fatalf("GenerateCert: %v", err)
			}
			c := parseCert(t, certPEM)
			if c.Subject.CommonName != tc.wantCN {
				t.Errorf("got CN %q, want %q", c.Subject.CommonName, tc.wantCN)
			}
			if !slices.Equal(c.DNSNames, tc.wantDNS) {
				t.Errorf("got DNS names %q, want %q", c.DNSNames, tc.wantDNS)
			}
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, tc.wantIPs) {
				t.Errorf("got IPs %q, want %q", ips, tc.wantIPs)
			}
			if c.IsCA {
				t.Error("a leaf certificate is a CA")
			}
			// Both roles serve and dial: servers dial each other, client
			// agents serve HTTPS.
			wantEKU := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
			if !slices.Equal(c.ExtKeyUsage, wantEKU) {
				t.Errorf("got ext key usage %v, want %v", c.ExtKeyUsage, wantEKU)
			}
			if days := time.Until(c.NotAfter).Hours() / 24; days < tc.wantDays-1 || days > tc.wantDays+1 {
				t.Errorf("got %0.1f days of validity, want %v", days, tc.wantDays)
			}
			for _, name := range append(tc.wantDNS, tc.wantIPs...) {
				if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
					t.Errorf("verify for %q: %v", name, err)
				}
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: "server.other.cluster"}); err == nil {
				t.Error("verifies for server.other.cluster")
			}
			if block, _ := pem.Decode([]byte(keyPEM)); block == nil || block.Type != "EC PRIVATE KEY" {
				t.Errorf("got key PEM %q, want an EC PRIVATE KEY block", keyPEM)
			}
		})
	}
}

func TestNameConstraint(t *testing.T) {
	t.Parallel()
	caPEM, caKey, roots := newCA(t, tlsutil.CAOptions{NameConstraint: true})
	ca := parseCert(t, caPEM)
	if want := []string{"cluster", "localhost"}; !slices.Equal(ca.PermittedDNSDomains, want) || !ca.PermittedDNSDomainsCritical {
		t.Errorf("got permitted domains %q (critical %v), want %q, critical", ca.PermittedDNSDomains, ca.PermittedDNSDomainsCritical, want)
	}
	inside, _, err := tlsutil.GenerateCert(tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseCert(t, inside).Verify(x509.VerifyOptions{Roots: roots, DNSName: "server.dc1.cluster"}); err != nil {
		t.Errorf("a certificate within the constraint: %v", err)
	}
	outside, _, err := tlsutil.GenerateCert(tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Server: true, DNSNames: []string{"evil.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseCert(t, outside).Verify(x509.VerifyOptions{Roots: roots, DNSName: "server.dc1.cluster"}); err == nil {
		t.Error("a certificate naming evil.example.com verifies under a CA constrained to cluster")
	}
}

func TestGenerateCertErrors(t *testing.T) {
	t.Parallel()
	caPEM, caKey, _ := newCA(t, tlsutil.CAOptions{})
	otherPEM, otherKey, _ := newCA(t, tlsutil.CAOptions{})
	shortPEM, shortKey, _ := newCA(t, tlsutil.CAOptions{Days: 10})
	leafPEM, leafKey, err := tlsutil.GenerateCert(tlsutil.CertOptions{CA: caPEM, CAKey: caKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts tlsutil.CertOptions
		want string
	}{
		{"no CA", tlsutil.CertOptions{CAKey: caKey}, "CA: no PEM CERTIFICATE"},
		{"no key", tlsutil.CertOptions{CA: caPEM}, "CAKey: no PEM private key"},
		{"key of another CA", tlsutil.CertOptions{CA: caPEM, CAKey: otherKey}, "CAKey: does not match"},
		{"leaf as CA", tlsutil.CertOptions{CA: leafPEM, CAKey: leafKey}, "not a CA"},
		{"bad datacenter", tlsutil.CertOptions{CA: otherPEM, CAKey: otherKey, Datacenter: "dc 1"}, "Datacenter"},
		{"bad domain", tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Domain: "-x"}, "Domain"},
		{"negative days", tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Days: -1}, "Days: must be positive"},
		{"outlives the CA", tlsutil.CertOptions{CA: shortPEM, CAKey: shortKey}, "outlive the CA"},
		{"bad DNS name", tlsutil.CertOptions{CA: caPEM, CAKey: caKey, DNSNames: []string{"a..b"}}, "DNSNames"},
	} {
		if _, _, err := tlsutil.GenerateCert(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := tlsutil.GenerateCA(tlsutil.CAOptions{Days: -5}); err == nil || !strings.Contains(err.Error(), "Days") {
		t.Errorf("GenerateCA with negative days: got %v, want an error naming Days", err)
	}
}

func TestNextCertFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key, err := tlsutil.NextCertFiles(dir, "dc1", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(cert)+" "+filepath.Base(key), "dc1-server-cairn-0.pem dc1-server-cairn-0-key.pem"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// A key left alone takes its number too.
	if err := os.WriteFile(key, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dc1-server-cairn-1.pem"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key, err = tlsutil.NextCertFiles(dir, "DC1", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(cert)+" "+filepath.Base(key), "dc1-server-cairn-2.pem dc1-server-cairn-2-key.pem"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	cert, _, err = tlsutil.NextCertFiles(dir, "dc1", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(cert), "dc1-client-cairn-0.pem"; got != want {
		t.Errorf("client: got %s, want %s", got, want)
	}
}
