package resolver

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/resolver/resolvertest"
)

func FuzzServeDNS(f *testing.F) {
	seed := func(m *dns.Msg) {
		b, err := m.Pack()
		if err != nil {
			f.Fatalf("pack seed: %v", err)
		}
		f.Add(b)
	}
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"web.service.cluster.", dns.TypeSRV}, {"v1.web.service.dc2.cluster.", dns.TypeA},
		{"WEB.service.dc9.cluster.", dns.TypeANY}, {"node1.node.cluster.", dns.TypeAAAA},
		{"0a000102.addr.dc1.cluster.", dns.TypeA}, {"cluster.", dns.TypeNS}, {"ns.cluster.", dns.TypeA},
		{"example.com.", dns.TypeA}, {`we\.b.service.cluster.`, dns.TypeTXT}, {"cluster.", dns.TypeAXFR},
		{"_web._tcp.service.cluster.", dns.TypeSRV}, {"_WeB._v1.service.dc2.cluster.", dns.TypeA},
		{"_web.service.cluster.", dns.TypeA}, {"service.cluster.", dns.TypeA}, {"dc2.cluster.", dns.TypeSOA},
		{"node.dc1.cluster.", dns.TypeANY}, {"node1.node.cluster.", dns.TypeTXT}, {"NoDe1.NoDe.ClUsTeR.", dns.TypeA},
		{"wEb.SeRvIcE.cLuStEr.", dns.TypeSRV}, {"CLUSTER.", dns.TypeSOA}, {"web.service.consul.", dns.TypeSRV},
		{"CoNsUl.", dns.TypeNS}, {"service.consul.", dns.TypeTXT}, {"cluster.", dns.TypeIXFR},
	} {
		seed(query(q.name, q.qtype))
		m := query(q.name, q.qtype)
		m.SetEdns0(4096, true)
		seed(m)
		for _, cookie := range []string{"0102030405060708", "0102030405060708010000005cf79f111f8130c3eee29480", "010203"} {
			m := query(q.name, q.qtype)
			m.SetEdns0(1232, false)
			m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: cookie}}
			seed(m)
		}
	}
	s := newTestServer(f, manyInstances(40), nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(b); err != nil {
			return
		}
		_, packErr := req.Copy().Pack() // may the request's question be written back?
		for _, network := range []string{"udp", "tcp"} {
			w := resolvertest.NewRecorder(network)
			s.ServeDNS(w, req)
			if n := s.panics.Load(); n != 0 {
				t.Fatalf("ServeDNS panicked answering %v", req)
			}
			if req.Response {
				continue
			}
			if w.Writes != 1 {
				t.Fatalf("ServeDNS wrote %d replies, want 1", w.Writes)
			}
			if packErr != nil {
				continue
			}
			if _, err := w.Reply(); err != nil {
				t.Fatalf("reply to %v does not pack and unpack: %v", req, err)
			}
			// No input holds a server cookie made with this server's
			// secret: no client here proved its address (cookie.go).
			if network == "udp" && len(w.Wire) > dns.MinMsgSize {
				t.Fatalf("UDP reply of %d bytes to a client without a server cookie, want at most %d", len(w.Wire), dns.MinMsgSize)
			}
		}
	})
}
