package resolver

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/resolver/resolvertest"
)

// checkPack packs m with p and with miekg/dns, and fails unless both give
// the same bytes or p leaves m to miekg/dns. It reports whether p packed m.
func checkPack(t testing.TB, p *packer, m *dns.Msg, size int) bool {
	t.Helper()
	got, err := p.pack(m, size)
	if err != nil {
		if !errors.Is(err, errNotPacked) {
			t.Fatalf("pack: got error %v, want nil or errNotPacked", err)
		}
		return false
	}
	want, wantErr := m.Pack()
	if wantErr != nil {
		t.Fatalf("pack packed a message miekg/dns refuses (%v):\n%v", wantErr, m)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("pack of\n%v\n got %x\nwant %x", m, got, want)
	}
	return true
}

// TestPackReplies checks that every reply of TestServeDNS's questions
// (and more), asked over UDP and TCP with and without EDNS0 and in mixed
// case, is packed by pack, to the bytes miekg/dns packs.
func TestPackReplies(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	type question struct {
		name  string
		qtype uint16
		class uint16 // IN when 0
	}
	var own []question
	for _, tt := range append(serveDNSCases([]string{s.zone.SOA().String()}, nil), nameCases(s.zone.SOA(), s.zones[1].SOA())...) {
		own = append(own, question{tt.qname, tt.qtype, tt.qclass})
	}
	own = append(own, question{"node3.node.cluster.", dns.TypeTXT, 0}, question{"1.0.0.10.in-addr.arpa.", dns.TypePTR, 0})
	// 300 instances: cut to fit over UDP (TC), whole over TCP.
	many := []question{{"web.service.cluster.", dns.TypeSRV, 0}, {"web.service.cluster.", dns.TypeA, 0}}
	p := s.getPacker()
	for _, set := range []struct {
		s  *Server
		qs []question
	}{{s, own}, {newTestServer(t, manyInstances(300), nil), many}} {
		for _, q := range set.qs {
			for _, qname := range []string{q.name, mixedCase(q.name)} {
				for _, network := range []string{"udp", "tcp"} {
					for _, edns := range []uint16{0, 512, 1232, 4096} {
						req := query(qname, q.qtype)
						if q.class != 0 {
							req.Question[0].Qclass = q.class
						}
						if edns != 0 {
							req.SetEdns0(edns, edns == 4096)
						}
						m, size, _ := set.s.reply(resolvertest.NewRecorder(network), req, nil)
						if !checkPack(t, p, m, size) {
							t.Errorf("%s %s over %s, EDNS0 %d: left to miekg/dns:\n%v", qname, dns.TypeToString[q.qtype], network, edns, m)
						}
						set.s.putPacker(p)
						p = set.s.getPacker()
					}
				}
			}
		}
	}
}

// TestPackSignedReplies checks that signed replies, denials included, are
// packed by pack itself to the bytes miekg/dns packs; a DNSKEY is left to
// miekg/dns.
func TestPackSignedReplies(t *testing.T) {
	s, _ := newSigningServer(t, newFakeSource(), nil)
	p := s.getPacker()
	for _, q := range []struct {
		name   string
		qtype  uint16
		packed bool
	}{
		{"web.service.cluster.", dns.TypeSRV, true}, {"wEb.SeRvIcE.cLuStEr.", dns.TypeA, true},
		{"node1.node.dc1.cluster.", dns.TypeA, true}, {"cluster.", dns.TypeNS, true}, {"web.service.consul.", dns.TypeSRV, true},
		{"cluster.", dns.TypeDNSKEY, false}, {"nope.service.cluster.", dns.TypeA, true}, {"web.service.cluster.", dns.TypeAAAA, true},
		{"cluster.", dns.TypeTXT, true},
	} {
		for _, network := range []string{"udp", "tcp"} {
			req := query(q.name, q.qtype)
			req.SetEdns0(1232, true)
			m, size, _ := s.reply(resolvertest.NewRecorder(network), req, nil)
			if got := checkPack(t, p, m, size); got != q.packed {
				t.Errorf("%s %s over %s: packed by pack %v, want %v", q.name, dns.TypeToString[q.qtype], network, got, q.packed)
			}
			s.putPacker(p)
			p = s.getPacker()
		}
	}
}

// mixedCase returns name with every other letter upper case.
func mixedCase(name string) string {
	b := []byte(name)
	for i := 0; i < len(b); i += 2 {
		if b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// TestPackLeavesToMiekg checks the messages pack does not pack itself.
func TestPackLeavesToMiekg(t *testing.T) {
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: "x.cluster.", Rrtype: t, Class: dns.ClassINET}
	}
	for _, tt := range []struct {
		name string
		rr   dns.RR
	}{
		{"MX", &dns.MX{Hdr: hdr(dns.TypeMX), Mx: "mail.cluster."}},
		{"TXT escape", &dns.TXT{Hdr: hdr(dns.TypeTXT), Txt: []string{`a\"b`}}},
		{"TXT none", &dns.TXT{Hdr: hdr(dns.TypeTXT)}},
		{"A of IPv6", &dns.A{Hdr: hdr(dns.TypeA), A: net.ParseIP("2001:db8::1")}},
		{"A empty", &dns.A{Hdr: hdr(dns.TypeA)}},
		{"AAAA of 4 bytes", &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: net.IP{1, 2, 3, 4}}},
		{"OPT with option", &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{&dns.EDNS0_NSID{Code: dns.EDNS0NSID}}}},
		{"nil", nil},
	} {
		m := new(dns.Msg)
		m.SetQuestion("x.cluster.", dns.TypeA)
		m.Answer = []dns.RR{tt.rr}
		m.Compress = true
		if checkPack(t, new(packer), m, dns.MaxMsgSize) {
			t.Errorf("%s: packed, want left to miekg/dns", tt.name)
		}
	}
	m := new(dns.Msg)
	m.SetQuestion("x.cluster.", dns.TypeA)
	m.Rcode = dns.RcodeBadVers // an extended rcode needs an OPT record
	if checkPack(t, new(packer), m, dns.MaxMsgSize) {
		t.Errorf("extended rcode without OPT: packed, want left to miekg/dns")
	}
	// A buffer too small is not an error either: the message is left to
	// miekg/dns, which packs it whatever its size.
	m.Rcode = 0
	m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: "x.cluster.", Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{strings.Repeat("a", 255), strings.Repeat("b", 255), strings.Repeat("c", 255)}}}
	if checkPack(t, new(packer), m, dns.MinMsgSize) {
		t.Errorf("message larger than the buffer: packed, want left to miekg/dns")
	}
}

// TestServeDNSWritesPacked checks that the handler writes the packer's
// bytes for a cached service answer, and uses WriteMsg for what it leaves
// to miekg/dns.
func TestServeDNSWritesPacked(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	w := &msgCounter{Sink: resolvertest.NewSink("udp")}
	s.ServeDNS(w, query("web.service.cluster.", dns.TypeSRV))
	if w.msgs != 0 || w.Writes != 1 {
		t.Errorf("SRV answer: got %d WriteMsg of %d writes, want 0 of 1", w.msgs, w.Writes)
	}
}

// msgCounter counts the messages written with WriteMsg.
type msgCounter struct {
	*resolvertest.Sink
	msgs int
}

func (w *msgCounter) WriteMsg(m *dns.Msg) error { w.msgs++; return w.Sink.WriteMsg(m) }

// FuzzPack packs messages, as unpacked from the fuzzer's bytes and marked
// for compression, with one packer reused throughout, and checks the
// bytes against miekg/dns's.
func FuzzPack(f *testing.F) {
	s := newTestServer(f, newFakeSource(), nil)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"web.service.cluster.", dns.TypeSRV}, {"wEb.SeRvIcE.cLuStEr.", dns.TypeSRV}, {"web.service.cluster.", dns.TypeA},
		{"cluster.", dns.TypeANY}, {"node3.node.cluster.", dns.TypeTXT}, {"1.0.0.10.in-addr.arpa.", dns.TypePTR},
		{"nope.service.cluster.", dns.TypeA}, {"ns.cluster.", dns.TypeAAAA}, {"web.service.consul.", dns.TypeSRV},
	} {
		req := query(q.name, q.qtype)
		req.SetEdns0(1232, true)
		w := resolvertest.NewRecorder("udp")
		s.ServeDNS(w, req)
		f.Add(w.Wire)
	}
	signing, _ := newSigningServer(f, newFakeSource(), nil)
	for _, name := range []string{"web.service.cluster.", "nope.service.cluster."} {
		req := query(name, dns.TypeSRV)
		req.SetEdns0(1232, true)
		w := resolvertest.NewRecorder("udp")
		signing.ServeDNS(w, req)
		f.Add(w.Wire)
	}
	p := s.getPacker()
	f.Fuzz(func(t *testing.T, b []byte) {
		m := new(dns.Msg)
		if err := m.Unpack(b); err != nil {
			return
		}
		m.Compress = true
		checkPack(t, p, m, dns.MaxMsgSize)
		s.putPacker(p)
		p = s.getPacker()
	})
}

// FuzzPackNames packs messages of the record types pack packs, with
// names from the fuzzer (any bytes, any case, escapes, names that share
// suffixes or not), and checks the bytes against miekg/dns's.
func FuzzPackNames(f *testing.F) {
	f.Add("wEb.service.cluster.", "node1.node.dc1.cluster.", "0a000102.addr.dc1.cluster.", uint8(3))
	f.Add("web.service.cluster.", "web.service.cluster.", "service.cluster.", uint8(40))
	f.Add(`we\.b.service.cluster.`, `a\000.b.`, ".", uint8(1))
	f.Add("x.", "y.x.", "x..", uint8(2))
	f.Add(strings.Repeat("a", 63)+".", strings.Repeat("b", 64)+".", "c", uint8(5))
	p := new(packer)
	f.Fuzz(func(t *testing.T, a, b, c string, n uint8) {
		hdr := func(name string, rrtype uint16) dns.RR_Header {
			return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: 30}
		}
		m := new(dns.Msg)
		m.SetQuestion(a, dns.TypeSRV)
		m.Response, m.Compress = true, true
		for i := range int(n % 48) { // past listLimit suffixes at times
			target := b
			if i%3 == 1 {
				target = strconv.Itoa(i) + "." + c
			}
			m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr(a, dns.TypeSRV), Port: uint16(i), Target: target})
			m.Extra = append(m.Extra, &dns.A{Hdr: hdr(target, dns.TypeA), A: net.IPv4(10, 0, 0, byte(i))})
		}
		m.Ns = []dns.RR{
			&dns.NS{Hdr: hdr(c, dns.TypeNS), Ns: b},
			&dns.SOA{Hdr: hdr(c, dns.TypeSOA), Ns: a, Mbox: "hostmaster." + c, Serial: 1},
			&dns.PTR{Hdr: hdr(b, dns.TypePTR), Ptr: c},
			&dns.CNAME{Hdr: hdr(a, dns.TypeCNAME), Target: b},
		}
		checkPack(t, p, m, dns.MaxMsgSize)
	})
}
