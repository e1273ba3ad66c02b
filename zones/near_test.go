package zones

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

// TestParseNear: "near" sits where a datacenter does, and Parse takes it
// as one, in every service form; the agent's Source maps it to the local
// datacenter sorted by distance.
func TestParseNear(t *testing.T) {
	t.Parallel()
	z := testZone(t, nil)
	for qname, want := range map[string]Query{
		"web.service.near.cluster.":       {Kind: KindService, Qname: "web.service.near.cluster.", Name: "web", Datacenter: "near"},
		"v1.web.service.near.cluster.":    {Kind: KindService, Qname: "v1.web.service.near.cluster.", Name: "web", Tag: "v1", Datacenter: "near"},
		"_web._tcp.service.near.cluster.": {Kind: KindService, Qname: "_web._tcp.service.near.cluster.", Name: "web", Datacenter: "near"},
		"n1.node.near.cluster.":           {Kind: KindNode, Qname: "n1.node.near.cluster.", Name: "n1", Datacenter: "near"},
		"_web._v1.service.NEAR.cluster.":  {Kind: KindService, Qname: "_web._v1.service.near.cluster.", Name: "web", Tag: "v1", Datacenter: "near"},
	} {
		if got := z.Parse(qname); got != want {
			t.Errorf("Parse(%q): got %+v, want %+v", qname, got, want)
		}
	}
}

// TestQueryAnswerOrdered: a query result sorted by distance says so in
// its answer, so the resolver keeps the order.
func TestQueryAnswerOrdered(t *testing.T) {
	t.Parallel()
	z := testZone(t, nil)
	q := z.Parse("web.query.cluster.")
	res := &catalog.QueryResult{Service: "web", Datacenter: "dc1", Nodes: []catalog.ServiceInstance{inst("n2", "10.0.0.2", "", 80), inst("n1", "10.0.0.1", "", 80)}}
	if a := z.QueryAnswer(q, dns.TypeA, res); a.Ordered {
		t.Errorf("unsorted result: got Ordered, want not")
	}
	res.Ordered = true
	a := z.QueryAnswer(q, dns.TypeA, res)
	if !a.Ordered || len(a.Answer) != 2 || a.Answer[0].(*dns.A).A.String() != "10.0.0.2" {
		t.Errorf("sorted result: got %v ordered %v, want 10.0.0.2 first, ordered", a.Answer, a.Ordered)
	}
}
