// Package tlsutiltest makes certificate authorities and agent
// certificates for tests, in files under the test's temporary directory.
// Imported only by tests.
package tlsutiltest

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/cairndns/cairn/tlsutil"
)

// CA is a test certificate authority of domain "cluster".
type CA struct {
	// Dir holds the CA's files and every certificate it issues.
	Dir string
	// CertFile is the CA certificate's file, for Config.CAFile.
	CertFile string

	certPEM, keyPEM string
	issued          atomic.Int64
}

// NewCA creates a CA in a new temporary directory of tb.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCA(tlsutil.CAOptions{})
	if err != nil {
		tb.Fatalf("tlsutiltest: GenerateCA: %v", err)
	}
	dir := tb.TempDir()
	ca := &CA{Dir: dir, CertFile: filepath.Join(dir, tlsutil.CAFileName), certPEM: certPEM, keyPEM: keyPEM}
	write(tb, ca.CertFile, certPEM)
	write(tb, filepath.Join(dir, tlsutil.CAKeyFileName), keyPEM)
	return ca
}

// Issue writes a new certificate and key for a server (or a client
// agent) of datacenter dc and returns their files.
func (ca *CA) Issue(tb testing.TB, server bool, dc string) (certFile, keyFile string) {
	tb.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCert(tlsutil.CertOptions{
		CA: ca.certPEM, CAKey: ca.keyPEM, Server: server, Datacenter: dc,
	})
	if err != nil {
		tb.Fatalf("tlsutiltest: GenerateCert: %v", err)
	}
	role := "client"
	if server {
		role = "server"
	}
	n := strconv.FormatInt(ca.issued.Add(1), 10)
	certFile = filepath.Join(ca.Dir, dc+"-"+role+"-"+n+".pem")
	keyFile = filepath.Join(ca.Dir, dc+"-"+role+"-"+n+"-key.pem")
	write(tb, certFile, certPEM)
	write(tb, keyFile, keyPEM)
	return certFile, keyFile
}

// Config returns a Config with every verification on, for a new
// certificate of a server (or a client agent) of datacenter dc.
func (ca *CA) Config(tb testing.TB, server bool, dc string) tlsutil.Config {
	tb.Helper()
	cfg := tlsutil.DefaultConfig()
	cfg.Datacenter = dc
	cfg.CAFile = ca.CertFile
	cfg.CertFile, cfg.KeyFile = ca.Issue(tb, server, dc)
	cfg.VerifyIncoming, cfg.VerifyOutgoing, cfg.VerifyServerHostname = true, true, true
	return cfg
}

// Configurator returns a Configurator of Config(tb, server, dc).
func (ca *CA) Configurator(tb testing.TB, server bool, dc string) *tlsutil.Configurator {
	tb.Helper()
	c, err := tlsutil.NewConfigurator(ca.Config(tb, server, dc))
	if err != nil {
		tb.Fatalf("tlsutiltest: NewConfigurator: %v", err)
	}
	return c
}

func write(tb testing.TB, path, data string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		tb.Fatalf("tlsutiltest: %v", err)
	}
}
