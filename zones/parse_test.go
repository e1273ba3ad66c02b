package zones

import (
	"net/netip"
	"strings"
	"testing"
)

func testZone(t testing.TB, edit func(*Config)) *Zone {
	t.Helper()
	cfg := DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	z, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return z
}

func TestParse(t *testing.T) {
	z := testZone(t, nil)
	v4 := netip.MustParseAddr("192.168.0.1")
	v6 := netip.MustParseAddr("2001:db8::1")
	label63 := strings.Repeat("a", 63)
	label62 := label63[:62]
	tests := []struct {
		qname string
		want  Query
	}{
		// Services.
		{"web.service.cluster.", Query{Kind: KindService, Qname: "web.service.cluster.", Name: "web", Datacenter: "dc1"}},
		{"web.service.cluster", Query{Kind: KindService, Qname: "web.service.cluster.", Name: "web", Datacenter: "dc1"}},
		{"WEB.Service.CLUSTER.", Query{Kind: KindService, Qname: "web.service.cluster.", Name: "web", Datacenter: "dc1"}},
		{"web.service.dc2.cluster.", Query{Kind: KindService, Qname: "web.service.dc2.cluster.", Name: "web", Datacenter: "dc2"}},
		{"v1.web.service.cluster.", Query{Kind: KindService, Qname: "v1.web.service.cluster.", Name: "web", Tag: "v1", Datacenter: "dc1"}},
		{"v1.web.service.dc2.cluster.", Query{Kind: KindService, Qname: "v1.web.service.dc2.cluster.", Name: "web", Tag: "v1", Datacenter: "dc2"}},
		{"a.b.service.dc1.cluster.", Query{Kind: KindService, Qname: "a.b.service.dc1.cluster.", Name: "b", Tag: "a", Datacenter: "dc1"}},
		{"service.service.cluster.", Query{Kind: KindService, Qname: "service.service.cluster.", Name: "service", Datacenter: "dc1"}},
		{label63 + ".service.cluster.", Query{Kind: KindService, Qname: label63 + ".service.cluster.", Name: label63, Datacenter: "dc1"}},
		// A keyword in last place means the local dc: "dc1" here is the service.
		{"web.dc1.service.cluster.", Query{Kind: KindService, Qname: "web.dc1.service.cluster.", Name: "dc1", Tag: "web", Datacenter: "dc1"}},
		// RFC 2782 service names.
		{"_web._v1.service.cluster.", Query{Kind: KindService, Qname: "_web._v1.service.cluster.", Name: "web", Tag: "v1", Datacenter: "dc1"}},
		{"_web._v1.service.dc2.cluster.", Query{Kind: KindService, Qname: "_web._v1.service.dc2.cluster.", Name: "web", Tag: "v1", Datacenter: "dc2"}},
		{"_WEB._TCP.Service.cluster.", Query{Kind: KindService, Qname: "_web._tcp.service.cluster.", Name: "web", Datacenter: "dc1"}},
		{"_web._udp.service.dc2.cluster.", Query{Kind: KindService, Qname: "_web._udp.service.dc2.cluster.", Name: "web", Datacenter: "dc2"}},
		{"_tcp._tcp.service.cluster.", Query{Kind: KindService, Qname: "_tcp._tcp.service.cluster.", Name: "tcp", Datacenter: "dc1"}},
		{"tcp.web.service.cluster.", Query{Kind: KindService, Qname: "tcp.web.service.cluster.", Name: "web", Tag: "tcp", Datacenter: "dc1"}}, // a tag, without '_'
		{"_" + label62 + "._v1.service.cluster.", Query{Kind: KindService, Qname: "_" + label62 + "._v1.service.cluster.", Name: label62, Tag: "v1", Datacenter: "dc1"}},
		// Nodes.
		{"node1.node.cluster.", Query{Kind: KindNode, Qname: "node1.node.cluster.", Name: "node1", Datacenter: "dc1"}},
		{"Node-1.NODE.dc2.cluster.", Query{Kind: KindNode, Qname: "node-1.node.dc2.cluster.", Name: "node-1", Datacenter: "dc2"}},
		// Addresses.
		{"c0a80001.addr.dc1.cluster.", Query{Kind: KindAddr, Qname: "c0a80001.addr.dc1.cluster.", Name: "c0a80001", Datacenter: "dc1", Addr: v4}},
		{"C0A80001.addr.dc2.cluster.", Query{Kind: KindAddr, Qname: "c0a80001.addr.dc2.cluster.", Name: "c0a80001", Datacenter: "dc2", Addr: v4}},
		{"c0a80001.addr.cluster.", Query{Kind: KindAddr, Qname: "c0a80001.addr.cluster.", Name: "c0a80001", Datacenter: "dc1", Addr: v4}},
		{"20010db8000000000000000000000001.addr.dc1.cluster.", Query{Kind: KindAddr, Qname: "20010db8000000000000000000000001.addr.dc1.cluster.", Name: "20010db8000000000000000000000001", Datacenter: "dc1", Addr: v6}},
		// Prepared queries, by name or ID.
		{"Web-Nearest.query.cluster.", Query{Kind: KindQuery, Qname: "web-nearest.query.cluster.", Name: "web-nearest", Datacenter: "dc1"}},
		{"web.query.dc2.cluster.", Query{Kind: KindQuery, Qname: "web.query.dc2.cluster.", Name: "web", Datacenter: "dc2"}},
		{"8f246b77-f3e1-ff88-5b48-8ec93abf3e05.query.cluster.", Query{Kind: KindQuery, Qname: "8f246b77-f3e1-ff88-5b48-8ec93abf3e05.query.cluster.", Name: "8f246b77-f3e1-ff88-5b48-8ec93abf3e05", Datacenter: "dc1"}},
		{"query.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "query.cluster.", Datacenter: "dc1"}},
		// The apex and its name server.
		{"cluster.", Query{Kind: KindApex, Qname: "cluster.", Datacenter: "dc1"}},
		{"CLUSTER", Query{Kind: KindApex, Qname: "cluster.", Datacenter: "dc1"}},
		{"ns.cluster.", Query{Kind: KindNameserver, Qname: "ns.cluster.", Datacenter: "dc1"}},
		// Empty non-terminals; Datacenter is whatever stands in its place.
		{"service.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "service.cluster.", Datacenter: "dc1"}},
		{"NODE.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "node.cluster.", Datacenter: "dc1"}},
		{"addr.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "addr.cluster.", Datacenter: "dc1"}},
		{"dc1.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "dc1.cluster.", Datacenter: "dc1"}},
		{"service.dc1.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "service.dc1.cluster.", Datacenter: "dc1"}},
		{"node.dc1.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "node.dc1.cluster.", Datacenter: "dc1"}},
		{"addr.dc1.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "addr.dc1.cluster.", Datacenter: "dc1"}},
		{"dc2.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "dc2.cluster.", Datacenter: "dc2"}},
		{"service.dc2.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "service.dc2.cluster.", Datacenter: "dc2"}},
		{"web.cluster.", Query{Kind: KindEmptyNonTerminal, Qname: "web.cluster.", Datacenter: "web"}},
		// Outside the domain.
		{"example.com.", Query{Kind: KindOutside, Qname: "example.com."}},
		{"cluster.example.com.", Query{Kind: KindOutside, Qname: "cluster.example.com."}},
		{"mycluster.", Query{Kind: KindOutside, Qname: "mycluster."}},
		{"web.service.mycluster.", Query{Kind: KindOutside, Qname: "web.service.mycluster."}},
		{`foo\.cluster.`, Query{Kind: KindOutside, Qname: `foo\.cluster.`}},
		{".", Query{Kind: KindOutside, Qname: "."}},
		{"", Query{Kind: KindOutside, Qname: "."}},
	}
	for _, tt := range tests {
		t.Run(tt.qname, func(t *testing.T) {
			if got := z.Parse(tt.qname); got != tt.want {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.qname, got, tt.want)
			}
		})
	}
}

// TestParseInvalid parses names under the domain of no known form.
func TestParseInvalid(t *testing.T) {
	z := testZone(t, nil)
	label63 := strings.Repeat("a", 63)
	tests := []struct{ qname, why string }{
		{"ns.dc1.cluster.", "the name server has no dc"},
		{"web.db.cluster.", "unknown keyword"},
		{"web.service.dc1.extra.cluster.", "dc not last"},
		{"a.b.c.service.cluster.", "too many before keyword"},
		{"a.b.c.service.dc1.cluster.", "too many before keyword"},
		{"a.b.c.d.e.service.cluster.", "too many labels"},
		{"a.node1.node.cluster.", "node has no tag"},
		{"a.web.query.cluster.", "query has no tag"},
		{"_web._tcp.query.cluster.", "RFC 2782 only for services"},
		{"node.dc1.dc2.cluster.", "no node name"},
		{"web..service.cluster.", "empty label"},
		{".service.cluster.", "empty label"},
		{".cluster.", "empty label"},
		{"web_1.service.cluster.", "not a LDH label"},
		{"_web.service.cluster.", "RFC 2782 needs two labels"},
		{"_web.v1.service.cluster.", "both with '_'"},
		{"web._v1.service.cluster.", "both with '_'"},
		{"x._web._v1.service.cluster.", "three labels"},
		{"_web._v1.service._dc2.cluster.", "'_' in the dc"},
		{"_web._v1.node.cluster.", "only for services"},
		{"_node1.node.cluster.", "only for services"},
		{"_c0a80001.addr.cluster.", "only for services"},
		{"_dc1.cluster.", "not a dc"},
		{"_service.cluster.", "not a keyword"},
		{"_ns.cluster.", "not the name server"},
		{"__web._v1.service.cluster.", "two '_'"},
		{"_._v1.service.cluster.", "'_' alone"},
		{"_" + label63 + "._v1.service.cluster.", "label too long"},
		{"_web._v1.service.service.cluster.", "three before the last keyword"},
		{`we\.b.service.cluster.`, "escaped dot"},
		{`web.service.d\099.cluster.`, "escape in dc"},
		{label63 + "a.service.cluster.", "label too long"},
		{"c0a8001.addr.dc1.cluster.", "7 hex digits"},
		{"c0a8000g.addr.dc1.cluster.", "not hex"},
		{"x.c0a80001.addr.dc1.cluster.", "two labels before addr"},
		{"20010db800000000000000000000001.addr.cluster.", "31 hex digits"},
	}
	for _, tt := range tests {
		want := Query{Qname: tt.qname}
		if got := z.Parse(tt.qname); got != want {
			t.Errorf("Parse(%q) (%s)\n got %+v\nwant %+v", tt.qname, tt.why, got, want)
		}
	}
}

func TestParseMultiLabelDomain(t *testing.T) {
	z := testZone(t, func(c *Config) { c.Domain, c.Datacenter = "Consul.Example.COM", "East" })
	tests := []struct {
		qname string
		want  Query
	}{
		{"web.service.consul.example.com.", Query{Kind: KindService, Qname: "web.service.consul.example.com.", Name: "web", Datacenter: "east"}},
		{"web.service.west.consul.example.com.", Query{Kind: KindService, Qname: "web.service.west.consul.example.com.", Name: "web", Datacenter: "west"}},
		{"consul.example.com.", Query{Kind: KindApex, Qname: "consul.example.com.", Datacenter: "east"}},
		{"example.com.", Query{Kind: KindOutside, Qname: "example.com."}},
		{"web.service.example.com.", Query{Kind: KindOutside, Qname: "web.service.example.com."}},
	}
	for _, tt := range tests {
		if got := z.Parse(tt.qname); got != tt.want {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.qname, got, tt.want)
		}
	}
}

// TestParseAltDomain parses names for two zones, as a resolver with an
// alternative domain does: each takes only the names under its domain.
func TestParseAltDomain(t *testing.T) {
	primary := testZone(t, nil)
	alt := testZone(t, func(c *Config) { c.Domain = "Alt.Example." })
	tests := []struct {
		qname         string
		primary, alt  Kind
		name, tag, dc string // of the zone that takes it
	}{
		{"web.service.cluster.", KindService, KindOutside, "web", "", "dc1"},
		{"web.service.alt.example.", KindOutside, KindService, "web", "", "dc1"},
		{"_web._v1.service.dc2.alt.example.", KindOutside, KindService, "web", "v1", "dc2"},
		{"node1.node.alt.example.", KindOutside, KindNode, "node1", "", "dc1"},
		{"service.alt.example.", KindOutside, KindEmptyNonTerminal, "", "", "dc1"},
		{"alt.example.", KindOutside, KindApex, "", "", "dc1"},
		{"example.", KindOutside, KindOutside, "", "", ""},
		{"web.service.alt.example.cluster.", KindInvalid, KindOutside, "", "", ""},
	}
	for _, tt := range tests {
		p, a := primary.Parse(tt.qname), alt.Parse(tt.qname)
		if p.Kind != tt.primary || a.Kind != tt.alt {
			t.Errorf("Parse(%q): got kinds %v (primary) and %v (alt), want %v and %v", tt.qname, p.Kind, a.Kind, tt.primary, tt.alt)
		}
		q := p
		if p.Kind == KindOutside {
			q = a
		}
		if q.Name != tt.name || q.Tag != tt.tag || q.Datacenter != tt.dc {
			t.Errorf("Parse(%q): got name %q tag %q dc %q, want %q %q %q", tt.qname, q.Name, q.Tag, q.Datacenter, tt.name, tt.tag, tt.dc)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	z := testZone(t, nil)
	for _, qname := range []string{
		"v1.web.service.dc2.cluster.",
		"_web._tcp.service.dc2.cluster.",
		"service.dc1.cluster.",
		"node1.node.cluster.",
		"c0a80001.addr.dc1.cluster.",
		"cluster.",
		"example.com.",
		"a.b.c.d.e.f.g.cluster.",
	} {
		if got := testing.AllocsPerRun(100, func() { z.Parse(qname) }); got != 0 {
			t.Errorf("Parse(%q): got %v allocs, want 0", qname, got)
		}
	}
}

func TestEncodeAddr(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"192.168.0.1", "c0a80001"},
		{"::ffff:10.0.0.1", "0a000001"},
		{"2001:db8::1", "20010db8000000000000000000000001"},
	}
	for _, tt := range tests {
		got := encodeAddr(netip.MustParseAddr(tt.addr))
		if got != tt.want {
			t.Errorf("encodeAddr(%s): got %q, want %q", tt.addr, got, tt.want)
		}
		a, ok := decodeAddr(got)
		if want := netip.MustParseAddr(tt.addr).Unmap(); !ok || a != want {
			t.Errorf("decodeAddr(%q): got %v, %v, want %v, true", got, a, ok, want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	z := testZone(b, nil)
	for _, qname := range []string{
		"web.service.cluster.",
		"v1.web.service.dc2.cluster.",
		"node1.node.cluster.",
		"20010db8000000000000000000000001.addr.dc1.cluster.",
		"Web.Service.Cluster.", // must be lowercased: allocates
	} {
		b.Run(qname, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				z.Parse(qname)
			}
		})
	}
}
