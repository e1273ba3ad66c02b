package zones

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate(): got %v, want nil", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // the field the error must name
	}{
		{"empty domain", func(c *Config) { c.Domain = "" }, "Domain"},
		{"root domain", func(c *Config) { c.Domain = "." }, "Domain"},
		{"empty label in domain", func(c *Config) { c.Domain = "a..b" }, "Domain"},
		{"bad character in domain", func(c *Config) { c.Domain = "clu ster" }, "Domain"},
		{"long domain", func(c *Config) { c.Domain = strings.Repeat("a.", 80) }, "Domain"},
		{"empty dc", func(c *Config) { c.Datacenter = "" }, "Datacenter"},
		{"dc not a label", func(c *Config) { c.Datacenter = "dc_1" }, "Datacenter"},
		{"dc is a keyword", func(c *Config) { c.Datacenter = "Service" }, "Datacenter"},
		{"negative service TTL", func(c *Config) { c.ServiceTTL = -time.Second }, "ServiceTTL"},
		{"huge node TTL", func(c *Config) { c.NodeTTL = 200 * 365 * 24 * time.Hour }, "NodeTTL"},
		{"empty TTL key", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{"": time.Second} }, "ServiceTTLs"},
		{"star inside a TTL key", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{"d*b": time.Second} }, "ServiceTTLs"},
		{"two stars in a TTL key", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{"db**": time.Second} }, "ServiceTTLs"},
		{"underscore in a TTL key", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{"_db": time.Second} }, "ServiceTTLs"},
		{"long TTL key", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{strings.Repeat("a", 64) + "*": time.Second} }, "ServiceTTLs"},
		{"TTL keys differing in case", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{"Web": 0, "web": 0} }, "ServiceTTLs"},
		{"negative service TTLs value", func(c *Config) { c.ServiceTTLs = map[string]time.Duration{"web": -time.Second} }, "ServiceTTLs[web]"},
		{"bad NS address", func(c *Config) { c.NSAddress = "ns1" }, "NSAddress"},
		{"zero refresh", func(c *Config) { c.SOA.Refresh = 0 }, "SOA.Refresh"},
		{"zero retry", func(c *Config) { c.SOA.Retry = 0 }, "SOA.Retry"},
		{"expire before refresh", func(c *Config) { c.SOA.Expire = 10 }, "SOA.Expire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate: got %v, want an error naming %s", err, tt.field)
			}
			if _, err := New(cfg); err == nil {
				t.Errorf("New: got nil error, want one naming %s", tt.field)
			}
		})
	}
}

func TestValidServiceTTLs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ServiceTTLs = map[string]time.Duration{"*": 0, "db*": time.Second, "Web-1": time.Hour, "a": 0}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: got %v, want nil", err)
	}
}

func TestDefaultSOAMinTTL(t *testing.T) {
	z := testZone(t, nil)
	if soa := z.SOA(); soa.Minttl != 5 || soa.Hdr.Ttl != 5 {
		t.Errorf("default SOA: got minimum %d and TTL %d, want 5 and 5", soa.Minttl, soa.Hdr.Ttl)
	}
}

func TestNewNormalizes(t *testing.T) {
	z := testZone(t, func(c *Config) { c.Domain, c.Datacenter = "Example.Cluster", "DC-East" })
	if got, want := z.Domain(), "example.cluster."; got != want {
		t.Errorf("Domain: got %q, want %q", got, want)
	}
	if got, want := z.Datacenter(), "dc-east"; got != want {
		t.Errorf("Datacenter: got %q, want %q", got, want)
	}
}
