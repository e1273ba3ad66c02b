package zones

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

func TestServiceTTLPrecedence(t *testing.T) {
	z := testZone(t, func(c *Config) {
		c.ServiceTTL = 7 * time.Second
		c.ServiceTTLs = map[string]time.Duration{
			"*":     5 * time.Second,
			"db*":   20 * time.Second,
			"db-r*": 25 * time.Second,
			"Web":   30 * time.Second,
			"web*":  40 * time.Second,
			"api":   0,
		}
	})
	noWildcard := testZone(t, func(c *Config) {
		c.ServiceTTL = 7 * time.Second
		c.ServiceTTLs = map[string]time.Duration{"db*": 20 * time.Second}
	})
	tests := []struct {
		name    string
		z       *Zone
		service string
		want    uint32
	}{
		{"exact beats prefixes", z, "web", 30},
		{"prefix when not exact", z, "web-admin", 40},
		{"longest prefix", z, "db-replica", 25},
		{"shorter prefix", z, "db-primary", 20},
		{"prefix equal to the name", z, "db", 20},
		{"wildcard", z, "cache", 5},
		{"exact zero beats wildcard", z, "api", 0},
		{"prefix is not a suffix", z, "mydb", 5},
		{"ServiceTTL without a match", noWildcard, "cache", 7},
		{"prefix without wildcard", noWildcard, "db1", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.z.ttlFor(tt.service); got != tt.want {
				t.Errorf("ttlFor(%q): got %d, want %d", tt.service, got, tt.want)
			}
		})
	}
}

// TestServiceTTLRecords checks that every record of a service's answer
// gets the service's TTL, except its nodes' address records.
func TestServiceTTLRecords(t *testing.T) {
	z := testZone(t, func(c *Config) {
		c.ServiceTTL = 1 * time.Second
		c.NodeTTL = 2 * time.Second
		c.ServiceTTLs = map[string]time.Duration{"web": 30 * time.Second, "*": 3 * time.Second}
	})
	insts := []catalog.ServiceInstance{inst("node1", "10.0.0.1", "", 80), inst("node2", "10.0.0.2", "10.0.1.2", 80)}
	tests := []struct {
		qname string
		qtype uint16
		want  []string
	}{
		{"web.service.cluster.", dns.TypeA, []string{"web.service.cluster.\t30\tIN\tA\t10.0.0.1", "web.service.cluster.\t30\tIN\tA\t10.0.1.2"}},
		{"_web._tcp.service.cluster.", dns.TypeSRV, []string{
			"_web._tcp.service.cluster.\t30\tIN\tSRV\t1 10 80 node1.node.dc1.cluster.",
			"_web._tcp.service.cluster.\t30\tIN\tSRV\t1 10 80 0a000102.addr.dc1.cluster.",
			"node1.node.dc1.cluster.\t2\tIN\tA\t10.0.0.1",
			"0a000102.addr.dc1.cluster.\t30\tIN\tA\t10.0.1.2",
		}},
		{"db.service.cluster.", dns.TypeA, []string{"db.service.cluster.\t3\tIN\tA\t10.0.0.1", "db.service.cluster.\t3\tIN\tA\t10.0.1.2"}},
	}
	for _, tt := range tests {
		a := z.ServiceAnswer(z.Parse(tt.qname), tt.qtype, insts)
		got := append(rrs(a.Answer), rrs(a.Extra)...)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", tt.qname, dns.TypeToString[tt.qtype], got, tt.want)
		}
	}
}

func BenchmarkTTLFor(b *testing.B) {
	z := testZone(b, func(c *Config) {
		c.ServiceTTLs = map[string]time.Duration{"*": time.Second, "db*": time.Second, "web": time.Second, "cache-*": time.Second}
	})
	b.ReportAllocs()
	for b.Loop() {
		z.ttlFor("web")
		z.ttlFor("db-primary")
		z.ttlFor("other")
	}
}
