package agent

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/resolver/resolvertest"
	"github.com/cairndns/cairn/zones"
)

// benchStore holds the services of the reference zone used by
// examples/bench/dnsperf.sh: web (3 instances), api (10) and db (1), with
// their own addresses on one node.
func benchStore(tb testing.TB) *catalog.Store {
	tb.Helper()
	st, err := catalog.NewStore()
	if err != nil {
		tb.Fatal(err)
	}
	idx := uint64(1)
	if err := st.Register(idx, &catalog.RegisterRequest{Node: "bench", Address: "127.0.0.1", Datacenter: "dc1"}); err != nil {
		tb.Fatal(err)
	}
	add := func(name string, n, port, net int) {
		for i := 1; i <= n; i++ {
			idx++
			svc := &catalog.Service{ID: fmt.Sprintf("%s-%d", name, i), Service: name, Port: port, Address: fmt.Sprintf("127.0.%d.%d", net, i)}
			if err := catalog.NormalizeService(svc); err != nil {
				tb.Fatal(err)
			}
			if err := st.Register(idx, &catalog.RegisterRequest{Node: "bench", SkipNodeUpdate: true, Service: svc}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	add("web", 3, 8080, 1)
	add("api", 10, 9090, 2)
	add("db", 1, 5432, 3)
	return st
}

// BenchmarkDNSFromCatalog measures one DNS answer through the resolver and
// the agent's backend over a real state store, without sockets: the
// queries of the reference benchmark, in turn.
func BenchmarkDNSFromCatalog(b *testing.B) {
	z, err := zones.New(zones.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	srv, err := resolver.New(resolver.DefaultConfig(), []*zones.Zone{z}, &backend{store: benchStore(b), dc: "dc1"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var queries []*dns.Msg
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"web.service.dc1.cluster.", dns.TypeA}, {"web.service.dc1.cluster.", dns.TypeSRV},
		{"api.service.dc1.cluster.", dns.TypeSRV}, {"db.service.dc1.cluster.", dns.TypeA},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		queries = append(queries, m)
	}
	// Each query is checked once through a Recorder (which unpacks the
	// reply); the loop writes to a Sink, which keeps only the size, as a
	// socket would, so that it measures the handler alone.
	for i, q := range queries {
		w := resolvertest.NewRecorder("udp")
		srv.ServeDNS(w, q)
		if w.Msg == nil || w.Msg.Rcode != dns.RcodeSuccess || len(w.Msg.Answer) == 0 {
			b.Fatalf("query %d: got %v", i, w.Msg)
		}
	}
	w := resolvertest.NewSink("udp")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		srv.ServeDNS(w, queries[i%len(queries)])
	}
	if w.Writes == 0 || w.Size == 0 {
		b.Fatalf("the handler wrote %d replies of %d bytes", w.Writes, w.Size)
	}
}
