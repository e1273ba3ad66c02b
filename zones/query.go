package zones

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

// QueryAnswer answers a KindQuery question of type qtype from res, the
// outcome of executing the prepared query (nil when there is no such
// query: a NameError).
//
// It answers as ServiceAnswer does, from res.Nodes (the healthy instances
// the query found; none is a NameError), with two differences: SRV
// targets name the datacenter that answered (res.Datacenter), which after
// a failover is not the one asked about, and the TTL is the query's own
// (res.DNS.TTL) when it sets one, else the TTL of the service it names.
func (z *Zone) QueryAnswer(q Query, qtype uint16, res *catalog.QueryResult) Answer {
	if res == nil || len(res.Nodes) == 0 {
		return z.Negative(NameError)
	}
	ttl := z.ttlFor(strings.ToLower(res.Service))
	if d, ok := res.DNS.TTLValue(); ok {
		ttl = seconds(d)
	}
	dc := strings.ToLower(res.Datacenter)
	if dc == "" || !validLabel(dc) {
		dc = q.Datacenter
	}
	var a Answer
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeANY:
		a.Answer = addressRecords(q.Qname, qtype, ttl, res.Nodes)
	case dns.TypeSRV:
		a.Answer, a.Extra = z.srvRecords(q.Qname, dc, ttl, res.Nodes)
	}
	if len(a.Answer) == 0 {
		return z.Negative(NoData)
	}
	a.Ordered = res.Ordered // nearest first (the query's Near): not shuffled
	return a
}
