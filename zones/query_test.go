package zones

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

func TestQueryAnswer(t *testing.T) {
	z := testZone(t, func(c *Config) {
		c.ServiceTTL = 10 * time.Second
		c.NodeTTL = 20 * time.Second
		c.ServiceTTLs = map[string]time.Duration{"web": 15 * time.Second}
	})
	soa := []string{z.SOA().String()}
	i1 := inst("node1", "10.0.0.1", "", 8080)
	i2 := inst("node2", "10.0.0.2", "2001:db8::2", 8081)
	result := func(dc, ttl string, insts ...catalog.ServiceInstance) *catalog.QueryResult {
		return &catalog.QueryResult{Service: "Web", Nodes: insts, Datacenter: dc, DNS: catalog.QueryDNS{TTL: ttl}}
	}
	tests := []struct {
		name              string
		qname             string
		qtype             uint16
		res               *catalog.QueryResult
		want              Result
		answer, ns, extra []string
	}{
		{"no such query", "nope.query.cluster.", dns.TypeA, nil, NameError, nil, soa, nil},
		{"no healthy instance", "web.query.cluster.", dns.TypeA, result("dc1", ""), NameError, nil, soa, nil},
		{"A with the service's TTL", "web.query.cluster.", dns.TypeA, result("dc1", "", i1, i2), Success,
			[]string{"web.query.cluster.\t15\tIN\tA\t10.0.0.1"}, nil, nil},
		{"AAAA with the query's TTL", "web.query.cluster.", dns.TypeAAAA, result("dc1", "3s", i1, i2), Success,
			[]string{"web.query.cluster.\t3\tIN\tAAAA\t2001:db8::2"}, nil, nil},
		{"a TTL of 0 is a TTL", "web.query.cluster.", dns.TypeA, result("dc1", "0s", i1), Success,
			[]string{"web.query.cluster.\t0\tIN\tA\t10.0.0.1"}, nil, nil},
		{"SRV after failover names the dc that answered", "web.query.cluster.", dns.TypeSRV, result("DC2", "5s", i1, i2), Success,
			[]string{
				"web.query.cluster.\t5\tIN\tSRV\t1 10 8080 node1.node.dc2.cluster.",
				"web.query.cluster.\t5\tIN\tSRV\t1 10 8081 20010db8000000000000000000000002.addr.dc2.cluster.",
			}, nil,
			[]string{"node1.node.dc2.cluster.\t20\tIN\tA\t10.0.0.1", "20010db8000000000000000000000002.addr.dc2.cluster.\t5\tIN\tAAAA\t2001:db8::2"}},
		{"TXT is NoData", "web.query.cluster.", dns.TypeTXT, result("dc1", "", i1), NoData, nil, soa, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := z.Parse(tt.qname)
			if q.Kind != KindQuery {
				t.Fatalf("Parse(%q): got kind %v, want query", tt.qname, q.Kind)
			}
			checkAnswer(t, z.QueryAnswer(q, tt.qtype, tt.res), tt.want, tt.answer, tt.ns, tt.extra)
		})
	}
}
