package config

import (
	"fmt"
	"os"
	"time"

	"github.com/cairndns/cairn/resolver"
)

// DNSSEC is where the datacenter's DNSSEC key comes from (dns_config.dnssec;
// whether answers are signed, and for how long a signature holds, is
// Resolver.DNSSEC). The key lives in Raft: a server's leader stores the
// one in KeyFile, or makes one with Auto, and every agent that signs
// fetches it from the servers.
type DNSSEC struct {
	// KeyFile is an ECDSA P-256 private key (PEM, as `cairn dnssec
	// keygen` writes it, or BIND's Private-key-format file of an
	// algorithm 13 key) that the leader stores as the datacenter's key,
	// replacing any other. Servers only. To sign names of several
	// datacenters with one key (a resolver validating answers of all of
	// them needs that), give every datacenter's servers the same file.
	// Default "".
	KeyFile string
	// Auto makes the leader create a key when the datacenter has none.
	// Servers only; not with KeyFile. Default false.
	Auto bool
}

// fileDNSSEC is the dns_config.dnssec block.
type fileDNSSEC struct {
	Enabled           *bool   `hcl:"enabled"`
	KeyFile           *string `hcl:"key_file"`
	Auto              *bool   `hcl:"auto"`
	SignatureValidity *string `hcl:"signature_validity"`
}

func (f *fileDNSSEC) apply(c *Config) error {
	setIf(&c.Resolver.DNSSEC.Enabled, f.Enabled)
	setIf(&c.DNSSEC.KeyFile, f.KeyFile)
	setIf(&c.DNSSEC.Auto, f.Auto)
	if v := f.SignatureValidity; v != nil {
		d, err := time.ParseDuration(*v)
		if err != nil {
			return &FieldError{Field: "dns_config.dnssec.signature_validity", Reason: fmt.Sprintf("%q is not a duration such as \"1h\"", *v)}
		}
		c.Resolver.DNSSEC.SignatureValidity = d
	}
	return nil
}

// validateDNSSEC reports the bad fields of dns_config.dnssec; a key file
// is read and parsed here, so that a bad one stops the agent at start.
func (c *Config) validateDNSSEC(bad func(field, format string, args ...any)) {
	d, on := c.DNSSEC, c.Resolver.DNSSEC.Enabled
	if (d.KeyFile != "" || d.Auto) && !on {
		bad("dns_config.dnssec.enabled", "must be true with key_file or auto")
	}
	if d.KeyFile != "" && d.Auto {
		bad("dns_config.dnssec.auto", "cannot be set with key_file: the key is either given or made")
	}
	if (d.KeyFile != "" || d.Auto) && !c.Server && !c.Dev {
		field := "dns_config.dnssec.key_file"
		if d.Auto {
			field = "dns_config.dnssec.auto"
		}
		bad(field, "only servers hold the DNSSEC key; client agents fetch it from them with enabled = true")
	}
	if d.KeyFile != "" {
		if _, err := c.DNSSECKey(); err != nil {
			bad("dns_config.dnssec.key_file", "%v", err)
		}
	}
	if on && c.Resolver.DNSSEC.SignatureValidity < 10*time.Minute {
		bad("dns_config.dnssec.signature_validity", "must be at least 10m, got %s", c.Resolver.DNSSEC.SignatureValidity)
	}
}

// DNSSECKey reads and parses DNSSEC.KeyFile; nil without one.
func (c *Config) DNSSECKey() (*resolver.SigningKey, error) {
	if c.DNSSEC.KeyFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.DNSSEC.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("read the key: %w", err)
	}
	k, err := resolver.ParseSigningKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.DNSSEC.KeyFile, err)
	}
	return k, nil
}
