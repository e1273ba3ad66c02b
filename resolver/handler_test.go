package resolver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver/resolvertest"
	"github.com/cairndns/cairn/zones"
)

// testZones returns the zones of the test server: the primary cluster.
// and the alternative consul., both with local datacenter dc1.
func testZones(t testing.TB) []*zones.Zone {
	t.Helper()
	var zs []*zones.Zone
	for _, domain := range []string{"cluster.", "consul."} {
		cfg := zones.DefaultConfig()
		cfg.Domain = domain
		cfg.NSAddress = "10.0.0.53"
		z, err := zones.New(cfg)
		if err != nil {
			t.Fatalf("zones.New: %v", err)
		}
		zs = append(zs, z)
	}
	return zs
}

func newTestServer(t testing.TB, src Source, logger *slog.Logger) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.QueryTimeout = 100 * time.Millisecond
	// Tests ask the same names over and over from one address, which
	// RRL would limit; its own tests turn it on.
	cfg.RRL.Enabled = false
	s, err := New(cfg, testZones(t), src, logger)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func query(qname string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(qname, qtype)
	return m
}

// exchange has s answer req as if it came over network, and returns the
// reply as the client would unpack it.
func exchange(t testing.TB, s *Server, req *dns.Msg, network string) *dns.Msg {
	t.Helper()
	w := resolvertest.NewRecorder(network)
	s.ServeDNS(w, req)
	if w.Writes != 1 {
		t.Fatalf("ServeDNS wrote %d messages, want 1", w.Writes)
	}
	reply, err := w.Reply()
	if err != nil {
		t.Fatalf("reply does not pack and unpack: %v", err)
	}
	return reply
}

// strs formats records, leaving out OPT, sorted: answers are shuffled.
func strs(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype != dns.TypeOPT {
			out = append(out, rr.String())
		}
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string { return slices.Sorted(slices.Values(s)) }

// serveDNSCase is one question of TestServeDNS and what must come of it.
type serveDNSCase struct {
	name              string
	qname             string
	qtype             uint16
	qclass            uint16 // IN when 0
	src               *fakeSource
	rcode             int
	aa                bool
	answer, ns, extra []string
	calls             []call
}

// serveDNSCases are the questions of TestServeDNS, asked of a server with
// newFakeSource's data (or src when set); soa is the zone's SOA record.
func serveDNSCases(soa []string, failing *fakeSource) []serveDNSCase {
	const web = "web.service.cluster.\t0\tIN\t"
	return []serveDNSCase{
		{name: "SRV with targets in extra", qname: "web.service.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted(web+"SRV\t1 1 80 node1.node.dc1.cluster.", web+"SRV\t1 1 81 0a000102.addr.dc1.cluster."),
			extra:  sorted("node1.node.dc1.cluster.\t0\tIN\tA\t10.0.0.1", "0a000102.addr.dc1.cluster.\t0\tIN\tA\t10.0.1.2"),
			calls:  []call{{"Instances", "dc1", "web", ""}}},
		{name: "A", qname: "web.service.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted(web+"A\t10.0.0.1", web+"A\t10.0.1.2"),
			calls:  []call{{"Instances", "dc1", "web", ""}}},
		{name: "tag", qname: "v1.web.service.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"v1.web.service.cluster.\t0\tIN\tA\t10.0.0.1"},
			calls:  []call{{"Instances", "dc1", "web", "v1"}}},
		{name: "tag and dc", qname: "v2.web.service.dc1.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"v2.web.service.dc1.cluster.\t0\tIN\tA\t10.0.1.2"},
			calls:  []call{{"Instances", "dc1", "web", "v2"}}},
		{name: "other dc", qname: "web.service.dc2.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"web.service.dc2.cluster.\t0\tIN\tSRV\t1 1 80 node9.node.dc2.cluster."},
			extra:  []string{"node9.node.dc2.cluster.\t0\tIN\tA\t10.1.0.9"},
			calls:  []call{{"Instances", "dc2", "web", ""}}},
		{name: "case-insensitive", qname: "WEB.Service.CLUSTER.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: sorted("WEB.Service.CLUSTER.\t0\tIN\tA\t10.0.0.1", "WEB.Service.CLUSTER.\t0\tIN\tA\t10.0.1.2"),
			calls:  []call{{"Instances", "dc1", "web", ""}}},
		{name: "no such service", qname: "db.service.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: soa,
			calls: []call{{"Instances", "dc1", "db", ""}}},
		{name: "no such tag", qname: "v3.web.service.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeNameError, aa: true, ns: soa,
			calls: []call{{"Instances", "dc1", "web", "v3"}}},
		{name: "no data", qname: "web.service.cluster.", qtype: dns.TypeAAAA, rcode: dns.RcodeSuccess, aa: true, ns: soa,
			calls: []call{{"Instances", "dc1", "web", ""}}},
		{name: "unknown dc", qname: "web.service.dc9.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: soa,
			calls: []call{{"Instances", "dc9", "web", ""}}},
		{name: "source error", qname: "web.service.cluster.", qtype: dns.TypeA, src: failing, rcode: dns.RcodeServerFailure,
			calls: []call{{"Instances", "dc1", "web", ""}}},
		{name: "node", qname: "node1.node.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"node1.node.cluster.\t0\tIN\tA\t10.0.0.1"},
			calls:  []call{{"Node", "dc1", "node1", ""}}},
		{name: "no such node", qname: "node7.node.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: soa,
			calls: []call{{"Node", "dc1", "node7", ""}}},
		{name: "node source error", qname: "node1.node.cluster.", qtype: dns.TypeA, src: failing, rcode: dns.RcodeServerFailure,
			calls: []call{{"Node", "dc1", "node1", ""}}},
		{name: "prepared query SRV names the dc that answered", qname: "web-fo.query.cluster.", qtype: dns.TypeSRV, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"web-fo.query.cluster.\t5\tIN\tSRV\t1 1 80 node9.node.dc2.cluster."},
			extra:  []string{"node9.node.dc2.cluster.\t0\tIN\tA\t10.1.0.9"},
			calls:  []call{{"PreparedQuery", "dc1", "web-fo", ""}}},
		{name: "prepared query A", qname: "WEB-FO.query.dc1.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"WEB-FO.query.dc1.cluster.\t5\tIN\tA\t10.1.0.9"},
			calls:  []call{{"PreparedQuery", "dc1", "web-fo", ""}}},
		{name: "prepared query without instances", qname: "web-none.query.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: soa,
			calls: []call{{"PreparedQuery", "dc1", "web-none", ""}}},
		{name: "no such prepared query", qname: "nope.query.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: soa,
			calls: []call{{"PreparedQuery", "dc1", "nope", ""}}},
		{name: "prepared query source error", qname: "web-fo.query.cluster.", qtype: dns.TypeA, src: failing, rcode: dns.RcodeServerFailure,
			calls: []call{{"PreparedQuery", "dc1", "web-fo", ""}}},
		{name: "addr", qname: "0a000102.addr.dc1.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"0a000102.addr.dc1.cluster.\t0\tIN\tA\t10.0.1.2"}},
		{name: "apex SOA", qname: "cluster.", qtype: dns.TypeSOA, rcode: dns.RcodeSuccess, aa: true, answer: soa},
		{name: "apex NS", qname: "cluster.", qtype: dns.TypeNS, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"cluster.\t0\tIN\tNS\tns.cluster."}, extra: []string{"ns.cluster.\t0\tIN\tA\t10.0.0.53"}},
		{name: "apex A", qname: "cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true, ns: soa},
		{name: "name server", qname: "ns.cluster.", qtype: dns.TypeA, rcode: dns.RcodeSuccess, aa: true,
			answer: []string{"ns.cluster.\t0\tIN\tA\t10.0.0.53"}},
		{name: "unknown name form", qname: "web.db.cluster.", qtype: dns.TypeA, rcode: dns.RcodeNameError, aa: true, ns: soa},
		{name: "outside the domain", qname: "example.com.", qtype: dns.TypeA, rcode: dns.RcodeRefused},
		{name: "class CH", qname: "web.service.cluster.", qtype: dns.TypeA, qclass: dns.ClassCHAOS, rcode: dns.RcodeRefused},
		{name: "zone transfer", qname: "cluster.", qtype: dns.TypeAXFR, rcode: dns.RcodeRefused},
	}
}

func TestServeDNS(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src, nil)
	failing := newFakeSource()
	failing.err = errors.New("servers unreachable")
	tests := append(serveDNSCases([]string{s.zone.SOA().String()}, failing),
		nameCases(s.zone.SOA(), s.zones[1].SOA())...) // names_test.go
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src.Calls()
			srv := s
			if tt.src != nil {
				srv = newTestServer(t, tt.src, nil)
			}
			req := query(tt.qname, tt.qtype)
			if tt.qclass != 0 {
				req.Question[0].Qclass = tt.qclass
			}
			reply := exchange(t, srv, req, "udp")
			if reply.Rcode != tt.rcode {
				t.Errorf("rcode: got %s, want %s", dns.RcodeToString[reply.Rcode], dns.RcodeToString[tt.rcode])
			}
			if reply.Authoritative != tt.aa {
				t.Errorf("AA: got %v, want %v", reply.Authoritative, tt.aa)
			}
			if reply.Id != req.Id || !reply.Response || !reply.RecursionDesired || reply.RecursionAvailable {
				t.Errorf("header: got id %d QR %v RD %v RA %v, want id %d QR RD !RA",
					reply.Id, reply.Response, reply.RecursionDesired, reply.RecursionAvailable, req.Id)
			}
			if len(reply.Question) != 1 || reply.Question[0] != req.Question[0] {
				t.Errorf("question: got %v, want %v", reply.Question, req.Question)
			}
			for _, sec := range []struct {
				name      string
				got, want []string
			}{{"answer", strs(reply.Answer), tt.answer}, {"ns", strs(reply.Ns), tt.ns}, {"extra", strs(reply.Extra), tt.extra}} {
				if !slices.Equal(sec.got, sec.want) {
					t.Errorf("%s section:\n got %q\nwant %q", sec.name, sec.got, sec.want)
				}
			}
			callsOf := src
			if tt.src != nil {
				callsOf = tt.src
			}
			if got := callsOf.Calls(); !slices.Equal(got, tt.calls) {
				t.Errorf("source calls: got %+v, want %+v", got, tt.calls)
			}
		})
	}
}

func TestServeDNSProtocol(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	withEDNS := func(m *dns.Msg, version uint8) *dns.Msg {
		m.SetEdns0(4096, false)
		m.IsEdns0().SetVersion(version)
		return m
	}
	tests := []struct {
		name  string
		req   *dns.Msg
		rcode int
		opt   bool // whether the reply must carry an OPT record
	}{
		{"NOTIFY", func() *dns.Msg { m := query("cluster.", dns.TypeSOA); m.Opcode = dns.OpcodeNotify; return m }(), dns.RcodeNotImplemented, false},
		{"UPDATE", func() *dns.Msg { m := query("cluster.", dns.TypeSOA); m.Opcode = dns.OpcodeUpdate; return m }(), dns.RcodeNotImplemented, false},
		{"no question", &dns.Msg{MsgHdr: dns.MsgHdr{Id: 7}}, dns.RcodeFormatError, false},
		{"two questions", func() *dns.Msg {
			m := query("cluster.", dns.TypeSOA)
			m.Question = append(m.Question, m.Question[0])
			return m
		}(), dns.RcodeFormatError, false},
		{"EDNS version 1", withEDNS(query("cluster.", dns.TypeSOA), 1), dns.RcodeBadVers, true},
		{"EDNS version 1 on a bad opcode", func() *dns.Msg {
			m := withEDNS(query("cluster.", dns.TypeSOA), 1)
			m.Opcode = dns.OpcodeStatus
			return m
		}(), dns.RcodeNotImplemented, true},
		{"two OPT records", func() *dns.Msg {
			m := withEDNS(query("cluster.", dns.TypeSOA), 0)
			m.Extra = append(m.Extra, m.Extra[0])
			return m
		}(), dns.RcodeFormatError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := exchange(t, s, tt.req, "udp")
			if reply.Rcode != tt.rcode {
				t.Errorf("rcode: got %s, want %s", dns.RcodeToString[reply.Rcode], dns.RcodeToString[tt.rcode])
			}
			if got := reply.IsEdns0() != nil; got != tt.opt {
				t.Errorf("OPT in reply: got %v, want %v", got, tt.opt)
			}
			if reply.Authoritative || len(reply.Answer)+len(reply.Ns) != 0 {
				t.Errorf("got AA %v and %d records, want no AA and no records", reply.Authoritative, len(reply.Answer)+len(reply.Ns))
			}
		})
	}
}

func TestServeDNSIgnoresResponses(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	req := query("cluster.", dns.TypeSOA)
	req.Response = true
	w := resolvertest.NewRecorder("udp")
	s.ServeDNS(w, req)
	if w.Writes != 0 {
		t.Errorf("writes in reply to a response: got %d, want 0", w.Writes)
	}
}

func TestServeDNSEDNS(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	tests := []struct {
		name     string
		size     uint16 // 0: no EDNS
		do       bool
		wantSize uint16 // 0: no OPT in the reply
	}{
		{"no EDNS", 0, false, 0},
		{"EDNS 4096", 4096, false, 1232},
		{"EDNS 512 with DO", 512, true, 1232},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := query("web.service.cluster.", dns.TypeSRV)
			if tt.size != 0 {
				req.SetEdns0(tt.size, tt.do)
			}
			reply := exchange(t, s, req, "udp")
			opt := reply.IsEdns0()
			switch {
			case tt.wantSize == 0 && opt != nil:
				t.Fatalf("OPT: got %v, want none", opt)
			case tt.wantSize == 0:
				return
			case opt == nil:
				t.Fatalf("OPT: got none, want one")
			}
			if opt.UDPSize() != tt.wantSize || opt.Do() != tt.do || opt.Version() != 0 || len(opt.Option) != 0 {
				t.Errorf("OPT: got size %d DO %v version %d options %v, want size %d DO %v version 0 no options",
					opt.UDPSize(), opt.Do(), opt.Version(), opt.Option, tt.wantSize, tt.do)
			}
			if len(reply.Answer) != 2 || len(strs(reply.Extra)) != 2 {
				t.Errorf("got %d answers and %d extra, want 2 and 2", len(reply.Answer), len(strs(reply.Extra)))
			}
		})
	}
}

// manyInstances returns a source with n instances of web in dc1, each on
// its own node and address.
func manyInstances(n int) *fakeSource {
	src := newFakeSource()
	var insts []catalog.ServiceInstance
	for i := range n {
		addr := "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1)
		insts = append(insts, instance("node"+strconv.Itoa(i), addr, "web", "", 80))
	}
	src.instances["dc1"]["web"] = insts
	return src
}

func TestServeDNSTruncation(t *testing.T) {
	s := newTestServer(t, manyInstances(100), nil)
	tests := []struct {
		name    string
		network string
		edns    uint16
		qtype   uint16
		maxLen  int
		tc      bool
	}{
		{"UDP without EDNS", "udp", 0, dns.TypeA, 512, true},
		{"UDP without EDNS SRV", "udp", 0, dns.TypeSRV, 512, true},
		{"UDP EDNS 1000", "udp", 1000, dns.TypeA, 1000, true},
		{"UDP EDNS 4096 capped at 1232", "udp", 4096, dns.TypeSRV, 1232, true},
		{"UDP EDNS under 512", "udp", 100, dns.TypeA, 512, true},
		{"TCP", "tcp", 0, dns.TypeSRV, dns.MaxMsgSize, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := query("web.service.cluster.", tt.qtype)
			if tt.edns != 0 {
				req.SetEdns0(tt.edns, false)
			}
			w := resolvertest.NewRecorder(tt.network)
			s.ServeDNS(w, req)
			reply, err := w.Reply()
			if err != nil {
				t.Fatalf("unpack reply: %v", err)
			}
			if len(w.Wire) > tt.maxLen {
				t.Errorf("reply size: got %d bytes, want at most %d", len(w.Wire), tt.maxLen)
			}
			if reply.Truncated != tt.tc {
				t.Errorf("TC: got %v, want %v", reply.Truncated, tt.tc)
			}
			if n := len(reply.Answer); n == 0 || (tt.tc && n == 100) || (!tt.tc && n != 100) {
				t.Errorf("answers: got %d of 100 (TC %v)", n, reply.Truncated)
			}
			if tt.edns != 0 && reply.IsEdns0() == nil {
				t.Errorf("OPT: got none after truncation, want one")
			}
			if reply.Rcode != dns.RcodeSuccess || !reply.Authoritative {
				t.Errorf("got rcode %s AA %v, want NOERROR and AA", dns.RcodeToString[reply.Rcode], reply.Authoritative)
			}
		})
	}
}

func TestServeDNSShufflesCopies(t *testing.T) {
	s := newTestServer(t, manyInstances(20), nil)
	first := ""
	differs := false
	for range 20 {
		reply := exchange(t, s, query("web.service.cluster.", dns.TypeA), "tcp")
		if order := reply.Answer[0].String(); first == "" {
			first = order
		} else if order != first {
			differs = true
		}
	}
	if !differs {
		t.Errorf("20 replies all began with %q, want shuffled answers", first)
	}
	// Answers the zone shares between queries keep their order.
	want := strs(s.zone.ApexAnswer(dns.TypeANY).Answer)
	for range 20 {
		exchange(t, s, query("cluster.", dns.TypeANY), "udp")
	}
	got := s.zone.ApexAnswer(dns.TypeANY).Answer
	if got[0].Header().Rrtype != dns.TypeSOA || !slices.Equal(strs(got), want) {
		t.Errorf("shared apex answer after queries: got %v, want SOA then NS", got)
	}
}

// TestServeDNSConcurrent runs queries for shared records in parallel, for
// the race detector to catch any write to them.
func TestServeDNSConcurrent(t *testing.T) {
	s := newTestServer(t, manyInstances(50), nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				req := query([]string{"cluster.", "web.service.cluster.", "ns.cluster.", "CLUSTER.", "Web.Service.Consul.", "NS.cluster."}[j%6],
					[]uint16{dns.TypeANY, dns.TypeSRV, dns.TypeA}[j%3])
				if i%2 == 0 {
					req.SetEdns0(1232, true)
				}
				w := resolvertest.NewRecorder([]string{"udp", "tcp"}[j%2])
				s.ServeDNS(w, req)
			}
		})
	}
	wg.Wait()
}

// panicSource panics on every call.
type panicSource struct{}

func (panicSource) Instances(context.Context, string, string, string) (*Instances, error) {
	panic("boom")
}

func (panicSource) Node(context.Context, string, string) (*catalog.Node, error) { panic("boom") }

func (panicSource) Reverse(context.Context, netip.Addr) ([]string, []string, error) { panic("boom") }

func (panicSource) PreparedQuery(context.Context, string, string) (*catalog.QueryResult, error) {
	panic("boom")
}

func TestServeDNSRecoversPanics(t *testing.T) {
	var logs bytes.Buffer
	s := newTestServer(t, panicSource{}, slog.New(slog.NewTextHandler(&logs, nil)))
	for range 3 {
		reply := exchange(t, s, query("web.service.cluster.", dns.TypeA), "udp")
		if reply.Rcode != dns.RcodeServerFailure {
			t.Errorf("rcode: got %s, want SERVFAIL", dns.RcodeToString[reply.Rcode])
		}
	}
	if got := s.panics.Load(); got != 3 {
		t.Errorf("panics counted: got %d, want 3", got)
	}
	if got := bytes.Count(logs.Bytes(), []byte("panic answering DNS query")); got != 1 {
		t.Errorf("panic log lines: got %d, want 1 (rate-limited)\n%s", got, logs.String())
	}
	// A nil message must not take the server down either.
	w := resolvertest.NewRecorder("udp")
	s.ServeDNS(w, nil)
	if w.Msg == nil || w.Msg.Rcode != dns.RcodeServerFailure {
		t.Errorf("reply to a nil message: got %v, want SERVFAIL", w.Msg)
	}
}

func TestServeDNSSourceTimeout(t *testing.T) {
	src := newFakeSource()
	var hadDeadline bool
	src.hook = func(ctx context.Context) {
		_, hadDeadline = ctx.Deadline()
		<-ctx.Done()
		src.err = ctx.Err()
	}
	s := newTestServer(t, src, nil)
	start := time.Now()
	reply := exchange(t, s, query("web.service.cluster.", dns.TypeA), "udp")
	if reply.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode: got %s, want SERVFAIL", dns.RcodeToString[reply.Rcode])
	}
	if !hadDeadline {
		t.Errorf("source context: got no deadline, want QueryTimeout")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answer took %s, want about QueryTimeout (100ms)", d)
	}
}

func TestRcodeFor(t *testing.T) {
	tests := []struct {
		res  zones.Result
		err  error
		want int
	}{
		{zones.Success, nil, dns.RcodeSuccess},
		{zones.NoData, nil, dns.RcodeSuccess},
		{zones.NameError, nil, dns.RcodeNameError},
		{zones.Refused, nil, dns.RcodeRefused},
		{zones.ServerFailure, nil, dns.RcodeServerFailure},
		{zones.Result(99), nil, dns.RcodeServerFailure},
		{zones.NameError, errors.Join(errors.New("dc9"), ErrUnknownDatacenter), dns.RcodeNameError},
		{zones.Success, errors.New("rpc failed"), dns.RcodeServerFailure},
		{zones.Success, context.DeadlineExceeded, dns.RcodeServerFailure},
		{zones.Success, errMalformed, dns.RcodeFormatError},
		{zones.Success, errNotImplemented, dns.RcodeNotImplemented},
		{zones.Success, errBadVersion, dns.RcodeBadVers},
		{zones.Success, errRefused, dns.RcodeRefused},
		{zones.Success, errPanic, dns.RcodeServerFailure},
	}
	for _, tt := range tests {
		if got := rcodeFor(tt.res, tt.err); got != tt.want {
			t.Errorf("rcodeFor(%v, %v): got %s, want %s", tt.res, tt.err, dns.RcodeToString[got], dns.RcodeToString[tt.want])
		}
	}
}

// staticSource answers every question with the same data, recording
// nothing, so benchmarks measure the handler alone: one set, as a cache
// hit returns it.
type staticSource struct {
	set  *Instances
	node *catalog.Node
}

func newStaticSource(insts ...catalog.ServiceInstance) staticSource {
	return staticSource{set: NewInstances(insts, nil)}
}

func (s staticSource) Instances(context.Context, string, string, string) (*Instances, error) {
	return s.set, nil
}

func (s staticSource) Node(context.Context, string, string) (*catalog.Node, error) {
	return s.node, nil
}

func (s staticSource) Reverse(context.Context, netip.Addr) ([]string, []string, error) {
	return nil, nil, nil
}

func (s staticSource) PreparedQuery(context.Context, string, string) (*catalog.QueryResult, error) {
	return nil, nil
}

// webThree is the source of the hot path's benchmarks and allocation
// budgets: web on three nodes, one instance at its own address, answered
// from one set as a cache hit is.
func webThree() staticSource {
	return newStaticSource(
		instance("node1", "10.0.0.1", "web", "", 80),
		instance("node2", "10.0.0.2", "web", "10.0.1.2", 80),
		instance("node3", "10.0.0.3", "web", "", 80),
	)
}

// webTen is web on ten nodes, for the benchmarks of larger answers.
func webTen() staticSource {
	var ten []catalog.ServiceInstance
	for i := range 10 {
		ten = append(ten, instance("node"+strconv.Itoa(i), "10.0.0."+strconv.Itoa(i+1), "web", "", 80))
	}
	return newStaticSource(ten...)
}

func BenchmarkServeDNS(b *testing.B) {
	src := webThree()
	s3 := newTestServer(b, src, nil)
	s10 := newTestServer(b, webTen(), nil)
	for _, bc := range []struct {
		name  string
		s     *Server
		qtype uint16
		edns  bool
		want  int    // answers
		qname string // "" for web.service.cluster.
	}{
		{"SRV", s3, dns.TypeSRV, false, 3, ""}, {"SRV+EDNS", s3, dns.TypeSRV, true, 3, ""},
		{"A", s3, dns.TypeA, false, 3, ""}, {"A10", s10, dns.TypeA, false, 10, ""},
		{"SRV-0x20", s3, dns.TypeSRV, false, 3, "wEb.SeRvIcE.cLuStEr."}, // owner names echoed: copies
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := query(cmp.Or(bc.qname, "web.service.cluster."), bc.qtype)
			if bc.edns {
				req.SetEdns0(1232, false)
			}
			w := resolvertest.NewSink("udp")
			b.ReportAllocs()
			for b.Loop() {
				bc.s.ServeDNS(w, req)
			}
			if reply := exchange(b, bc.s, req, "udp"); reply.Rcode != dns.RcodeSuccess || len(reply.Answer) != bc.want {
				b.Fatalf("got rcode %d and %d answers, want NOERROR and %d", reply.Rcode, len(reply.Answer), bc.want)
			}
		})
	}
}

// TestServeDNSAllocBudget keeps the hot path from growing allocations
// unnoticed: an SRV question for 3 instances, answered from a set the
// Source keeps returning (a cache hit). The budget is 0: the reply is
// kept packed beside the memoized answer and patched per question
// (wirecache.go), in a pooled buffer, with a pooled query context. It was
// 4 when each reply was built and packed (the reply, its question, the
// shuffled copy and the query context), and 10 when miekg/dns packed
// each reply into a new buffer with a new map.
func TestServeDNSAllocBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	const budget = 0
	src := webThree()
	s := newTestServer(t, src, nil)
	req := query("web.service.cluster.", dns.TypeSRV)
	w := resolvertest.NewSink("udp")
	if got := testing.AllocsPerRun(200, func() { s.ServeDNS(w, req) }); got > budget {
		t.Errorf("allocations per SRV query: got %v, want at most %d", got, budget)
	}
}
