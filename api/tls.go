package api

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
)

// TLSConfig is the client's side of HTTPS to the agent, as Consul's
// CONSUL_CACERT, CONSUL_CLIENT_CERT, CONSUL_CLIENT_KEY and
// CONSUL_TLS_SERVER_NAME set it. The zero value verifies the agent against
// the system's roots and presents no certificate.
type TLSConfig struct {
	// CAFile is a PEM file of the CA certificates the agent's certificate
	// must chain to. Empty means the system's roots.
	CAFile string
	// CertFile and KeyFile are the PEM files of the certificate and key the
	// client presents, for an agent that verifies incoming connections.
	// Both or neither.
	CertFile string
	KeyFile  string
	// ServerName is the name the agent's certificate must hold, and the SNI
	// sent. Empty means the host of the address; set it when dialling an
	// agent by IP whose certificate is for a name such as
	// server.dc1.cluster.
	ServerName string
	// InsecureSkipVerify accepts any certificate from the agent. Only for
	// tests: anyone between the client and the agent can read the token.
	InsecureSkipVerify bool
}

// httpClient returns a client whose transport is http.DefaultTransport's
// settings with t's TLS. It reads the files now, so that a bad path is an
// error of NewClient rather than of every request.
func (t TLSConfig) httpClient() (*http.Client, error) {
	tc, err := t.clientConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr}, nil
}

// clientConfig builds the tls.Config of t; errors name the field.
func (t TLSConfig) clientConfig() (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		data, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &ConfigError{Field: "TLS.CAFile", Reason: err.Error(), Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, &ConfigError{Field: "TLS.CAFile", Reason: fmt.Sprintf("%s holds no PEM certificate", t.CAFile)}
		}
		tc.RootCAs = pool
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
		return tc, nil
	case t.KeyFile == "":
		return nil, &ConfigError{Field: "TLS.KeyFile", Reason: "missing: a client certificate needs its key"}
	case t.CertFile == "":
		return nil, &ConfigError{Field: "TLS.CertFile", Reason: "missing: a client key needs its certificate"}
	}
	certPEM, err := os.ReadFile(t.CertFile)
	if err != nil {
		return nil, &ConfigError{Field: "TLS.CertFile", Reason: err.Error(), Err: err}
	}
	// Checked here rather than left to tls.X509KeyPair, whose errors do not
	// say which of the two files is wrong.
	if !hasPEMBlock(certPEM, "CERTIFICATE") {
		return nil, &ConfigError{Field: "TLS.CertFile", Reason: fmt.Sprintf("%s holds no PEM certificate", t.CertFile)}
	}
	keyPEM, err := os.ReadFile(t.KeyFile)
	if err != nil {
		return nil, &ConfigError{Field: "TLS.KeyFile", Reason: err.Error(), Err: err}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, &ConfigError{Field: "TLS.KeyFile", Reason: fmt.Sprintf("%s: %v", t.KeyFile, err), Err: err}
	}
	tc.Certificates = []tls.Certificate{pair}
	return tc, nil
}

// hasPEMBlock reports whether data holds a PEM block of the given type.
func hasPEMBlock(data []byte, typ string) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == typ {
			return true
		}
	}
}
