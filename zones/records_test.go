package zones

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

// recordsZone is the zone of the record-building tests: distinct TTLs so a
// record built with the wrong one shows.
func recordsZone(t testing.TB) *Zone {
	return testZone(t, func(c *Config) {
		c.ServiceTTL = 10 * time.Second
		c.NodeTTL = 20 * time.Second
		c.SOA.MinTTL = 5
		c.NSAddress = "10.0.0.53"
	})
}

// inst returns an instance of service web on node (named and addressed as
// given) with the service address, port and check statuses given.
func inst(node, nodeAddr, svcAddr string, port int, statuses ...catalog.HealthStatus) catalog.ServiceInstance {
	si := catalog.ServiceInstance{
		Node:    &catalog.Node{Node: node, Address: nodeAddr, Datacenter: "dc1"},
		Service: &catalog.Service{ID: "web", Service: "web", Address: svcAddr, Port: port, Weights: catalog.Weights{Passing: 10, Warning: 3}},
	}
	for _, s := range statuses {
		si.Checks = append(si.Checks, &catalog.Check{Node: node, CheckID: "c", Status: s})
	}
	return si
}

// rrs formats records the way the tests spell their expectations.
func rrs(rr []dns.RR) []string {
	out := make([]string, len(rr))
	for i, r := range rr {
		out[i] = r.String()
	}
	return out
}

func checkAnswer(t *testing.T, got Answer, res Result, answer, ns, extra []string) {
	t.Helper()
	if got.Result != res {
		t.Errorf("result: got %v, want %v", got.Result, res)
	}
	for _, s := range []struct {
		name      string
		got, want []string
	}{{"answer", rrs(got.Answer), answer}, {"ns", rrs(got.Ns), ns}, {"extra", rrs(got.Extra), extra}} {
		if !slices.Equal(s.got, s.want) {
			t.Errorf("%s section:\n got %q\nwant %q", s.name, s.got, s.want)
		}
	}
}

func TestServiceAnswer(t *testing.T) {
	z := recordsZone(t)
	soa := []string{z.SOA().String()}
	var (
		i1 = inst("node1", "10.0.0.1", "", 8080)                                   // node address
		i2 = inst("Node2", "10.0.0.2", "10.0.1.2", 8081, catalog.HealthWarning)    // own address, warning
		i3 = inst("node3", "10.0.0.3", "2001:db8::3", 8082, catalog.HealthPassing) // own IPv6 address
		i4 = inst("node4", "10.0.0.1", "", 8080)                                   // same address as i1
		i5 = inst("node5", "2001:db8::5", "", 8085)                                // IPv6 node
		i6 = inst("node6", "10.0.0.6", "10.0.0.6", 8086)                           // own address = node's
		i7 = inst("node1", "10.0.0.1", "", 8080)                                   // same node and port as i1
		i8 = inst("node8", "10.0.0.8", "::ffff:10.0.1.8", 8088)                    // IPv4-mapped
	)
	const owner = "web.service.cluster.\t10\tIN\t"
	tests := []struct {
		name              string
		qname             string
		qtype             uint16
		insts             []catalog.ServiceInstance
		res               Result
		answer, ns, extra []string
	}{
		{"A dedups and skips IPv6", "web.service.cluster.", dns.TypeA, []catalog.ServiceInstance{i1, i2, i3, i4, i8}, Success,
			[]string{owner + "A\t10.0.0.1", owner + "A\t10.0.1.2", owner + "A\t10.0.1.8"}, nil, nil},
		{"AAAA", "web.service.cluster.", dns.TypeAAAA, []catalog.ServiceInstance{i1, i3, i5}, Success,
			[]string{owner + "AAAA\t2001:db8::3", owner + "AAAA\t2001:db8::5"}, nil, nil},
		{"ANY", "web.service.cluster.", dns.TypeANY, []catalog.ServiceInstance{i1, i3}, Success,
			[]string{owner + "A\t10.0.0.1", owner + "AAAA\t2001:db8::3"}, nil, nil},
		{"AAAA of IPv4-only is NoData", "web.service.cluster.", dns.TypeAAAA, []catalog.ServiceInstance{i1, i2}, NoData, nil, soa, nil},
		{"TXT is NoData", "web.service.cluster.", dns.TypeTXT, []catalog.ServiceInstance{i1}, NoData, nil, soa, nil},
		{"no instances is NameError", "web.service.cluster.", dns.TypeA, nil, NameError, nil, soa, nil},
		{"no instances SRV is NameError", "web.service.cluster.", dns.TypeSRV, []catalog.ServiceInstance{}, NameError, nil, soa, nil},
		{"SRV", "web.service.cluster.", dns.TypeSRV, []catalog.ServiceInstance{i1, i2, i3, i5, i6}, Success,
			[]string{
				owner + "SRV\t1 10 8080 node1.node.dc1.cluster.",
				owner + "SRV\t1 3 8081 0a000102.addr.dc1.cluster.",
				owner + "SRV\t1 10 8082 20010db8000000000000000000000003.addr.dc1.cluster.",
				owner + "SRV\t1 10 8085 node5.node.dc1.cluster.",
				owner + "SRV\t1 10 8086 node6.node.dc1.cluster.",
			}, nil,
			[]string{
				"node1.node.dc1.cluster.\t20\tIN\tA\t10.0.0.1",
				"0a000102.addr.dc1.cluster.\t10\tIN\tA\t10.0.1.2",
				"20010db8000000000000000000000003.addr.dc1.cluster.\t10\tIN\tAAAA\t2001:db8::3",
				"node5.node.dc1.cluster.\t20\tIN\tAAAA\t2001:db8::5",
				"node6.node.dc1.cluster.\t20\tIN\tA\t10.0.0.6",
			}},
		{"SRV dedups records and glue", "web.service.cluster.", dns.TypeSRV, []catalog.ServiceInstance{i1, i7, inst("node1", "10.0.0.1", "", 9090)}, Success,
			[]string{owner + "SRV\t1 10 8080 node1.node.dc1.cluster.", owner + "SRV\t1 10 9090 node1.node.dc1.cluster."}, nil,
			[]string{"node1.node.dc1.cluster.\t20\tIN\tA\t10.0.0.1"}},
		{"SRV in another dc", "v1.web.service.dc2.cluster.", dns.TypeSRV, []catalog.ServiceInstance{i1, i8}, Success,
			[]string{
				"v1.web.service.dc2.cluster.\t10\tIN\tSRV\t1 10 8080 node1.node.dc2.cluster.",
				"v1.web.service.dc2.cluster.\t10\tIN\tSRV\t1 10 8088 0a000108.addr.dc2.cluster.",
			}, nil,
			[]string{"node1.node.dc2.cluster.\t20\tIN\tA\t10.0.0.1", "0a000108.addr.dc2.cluster.\t10\tIN\tA\t10.0.1.8"}},
		{"SRV skips instances without an address", "web.service.cluster.", dns.TypeSRV,
			[]catalog.ServiceInstance{inst("bad", "not-an-ip", "", 1), {Service: i1.Service}, i1}, Success,
			[]string{owner + "SRV\t1 10 8080 node1.node.dc1.cluster."}, nil, []string{"node1.node.dc1.cluster.\t20\tIN\tA\t10.0.0.1"}},
		{"SRV of node with a non-label name uses addr", "web.service.cluster.", dns.TypeSRV, []catalog.ServiceInstance{inst("bad_name", "10.0.0.9", "", 1)}, Success,
			[]string{owner + "SRV\t1 10 1 0a000009.addr.dc1.cluster."}, nil, []string{"0a000009.addr.dc1.cluster.\t10\tIN\tA\t10.0.0.9"}},
		{"A with only unusable addresses is NoData", "web.service.cluster.", dns.TypeA, []catalog.ServiceInstance{inst("bad", "not-an-ip", "", 1)}, NoData, nil, soa, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := z.ServiceAnswer(z.Parse(tt.qname), tt.qtype, tt.insts)
			checkAnswer(t, got, tt.res, tt.answer, tt.ns, tt.extra)
		})
	}
}

func TestNodeAnswer(t *testing.T) {
	z := recordsZone(t)
	soa := []string{z.SOA().String()}
	v4 := &catalog.Node{Node: "node1", Address: "10.0.0.1"}
	v6 := &catalog.Node{Node: "node1", Address: "2001:db8::1"}
	const owner = "node1.node.cluster.\t20\tIN\t"
	tests := []struct {
		name              string
		qtype             uint16
		node              *catalog.Node
		res               Result
		answer, ns, extra []string
	}{
		{"A", dns.TypeA, v4, Success, []string{owner + "A\t10.0.0.1"}, nil, nil},
		{"ANY", dns.TypeANY, v4, Success, []string{owner + "A\t10.0.0.1"}, nil, nil},
		{"AAAA of IPv4 node", dns.TypeAAAA, v4, NoData, nil, soa, nil},
		{"AAAA", dns.TypeAAAA, v6, Success, []string{owner + "AAAA\t2001:db8::1"}, nil, nil},
		{"A of IPv6 node", dns.TypeA, v6, NoData, nil, soa, nil},
		{"MX", dns.TypeMX, v4, NoData, nil, soa, nil},
		{"no node", dns.TypeA, nil, NameError, nil, soa, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := z.NodeAnswer(z.Parse("node1.node.cluster."), tt.qtype, tt.node)
			checkAnswer(t, got, tt.res, tt.answer, tt.ns, tt.extra)
		})
	}
}

func TestAddrAnswer(t *testing.T) {
	z := recordsZone(t)
	soa := []string{z.SOA().String()}
	const v4, v6 = "0a000001.addr.dc1.cluster.", "20010db8000000000000000000000001.addr.dc2.cluster."
	tests := []struct {
		name              string
		q                 Query
		qtype             uint16
		res               Result
		answer, ns, extra []string
	}{
		{"A", z.Parse(v4), dns.TypeA, Success, []string{v4 + "\t10\tIN\tA\t10.0.0.1"}, nil, nil},
		{"AAAA of IPv4", z.Parse(v4), dns.TypeAAAA, NoData, nil, soa, nil},
		{"AAAA", z.Parse(v6), dns.TypeAAAA, Success, []string{v6 + "\t10\tIN\tAAAA\t2001:db8::1"}, nil, nil},
		{"A of IPv6", z.Parse(v6), dns.TypeA, NoData, nil, soa, nil},
		{"TXT", z.Parse(v4), dns.TypeTXT, NoData, nil, soa, nil},
		{"malformed hex", Query{Kind: KindAddr, Qname: "zz.addr.dc1.cluster.", Name: "zz"}, dns.TypeA, NameError, nil, soa, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAnswer(t, z.AddrAnswer(tt.q, tt.qtype), tt.res, tt.answer, tt.ns, tt.extra)
		})
	}
}

func TestApexAnswer(t *testing.T) {
	z := recordsZone(t)
	bare := testZone(t, nil) // no NSAddress
	soa := []string{z.SOA().String()}
	ns := "cluster.\t20\tIN\tNS\tns.cluster."
	glue := "ns.cluster.\t20\tIN\tA\t10.0.0.53"
	tests := []struct {
		name              string
		got               Answer
		res               Result
		answer, ns, extra []string
	}{
		{"SOA", z.ApexAnswer(dns.TypeSOA), Success, soa, nil, nil},
		{"NS", z.ApexAnswer(dns.TypeNS), Success, []string{ns}, nil, []string{glue}},
		{"ANY", z.ApexAnswer(dns.TypeANY), Success, []string{soa[0], ns}, nil, []string{glue}},
		{"A", z.ApexAnswer(dns.TypeA), NoData, nil, soa, nil},
		{"NS without glue", bare.ApexAnswer(dns.TypeNS), Success, []string{"cluster.\t0\tIN\tNS\tns.cluster."}, nil, nil},
		{"ns A", z.NameserverAnswer(dns.TypeA), Success, []string{glue}, nil, nil},
		{"ns AAAA", z.NameserverAnswer(dns.TypeAAAA), NoData, nil, soa, nil},
		{"ns A without address", bare.NameserverAnswer(dns.TypeA), NoData, nil, []string{bare.SOA().String()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAnswer(t, tt.got, tt.res, tt.answer, tt.ns, tt.extra)
		})
	}
}

func TestSOA(t *testing.T) {
	z := recordsZone(t)
	soa := z.SOA()
	want := "cluster.\t5\tIN\tSOA\tns.cluster. hostmaster.cluster. "
	if got := soa.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " 3600 600 86400 5") {
		t.Errorf("SOA: got %q, want %q<serial> 3600 600 86400 5", got, want)
	}
	if soa.Serial == 0 {
		t.Errorf("SOA serial: got 0, want the time of New")
	}
	neg := z.Negative(NameError)
	if len(neg.Ns) != 1 || neg.Ns[0].Header().Ttl != 5 {
		t.Errorf("negative authority: got %v, want the SOA with TTL 5", neg.Ns)
	}
}

func TestWeight(t *testing.T) {
	tests := []struct {
		statuses []catalog.HealthStatus
		want     uint16
	}{
		{nil, 10},
		{[]catalog.HealthStatus{catalog.HealthPassing}, 10},
		{[]catalog.HealthStatus{catalog.HealthPassing, catalog.HealthWarning}, 3},
	}
	for _, tt := range tests {
		if got := weight(inst("n", "10.0.0.1", "", 1, tt.statuses...)); got != tt.want {
			t.Errorf("weight with checks %v: got %d, want %d", tt.statuses, got, tt.want)
		}
	}
}

func TestSmallSet(t *testing.T) {
	var s smallSet[int]
	for i := range 20 {
		if !s.add(i) {
			t.Fatalf("add(%d) first time: got false, want true", i)
		}
	}
	for i := range 20 {
		if s.add(i) {
			t.Fatalf("add(%d) second time: got true, want false", i)
		}
	}
}

func BenchmarkServiceAnswerSRV(b *testing.B) {
	z := recordsZone(b)
	q := z.Parse("web.service.cluster.")
	insts := []catalog.ServiceInstance{
		inst("node1", "10.0.0.1", "", 8080),
		inst("node2", "10.0.0.2", "10.0.1.2", 8080),
		inst("node3", "10.0.0.3", "", 8080, catalog.HealthWarning),
	}
	b.ReportAllocs()
	for b.Loop() {
		z.ServiceAnswer(q, dns.TypeSRV, insts)
	}
}
