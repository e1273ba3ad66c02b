package agent_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
)

// dnsCase is one rule of the DNS interface, stated as a question and what
// the reply must hold.
type dnsCase struct {
	name   string
	qname  string
	qtype  uint16
	rcode  int
	aa     bool
	answer []string // the answers' types, in any order (after shuffling)
	ns     []string // the authority section's types
	check  func(t *testing.T, r *dns.Msg)
}

func types(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		out = append(out, dns.TypeToString[rr.Header().Rrtype])
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// upstream starts a DNS server answering every question with one A record
// 192.0.2.1, standing in for a recursor.
func upstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A 192.0.2.1")
		m.Answer = []dns.RR{rr}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// TestDNSConformance runs each rule of the DNS interface against a real
// agent, over UDP and over TCP.
func TestDNSConformance(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.AltDomain = "consul."
	cfg.Resolver.Recursors = []string{upstream(t)}
	cfg.NodeMeta = map[string]string{"rack": "r1"}
	a := agenttest.Start(t, cfg)
	ctx := context.Background()
	c := client(t, a)
	for _, reg := range []*api.AgentServiceRegistration{
		{ID: "web-1", Name: "web", Port: 8080, Tags: []string{"v1"}},
		{ID: "web-2", Name: "web", Port: 8081, Address: "10.0.0.2", Tags: []string{"v2"}},
	} {
		if err := c.Agent().ServiceRegister(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}
	cases := []dnsCase{
		{name: "service SRV", qname: "web.service.dc1.cluster.", qtype: dns.TypeSRV, aa: true, answer: []string{"SRV", "SRV"},
			check: func(t *testing.T, r *dns.Msg) {
				if types(r.Extra) != "A,A" && types(r.Extra) != "A,A,OPT" {
					t.Errorf("extra: got %s, want the targets' A records", types(r.Extra))
				}
			}},
		{name: "service A, dc implied", qname: "web.service.cluster.", qtype: dns.TypeA, aa: true, answer: []string{"A", "A"}},
		{name: "tag", qname: "v2.web.service.cluster.", qtype: dns.TypeSRV, aa: true, answer: []string{"SRV"},
			check: func(t *testing.T, r *dns.Msg) {
				if srv := r.Answer[0].(*dns.SRV); srv.Target != "0a000002.addr.dc1.cluster." || srv.Port != 8081 {
					t.Errorf("got %v, want the service's own address as an .addr. target", srv)
				}
			}},
		{name: "RFC 2782", qname: "_web._v1.service.cluster.", qtype: dns.TypeSRV, aa: true, answer: []string{"SRV"}},
		{name: "RFC 2782 any tag", qname: "_web._tcp.service.dc1.cluster.", qtype: dns.TypeSRV, aa: true, answer: []string{"SRV", "SRV"}},
		{name: "node A, meta TXT in extra", qname: "test.node.cluster.", qtype: dns.TypeA, aa: true, answer: []string{"A"},
			check: func(t *testing.T, r *dns.Msg) {
				if !strings.Contains(types(r.Extra), "TXT") {
					t.Errorf("got extra %v, want the node's meta as TXT", r.Extra)
				}
			}},
		{name: "node TXT", qname: "test.node.dc1.cluster.", qtype: dns.TypeTXT, aa: true, answer: []string{"TXT"},
			check: func(t *testing.T, r *dns.Msg) {
				if txt := r.Answer[0].(*dns.TXT).Txt; len(txt) != 1 || txt[0] != "rack=r1" {
					t.Errorf("got %q, want rack=r1", txt)
				}
			}},
		{name: "addr", qname: "0a000002.addr.dc1.cluster.", qtype: dns.TypeA, aa: true, answer: []string{"A"}},
		{name: "apex SOA", qname: "cluster.", qtype: dns.TypeSOA, aa: true, answer: []string{"SOA"}},
		{name: "apex NS with glue", qname: "cluster.", qtype: dns.TypeNS, aa: true, answer: []string{"NS"},
			check: func(t *testing.T, r *dns.Msg) {
				if !strings.Contains(types(r.Extra), "A") {
					t.Errorf("got extra %v, want the name server's address as glue", r.Extra)
				}
			}},
		{name: "ENT service.cluster", qname: "service.cluster.", qtype: dns.TypeA, aa: true, ns: []string{"SOA"}},
		{name: "ENT dc", qname: "dc1.cluster.", qtype: dns.TypeA, aa: true, ns: []string{"SOA"}},
		{name: "ENT service.dc", qname: "service.dc1.cluster.", qtype: dns.TypeA, aa: true, ns: []string{"SOA"}},
		{name: "NODATA", qname: "web.service.cluster.", qtype: dns.TypeAAAA, aa: true, ns: []string{"SOA"}},
		{name: "NXDOMAIN with SOA whose TTL is its minimum", qname: "nope.service.cluster.", qtype: dns.TypeA,
			rcode: dns.RcodeNameError, aa: true, ns: []string{"SOA"},
			check: func(t *testing.T, r *dns.Msg) {
				soa := r.Ns[0].(*dns.SOA)
				if soa.Hdr.Ttl != soa.Minttl || soa.Minttl == 0 {
					t.Errorf("got SOA TTL %d minimum %d, want equal and not 0", soa.Hdr.Ttl, soa.Minttl)
				}
			}},
		{name: "unknown datacenter", qname: "web.service.dc9.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: []string{"SOA"}},
		{name: "PTR of the node", qname: "1.0.0.127.in-addr.arpa.", qtype: dns.TypePTR, aa: true, answer: []string{"PTR"},
			check: func(t *testing.T, r *dns.Msg) {
				if p := r.Answer[0].(*dns.PTR).Ptr; p != "test.node.dc1.cluster." {
					t.Errorf("got %s, want test.node.dc1.cluster.", p)
				}
			}},
		{name: "PTR of a service address", qname: "2.0.0.10.in-addr.arpa.", qtype: dns.TypePTR, aa: true, answer: []string{"PTR"}},
		{name: "alt domain", qname: "web.service.consul.", qtype: dns.TypeSRV, aa: true, answer: []string{"SRV", "SRV"},
			check: func(t *testing.T, r *dns.Msg) {
				for _, rr := range r.Answer {
					if !strings.HasSuffix(rr.(*dns.SRV).Target, ".dc1.consul.") {
						t.Errorf("got target %s, want it under the alt domain", rr.(*dns.SRV).Target)
					}
				}
			}},
		{name: "0x20 case echo", qname: "wEb.SeRvIcE.cLuStEr.", qtype: dns.TypeA, aa: true, answer: []string{"A", "A"},
			check: func(t *testing.T, r *dns.Msg) {
				for _, rr := range r.Answer {
					if rr.Header().Name != "wEb.SeRvIcE.cLuStEr." {
						t.Errorf("got owner %s, want the client's spelling", rr.Header().Name)
					}
				}
			}},
		{name: "outside the domain goes to the recursor", qname: "example.org.", qtype: dns.TypeA, answer: []string{"A"},
			check: func(t *testing.T, r *dns.Msg) {
				if !r.RecursionAvailable || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
					t.Errorf("got RA=%v %v, want the recursor's answer with RA", r.RecursionAvailable, r.Answer)
				}
			}},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range cases {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				r := query(t, a, network, tc.qname, tc.qtype)
				if r.Rcode != tc.rcode || r.Authoritative != tc.aa {
					t.Fatalf("got %s aa=%v, want %s aa=%v (%v)", dns.RcodeToString[r.Rcode], r.Authoritative,
						dns.RcodeToString[tc.rcode], tc.aa, r)
				}
				want := slices.Clone(tc.answer)
				slices.Sort(want)
				if got, want := types(r.Answer), strings.Join(want, ","); got != want {
					t.Errorf("answer: got %s, want %s (%v)", got, want, r.Answer)
				}
				if got, want := types(r.Ns), strings.Join(tc.ns, ","); got != want {
					t.Errorf("authority: got %s, want %s", got, want)
				}
				if tc.check != nil && !t.Failed() {
					tc.check(t, r)
				}
			})
		}
	}
}

// TestDNSRefusesWithoutRecursors checks cairn is no open resolver.
func TestDNSRefusesWithoutRecursors(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	if r := query(t, a, "udp", "example.org.", dns.TypeA); r.Rcode != dns.RcodeRefused || r.RecursionAvailable {
		t.Fatalf("got %s RA=%v, want REFUSED without RA", dns.RcodeToString[r.Rcode], r.RecursionAvailable)
	}
}

// TestDNSTruncation registers more instances than fit in 512 bytes: UDP
// without EDNS gets a cut answer with TC, EDNS gets more within its size,
// TCP gets them all.
func TestDNSTruncation(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	c := client(t, a)
	const n = 60
	for i := range n {
		reg := &api.AgentServiceRegistration{ID: fmt.Sprintf("big-%d", i), Name: "big", Port: 1000 + i, Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)}
		if err := c.Agent().ServiceRegister(context.Background(), reg); err != nil {
			t.Fatal(err)
		}
	}
	exchange := func(network string, edns uint16) (*dns.Msg, int) {
		m := new(dns.Msg)
		m.SetQuestion("big.service.cluster.", dns.TypeSRV)
		if edns > 0 {
			m.SetEdns0(edns, false)
		}
		cl := &dns.Client{Net: network, Timeout: 2 * time.Second, UDPSize: 65535}
		r, _, err := cl.Exchange(m, a.DNSAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		r.Compress = true // as it came over the wire
		packed, _ := r.Pack()
		return r, len(packed)
	}
	r, size := exchange("udp", 0)
	if !r.Truncated || size > 512 || len(r.Answer) == 0 {
		t.Errorf("UDP without EDNS: got TC=%v size %d answers %d, want TC, at most 512 bytes, some answers", r.Truncated, size, len(r.Answer))
	}
	r, size = exchange("udp", 4096)
	if !r.Truncated || size > 512 {
		t.Errorf("UDP with EDNS 4096 and no DNS cookie: got TC=%v size %d, want TC within 512 bytes", r.Truncated, size)
	}
	r, _ = exchange("tcp", 0)
	if r.Truncated || len(r.Answer) != n {
		t.Errorf("TCP: got TC=%v %d answers, want all %d", r.Truncated, len(r.Answer), n)
	}
}

// TestANYIsSmallOverUDP: ANY over UDP is answered with one address record,
// so a small question cannot buy a large answer (an amplification); over
// TCP, where the asker's address is proven, the whole set.
func TestANYIsSmallOverUDP(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	c := client(t, a)
	for i, addr := range []string{"127.0.0.1", "127.0.0.2"} {
		reg := &api.AgentServiceRegistration{ID: fmt.Sprintf("web%d", i), Name: "web", Address: addr, Port: 80}
		if err := c.Agent().ServiceRegister(context.Background(), reg); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		network string
		want    int
	}{{"udp", 1}, {"tcp", 2}} {
		r := query(t, a, tc.network, "web.service.cluster.", dns.TypeANY)
		if len(r.Answer) != tc.want {
			t.Errorf("ANY over %s: got %d records, want %d (%v)", tc.network, len(r.Answer), tc.want, r.Answer)
		}
	}
}
