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

func TestNewNormalizes(t *testing.T) {
	z := testZone(t, func(c *Config) { c.Domain, c.Datacenter = "Example.Cluster", "DC-East" })
	if got, want := z.Domain(), "example.cluster."; got != want {
		t.Errorf("Domain: got %q, want %q", got, want)
	}
	if got, want := z.Datacenter(), "dc-east"; got != want {
		t.Errorf("Datacenter: got %q, want %q", got, want)
	}
}
