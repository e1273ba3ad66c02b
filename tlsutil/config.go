package tlsutil

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// Config is the TLS configuration of one use (internal RPC, or HTTPS):
// Consul's tls.defaults merged with tls.internal_rpc or tls.https.
type Config struct {
	// CAFile is a PEM file of the CA certificates that peers'
	// certificates are verified against (one or more). Default empty.
	CAFile string
	// CertFile and KeyFile are the PEM certificate (with any
	// intermediates after it) and private key this agent presents.
	// Either both or neither. Default empty: no TLS served.
	CertFile, KeyFile string
	// VerifyIncoming requires every incoming connection to use TLS and
	// to present a certificate signed by the CA. Needs CAFile, CertFile
	// and KeyFile. Default false: plain connections are accepted, and a
	// certificate is checked only when a peer presents one.
	VerifyIncoming bool
	// VerifyOutgoing makes outgoing connections use TLS and verify the
	// server's certificate against the CA. Needs CAFile. Default false:
	// outgoing connections are plain.
	VerifyOutgoing bool
	// VerifyServerHostname also requires the server's certificate to be
	// for server.<dc>.<domain>, the datacenter dialed, so that a client
	// agent's certificate, or another datacenter's server's, cannot pass
	// for a server of dc. It implies VerifyOutgoing, as in Consul.
	// Default false.
	VerifyServerHostname bool
	// Datacenter is this agent's datacenter: the one OutgoingRPC("")
	// and PeerIsServer(state, "") mean. Default "dc1".
	Datacenter string
	// Domain is the cluster's DNS domain, of the names in certificates.
	// Default "cluster".
	Domain string
	// MinVersion is the lowest TLS version accepted, "tls12" or "tls13"
	// (Consul's "TLSv1_2" and "TLSv1_3" are accepted too). TLS 1.0 and
	// 1.1 are refused: they are deprecated (RFC 8996). Default "tls12".
	MinVersion string
}

// DefaultConfig returns a Config with TLS off and cairn's names.
func DefaultConfig() Config {
	return Config{
		Datacenter: DefaultDatacenter, // Consul's default datacenter
		Domain:     DefaultDomain,     // cairn's DNS domain
		MinVersion: "tls12",           // Consul's default since 1.12; TLS 1.3 only would shut out no Go peer, but proxies in between may lag
	}
}

// Validate reports every invalid field of c, each error naming its field.
// It reads the files, so that an unreadable or invalid file, or a key
// that does not match its certificate, is reported here and not at the
// first handshake.
func (c Config) Validate() error {
	errs := c.checkFields()
	if _, err := load(c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkFields checks what can be checked without reading the files.
func (c Config) checkFields() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("tlsutil: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		if c.CertFile == "" {
			bad("CertFile", "must be set with KeyFile")
		} else {
			bad("KeyFile", "must be set with CertFile")
		}
	}
	if c.VerifyIncoming {
		if c.CAFile == "" {
			bad("VerifyIncoming", "needs CAFile, the CA that peers' certificates are verified against")
		}
		if c.CertFile == "" {
			bad("VerifyIncoming", "needs CertFile and KeyFile, the certificate this agent serves TLS with")
		}
	}
	if c.VerifyOutgoing && c.CAFile == "" {
		bad("VerifyOutgoing", "needs CAFile, the CA that servers' certificates are verified against")
	}
	if c.VerifyServerHostname && c.CAFile == "" {
		bad("VerifyServerHostname", "needs CAFile, the CA that servers' certificates are verified against")
	}
	if c.Datacenter == "" {
		bad("Datacenter", "must be set")
	} else if err := checkDNSName(c.Datacenter); err != nil || strings.Contains(c.Datacenter, ".") {
		bad("Datacenter", "%q must be one DNS label", c.Datacenter)
	}
	if c.Domain == "" {
		bad("Domain", "must be set")
	} else if err := checkDNSName(strings.TrimSuffix(c.Domain, ".")); err != nil {
		bad("Domain", "%q: %v", c.Domain, err)
	}
	if _, err := ParseMinVersion(c.MinVersion); err != nil {
		bad("MinVersion", "%v", err)
	}
	return errs
}

// ParseMinVersion returns the tls.Version* constant named by v: "tls12"
// or "tls13" (or Consul 1.12's "TLSv1_2", "TLSv1_3"), in any case; ""
// means TLS 1.2.
func ParseMinVersion(v string) (uint16, error) {
	switch strings.ToLower(v) {
	case "", "tls12", "tlsv1_2":
		return tls.VersionTLS12, nil
	case "tls13", "tlsv1_3":
		return tls.VersionTLS13, nil
	case "tls10", "tls11", "tlsv1_0", "tlsv1_1":
		return 0, fmt.Errorf("%q is deprecated (RFC 8996) and not supported; use tls12 or tls13", v)
	}
	return 0, fmt.Errorf("%q is not a TLS version; use tls12 or tls13", v)
}
