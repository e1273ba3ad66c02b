package resolver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// NewSigningKey makes a new DNSSEC key (ECDSA P-256).
func NewSigningKey() (*SigningKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a DNSSEC key: %w", err)
	}
	return k, nil
}

// EncodeSigningKey returns key as a PEM "EC PRIVATE KEY" block, the form
// ParseSigningKey reads first.
func EncodeSigningKey(key *SigningKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the DNSSEC key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// ParseSigningKey parses a DNSSEC private key: PEM ("EC PRIVATE KEY", SEC
// 1, or "PRIVATE KEY", PKCS #8), or BIND's Private-key-format file as
// dnssec-keygen writes it. It must be an ECDSA P-256 key (algorithm 13).
func ParseSigningKey(data []byte) (*SigningKey, error) {
	var key any
	switch {
	case bytes.HasPrefix(bytes.TrimSpace(data), []byte("Private-key-format:")):
		k, err := parseBINDKey(data)
		if err != nil {
			return nil, fmt.Errorf("a BIND private key: %w", err)
		}
		key = k
	default:
		block, _ := pem.Decode(data)
		if block == nil {
			return nil, errors.New("neither PEM nor a BIND private key file")
		}
		var err error
		switch block.Type {
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			return nil, fmt.Errorf("a PEM %q block, want \"EC PRIVATE KEY\" or \"PRIVATE KEY\"", block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("parse the PEM key: %w", err)
		}
	}
	k, ok := key.(*ecdsa.PrivateKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 key: cairn signs with algorithm 13 only")
	}
	return k, nil
}

// parseBINDKey parses the Private-key-format file dnssec-keygen writes
// of an algorithm 13 key: "Key: value" lines, of which Algorithm and
// PrivateKey (the scalar, base64) matter.
func parseBINDKey(data []byte) (*ecdsa.PrivateKey, error) {
	var alg, priv string
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "algorithm":
			alg, _, _ = strings.Cut(v, " ") // "13 (ECDSAP256SHA256)"
		case "privatekey":
			priv = v
		}
	}
	if alg != "13" {
		return nil, fmt.Errorf("algorithm %q, want 13 (ECDSAP256SHA256)", alg)
	}
	d, err := base64.StdEncoding.DecodeString(priv)
	if err != nil {
		return nil, fmt.Errorf("PrivateKey: %w", err)
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return nil, fmt.Errorf("PrivateKey: %w", err)
	}
	return k, nil
}

// DS returns the DS record (SHA-256 digest) of key's DNSKEY for the zone
// domain: what the parent zone publishes, or a validator is given as its
// trust anchor.
func DS(domain string, key *SigningKey) (*dns.DS, error) {
	k, err := DNSKEY(domain, key)
	if err != nil {
		return nil, err
	}
	ds := k.ToDS(dns.SHA256)
	if ds == nil {
		return nil, errors.New("resolver: cannot make the DS record")
	}
	return ds, nil
}

// AskDS asks the DNS server at addr (host:port) for the DNSKEY records of
// the zone domain and returns the DS record (SHA-256) of each: what an
// agent signing with a key it did not read from a file (dnssec.auto)
// needs its parent zone or validators to hold.
func AskDS(addr, domain string, timeout time.Duration) ([]*dns.DS, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(domain), dns.TypeDNSKEY)
	q.SetEdns0(dns.DefaultMsgSize, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: timeout}).Exchange(q, addr)
	if err != nil {
		return nil, fmt.Errorf("ask %s for the DNSKEY of %s: %w", addr, domain, err)
	}
	var out []*dns.DS
	for _, rr := range r.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			if ds := k.ToDS(dns.SHA256); ds != nil {
				out = append(out, ds)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s serves no DNSKEY for %s (rcode %s): is dns_config.dnssec enabled, and does the datacenter hold a key?",
			addr, domain, dns.RcodeToString[r.Rcode])
	}
	return out, nil
}
