package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The file names "cairn tls" writes, after Consul's (which puts its
// domain, "consul", where these say "cairn").
const (
	// CAFileName is the CA certificate "cairn tls ca create" writes.
	CAFileName = "cairn-agent-ca.pem"
	// CAKeyFileName is the CA's private key.
	CAKeyFileName = "cairn-agent-ca-key.pem"
)

// Defaults of certificate creation, Consul's.
const (
	DefaultDomain     = "cluster" // cairn's DNS domain
	DefaultDatacenter = "dc1"
	DefaultCADays     = 1825 // five years
	DefaultCertDays   = 365
)

// clockSkew backdates every certificate's NotBefore, so that a peer whose
// clock is a little behind ours does not refuse a certificate just made.
const clockSkew = time.Minute

// CAOptions configures GenerateCA.
type CAOptions struct {
	// Domain is the cluster's DNS domain, put in the CA's name and, with
	// NameConstraint, the only domain (with localhost) it may sign names
	// under. Empty means DefaultDomain.
	Domain string
	// Days is how long the CA is valid. 0 means DefaultCADays.
	Days int
	// NameConstraint makes the CA valid only for names under Domain and
	// localhost (a critical X.509 name constraint), so that a leak of its
	// key cannot be used to impersonate other hosts to clients that trust
	// it. Off by default, as in Consul: with it, -additional-dnsname
	// outside Domain gives certificates that do not verify.
	NameConstraint bool
}

// CertOptions configures GenerateCert.
type CertOptions struct {
	// CA and CAKey are the PEM of the signing CA's certificate and
	// private key (as GenerateCA returns them).
	CA, CAKey string
	// Server makes a server certificate (for server.<dc>.<domain>),
	// otherwise a client agent's (client.<dc>.<domain>).
	Server bool
	// Datacenter is the datacenter of the agent. Empty means
	// DefaultDatacenter.
	Datacenter string
	// Domain is the cluster's DNS domain. Empty means DefaultDomain.
	Domain string
	// Days is how long the certificate is valid. 0 means
	// DefaultCertDays.
	Days int
	// DNSNames and IPAddresses are added to the certificate's names,
	// after the role's name, localhost and 127.0.0.1.
	DNSNames    []string
	IPAddresses []net.IP
}

// ServerName is the name a server of datacenter dc holds a certificate
// for: server.<dc>.<domain>.
func ServerName(dc, domain string) string {
	return "server." + strings.ToLower(dc) + "." + strings.ToLower(strings.TrimSuffix(domain, "."))
}

// ClientName is the name of a client agent's certificate:
// client.<dc>.<domain>.
func ClientName(dc, domain string) string {
	return "client." + strings.ToLower(dc) + "." + strings.ToLower(strings.TrimSuffix(domain, "."))
}

// GenerateCA creates a self-signed CA: an ECDSA P-256 key and a
// certificate that may sign leaf certificates only (path length 0). It
// returns both as PEM.
func GenerateCA(opts CAOptions) (certPEM, keyPEM string, err error) {
	domain, err := nameOrDefault("Domain", opts.Domain, DefaultDomain)
	if err != nil {
		return "", "", err
	}
	days, err := daysOrDefault(opts.Days, DefaultCADays)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:   "Cairn Agent CA " + serial.String(),
			Organization: []string{"Cairn"},
		},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.AddDate(0, 0, days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // it signs agents' certificates, never another CA
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	if opts.NameConstraint {
		tmpl.PermittedDNSDomainsCritical = true
		tmpl.PermittedDNSDomains = []string{domain, "localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: create CA certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return "", "", err
	}
	return encodeCert(der), keyPEM, nil
}

// GenerateCert creates a certificate signed by opts.CA for a server or a
// client agent, with a new ECDSA P-256 key, and returns both as PEM.
//
// A server's certificate is for server.<dc>.<domain>, localhost and
// 127.0.0.1, for ServerAuth and ClientAuth (servers dial each other). A
// client's is for client.<dc>.<domain>, localhost and 127.0.0.1, also for
// both, as Consul's: a client agent serves HTTPS with it. What makes a
// server is the name, never the key usage.
func GenerateCert(opts CertOptions) (certPEM, keyPEM string, err error) {
	dc, err := nameOrDefault("Datacenter", opts.Datacenter, DefaultDatacenter)
	if err != nil {
		return "", "", err
	}
	domain, err := nameOrDefault("Domain", opts.Domain, DefaultDomain)
	if err != nil {
		return "", "", err
	}
	days, err := daysOrDefault(opts.Days, DefaultCertDays)
	if err != nil {
		return "", "", err
	}
	ca, err := parseCertPEM([]byte(opts.CA))
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: CA: %w", err)
	}
	if !ca.IsCA {
		return "", "", errors.New("tlsutil: CA: the certificate is not a CA's")
	}
	caKey, err := parseKeyPEM([]byte(opts.CAKey))
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: CAKey: %w", err)
	}
	if !publicKeysEqual(caKey.Public(), ca.PublicKey) {
		return "", "", errors.New("tlsutil: CAKey: does not match the CA certificate")
	}
	for _, n := range opts.DNSNames {
		if err := checkDNSName(n); err != nil {
			return "", "", fmt.Errorf("tlsutil: DNSNames: %q: %w", n, err)
		}
	}

	name := ClientName(dc, domain)
	if opts.Server {
		name = ServerName(dc, domain)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: generate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	notAfter := now.AddDate(0, 0, days)
	if notAfter.After(ca.NotAfter) {
		// A certificate outliving its CA would be refused then anyway;
		// saying so now beats finding out in a year.
		return "", "", fmt.Errorf("tlsutil: Days: %d days would outlive the CA, valid until %s", days, ca.NotAfter.Format(time.DateOnly))
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		// ECDSA keys sign; they never encipher a key.
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              appendUnique([]string{name, "localhost"}, opts.DNSNames...),
		IPAddresses:           appendUniqueIP([]net.IP{net.IPv4(127, 0, 0, 1)}, opts.IPAddresses...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: create certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return "", "", err
	}
	return encodeCert(der), keyPEM, nil
}

// NextCertFiles returns the paths in dir of the next certificate and key
// file of a server or client of datacenter dc, in Consul's scheme:
// <dc>-server-cairn-<n>.pem and <dc>-server-cairn-<n>-key.pem (or
// "client"), n the first number for which neither file exists. Another
// process may take the names before they are written; write them so that
// an existing file is refused (os.O_EXCL).
func NextCertFiles(dir, dc string, server bool) (certFile, keyFile string, err error) {
	role := "client"
	if server {
		role = "server"
	}
	prefix := strings.ToLower(dc) + "-" + role + "-cairn-"
	for n := 0; n < 1<<16; n++ {
		certFile = filepath.Join(dir, prefix+strconv.Itoa(n)+".pem")
		keyFile = filepath.Join(dir, prefix+strconv.Itoa(n)+"-key.pem")
		certFree, err := absent(certFile)
		if err != nil {
			return "", "", err
		}
		keyFree, err := absent(keyFile)
		if err != nil {
			return "", "", err
		}
		if certFree && keyFree {
			return certFile, keyFile, nil
		}
	}
	return "", "", fmt.Errorf("tlsutil: no free certificate file name %s<n>.pem in %s", prefix, dir)
}

// absent reports whether nothing exists at path.
func absent(path string) (bool, error) {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, os.ErrNotExist):
		return true, nil
	}
	return false, fmt.Errorf("tlsutil: %w", err)
}

// newSerial returns a random 128-bit serial number, as RFC 5280 wants
// serials unpredictable and unique per CA.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tlsutil: serial number: %w", err)
	}
	return n, nil
}

func encodeCert(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// encodeKey writes key as "EC PRIVATE KEY" (SEC 1), the form Consul and
// openssl's ecparam write.
func encodeKey(key *ecdsa.PrivateKey) (string, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", fmt.Errorf("tlsutil: encode key: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})), nil
}

// parseCertPEM parses the first certificate of data.
func parseCertPEM(data []byte) (*x509.Certificate, error) {
	certs, err := parseCertsPEM(data)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// parseCertsPEM parses every CERTIFICATE block of data; other blocks are
// skipped. No certificate at all is an error.
func parseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	return certs, nil
}

// parseKeyPEM parses the first private key of data: SEC 1 ("EC PRIVATE
// KEY"), PKCS #8 ("PRIVATE KEY") or PKCS #1 ("RSA PRIVATE KEY"), so that
// a CA made by openssl or Consul signs too.
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM private key block found")
		}
		var key any
		var err error
		switch block.Type {
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%s: a %T cannot sign", block.Type, key)
		}
		return signer, nil
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// nameOrDefault returns name, lowercased and without a trailing dot, or
// def when it is empty; a name that is not a DNS name is an error naming
// field.
func nameOrDefault(field, name, def string) (string, error) {
	if name == "" {
		return def, nil
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if err := checkDNSName(name); err != nil {
		return "", fmt.Errorf("tlsutil: %s: %q: %w", field, name, err)
	}
	return name, nil
}

func daysOrDefault(days, def int) (int, error) {
	switch {
	case days == 0:
		return def, nil
	case days < 0:
		return 0, fmt.Errorf("tlsutil: Days: must be positive, got %d", days)
	}
	return days, nil
}

// checkDNSName checks that name is a DNS name a certificate may hold:
// labels of letters, digits and hyphens (not first or last), a "*" as
// the first label at most.
func checkDNSName(name string) error {
	if name == "" || len(name) > 253 {
		return errors.New("must be 1 to 253 characters")
	}
	for i, label := range strings.Split(name, ".") {
		if label == "*" && i == 0 {
			continue
		}
		if label == "" || len(label) > 63 {
			return fmt.Errorf("label %q: must be 1 to 63 characters", label)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("label %q: must not begin or end with a hyphen", label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("label %q: %q is not a letter, digit or hyphen", label, r)
			}
		}
	}
	return nil
}

func appendUnique(list []string, more ...string) []string {
	for _, m := range more {
		seen := false
		for _, l := range list {
			seen = seen || strings.EqualFold(l, m)
		}
		if !seen {
			list = append(list, m)
		}
	}
	return list
}

func appendUniqueIP(list []net.IP, more ...net.IP) []net.IP {
	for _, m := range more {
		seen := false
		for _, l := range list {
			seen = seen || l.Equal(m)
		}
		if !seen {
			list = append(list, m)
		}
	}
	return list
}
