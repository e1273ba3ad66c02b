package resolver

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/resolver/resolvertest"
)

// nameCases are the rows of TestServeDNS about the name forms beyond the
// basic ones: RFC 2782 names, empty non-terminals, node TXT, case echo
// and the alternative domain. soa and alt are the two zones' SOA records.
func nameCases(soa, alt *dns.SOA) []serveDNSCase {
	neg := []string{soa.String()}
	altNeg := []string{alt.String()}
	noCalls := []call(nil)
	web := func(dc, tag string) []call { return []call{{"Instances", dc, "web", tag}} }
	node := func(name string) []call { return []call{{"Node", "dc1", name, ""}} }
	const rfc = "_web._tcp.service.cluster.\t0\tIN\t"
	const node3 = "node3.node.cluster.\t0\tIN\t"
	txt := sorted(node3+`TXT	"az=a"`, node3+`TXT	"rack=r1"`)
	cases := []serveDNSCase{
		// RFC 2782.
		{name: "RFC 2782 _tcp is any tag", qname: "_web._tcp.service.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted(rfc+"SRV\t1 1 80 node1.node.dc1.cluster.", rfc+"SRV\t1 1 81 0a000102.addr.dc1.cluster."),
			extra:  sorted("node1.node.dc1.cluster.\t0\tIN\tA\t10.0.0.1", "0a000102.addr.dc1.cluster.\t0\tIN\tA\t10.0.1.2"),
			calls:  web("dc1", "")},
		{name: "RFC 2782 _udp is any tag", qname: "_web._udp.service.dc2.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"_web._udp.service.dc2.cluster.\t0\tIN\tA\t10.1.0.9"}, calls: web("dc2", "")},
		{name: "RFC 2782 tag", qname: "_web._v2.service.dc1.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"_web._v2.service.dc1.cluster.\t0\tIN\tA\t10.0.1.2"}, calls: web("dc1", "v2")},
		{name: "RFC 2782 no such tag", qname: "_web._v9.service.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeNameError, aa: true,
			ns: neg, calls: web("dc1", "v9")},
		{name: "underscore on one label only", qname: "_web.service.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeNameError, aa: true, ns: neg},
		{name: "underscore on a node", qname: "_node1.node.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: neg},
		// Empty non-terminals: NODATA for every type in the local dc.
		{name: "ENT service A", qname: "service.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT node SRV", qname: "node.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT addr TXT", qname: "addr.cluster.", qtype: dns.TypeTXT, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT dc ANY", qname: "dc1.cluster.", qtype: dns.TypeANY, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT service.dc AAAA", qname: "service.dc1.cluster.", qtype: dns.TypeAAAA, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT node.dc NS", qname: "node.dc1.cluster.", qtype: dns.TypeNS, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT addr.dc SOA", qname: "addr.dc1.cluster.", qtype: dns.TypeSOA, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		{name: "ENT of another dc", qname: "dc2.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: neg, calls: noCalls},
		{name: "ENT service of another dc", qname: "service.dc2.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: neg},
		// Node TXT.
		{name: "node TXT", qname: "node3.node.cluster.", qtype: dns.TypeTXT, rcode: dns.RcodeSuccess, aa: true,
			answer: txt, calls: node("node3")},
		{name: "node A with TXT in extra", qname: "node3.node.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{node3 + "A\t10.0.0.3"}, extra: txt, calls: node("node3")},
		{name: "node ANY is minimal", qname: "node3.node.cluster.", qtype: dns.TypeANY, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{node3 + "A\t10.0.0.3"}, calls: node("node3")},
		{name: "node TXT without meta", qname: "node1.node.cluster.", qtype: dns.TypeTXT, rcode: dns.RcodeSuccess, aa: true,
			ns: neg, calls: node("node1")},
		// Zone transfers; a service's ANY, one of its addresses over UDP, is
		// TestANYIsMinimal's.
		{name: "IXFR", qname: "cluster.", qtype: dns.TypeIXFR, rcode: dns.RcodeRefused},
		{name: "AXFR of the alt domain", qname: "consul.", qtype: dns.TypeAXFR, rcode: dns.RcodeRefused},
	}
	return append(cases, echoAndAltCases(soa, alt, neg, altNeg)...)
}

// echoAndAltCases are the rows of nameCases about case echo and the
// alternative domain.
func echoAndAltCases(soa, alt *dns.SOA, neg, altNeg []string) []serveDNSCase {
	web := []call{{"Instances", "dc1", "web", ""}}
	const mixed = "wEb.SeRvIcE.cLuStEr.\t0\tIN\t"
	const alts = "web.service.consul.\t0\tIN\t"
	echoedSOA := strings.Replace(soa.String(), "cluster.", "CLUSTER.", 1)
	return []serveDNSCase{
		// 0x20: answers owned by the question name echo its spelling.
		{name: "0x20 A", qname: "wEb.SeRvIcE.cLuStEr.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted(mixed+"A\t10.0.0.1", mixed+"A\t10.0.1.2"), calls: web},
		{name: "0x20 SRV keeps targets lowercase", qname: "wEb.SeRvIcE.cLuStEr.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted(mixed+"SRV\t1 1 80 node1.node.dc1.cluster.", mixed+"SRV\t1 1 81 0a000102.addr.dc1.cluster."),
			extra:  sorted("node1.node.dc1.cluster.\t0\tIN\tA\t10.0.0.1", "0a000102.addr.dc1.cluster.\t0\tIN\tA\t10.0.1.2"),
			calls:  web},
		{name: "0x20 RFC 2782", qname: "_WeB._TcP.service.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted("_WeB._TcP.service.cluster.\t0\tIN\tA\t10.0.0.1", "_WeB._TcP.service.cluster.\t0\tIN\tA\t10.0.1.2"), calls: web},
		{name: "0x20 node A and extra TXT", qname: "NoDe3.node.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"NoDe3.node.cluster.\t0\tIN\tA\t10.0.0.3"},
			extra:  sorted("NoDe3.node.cluster.\t0\tIN\tTXT\t\"az=a\"", "NoDe3.node.cluster.\t0\tIN\tTXT\t\"rack=r1\""),
			calls:  []call{{"Node", "dc1", "node3", ""}}},
		{name: "0x20 apex SOA", qname: "CLUSTER.", qtype: dns.TypeSOA, rcode: dns.RcodeSuccess, aa: true, answer: []string{echoedSOA}},
		{name: "0x20 NODATA keeps the SOA owner", qname: "Service.Cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true, ns: neg},
		// The alternative domain: records built under it.
		{name: "alt SRV", qname: "web.service.consul.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted(alts+"SRV\t1 1 80 node1.node.dc1.consul.", alts+"SRV\t1 1 81 0a000102.addr.dc1.consul."),
			extra:  sorted("node1.node.dc1.consul.\t0\tIN\tA\t10.0.0.1", "0a000102.addr.dc1.consul.\t0\tIN\tA\t10.0.1.2"),
			calls:  web},
		{name: "alt RFC 2782 other dc", qname: "_web._tcp.service.dc2.consul.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"_web._tcp.service.dc2.consul.\t0\tIN\tSRV\t1 1 80 node9.node.dc2.consul."},
			extra:  []string{"node9.node.dc2.consul.\t0\tIN\tA\t10.1.0.9"},
			calls:  []call{{"Instances", "dc2", "web", ""}}},
		{name: "alt node", qname: "node1.node.consul.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"node1.node.consul.\t0\tIN\tA\t10.0.0.1"}, calls: []call{{"Node", "dc1", "node1", ""}}},
		{name: "alt apex SOA", qname: "consul.", qtype: dns.TypeSOA, rcode: dns.RcodeSuccess, aa: true, answer: altNeg},
		{name: "alt 0x20 apex NS", qname: "CoNsUl.", qtype: dns.TypeNS, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"CoNsUl.\t0\tIN\tNS\tns.consul."}, extra: []string{"ns.consul.\t0\tIN\tA\t10.0.0.53"}},
		{name: "alt no such service", qname: "db.service.consul.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true,
			ns: altNeg, calls: []call{{"Instances", "dc1", "db", ""}}},
		{name: "alt unknown dc", qname: "web.service.dc9.consul.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true,
			ns: altNeg, calls: []call{{"Instances", "dc9", "web", ""}}},
		{name: "alt ENT", qname: "service.consul.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true, ns: altNeg},
		{name: "alt unknown name form", qname: "web.db.consul.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: altNeg},
		{name: "under neither domain", qname: "consul.cluster.example.", qtype: dns.TypeA, rcode: dns.RcodeRefused},
	}
}

func TestEchoCase(t *testing.T) {
	shared := []dns.RR{
		&dns.A{Hdr: dns.RR_Header{Name: "web.service.cluster.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: []byte{10, 0, 0, 1}},
		&dns.SRV{Hdr: dns.RR_Header{Name: "web.service.cluster.", Rrtype: dns.TypeSRV, Class: dns.ClassINET}, Target: "node1.node.dc1.cluster."},
		&dns.A{Hdr: dns.RR_Header{Name: "node1.node.dc1.cluster.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: []byte{10, 0, 0, 1}},
		&dns.MX{Hdr: dns.RR_Header{Name: "web.service.cluster.", Rrtype: dns.TypeMX, Class: dns.ClassINET}, Mx: "mx."},
	}
	before := strs(shared)
	tests := []struct {
		asked string
		want  []string // owner names of answer, in order
	}{
		{"web.service.cluster.", []string{"web.service.cluster.", "web.service.cluster.", "node1.node.dc1.cluster.", "web.service.cluster."}},
		{"web.service.cluster", []string{"web.service.cluster.", "web.service.cluster.", "node1.node.dc1.cluster.", "web.service.cluster."}},
		{"Web.Service.Cluster.", []string{"Web.Service.Cluster.", "Web.Service.Cluster.", "node1.node.dc1.cluster.", "Web.Service.Cluster."}},
		{"WEB.SERVICE.CLUSTER", []string{"WEB.SERVICE.CLUSTER.", "WEB.SERVICE.CLUSTER.", "node1.node.dc1.cluster.", "WEB.SERVICE.CLUSTER."}},
	}
	for _, tt := range tests {
		m := &dns.Msg{Answer: shared, Extra: shared[2:3]}
		echoCase(m, "web.service.cluster.", tt.asked)
		var got []string
		for _, rr := range m.Answer {
			got = append(got, rr.Header().Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("echoCase(%q): got owners %q, want %q", tt.asked, got, tt.want)
		}
		if &m.Extra[0] != &shared[2] {
			t.Errorf("echoCase(%q): copied an extra section with nothing to rename", tt.asked)
		}
	}
	if after := strs(shared); !slices.Equal(after, before) {
		t.Errorf("shared records after echoCase:\n got %q\nwant %q", after, before)
	}
	m := &dns.Msg{Answer: shared}
	if n := testing.AllocsPerRun(100, func() { echoCase(m, "web.service.cluster.", "web.service.cluster.") }); n != 0 {
		t.Errorf("echoCase of a lowercase name: got %v allocs, want 0", n)
	}
}

// TestEchoCaseLeavesSharedRecords asks mixed-case questions whose answers
// are records the zone shares, then checks the zone's records unchanged.
func TestEchoCaseLeavesSharedRecords(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"CLUSTER.", dns.TypeSOA}, {"Cluster.", dns.TypeNS}, {"Cluster.", dns.TypeANY}, {"NS.cluster.", dns.TypeA}} {
		w := resolvertest.NewRecorder("udp")
		s.ServeDNS(w, query(q.name, q.qtype))
		for _, rr := range w.Msg.Answer {
			if rr.Header().Name != q.name {
				t.Errorf("%s %s: answer owner %q, want %q", q.name, dns.TypeToString[q.qtype], rr.Header().Name, q.name)
			}
		}
	}
	if got := s.zone.SOA().Hdr.Name; got != "cluster." {
		t.Errorf("shared SOA owner after mixed-case questions: got %q, want %q", got, "cluster.")
	}
	for _, rr := range append(s.zone.ApexAnswer(dns.TypeANY).Answer, s.zone.NameserverAnswer(dns.TypeA).Answer...) {
		if name := rr.Header().Name; name != strings.ToLower(name) {
			t.Errorf("shared record renamed: %v", rr)
		}
	}
}
