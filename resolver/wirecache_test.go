package resolver

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver/resolvertest"
	"github.com/cairndns/cairn/zones"
)

// keptSource returns one *Instances per (dc, service, tag) for as long as
// it lives, as the cache does while its data is unchanged: the answers
// built from a set are memoized, and their replies kept (wirecache.go).
type keptSource struct {
	*fakeSource
	mu   sync.Mutex
	sets map[[3]string]*Instances
}

func newKeptSource(f *fakeSource) *keptSource {
	return &keptSource{fakeSource: f, sets: make(map[[3]string]*Instances)}
}

func (k *keptSource) Instances(ctx context.Context, dc, service, tag string) (*Instances, error) {
	set, err := k.fakeSource.Instances(ctx, dc, service, tag)
	if err != nil || set == nil {
		return set, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	key := [3]string{dc, service, tag}
	if old, ok := k.sets[key]; ok {
		return old, nil
	}
	k.sets[key] = set
	return set, nil
}

// wireCacheSource is newFakeSource's data and more: many instances (cut
// to fit, shuffled in place or left to the slow path), a few (rotated),
// IPv6 ones, one whose instances are all unhealthy.
func wireCacheSource() *keptSource {
	f := newFakeSource()
	var big, six, v6 []catalog.ServiceInstance
	for i := range 40 {
		big = append(big, instance("big"+strconv.Itoa(i), "10.2.0."+strconv.Itoa(i+1), "big", "", 8000+i))
	}
	for i := range 6 {
		six = append(six, instance("six"+strconv.Itoa(i), "10.3.0."+strconv.Itoa(i+1), "six", "", 80))
	}
	for i := range 5 {
		v6 = append(v6, instance("v6n"+strconv.Itoa(i), "2001:db8::"+strconv.Itoa(i+1), "v6", "", 80))
	}
	down := instance("down1", "10.4.0.1", "down", "", 80)
	down.Checks = []*catalog.Check{{Node: "down1", CheckID: "c", Status: catalog.HealthCritical}}
	f.instances["dc1"]["big"], f.instances["dc1"]["six"], f.instances["dc1"]["v6"] = big, six, v6
	f.instances["dc1"]["down"] = []catalog.ServiceInstance{down}
	return newKeptSource(f)
}

// spellings returns name in lowercase, as given, in capitals, and with
// random case (0x20).
func spellings(name string, r *rand.Rand) []string {
	mixed := []byte(strings.ToLower(name))
	for i, c := range mixed {
		if 'a' <= c && c <= 'z' && r.IntN(2) == 0 {
			mixed[i] = c - 'a' + 'A'
		}
	}
	return slices.Compact([]string{strings.ToLower(name), name, strings.ToUpper(name), string(mixed)})
}

// wireVariant is a way of asking: transport, EDNS, header bits.
type wireVariant struct {
	network        string
	edns           uint16 // 0: no OPT
	do, co, rd, cd bool
}

var wireVariants = []wireVariant{
	{network: "udp", rd: true}, {network: "udp"}, {network: "udp", edns: 512}, {network: "udp", edns: 1232, cd: true},
	{network: "udp", edns: 4096, do: true}, {network: "udp", edns: 1232, do: true, co: true, rd: true},
	{network: "udp", edns: 1000}, {network: "tcp", rd: true}, {network: "tcp", edns: 1232, do: true},
}

func (v wireVariant) query(qname string, qtype uint16, id uint16) *dns.Msg {
	m := query(qname, qtype)
	m.Id, m.RecursionDesired, m.CheckingDisabled = id, v.rd, v.cd
	if v.edns != 0 {
		m.SetEdns0(v.edns, v.do)
		if v.co {
			m.IsEdns0().SetCo()
		}
	}
	return m
}

// sameReply reports whether the replies a and b are the same, but for the
// hash and timestamp of a server cookie ending them: the two were made at
// different times, maybe a second apart.
func sameReply(a, b []byte) bool {
	n := len(a) - serverCookieLen + 4 // the timestamp on
	if bytes.Equal(a, b) {
		return true
	}
	return len(a) == len(b) && n > 0 && bytes.Equal(a[:n], b[:n]) && a[n-4] == 1 // version 1: a server cookie
}

// slowReply returns what the slow path writes in reply to req with the
// answers in the order of fast, a reply to req; ok is false when req is
// not one the wire cache answers (not a service name, or no such
// service), which the slow path answered anyway.
func slowReply(t *testing.T, s *Server, src Source, req *dns.Msg, network string, fast []byte) (slow []byte, ok bool) {
	t.Helper()
	z, q := s.parse(strings.ToLower(req.Question[0].Name))
	if q.Kind != zones.KindService {
		return nil, false
	}
	set, err := src.Instances(context.Background(), q.Datacenter, q.Name, q.Tag)
	if err != nil || set == nil {
		return nil, false
	}
	e := set.memo.entry(z, req.Question[0].Qtype, q.Qname)
	var a wireQuestion
	if e == nil || !new(packer).readMsg(req, resolvertest.NewRecorder(network).RemoteAddr(), &a) {
		return nil, false
	}
	s.admit(&a, s.metrics.now())
	if f := e.wire.get(a.shape(), s.signer.Load(), s.metrics.now()); f == nil || f.slow {
		return nil, false // the slow path answered
	}
	// The section the slow path reorders, and the order of fast's.
	probe := &prefetched{set: set, build: true}
	s.reply(resolvertest.NewRecorder(network), req, probe)
	got := new(dns.Msg)
	if err := got.Unpack(fast); err != nil {
		t.Fatalf("unpack: %v", err)
	}
	key := func(rr dns.RR) string { return strings.ToLower(rr.String()) }
	used := make([]bool, len(probe.section))
	var perm []int
	for _, rr := range got.Answer {
		i := slices.IndexFunc(probe.section, func(o dns.RR) bool { return key(o) == key(rr) })
		for i >= 0 && used[i] {
			j := slices.IndexFunc(probe.section[i+1:], func(o dns.RR) bool { return key(o) == key(rr) })
			i = max(-1, i+1+j)
			if j < 0 {
				i = -1
			}
		}
		if i < 0 {
			t.Fatalf("answer %v is not one of the section's %v", rr, probe.section)
		}
		used[i] = true
		perm = append(perm, i)
	}
	// The records cut from fast: a rotation goes on; records shuffled
	// in place are all of one size, so their order does not matter.
	n := len(probe.section)
	rotated := len(perm) > 0
	for i, j := range perm {
		rotated = rotated && j == (perm[0]+i)%n
	}
	for i := range n {
		switch {
		case rotated && len(perm) < n:
			perm = append(perm, (perm[0]+len(perm))%n)
		case !rotated && !used[i]:
			perm = append(perm, i)
		}
	}
	w := resolvertest.NewRecorder(network)
	s.serveMsg(w, req, &prefetched{set: set, build: true, perm: perm}, s.metrics.now())
	return w.Wire, true
}

// TestWireCacheMatchesSlowPath asks every question of TestServeDNS, and
// more, in every spelling and way of asking, several times each (the
// first memoizes, the second keeps the reply, the rest are served from
// it), through ServeDNS and servePacket, and checks each reply is the
// slow path's, byte for byte, for the same order of answers.
func TestWireCacheMatchesSlowPath(t *testing.T) {
	src := wireCacheSource()
	plain := newTestServer(t, src, nil)
	signing, _ := newSigningServer(t, src, nil)
	limited, _ := newSigningServer(t, src, func(c *Config) { c.UDPAnswerLimit, c.ARecordLimit = 3, 4 })
	type question struct {
		qname string
		qtype uint16
	}
	var questions []question
	for _, c := range append(serveDNSCases(nil, nil), nameCases(plain.zone.SOA(), plain.zones[1].SOA())...) {
		if c.src == nil && c.qclass == 0 {
			questions = append(questions, question{c.qname, c.qtype})
		}
	}
	for _, name := range []string{"big.service.cluster.", "six.service.dc1.cluster.", "v6.service.consul.", "down.service.cluster."} {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypeANY, dns.TypeTXT} {
			questions = append(questions, question{name, qtype})
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	served := 0
	for _, s := range []*Server{plain, signing, limited} {
		for _, qu := range questions {
			for _, name := range spellings(qu.qname, r) {
				for _, v := range wireVariants {
					for round := range 3 {
						req := v.query(name, qu.qtype, uint16(r.Uint32()))
						w := resolvertest.NewRecorder(v.network)
						if v.network == "udp" && round%2 == 1 {
							b, err := req.Pack()
							if err != nil {
								t.Fatal(err)
							}
							if _, err := s.servePacket(w, b); err != nil {
								t.Fatalf("servePacket(%s %s): %v", name, dns.TypeToString[qu.qtype], err)
							}
						} else {
							s.ServeDNS(w, req)
						}
						if w.Writes != 1 {
							t.Fatalf("%s %s %+v: %d writes, want 1", name, dns.TypeToString[qu.qtype], v, w.Writes)
						}
						slow, ok := slowReply(t, s, src, req, v.network, w.Wire)
						if !ok {
							continue
						}
						served++
						if !bytes.Equal(w.Wire, slow) {
							fast, _ := w.Reply()
							want := new(dns.Msg)
							_ = want.Unpack(slow)
							t.Fatalf("%s %s %+v round %d: reply differs from the slow path's\n got %x\n%v\nwant %x\n%v",
								name, dns.TypeToString[qu.qtype], v, round, w.Wire, fast, slow, want)
						}
					}
				}
			}
		}
	}
	if served < 1000 {
		t.Errorf("compared %d replies to service questions, want many", served)
	}
}

// TestWireCacheKeepsReplies checks which questions are served from kept
// replies, and which are left to the slow path.
func TestWireCacheKeepsReplies(t *testing.T) {
	src := wireCacheSource()
	s := newTestServer(t, src, nil)
	tests := []struct {
		qname   string
		qtype   uint16
		network string
		kept    bool
		fixed   bool // shuffled in place
	}{
		{"web.service.cluster.", dns.TypeA, "udp", true, true},
		{"WeB.sErViCe.ClUsTeR.", dns.TypeA, "udp", true, true},
		{"web.service.cluster.", dns.TypeSRV, "udp", true, false},
		{"big.service.cluster.", dns.TypeA, "udp", true, true},     // cut to 512 bytes: a random subset
		{"big.service.cluster.", dns.TypeSRV, "udp", false, false}, // cut, and too many to rotate
		{"big.service.cluster.", dns.TypeSRV, "tcp", true, false},  // whole: rotated
		{"six.service.cluster.", dns.TypeSRV, "udp", true, false},
		{"v6.service.cluster.", dns.TypeAAAA, "udp", true, true},
		{"down.service.cluster.", dns.TypeA, "udp", true, false}, // NODATA (Config.UnhealthyAnswer)
		{"web.service.cluster.", dns.TypeANY, "udp", false, false},
	}
	for _, tt := range tests {
		for range 3 {
			exchange(t, s, query(tt.qname, tt.qtype), tt.network)
		}
		z, q := s.parse(strings.ToLower(tt.qname))
		set, _ := src.Instances(context.Background(), q.Datacenter, q.Name, q.Tag)
		var f *wireForm
		if e := set.memo.entry(z, tt.qtype, q.Qname); e != nil {
			a := wireQuestion{size: fitted(tt.network == "tcp", false, 0, s.cfg.UDPSize), tcp: tt.network == "tcp"}
			sh := a.shape()
			sh.class = caseClass(qwire(tt.qname))
			f = e.wire.get(sh, nil, 0)
		}
		if kept := f != nil && !f.slow; kept != tt.kept || kept && f.fixed != tt.fixed {
			t.Errorf("%s %s over %s: kept %v fixed %v, want kept %v fixed %v",
				tt.qname, dns.TypeToString[tt.qtype], tt.network, kept, kept && f.fixed, tt.kept, tt.fixed)
		}
	}
}

// qwire returns name in wire form.
func qwire(name string) []byte {
	b := make([]byte, 256)
	n, _ := dns.PackDomainName(name, b, 0, nil, false)
	return b[:n]
}

// TestWireCacheShuffles checks that kept replies still spread the load:
// over many questions every instance is answered first, and, cut to fit,
// every instance is answered.
func TestWireCacheShuffles(t *testing.T) {
	s := newTestServer(t, wireCacheSource(), nil)
	for _, tt := range []struct {
		qname string
		qtype uint16
		n     int
	}{{"big.service.cluster.", dns.TypeA, 40}, {"six.service.cluster.", dns.TypeSRV, 6}} {
		first, seen := map[string]bool{}, map[string]bool{}
		for range 2000 {
			reply := exchange(t, s, query(tt.qname, tt.qtype), "udp")
			if len(reply.Answer) == 0 {
				t.Fatalf("%s: no answer", tt.qname)
			}
			first[reply.Answer[0].String()] = true
			for _, rr := range reply.Answer {
				seen[rr.String()] = true
			}
		}
		if len(first) != tt.n || len(seen) != tt.n {
			t.Errorf("%s %s: %d instances answered first and %d at all, want %d",
				tt.qname, dns.TypeToString[tt.qtype], len(first), len(seen), tt.n)
		}
	}
}

func TestWireCacheSignedFormsExpire(t *testing.T) {
	var c wireCache
	sg := new(signer)
	sh := shape{size: 1232, edns: true, do: true}
	c.put(&wireForm{shape: sh, signer: sg, expires: 100})
	if c.get(sh, sg, 99) == nil {
		t.Error("form not found before it expires")
	}
	if c.get(sh, sg, 100) != nil {
		t.Error("form found once expired")
	}
	if c.get(sh, new(signer), 99) != nil {
		t.Error("form found for another signer")
	}
}

// TestServePacketAllocs: a question whose reply is kept is answered from
// the packet's bytes to the written bytes without allocating.
func TestServePacketAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	src := webThree()
	s, _ := newSigningServer(t, src, func(c *Config) { c.RRL.Enabled = true; c.RRL.ResponsesPerSecond = maxRRLRate })
	w := resolvertest.NewSink("udp")
	for _, tc := range []struct {
		name  string
		qname string
		qtype uint16
		edns  bool
		do    bool
	}{
		{"SRV", "web.service.cluster.", dns.TypeSRV, false, false},
		{"A+EDNS", "web.service.cluster.", dns.TypeA, true, false},
		{"SRV-0x20", "wEb.SeRvIcE.cLuStEr.", dns.TypeSRV, true, false},
		{"A+DO", "web.service.cluster.", dns.TypeA, true, true},
		{"AAAA-NODATA+DO", "web.service.cluster.", dns.TypeAAAA, true, true},
	} {
		req := query(tc.qname, tc.qtype)
		if tc.edns {
			req.SetEdns0(1232, tc.do)
		}
		b, err := req.Pack()
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, _ = s.servePacket(w, b) // memoize, keep
		}
		if got := testing.AllocsPerRun(200, func() { _, _ = s.servePacket(w, b) }); got != 0 {
			t.Errorf("%s: allocations per packet: got %v, want 0", tc.name, got)
		}
	}
}

// BenchmarkServePacket is BenchmarkServeDNS from the packet's bytes.
func BenchmarkServePacket(b *testing.B) {
	src := webThree()
	s3 := newTestServer(b, src, nil)
	s10 := newTestServer(b, webTen(), nil)
	// A client cookie, and one with a server cookie s3 made for the
	// Sink's address (cookie.go).
	client := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	var sc [serverCookieLen]byte
	s3.cookies.serverCookie(&sc, client, clientIP(resolvertest.NewSink("udp").RemoteAddr()), uint32(time.Now().Unix()))
	proved := append(slices.Clone(client), sc[:]...)
	for _, bc := range []struct {
		name   string
		s      *Server
		qtype  uint16
		edns   bool
		qname  string
		cookie []byte
	}{
		{"SRV", s3, dns.TypeSRV, false, "web.service.cluster.", nil}, {"SRV+EDNS", s3, dns.TypeSRV, true, "web.service.cluster.", nil},
		{"A", s3, dns.TypeA, false, "web.service.cluster.", nil}, {"A10", s10, dns.TypeA, false, "web.service.cluster.", nil},
		{"SRV-0x20", s3, dns.TypeSRV, false, "wEb.SeRvIcE.cLuStEr.", nil},
		{"SRV+client-cookie", s3, dns.TypeSRV, true, "web.service.cluster.", client},
		{"SRV+server-cookie", s3, dns.TypeSRV, true, "web.service.cluster.", proved},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := query(bc.qname, bc.qtype)
			if bc.edns {
				req.SetEdns0(1232, false)
			}
			if bc.cookie != nil {
				req.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(bc.cookie)}}
			}
			pkt, err := req.Pack()
			if err != nil {
				b.Fatal(err)
			}
			w := resolvertest.NewSink("udp")
			b.ReportAllocs()
			for b.Loop() {
				_, _ = bc.s.servePacket(w, pkt)
			}
		})
	}
}

// FuzzReadPacket checks the two readers of the wire cache agree: a packet
// readPacket takes unpacks, and readMsg reads the same question from it.
func FuzzReadPacket(f *testing.F) {
	for _, name := range []string{"web.service.cluster.", "WeB.sErViCe.cLuStEr.", "_web._tcp.service.dc1.cluster."} {
		for _, edns := range []bool{false, true} {
			m := query(name, dns.TypeSRV)
			if edns {
				m.SetEdns0(1232, true)
				m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0102030405060708"})
			}
			b, _ := m.Pack()
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p1, p2 packer
		var a1, a2 wireQuestion
		remote := formUDPAddr
		if !p1.readPacket(b, remote, &a1) {
			return
		}
		m := new(dns.Msg)
		if err := m.Unpack(b); err != nil {
			t.Fatalf("readPacket took a packet that does not unpack: %v", err)
		}
		if !p2.readMsg(m, remote, &a2) {
			t.Fatalf("readMsg does not take what readPacket took: %v", m)
		}
		a1.wire, a2.wire = slices.Clone(a1.wire), slices.Clone(a2.wire)
		a1.fresh, a2.fresh = false, false
		if !bytes.Equal(a1.wire, a2.wire) || a1.lower != a2.lower {
			t.Fatalf("names differ: %x %q, %x %q", a1.wire, a1.lower, a2.wire, a2.lower)
		}
		a1.wire, a2.wire = nil, nil
		if !reflect.DeepEqual(a1, a2) {
			t.Fatalf("questions differ:\n%+v\n%+v", a1, a2)
		}
	})
}

// TestWireCacheRRL: replies from the wire cache are charged, dropped and
// slipped as the slow path's are, through ServeDNS and servePacket.
func TestWireCacheRRL(t *testing.T) {
	for _, edns := range []bool{false, true} {
		kept := newConfiguredServer(t, wireCacheSource(), rrlOn(2, 2))
		slow := newConfiguredServer(t, newFakeSource(), rrlOn(2, 2)) // new sets: nothing kept
		req := query("WeB.service.cluster.", dns.TypeSRV)
		if edns {
			req.SetEdns0(1232, false)
		}
		pkt, err := req.Pack()
		if err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			wk, ws := resolvertest.NewRecorder("udp"), resolvertest.NewRecorder("udp")
			if i%2 == 0 {
				kept.ServeDNS(wk, req)
			} else if _, err := kept.servePacket(wk, pkt); err != nil {
				t.Fatal(err)
			}
			slow.ServeDNS(ws, req)
			if wk.Writes != ws.Writes {
				t.Fatalf("EDNS %v, query %d: %d writes, want %d as the slow path", edns, i, wk.Writes, ws.Writes)
			}
			if ws.Writes == 0 {
				continue
			}
			gotR, _ := wk.Reply()
			wantR, _ := ws.Reply()
			if wantR.Truncated && !bytes.Equal(wk.Wire, ws.Wire) { // slipped: nothing to shuffle
				t.Errorf("EDNS %v, query %d: slipped reply\n%v\nwant\n%v", edns, i, gotR, wantR)
			}
			if !wantR.Truncated && (!slices.Equal(strs(gotR.Answer), strs(wantR.Answer)) || gotR.Truncated) {
				t.Errorf("EDNS %v, query %d: reply\n%v\nwant\n%v", edns, i, gotR, wantR)
			}
		}
		if got, want := kept.Metrics(), slow.Metrics(); got.RateLimited != want.RateLimited ||
			!slices.Equal(got.Questions, want.Questions) {
			t.Errorf("EDNS %v: metrics %+v %+v, want %+v %+v as the slow path's",
				edns, got.RateLimited, got.Questions, want.RateLimited, want.Questions)
		}
	}
}

// FuzzServePacket answers packets through servePacket: a packet whose
// reply the wire cache keeps must be answered as the slow path answers
// it, byte for byte; any other as ServeDNS does, without panicking.
func FuzzServePacket(f *testing.F) {
	for _, v := range wireVariants {
		if v.network != "udp" {
			continue
		}
		for _, name := range []string{"web.service.cluster.", "WeB.sErViCe.cLuStEr.", "big.service.cluster.", "six.service.consul."} {
			for _, qtype := range []uint16{dns.TypeA, dns.TypeSRV, dns.TypeAAAA} {
				b, _ := v.query(name, qtype, 7).Pack()
				f.Add(b)
			}
		}
	}
	src := wireCacheSource()
	s, _ := newSigningServer(f, src, nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		for range 3 { // memoize, keep, serve kept
			w := resolvertest.NewRecorder("udp")
			req, err := s.servePacket(w, b)
			if err != nil {
				if w.Writes != 0 || req == nil {
					t.Fatalf("a packet that does not unpack: %d writes, query %v", w.Writes, req)
				}
				return
			}
			if w.Writes > 1 {
				t.Fatalf("%d replies", w.Writes)
			}
			q := new(dns.Msg)
			if w.Writes == 0 || q.Unpack(b) != nil || len(q.Question) != 1 {
				continue
			}
			if slow, ok := slowReply(t, s, src, q, "udp", w.Wire); ok && !sameReply(w.Wire, slow) {
				t.Fatalf("reply to %v differs from the slow path's", q)
			}
		}
	})
}
