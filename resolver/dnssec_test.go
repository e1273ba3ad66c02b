package resolver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver/resolvertest"
)

// newSigningServer returns a test server signing with a new key, and the
// key's DNSKEY in cluster.
func newSigningServer(t testing.TB, src Source, configure func(*Config)) (*Server, *dns.DNSKEY) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DNSSEC.Enabled = true
	cfg.RRL.Enabled = false // see newTestServer
	if configure != nil {
		configure(&cfg)
	}
	s, err := New(cfg, testZones(t), src, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSigningKey(key); err != nil {
		t.Fatalf("SetSigningKey: %v", err)
	}
	dnskey, err := DNSKEY("cluster.", key)
	if err != nil {
		t.Fatal(err)
	}
	return s, dnskey
}

// signedQuery returns a question with the DO bit, and the CO bit when co.
func signedQuery(qname string, qtype uint16, co bool) *dns.Msg {
	m := query(qname, qtype)
	m.SetEdns0(1232, true)
	if co {
		m.IsEdns0().SetCo()
	}
	return m
}

// verifySection checks that every RRset of rrs has exactly one RRSIG in
// rrs made by key and valid now, and returns the sets' types by owner.
func verifySection(t *testing.T, key *dns.DNSKEY, rrs []dns.RR) map[string][]uint16 {
	t.Helper()
	sets := map[string][]dns.RR{}
	sigs := map[string][]*dns.RRSIG{}
	for _, rr := range rrs {
		h := rr.Header()
		switch rr := rr.(type) {
		case *dns.OPT:
		case *dns.RRSIG:
			k := strings.ToLower(h.Name) + "/" + dns.TypeToString[rr.TypeCovered]
			sigs[k] = append(sigs[k], rr)
		default:
			k := strings.ToLower(h.Name) + "/" + dns.TypeToString[h.Rrtype]
			sets[k] = append(sets[k], rr)
		}
	}
	types := map[string][]uint16{}
	for k, set := range sets {
		if len(sigs[k]) != 1 {
			t.Errorf("%s: %d signatures, want 1", k, len(sigs[k]))
			continue
		}
		sig := sigs[k][0]
		if err := sig.Verify(key, set); err != nil {
			t.Errorf("%s: signature does not verify: %v", k, err)
		}
		if !sig.ValidityPeriod(time.Now()) {
			t.Errorf("%s: signature not valid now: inception %d, expiration %d", k, sig.Inception, sig.Expiration)
		}
		if sig.OrigTtl != set[0].Header().Ttl || sig.Hdr.Ttl != set[0].Header().Ttl {
			t.Errorf("%s: RRSIG TTLs %d/%d, want the set's %d", k, sig.Hdr.Ttl, sig.OrigTtl, set[0].Header().Ttl)
		}
		owner, _, _ := strings.Cut(k, "/")
		types[owner] = append(types[owner], set[0].Header().Rrtype)
	}
	for k := range sigs {
		if sets[k] == nil {
			t.Errorf("%s: a signature without its RRset", k)
		}
	}
	return types
}

func TestDNSSECSignsAnswers(t *testing.T) {
	s, key := newSigningServer(t, newFakeSource(), nil)
	for _, tc := range []struct {
		qname string
		qtype uint16
		want  map[string][]uint16 // signed RRsets of the answer and additional sections, by owner
	}{
		{"web.service.cluster.", dns.TypeA, map[string][]uint16{"web.service.cluster.": {dns.TypeA}}},
		{"web.service.cluster.", dns.TypeSRV, map[string][]uint16{
			"web.service.cluster.":       {dns.TypeSRV},
			"node1.node.dc1.cluster.":    {dns.TypeA},
			"0a000102.addr.dc1.cluster.": {dns.TypeA},
		}},
		{"node1.node.dc1.cluster.", dns.TypeA, map[string][]uint16{"node1.node.dc1.cluster.": {dns.TypeA}}},
		{"cluster.", dns.TypeSOA, map[string][]uint16{"cluster.": {dns.TypeSOA}}},
		{"cluster.", dns.TypeNS, map[string][]uint16{"cluster.": {dns.TypeNS}, "ns.cluster.": {dns.TypeA}}},
		{"web.service.consul.", dns.TypeA, nil}, // the alternative zone: its own signer name
	} {
		t.Run(tc.qname+dns.TypeToString[tc.qtype], func(t *testing.T) {
			reply := exchange(t, s, signedQuery(tc.qname, tc.qtype, false), "tcp")
			if reply.Rcode != dns.RcodeSuccess || len(reply.Answer) == 0 {
				t.Fatalf("rcode %s with %d answers", dns.RcodeToString[reply.Rcode], len(reply.Answer))
			}
			if opt := reply.IsEdns0(); opt == nil || !opt.Do() {
				t.Errorf("reply without the DO bit: %v", opt)
			}
			k := key
			if strings.HasSuffix(tc.qname, "consul.") {
				c := *key
				c.Hdr.Name = "consul."
				k = &c
			}
			got := verifySection(t, k, append(reply.Answer, reply.Extra...))
			if tc.want != nil {
				for owner, types := range tc.want {
					if !slices.Equal(got[owner], types) {
						t.Errorf("signed sets at %s: %v, want %v (all: %v)", owner, got[owner], types, got)
					}
				}
			}
		})
	}
}

func TestDNSSECUnsignedWithoutDO(t *testing.T) {
	s, _ := newSigningServer(t, newFakeSource(), nil)
	reply := exchange(t, s, query("web.service.cluster.", dns.TypeA), "udp")
	for _, rr := range append(reply.Answer, reply.Ns...) {
		if rr.Header().Rrtype == dns.TypeRRSIG {
			t.Fatalf("RRSIG in a reply to a query without DO: %v", rr)
		}
	}
	if reply := exchange(t, s, query("nope.service.cluster.", dns.TypeA), "udp"); reply.Rcode != dns.RcodeNameError {
		t.Errorf("name error without DO: rcode %s, want NXDOMAIN", dns.RcodeToString[reply.Rcode])
	}
}

func TestDNSSECDNSKEYAtTheApex(t *testing.T) {
	s, key := newSigningServer(t, newFakeSource(), nil)
	plain := exchange(t, s, query("cluster.", dns.TypeDNSKEY), "udp")
	if len(plain.Answer) != 1 || plain.Answer[0].String() != key.String() {
		t.Fatalf("DNSKEY without DO: %v, want %v", plain.Answer, key)
	}
	signed := exchange(t, s, signedQuery("cluster.", dns.TypeDNSKEY, false), "udp")
	verifySection(t, key, signed.Answer)
	if key.Flags != 257 || key.Algorithm != dns.ECDSAP256SHA256 {
		t.Errorf("DNSKEY flags %d algorithm %d, want 257 (a zone key and secure entry point) and 13", key.Flags, key.Algorithm)
	}
}

// denial checks that reply is a compact denial of qname: NOERROR (or
// wantRcode), no answers, and in the authority section the signed SOA and
// an NSEC owned by qname covering only qname, whose bitmap is want.
func denial(t *testing.T, key *dns.DNSKEY, reply *dns.Msg, qname string, wantRcode int, want []uint16) {
	t.Helper()
	if reply.Rcode != wantRcode || len(reply.Answer) != 0 {
		t.Fatalf("rcode %s with %d answers, want %s and none", dns.RcodeToString[reply.Rcode], len(reply.Answer), dns.RcodeToString[wantRcode])
	}
	types := verifySection(t, key, reply.Ns)
	if !slices.Contains(types["cluster."], dns.TypeSOA) {
		t.Errorf("no signed SOA in the authority section: %v", reply.Ns)
	}
	var nsec *dns.NSEC
	for _, rr := range reply.Ns {
		if n, ok := rr.(*dns.NSEC); ok {
			nsec = n
		}
	}
	if nsec == nil {
		t.Fatalf("no NSEC in the authority section: %v", reply.Ns)
	}
	if nsec.Hdr.Name != qname || nsec.NextDomain != `\000.`+qname {
		t.Errorf("NSEC %s -> %s, want %s -> \\000.%s", nsec.Hdr.Name, nsec.NextDomain, qname, qname)
	}
	got := slices.Sorted(slices.Values(nsec.TypeBitMap))
	if !slices.Equal(got, want) {
		t.Errorf("NSEC bitmap %v, want %v", got, want)
	}
	if nsec.Hdr.Ttl != 5 {
		t.Errorf("NSEC TTL %d, want the SOA's minimum 5", nsec.Hdr.Ttl)
	}
}

func TestDNSSECCompactDenial(t *testing.T) {
	s, key := newSigningServer(t, newFakeSource(), nil)
	nx := []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}
	t.Run("name error", func(t *testing.T) {
		denial(t, key, exchange(t, s, signedQuery("nope.service.cluster.", dns.TypeA, false), "udp"),
			"nope.service.cluster.", dns.RcodeSuccess, nx)
	})
	t.Run("name error, compact answers OK", func(t *testing.T) {
		reply := exchange(t, s, signedQuery("nope.service.cluster.", dns.TypeA, true), "udp")
		denial(t, key, reply, "nope.service.cluster.", dns.RcodeNameError, nx)
		if !reply.IsEdns0().Co() {
			t.Error("the CO bit is not echoed")
		}
	})
	t.Run("unknown datacenter", func(t *testing.T) {
		denial(t, key, exchange(t, s, signedQuery("web.service.dc9.cluster.", dns.TypeA, false), "udp"),
			"web.service.dc9.cluster.", dns.RcodeSuccess, nx)
	})
	t.Run("no data", func(t *testing.T) {
		denial(t, key, exchange(t, s, signedQuery("web.service.cluster.", dns.TypeAAAA, false), "udp"),
			"web.service.cluster.", dns.RcodeSuccess, []uint16{dns.TypeA, dns.TypeSRV, dns.TypeRRSIG, dns.TypeNSEC})
	})
	t.Run("no data at the apex", func(t *testing.T) {
		denial(t, key, exchange(t, s, signedQuery("cluster.", dns.TypeTXT, false), "udp"),
			"cluster.", dns.RcodeSuccess, []uint16{dns.TypeNS, dns.TypeSOA, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeDNSKEY})
	})
}

// TestDNSSECSignaturesAreKept shows that a repeated question is answered
// with the signature made for the first (ECDSA signatures are randomized,
// so a new one would differ), until half of its validity has passed.
func TestDNSSECSignaturesAreKept(t *testing.T) {
	s, _ := newSigningServer(t, newFakeSource(), nil)
	sg := s.signer.Load()
	now := time.Now()
	sg.now = func() time.Time { return now }
	sigOf := func() string {
		reply := exchange(t, s, signedQuery("web.service.cluster.", dns.TypeA, false), "udp")
		for _, rr := range reply.Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				return sig.Signature
			}
		}
		t.Fatal("no RRSIG")
		return ""
	}
	first := sigOf()
	if again := sigOf(); again != first {
		t.Error("the signature was made again for the same answer")
	}
	now = now.Add(time.Hour / 2)
	if later := sigOf(); later == first {
		t.Error("the signature was kept past half of its validity")
	}
}

func TestDNSSECAnswerLimitsKeepRRsetsWhole(t *testing.T) {
	s, key := newSigningServer(t, manyInstances(5), func(c *Config) { c.ARecordLimit = 2; c.UDPAnswerLimit = 1 })
	reply := exchange(t, s, signedQuery("web.service.cluster.", dns.TypeA, false), "udp")
	types := verifySection(t, key, reply.Answer)
	if len(reply.Answer) != 6 || !slices.Equal(types["web.service.cluster."], []uint16{dns.TypeA}) {
		t.Errorf("got %d answers, want the 5 A records and their RRSIG", len(reply.Answer))
	}
	plain := exchange(t, s, query("web.service.cluster.", dns.TypeA), "udp")
	if len(plain.Answer) != 1 {
		t.Errorf("unsigned: %d answers, want the limit of 1", len(plain.Answer))
	}
}

func TestDNSSECAnyOverUDPIsTruncated(t *testing.T) {
	s, key := newSigningServer(t, newFakeSource(), nil)
	udp := exchange(t, s, signedQuery("web.service.cluster.", dns.TypeANY, false), "udp")
	if !udp.Truncated || len(udp.Answer) != 0 {
		t.Errorf("ANY over UDP: TC %v with %d answers, want an empty truncated reply", udp.Truncated, len(udp.Answer))
	}
	tcp := exchange(t, s, signedQuery("web.service.cluster.", dns.TypeANY, false), "tcp")
	if tcp.Truncated || len(tcp.Answer) < 3 {
		t.Errorf("ANY over TCP: TC %v with %d answers, want the signed addresses", tcp.Truncated, len(tcp.Answer))
	}
	verifySection(t, key, tcp.Answer)
}

func TestDNSSECNeedsEnabled(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSigningKey(key); err == nil {
		t.Error("SetSigningKey succeeded with DNSSEC not enabled")
	}
	other, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DNSKEY("cluster.", other); err == nil {
		t.Error("DNSKEY accepted a P-384 key")
	}
	cfg := DefaultConfig()
	cfg.DNSSEC = DNSSECConfig{Enabled: true, SignatureValidity: time.Minute}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "DNSSEC.SignatureValidity") {
		t.Errorf("Validate with a validity of a minute: %v, want an error naming DNSSEC.SignatureValidity", err)
	}
}

// BenchmarkServeDNSSigned is BenchmarkServeDNS's SRV and A questions with
// the DO bit and signing on: signatures come from the cache.
func BenchmarkServeDNSSigned(b *testing.B) {
	src := webThree()
	s, _ := newSigningServer(b, src, nil)
	for _, bc := range []struct {
		name  string
		qname string
		qtype uint16
		do    bool
	}{
		{"A", "web.service.cluster.", dns.TypeA, false}, {"A+DO", "web.service.cluster.", dns.TypeA, true},
		{"SRV+DO", "web.service.cluster.", dns.TypeSRV, true}, {"AAAA-NODATA+DO", "web.service.cluster.", dns.TypeAAAA, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := query(bc.qname, bc.qtype)
			req.SetEdns0(1232, bc.do)
			w := resolvertest.NewSink("udp")
			b.ReportAllocs()
			for b.Loop() {
				s.ServeDNS(w, req)
			}
		})
	}
}

func TestParseSigningKey(t *testing.T) {
	key, err := NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := EncodeSigningKey(key)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dnskey, err := DNSKEY("cluster.", key)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der384, err := x509.MarshalPKCS8PrivateKey(p384)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"SEC 1 PEM", sec1, true},
		{"PKCS 8 PEM", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), true},
		{"BIND", []byte(dnskey.PrivateKeyString(key)), true},
		{"P-384", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der384}), false},
		{"certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), false},
		{"garbage", []byte("hello"), false},
	} {
		got, err := ParseSigningKey(tc.data)
		switch {
		case tc.ok && (err != nil || !got.Equal(key)):
			t.Errorf("%s: got %v, %v; want the key", tc.name, got, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: parsed, want an error", tc.name)
		}
	}
}

// TestDNSSECKeepsOnlySharedSections: answers built anew for each question
// (a node's) are signed from the signature cache without being kept by
// their slice, which would fill the section cache with slices never seen
// again; a memoized service answer (a Source returning one set, as the
// cache does) is kept.
func TestDNSSECKeepsOnlySharedSections(t *testing.T) {
	src := newStaticSource(instance("node1", "10.0.0.1", "web", "", 80))
	src.node = &catalog.Node{Node: "node1", Address: "10.0.0.1"}
	s, key := newSigningServer(t, src, nil)
	sg := s.signer.Load()
	for range 50 {
		verifySection(t, key, exchange(t, s, signedQuery("node1.node.dc1.cluster.", dns.TypeA, false), "udp").Answer)
		verifySection(t, key, exchange(t, s, signedQuery("web.service.cluster.", dns.TypeA, false), "udp").Answer)
	}
	sg.sections.mu.RLock()
	n := len(sg.sections.m)
	sg.sections.mu.RUnlock()
	if n > 2 {
		t.Errorf("%d sections kept after asking two names 50 times, want at most 2 (the service answer's)", n)
	}
}

// TestServeDNSSignedAllocBudget keeps signing off the hot path: a signed
// SRV answer for 3 instances, asked again, is served from its kept wire
// form (wirecache.go) like an unsigned one: 0 allocations (6 when it was
// built from the memo and the signed-section cache each time), where
// making a signature would cost dozens.
func TestServeDNSSignedAllocBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	const budget = 0
	src := webThree()
	s, _ := newSigningServer(t, src, nil)
	w := resolvertest.NewSink("udp")
	for _, qtype := range []uint16{dns.TypeSRV, dns.TypeAAAA} { // an answer, a denial
		req := signedQuery("web.service.cluster.", qtype, false)
		if got := testing.AllocsPerRun(200, func() { s.ServeDNS(w, req) }); got > budget {
			t.Errorf("allocations per signed %s query: got %v, want at most %d", dns.TypeToString[qtype], got, budget)
		}
	}
}
