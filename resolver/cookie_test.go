package resolver

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver/resolvertest"
)

func unhexT(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServerCookieRFC9018 checks server cookies against the test
// vectors of RFC 9018 appendix A, and the window a cookie is valid in.
func TestServerCookieRFC9018(t *testing.T) {
	k := newCookieSecret(unhexT(t, "e5e973e5a6b2a43f48e7dc849e37bfcf"))
	for _, tc := range []struct {
		client, ip string
		ts         uint32
		want       string
	}{
		{"2464c4abcf10c957", "198.51.100.100", 1559731985, "010000005cf79f111f8130c3eee29480"},
		{"2464c4abcf10c957", "198.51.100.100", 1559734385, "010000005cf7a871d4a564a1442aca77"},
		{"fc93fc62807ddb86", "203.0.113.203", 1559734700, "010000005cf7a9acf73a7810aca2381e"},
	} {
		var got [serverCookieLen]byte
		ip := clientIP(&net.UDPAddr{IP: net.ParseIP(tc.ip)})
		k.serverCookie(&got, unhexT(t, tc.client), ip, tc.ts)
		if hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("%s from %s at %d: got %x, want %s", tc.client, tc.ip, tc.ts, got, tc.want)
		}
	}
	c := unhexT(t, "2464c4abcf10c957010000005cf79f111f8130c3eee29480") // A.1's, issued at 1559731985
	ip := net.ParseIP("198.51.100.100").To4()
	for _, tc := range []struct {
		name string
		ip   net.IP
		now  uint32
		want bool
	}{
		{"40 minutes later (A.2)", ip, 1559734385, true},
		{"an hour later", ip, 1559731985 + 3600, true},
		{"past an hour", ip, 1559731985 + 3601, false},
		{"5 minutes before (another agent's clock)", ip, 1559731985 - 300, true},
		{"more than 5 minutes before", ip, 1559731985 - 301, false},
		{"from another address", net.ParseIP("198.51.100.101").To4(), 1559731985, false},
	} {
		if got := k.verify(c, tc.ip, tc.now); got != tc.want {
			t.Errorf("%s: verified %v, want %v", tc.name, got, tc.want)
		}
	}
	if other := newCookieSecret(nil); other.verify(c, ip, 1559731985) {
		t.Errorf("a cookie verified under another secret")
	}
}

// bigSource serves big (20 instances at IPv4 addresses), big6 (20 at
// IPv6 ones) and many (40 at IPv4 ones): SRV, AAAA and A answers larger
// than 512 bytes and smaller than 1232.
func bigSource() *fakeSource {
	src := newFakeSource()
	var v4, v6, many []catalog.ServiceInstance
	for i := range 40 {
		n := strconv.Itoa(i + 1)
		if i < 20 {
			v4 = append(v4, instance("big"+n, "10.9.0."+n, "big", "", 80))
			v6 = append(v6, instance("six"+n, "2001:db8::"+n, "big6", "", 80))
		}
		many = append(many, instance("many"+n, "10.8.0."+n, "many", "", 80))
	}
	src.instances["dc1"]["big"], src.instances["dc1"]["big6"], src.instances["dc1"]["many"] = v4, v6, many
	return src
}

// cookieQuery returns a query for qname with an OPT record of buffer size
// edns (none when 0) carrying cookie, the data of a COOKIE option (none
// when nil).
func cookieQuery(t testing.TB, qname string, qtype uint16, edns uint16, cookie []byte) []byte {
	t.Helper()
	m := query(qname, qtype)
	m.Id = dns.Id()
	if edns != 0 {
		m.SetEdns0(edns, false)
		if cookie != nil {
			o := m.IsEdns0()
			o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(cookie)})
		}
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replyCookie returns the data of the COOKIE option of m, nil when none.
func replyCookie(m *dns.Msg) []byte {
	if o := m.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if c, ok := e.(*dns.EDNS0_COOKIE); ok {
				b, _ := hex.DecodeString(c.Cookie)
				return b
			}
		}
	}
	return nil
}

// exchangeUDP sends q on c and returns the reply's bytes.
func exchangeUDP(t *testing.T, c *net.UDPConn, q []byte) []byte {
	t.Helper()
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65535)
	for {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("read reply: %v", err)
		}
		if n >= 2 && bytes.Equal(buf[:2], q[:2]) {
			return buf[:n]
		}
	}
}

// TestUDPRepliesToUnprovedClients: over the real UDP socket, a client that
// has not returned a valid server cookie gets at most 512 bytes, whatever
// buffer size it advertises, with TC set when the answer was cut; every
// reply to a client cookie carries a fresh server cookie; sent back, that
// cookie gets the whole answer over UDP.
func TestUDPRepliesToUnprovedClients(t *testing.T) {
	t.Parallel()
	s := newConfiguredServer(t, bigSource(), func(*Config) {})
	startServer(t, s)
	c := udpClient(t, "127.0.0.1", s)
	client := unhexT(t, "0102030405060708")
	stale := append(bytes.Clone(client), unhexT(t, "0100000000000001aabbccddeeff0011")...) // issued in 1970
	for _, q := range []struct {
		name  string
		qtype uint16
		n     int // instances
	}{{"big.service.cluster.", dns.TypeSRV, 20}, {"many.service.cluster.", dns.TypeA, 40}, {"big6.service.cluster.", dns.TypeAAAA, 20}} {
		var fresh []byte
		for _, edns := range []uint16{0, 512, 1232, 4096, 65535} {
			for _, ck := range []struct {
				name   string
				cookie []byte
			}{{"no cookie", nil}, {"a client cookie", client}, {"a stale server cookie", stale}, {"a short server cookie", append(bytes.Clone(client), 1, 2, 3, 4, 5, 6, 7, 8)}} {
				b := exchangeUDP(t, c, cookieQuery(t, q.name, q.qtype, edns, ck.cookie))
				m := new(dns.Msg)
				if err := m.Unpack(b); err != nil {
					t.Fatalf("unpack: %v", err)
				}
				if len(b) > dns.MinMsgSize || !m.Truncated || m.Rcode != dns.RcodeSuccess {
					t.Errorf("%s %s, EDNS %d, %s: got %d bytes, TC %v, %s; want at most 512, TC",
						q.name, dns.TypeToString[q.qtype], edns, ck.name, len(b), m.Truncated, dns.RcodeToString[m.Rcode])
				}
				got := replyCookie(m)
				switch {
				case ck.cookie == nil || edns == 0:
					if got != nil {
						t.Errorf("%s, EDNS %d: a COOKIE in the reply to a query without one", ck.name, edns)
					}
				case len(got) != cookieLen || !bytes.Equal(got[:clientCookieLen], client) ||
					!s.cookies.verify(got, net.IPv4(127, 0, 0, 1).To4(), uint32(time.Now().Unix())):
					t.Errorf("%s, EDNS %d: reply cookie %x, want %x and a server cookie that verifies", ck.name, edns, got, client)
				default:
					fresh = got
				}
			}
		}
		// The server cookie sent back: the whole answer, up to UDPSize.
		for _, edns := range []uint16{1232, 4096} {
			b := exchangeUDP(t, c, cookieQuery(t, q.name, q.qtype, edns, fresh))
			m := new(dns.Msg)
			if err := m.Unpack(b); err != nil {
				t.Fatalf("unpack: %v", err)
			}
			if m.Truncated || len(m.Answer) != q.n || len(b) <= dns.MinMsgSize || len(b) > int(s.cfg.UDPSize) {
				t.Errorf("%s %s, EDNS %d, valid server cookie: got %d bytes, %d answers, TC %v; want all %d in one reply of 513 to %d bytes",
					q.name, dns.TypeToString[q.qtype], edns, len(b), len(m.Answer), m.Truncated, q.n, s.cfg.UDPSize)
			}
			if got := replyCookie(m); len(got) != cookieLen || !bytes.Equal(got[:clientCookieLen], client) {
				t.Errorf("EDNS %d, valid server cookie: reply cookie %x", edns, got)
			}
		}
	}
}

// TestCookieMalformed: a COOKIE option of a length RFC 7873 does not allow
// is FORMERR (5.2.2), through each way into the handler.
func TestCookieMalformed(t *testing.T) {
	s := newTestServer(t, bigSource(), nil)
	for _, n := range []int{0, 1, 7, 9, 15, 41, 64} {
		pkt := cookieQuery(t, "big.service.cluster.", dns.TypeSRV, 1232, bytes.Repeat([]byte{7}, n))
		for _, path := range []string{"packet", "udp", "tcp"} {
			w := resolvertest.NewRecorder(path)
			if path == "packet" {
				w = resolvertest.NewRecorder("udp")
				if _, err := s.servePacket(w, pkt); err != nil {
					t.Fatalf("%d bytes: %v", n, err)
				}
			} else {
				req := new(dns.Msg)
				if err := req.Unpack(pkt); err != nil {
					t.Fatal(err)
				}
				s.ServeDNS(w, req)
			}
			m, err := w.Reply()
			if err != nil || m.Rcode != dns.RcodeFormatError || len(m.Answer) != 0 {
				t.Errorf("a COOKIE of %d bytes (%s): got %v, %v; want FORMERR", n, path, m, err)
			}
		}
	}
	// Only the first COOKIE counts (RFC 7873 5.2): a second malformed one
	// changes nothing.
	m := query("big.service.cluster.", dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0102030405060708"},
		&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "01"}}
	if reply := exchange(t, s, m, "udp"); reply.Rcode != dns.RcodeSuccess || len(replyCookie(reply)) != cookieLen {
		t.Errorf("two COOKIE options, the second malformed: got %v, want the first answered", reply)
	}
}

// TestCookieWireCache: replies kept packed (wirecache.go) carry each
// query's own client cookie and a server cookie made for it, and cost no
// allocation, as cookie-less ones.
func TestCookieWireCache(t *testing.T) {
	s := newTestServer(t, webThree(), nil) // a set kept, as a cache hit
	w := resolvertest.NewRecorder("udp")
	ip := clientIP(w.RemoteAddr())
	var server []byte
	for i := range 6 {
		client := []byte{byte(i), 2, 3, 4, 5, 6, 7, 8}
		cookie := client
		if i >= 3 && server != nil {
			cookie = append(bytes.Clone(client), server...) // proved: a different form
		}
		w.Reset()
		if _, err := s.servePacket(w, cookieQuery(t, "web.service.cluster.", dns.TypeSRV, 4096, cookie)); err != nil {
			t.Fatal(err)
		}
		m, err := w.Reply()
		if err != nil {
			t.Fatal(err)
		}
		got := replyCookie(m)
		if len(got) != cookieLen || !bytes.Equal(got[:clientCookieLen], client) || !s.cookies.verify(got, ip, uint32(time.Now().Unix())) {
			t.Fatalf("query %d: reply cookie %x, want %x and a server cookie made for it", i, got, client)
		}
		if i == 2 {
			server = bytes.Clone(got[clientCookieLen:])
		}
		if len(m.Answer) != 3 {
			t.Errorf("query %d: got %d answers, want 3", i, len(m.Answer))
		}
	}
	if raceEnabled {
		return
	}
	for _, tc := range []struct {
		name   string
		cookie []byte
	}{{"a client cookie", unhexT(t, "0102030405060708")}, {"a valid server cookie", nil}} {
		cookie := tc.cookie
		if cookie == nil {
			var sc [serverCookieLen]byte
			client := unhexT(t, "0102030405060708")
			s.cookies.serverCookie(&sc, client, ip, uint32(time.Now().Unix()))
			cookie = append(client, sc[:]...)
		}
		pkt := cookieQuery(t, "web.service.cluster.", dns.TypeSRV, 1232, cookie)
		sink := resolvertest.NewSink("udp")
		for range 2 {
			_, _ = s.servePacket(sink, pkt) // memoize, keep
		}
		if got := testing.AllocsPerRun(200, func() { _, _ = s.servePacket(sink, pkt) }); got != 0 {
			t.Errorf("%s: allocations per packet: got %v, want 0", tc.name, got)
		}
		req := new(dns.Msg)
		if err := req.Unpack(pkt); err != nil {
			t.Fatal(err)
		}
		if got := testing.AllocsPerRun(200, func() { s.ServeDNS(sink, req) }); got != 0 {
			t.Errorf("%s: allocations per ServeDNS: got %v, want 0", tc.name, got)
		}
	}
}

// FuzzCookieOption answers a query carrying any COOKIE option data: one
// of a length RFC 7873 does not allow is FORMERR, any other is answered
// with the client cookie echoed and a server cookie made for the client.
func FuzzCookieOption(f *testing.F) {
	for _, seed := range []string{"", "01", "0102030405060708", "0102030405060708010000005cf79f111f8130c3eee29480",
		"01020304050607080102030405060708", "0102030405060708" + fmt.Sprintf("%064x", 0), "0102030405060708" + fmt.Sprintf("%066x", 0)} {
		f.Add(unhexT(f, seed), uint16(4096))
	}
	s := newTestServer(f, bigSource(), nil)
	f.Fuzz(func(t *testing.T, c []byte, edns uint16) {
		pkt := cookieQuery(t, "big.service.cluster.", dns.TypeSRV, max(edns, 1), c)
		w := resolvertest.NewRecorder("udp")
		if _, err := s.servePacket(w, pkt); err != nil {
			t.Fatalf("servePacket: %v", err)
		}
		m, err := w.Reply()
		if err != nil {
			t.Fatalf("reply: %v", err)
		}
		if !validCookie(len(c)) {
			if m.Rcode != dns.RcodeFormatError {
				t.Fatalf("COOKIE of %d bytes: got %s, want FORMERR", len(c), dns.RcodeToString[m.Rcode])
			}
			return
		}
		got := replyCookie(m)
		if m.Rcode != dns.RcodeSuccess || len(got) != cookieLen || !bytes.Equal(got[:clientCookieLen], c[:clientCookieLen]) {
			t.Fatalf("COOKIE %x: got %s with cookie %x", c, dns.RcodeToString[m.Rcode], got)
		}
		if len(w.Wire) > dns.MinMsgSize && !s.cookies.verify(c, clientIP(w.RemoteAddr()), uint32(time.Now().Unix())) {
			t.Fatalf("COOKIE %x, not valid: a reply of %d bytes", c, len(w.Wire))
		}
	})
}
