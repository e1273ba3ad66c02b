package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/resolver/resolvertest"
)

// newConfiguredServer returns a server over src with the test server's
// config changed by change, not started.
func newConfiguredServer(t testing.TB, src Source, change func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.QueryTimeout = 100 * time.Millisecond
	cfg.RRL.Enabled = false // see newTestServer
	change(&cfg)
	s, err := New(cfg, testZones(t), src, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// startServer starts s, shut down when the test ends.
func startServer(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

// rrlOn returns a change enabling RRL at rate replies a second with the
// given slip, each IPv4 address its own client.
func rrlOn(rate, slip int) func(*Config) {
	return func(c *Config) {
		c.RRL = RRLConfig{Enabled: true, ResponsesPerSecond: rate, Slip: slip, IPv4PrefixLength: 32, IPv6PrefixLength: 56}
	}
}

func TestConfigValidateRRL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string // a substring of the error; "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"on with defaults", func(c *Config) { c.RRL.Enabled = true }, ""},
		{"no TCP cap", func(c *Config) { c.MaxTCPConns = 0 }, ""},
		{"negative TCP cap", func(c *Config) { c.MaxTCPConns = -1 }, "MaxTCPConns"},
		{"on at rate 0", func(c *Config) { c.RRL.Enabled, c.RRL.ResponsesPerSecond = true, 0 }, "RRL.ResponsesPerSecond"},
		{"off at rate 0", func(c *Config) { c.RRL.Enabled, c.RRL.ResponsesPerSecond = false, 0 }, ""},
		{"all rate -1", func(c *Config) { c.RRL.AllPerSecond = -1 }, "RRL.AllPerSecond"},
		{"all rate off", func(c *Config) { c.RRL.AllPerSecond = 0 }, ""},
		{"amplification -1", func(c *Config) { c.RRL.MinAmplification = -1 }, "RRL.MinAmplification"},
		{"cookie secret of 8 bytes", func(c *Config) { c.CookieSecret = make([]byte, 8) }, "CookieSecret"},
		{"negative TCP cap per client", func(c *Config) { c.MaxTCPConnsPerClient = -1 }, "MaxTCPConnsPerClient"},
		{"rate too high", func(c *Config) { c.RRL.ResponsesPerSecond = maxRRLRate + 1 }, "RRL.ResponsesPerSecond"},
		{"slip 11", func(c *Config) { c.RRL.Slip = 11 }, "RRL.Slip"},
		{"slip -1", func(c *Config) { c.RRL.Slip = -1 }, "RRL.Slip"},
		{"IPv4 /33", func(c *Config) { c.RRL.IPv4PrefixLength = 33 }, "RRL.IPv4PrefixLength"},
		{"IPv6 /129", func(c *Config) { c.RRL.IPv6PrefixLength = 129 }, "RRL.IPv6PrefixLength"},
	} {
		cfg := DefaultConfig()
		tc.change(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: got %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}

// reply returns a reply to a question for qname and qtype with rcode.
func rrlReply(qname string, qtype uint16, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(query(qname, qtype), rcode)
	return m
}

// TestRRLAccounts drives the limiter with a clock of its own: a burst of
// the rate, then one reply per interval; accounts by client network, name
// and type for answers, one for every name error, one for every other
// error.
func TestRRLAccounts(t *testing.T) {
	cfg := DefaultConfig().RRL
	cfg.Enabled, cfg.ResponsesPerSecond, cfg.Slip = true, 10, 0
	l := newRRL(cfg)
	client := func(ip string) net.Addr { return &net.UDPAddr{IP: net.ParseIP(ip), Port: 5353} }
	web := rrlReply("web.service.cluster.", dns.TypeA, dns.RcodeSuccess)
	now := time.Hour // any time: accounts start full
	sent := func(addr net.Addr, m *dns.Msg, n int) int {
		ok := 0
		for range n {
			if l.check(addr, m, now) == rrlSend {
				ok++
			}
		}
		return ok
	}
	if got := sent(client("10.0.0.1"), web, 15); got != 10 {
		t.Fatalf("burst of 15: got %d sent, want the rate, 10", got)
	}
	for _, tc := range []struct {
		name string
		addr string
		m    *dns.Msg
		want int
	}{
		{"same /24", "10.0.0.200", web, 0},
		{"same name in other case", "10.0.0.1", rrlReply("WEB.service.cluster.", dns.TypeA, dns.RcodeSuccess), 0},
		{"other /24", "10.0.1.1", web, 10},
		{"other type", "10.0.0.1", rrlReply("web.service.cluster.", dns.TypeSRV, dns.RcodeSuccess), 10},
		{"other name", "10.0.0.1", rrlReply("db.service.cluster.", dns.TypeA, dns.RcodeSuccess), 10},
		{"IPv6 client", "2001:db8:0:1::1", web, 10},
		{"same IPv6 /56", "2001:db8:0:ff::2", web, 0},
		{"other IPv6 /56", "2001:db8:0:100::1", web, 10},
	} {
		if got := sent(client(tc.addr), tc.m, 15); got != tc.want {
			t.Errorf("%s: got %d of 15 sent, want %d", tc.name, got, tc.want)
		}
	}
	// Name errors share one account, whatever the name; other errors
	// another.
	nx := 0
	for i := range 15 {
		nx += sent(client("10.0.2.1"), rrlReply("x"+strings.Repeat("y", i)+".cluster.", dns.TypeA, dns.RcodeNameError), 1)
	}
	if nx != 10 {
		t.Errorf("15 name errors for different names: got %d sent, want 10", nx)
	}
	if got := sent(client("10.0.2.1"), rrlReply("example.com.", dns.TypeA, dns.RcodeRefused), 15); got != 10 {
		t.Errorf("15 refusals: got %d sent, want 10 (an account apart from name errors)", got)
	}
	// Time refills an account: one reply per 100 ms.
	now += 250 * time.Millisecond
	if got := sent(client("10.0.0.1"), web, 5); got != 2 {
		t.Errorf("250ms later: got %d sent, want 2", got)
	}
	now += 10 * time.Second
	if got := sent(client("10.0.0.1"), web, 15); got != 10 {
		t.Errorf("10s later: got %d sent, want a full burst of 10", got)
	}
	// TCP clients are never accounted.
	if got := l.check(&net.TCPAddr{IP: net.ParseIP("10.0.0.1")}, web, now); got != rrlSend {
		t.Errorf("a TCP client: got %v, want rrlSend", got)
	}
}

// TestRRLSlipEvery: with Slip n, every n-th limited reply slips.
func TestRRLSlipEvery(t *testing.T) {
	for _, slip := range []int{0, 1, 2, 3} {
		cfg := DefaultConfig().RRL
		cfg.Enabled, cfg.ResponsesPerSecond, cfg.Slip = true, 1, slip
		l := newRRL(cfg)
		addr := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1)}
		web := rrlReply("web.service.cluster.", dns.TypeA, dns.RcodeSuccess)
		counts := map[rrlAction]int{}
		for range 13 {
			counts[l.check(addr, web, time.Second)]++
		}
		wantSlips := 0
		if slip > 0 {
			wantSlips = 12 / slip
		}
		if counts[rrlSend] != 1 || counts[rrlSlip] != wantSlips || counts[rrlDrop] != 12-wantSlips {
			t.Errorf("slip %d: got %d sent, %d slipped, %d dropped; want 1, %d, %d",
				slip, counts[rrlSend], counts[rrlSlip], counts[rrlDrop], wantSlips, 12-wantSlips)
		}
	}
}

// TestRRLTableBounded: a flood of distinct clients cannot grow the table,
// and an account being charged all along outlives them.
func TestRRLTableBounded(t *testing.T) {
	cfg := DefaultConfig().RRL
	cfg.Enabled, cfg.ResponsesPerSecond, cfg.Slip, cfg.IPv4PrefixLength = true, 2, 0, 32
	l := newRRL(cfg)
	web := rrlReply("web.service.cluster.", dns.TypeA, dns.RcodeSuccess)
	victim := &net.UDPAddr{IP: net.IPv4(198, 51, 100, 7)}
	now := time.Second
	for i := range 2 * rrlSets * rrlWays {
		if i%1000 == 0 {
			now += time.Millisecond
			for l.check(victim, web, now) == rrlSend { // keep the victim's account spent
			}
		}
		l.check(&net.UDPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i))}, web, now)
	}
	if len(l.sets) != rrlSets {
		t.Fatalf("table: got %d sets, want %d", len(l.sets), rrlSets)
	}
	if got := l.check(victim, web, now); got == rrlSend {
		t.Errorf("the flooded account after %d others: got a reply sent, want it still limited", 2*rrlSets*rrlWays)
	}
}

// TestServeDNSRRL: over UDP a limited reply is not written (or written
// truncated and empty when it slips) and counted; over TCP nothing is
// limited.
func TestServeDNSRRL(t *testing.T) {
	s := newConfiguredServer(t, newFakeSource(), rrlOn(2, 2))
	req := query("web.service.cluster.", dns.TypeA)
	req.SetEdns0(1232, false)
	var writes, tc []int
	for range 6 {
		w := resolvertest.NewRecorder("udp")
		s.ServeDNS(w, req)
		writes = append(writes, w.Writes)
		if w.Writes == 1 {
			reply, err := w.Reply()
			if err != nil {
				t.Fatal(err)
			}
			if reply.Truncated {
				tc = append(tc, len(reply.Answer)+len(reply.Ns)+len(reply.Extra))
				if reply.IsEdns0() == nil || len(reply.Question) != 1 {
					t.Errorf("slipped reply: got %v, want its question and OPT record kept", reply)
				}
			}
		}
	}
	// 2 sent, then drop, slip, drop, slip.
	if want := []int{1, 1, 0, 1, 0, 1}; !slices.Equal(writes, want) {
		t.Errorf("writes per query: got %v, want %v", writes, want)
	}
	if want := []int{1, 1}; !slices.Equal(tc, want) { // the OPT record only
		t.Errorf("records of the slipped replies: got %v, want %v", tc, want)
	}
	if got := s.Metrics().RateLimited; got != (RateLimited{Dropped: 2, Slipped: 2}) {
		t.Errorf("metrics: got %+v, want 2 dropped and 2 slipped", got)
	}
	for range 5 {
		if reply := exchange(t, s, req, "tcp"); reply.Truncated || len(reply.Answer) != 2 {
			t.Fatalf("TCP while limited over UDP: got %v, want the whole answer", reply)
		}
	}
}

// udpClient is a UDP socket bound to the loopback address from, talking
// to s, closed when the test ends.
func udpClient(t *testing.T, from string, s *Server) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}, s.UDPAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatalf("UDP socket on %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// flood sends n queries for qname A on c at once.
func flood(t *testing.T, c *net.UDPConn, qname string, n int) {
	t.Helper()
	for i := range n {
		q := query(qname, dns.TypeA)
		q.Id = uint16(i)
		wire, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(wire); err != nil {
			t.Fatalf("send query %d: %v", i, err)
		}
	}
}

// readReplies reads replies from c until n have come or deadline passes,
// and returns how many were whole (answers, no TC) and truncated.
func readReplies(t *testing.T, c *net.UDPConn, n int, deadline time.Time) (whole, truncated int) {
	t.Helper()
	if err := c.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65535)
	for whole+truncated < n {
		k, err := c.Read(buf)
		if ne := (net.Error)(nil); errors.As(err, &ne) && ne.Timeout() {
			break
		}
		if err != nil {
			t.Fatalf("read reply: %v", err)
		}
		m := new(dns.Msg)
		if err := m.Unpack(buf[:k]); err != nil {
			t.Fatalf("unpack reply: %v", err)
		}
		switch {
		case m.Truncated && len(m.Answer) == 0:
			truncated++
		case !m.Truncated && len(m.Answer) > 0:
			whole++
		default:
			t.Fatalf("reply %d: got TC %v with %d answers, want an answer or an empty truncated reply", m.Id, m.Truncated, len(m.Answer))
		}
	}
	return whole, truncated
}

// TestRRLOverSockets floods a server from 127.0.0.1 and counts its
// replies: about the rate are answered and the rest slip (Slip 1: every
// limited reply is sent truncated, so every query gets one reply and none
// needs a timeout to be counted), while 127.0.0.2, asking at the same
// time, is answered in full, as is 127.0.0.1 over TCP.
func TestRRLOverSockets(t *testing.T) {
	t.Parallel()
	// n replies of under 100 bytes fit the socket's receive buffer, so
	// none is lost before the test reads it.
	const rate, n = 10, 100
	s := newConfiguredServer(t, newFakeSource(), rrlOn(rate, 1))
	startServer(t, s)
	attacker, other := udpClient(t, "127.0.0.1", s), udpClient(t, "127.0.0.2", s)

	start := time.Now()
	flood(t, attacker, "web.service.cluster.", n)
	whole, truncated := readReplies(t, attacker, n, time.Now().Add(5*time.Second))
	took := time.Since(start)
	// The account refills by one reply per 1/rate while the flood lasts.
	most := rate + 1 + int(took*rate/time.Second)
	if whole+truncated != n || whole < rate || whole > most {
		t.Errorf("flood of %d from 127.0.0.1 (answered in %s): got %d answered and %d truncated, want %d-%d answered and the rest truncated",
			n, took, whole, truncated, rate, most)
	}
	flood(t, other, "web.service.cluster.", rate)
	if whole, truncated := readReplies(t, other, rate, time.Now().Add(5*time.Second)); whole != rate {
		t.Errorf("%d queries from 127.0.0.2: got %d answered and %d truncated, want all answered", rate, whole, truncated)
	}
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	for range 3 {
		if reply, _, err := c.Exchange(query("web.service.cluster.", dns.TypeA), s.TCPAddr().String()); err != nil || len(reply.Answer) != 2 {
			t.Fatalf("TCP from 127.0.0.1 while limited: got %v, %v; want the answer", reply, err)
		}
	}
	if got := s.Metrics().RateLimited; got.Slipped != uint64(truncated) || got.Dropped != 0 {
		t.Errorf("metrics: got %+v, want %d slipped and none dropped", got, truncated)
	}
}

// TestRRLDropsOverSockets: with Slip 2 half the limited replies are not
// sent at all. The server's counters tell when every query has been
// handled; the replies sent are in the socket's buffer by then.
func TestRRLDropsOverSockets(t *testing.T) {
	t.Parallel()
	const rate, n = 5, 100
	s := newConfiguredServer(t, newFakeSource(), rrlOn(rate, 2))
	startServer(t, s)
	c := udpClient(t, "127.0.0.1", s)
	flood(t, c, "web.service.cluster.", n)
	handled := func() uint64 {
		m := s.Metrics()
		total := m.RateLimited.Dropped
		for _, q := range m.Questions {
			total += q.Count
		}
		return total
	}
	waittest.For(t, 5*time.Second, "the server to handle the flood", func() error {
		if got := handled(); got < n {
			return fmt.Errorf("handled %d of %d", got, n)
		}
		return nil
	})
	whole, truncated := readReplies(t, c, n, time.Now().Add(200*time.Millisecond))
	rl := s.Metrics().RateLimited
	if uint64(truncated) != rl.Slipped || uint64(whole+truncated)+rl.Dropped != n || whole < rate {
		t.Errorf("got %d answered, %d truncated, %+v; want them to add up to %d, at least %d answered", whole, truncated, rl, n, rate)
	}
	if d := int(rl.Dropped) - int(rl.Slipped); d < 0 || d > 1 {
		t.Errorf("got %d dropped and %d slipped, want every other limited reply to slip", rl.Dropped, rl.Slipped)
	}
}

// TestTCPConnCap: the TCP connection one over MaxTCPConns is closed at
// once and counted, UDP is still answered, and a connection closing makes
// room again.
func TestTCPConnCap(t *testing.T) {
	t.Parallel()
	const limit = 2
	s := newConfiguredServer(t, newFakeSource(), func(c *Config) { c.MaxTCPConns = limit })
	startServer(t, s)
	ask := func(conn *dns.Conn) error {
		if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return err
		}
		if err := conn.WriteMsg(query("web.service.cluster.", dns.TypeA)); err != nil {
			return err
		}
		reply, err := conn.ReadMsg()
		if err == nil && len(reply.Answer) != 2 {
			err = errors.New("no answer: " + reply.String())
		}
		return err
	}
	var held []*dns.Conn
	for i := range limit {
		conn, err := dns.DialTimeout("tcp", s.TCPAddr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if err := ask(conn); err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, limit, err)
		}
		held = append(held, conn)
	}
	over, err := dns.DialTimeout("tcp", s.TCPAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if err := ask(over); err == nil {
		t.Errorf("connection %d: got an answer, want it closed", limit+1)
	}
	// The server counts the refusal around closing the connection, so
	// the client may see the close first.
	waittest.For(t, 5*time.Second, "TCPRefused to count the refused connection", func() error {
		if got := s.Metrics().TCPRefused; got != 1 {
			return fmt.Errorf("TCPRefused: got %d, want 1", got)
		}
		return nil
	})
	u := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	if reply, _, err := u.Exchange(query("web.service.cluster.", dns.TypeA), s.UDPAddr().String()); err != nil || len(reply.Answer) != 2 {
		t.Errorf("UDP with TCP full: got %v, %v; want the answer", reply, err)
	}
	held[0].Close()
	waittest.For(t, 5*time.Second, "a TCP connection to be served again", func() error {
		conn, err := dns.DialTimeout("tcp", s.TCPAddr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		return ask(conn)
	})
}

// TestANYIsMinimal: over UDP an ANY question is answered with one record,
// so the reply stays within 3 times the query however many instances the
// service has; over TCP it is answered whole.
func TestANYIsMinimal(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, newFakeSource(), nil)
	addrs := []string{"web.service.cluster.\t0\tIN\tA\t10.0.0.1", "web.service.cluster.\t0\tIN\tA\t10.0.1.2"}
	if got := strs(exchange(t, s, query("web.service.cluster.", dns.TypeANY), "udp").Answer); len(got) != 1 || !slices.Contains(addrs, got[0]) {
		t.Errorf("UDP ANY: got %q, want one of %q", got, addrs)
	}
	if got := strs(exchange(t, s, query("web.service.cluster.", dns.TypeANY), "tcp").Answer); !slices.Equal(got, addrs) {
		t.Errorf("TCP ANY: got %q, want %q", got, addrs)
	}
	apex := exchange(t, s, query("cluster.", dns.TypeANY), "udp")
	if len(apex.Answer) != 1 || len(apex.Extra) != 0 {
		t.Errorf("UDP ANY at the apex: got %d answers, %d extra; want 1 and none", len(apex.Answer), len(apex.Extra))
	}

	big := newTestServer(t, manyInstances(20), nil)
	startServer(t, big)
	for _, tc := range []struct {
		qname string
		edns  bool
	}{{"web.service.cluster.", true}, {"web.service.cluster.", false}, {"cluster.", true}, {"node1.node.cluster.", true}} {
		q := query(tc.qname, dns.TypeANY)
		if tc.edns {
			q.SetEdns0(1232, false)
		}
		wire, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		c := udpClient(t, "127.0.0.1", big)
		if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(wire); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 65535)
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("%s ANY: %v", tc.qname, err)
		}
		reply := new(dns.Msg)
		if err := reply.Unpack(buf[:k]); err != nil || len(reply.Answer) != 1 || reply.Truncated {
			t.Errorf("%s ANY (EDNS %v): got %v (%v), want one record, no TC", tc.qname, tc.edns, reply, err)
		}
		if k > 3*len(wire) {
			t.Errorf("%s ANY (EDNS %v): got a %d-byte reply to a %d-byte query, want at most 3 times it", tc.qname, tc.edns, k, len(wire))
		}
	}
}

// BenchmarkServeDNSRRL times BenchmarkServeDNS's A question for 3
// instances from one client with RRL off, on within the rate (no
// benchmark reaches a million a second), and on over it (every reply
// dropped).
func BenchmarkServeDNSRRL(b *testing.B) {
	src := webThree()
	for _, bc := range []struct {
		name   string
		change func(*Config)
	}{{"off", func(*Config) {}}, {"within", rrlOn(maxRRLRate, 2)}, {"over", rrlOn(1, 0)}} {
		b.Run(bc.name, func(b *testing.B) {
			s := newConfiguredServer(b, src, bc.change)
			req := query("web.service.cluster.", dns.TypeA)
			w := resolvertest.NewSink("udp")
			b.ReportAllocs()
			for b.Loop() {
				s.ServeDNS(w, req)
			}
		})
	}
}

// BenchmarkRRLCheck times charging one reply to its account.
func BenchmarkRRLCheck(b *testing.B) {
	cfg := DefaultConfig().RRL
	cfg.Enabled, cfg.ResponsesPerSecond = true, maxRRLRate
	l := newRRL(cfg)
	addr := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5353}
	m := rrlReply("web.service.cluster.", dns.TypeA, dns.RcodeSuccess)
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += time.Microsecond
		l.check(addr, m, now)
	}
}

// TestServeDNSAllocBudgetRRL: RRL adds no allocation to a reply sent,
// nor does dropping one allocate.
func TestServeDNSAllocBudgetRRL(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	const budget = 4 // TestServeDNSAllocBudget's
	src := webThree()
	req := query("web.service.cluster.", dns.TypeSRV)
	w := resolvertest.NewSink("udp")
	within := newConfiguredServer(t, src, rrlOn(maxRRLRate, 2))
	if got := testing.AllocsPerRun(200, func() { within.ServeDNS(w, req) }); got > budget {
		t.Errorf("allocations per SRV query with RRL on: got %v, want at most %d", got, budget)
	}
	l := newRRL(RRLConfig{Enabled: true, ResponsesPerSecond: 1, Slip: 0, IPv4PrefixLength: 24, IPv6PrefixLength: 56})
	reply := rrlReply("web.service.cluster.", dns.TypeSRV, dns.RcodeSuccess)
	if got := testing.AllocsPerRun(200, func() { l.check(w.Remote, reply, time.Second) }); got != 0 {
		t.Errorf("allocations per check: got %v, want 0", got)
	}
}
