package resolver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/tlsutil"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// dotTLS returns a server's TLS config with a certificate of a new test CA
// (for localhost and 127.0.0.1), and a client's config trusting that CA.
func dotTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca := tlsutiltest.NewCA(t)
	cfg := tlsutil.DefaultConfig()
	cfg.CertFile, cfg.KeyFile = ca.Issue(t, true, "dc1")
	c, err := tlsutil.NewConfigurator(cfg)
	if err != nil {
		t.Fatalf("NewConfigurator: %v", err)
	}
	pemCA, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemCA) {
		t.Fatal("no CA certificate in " + ca.CertFile)
	}
	return c.IncomingHTTPS(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// TestDNSOverTLS asks over TLS (RFC 7858) and gets what UDP gets, and the
// TLS connections count against MaxTCPConns together with plain TCP ones.
func TestDNSOverTLS(t *testing.T) {
	t.Parallel()
	serverTLS, clientTLS := dotTLS(t)
	s := newConfiguredServer(t, newFakeSource(), func(c *Config) {
		c.TLSAddr, c.TLS, c.MaxTCPConns = "127.0.0.1:0", serverTLS, 1
	})
	startServer(t, s)
	if s.TLSAddr() == nil || s.TLSAddr().String() == s.TCPAddr().String() {
		t.Fatalf("TLSAddr: got %v, want a port of its own (TCP is %v)", s.TLSAddr(), s.TCPAddr())
	}
	q := query("web.service.cluster.", dns.TypeSRV)
	u := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	want, _, err := u.Exchange(q, s.UDPAddr().String())
	if err != nil || len(want.Answer) == 0 {
		t.Fatalf("UDP: got %v, %v; want an answer", want, err)
	}
	c := &dns.Client{Net: "tcp-tls", TLSConfig: clientTLS, Timeout: 5 * time.Second}
	conn, err := c.Dial(s.TLSAddr().String())
	if err != nil {
		t.Fatalf("dial TLS: %v", err)
	}
	got, _, err := c.ExchangeWithConn(q, conn)
	if err != nil {
		t.Fatalf("TLS exchange: %v", err)
	}
	if g, w := strs(got.Answer), strs(want.Answer); !slices.Equal(g, w) {
		t.Errorf("over TLS: got answers %v, want UDP's %v", g, w)
	}

	// The one connection allowed is taken: a plain TCP one is closed.
	tcp := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	if _, _, err := tcp.Exchange(q, s.TCPAddr().String()); err == nil {
		t.Errorf("TCP while a TLS connection holds the only place: got an answer, want the connection closed")
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, err := tcp.Exchange(q, s.TCPAddr().String())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("TCP after the TLS connection closed: %v", err)
		}
	}

	// A client that does not trust the certificate gets no answer.
	bad := &dns.Client{Net: "tcp-tls", TLSConfig: &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}, Timeout: 5 * time.Second}
	if _, _, err := bad.Exchange(q, s.TLSAddr().String()); err == nil {
		t.Errorf("TLS without trusting the CA: got an answer, want a handshake error")
	}
}

// TestTLSConfigValidate: DNS over TLS without a certificate is an error
// naming TLS.
func TestTLSConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TLSAddr = "127.0.0.1:853"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "TLS:") {
		t.Errorf("TLSAddr without TLS: got %v, want an error naming TLS", err)
	}
	cfg.TLSAddr, cfg.TLS = "nope", &tls.Config{}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "TLSAddr") {
		t.Errorf("bad TLSAddr: got %v, want an error naming TLSAddr", err)
	}
}

// TestServeWire answers wire-format queries as DNS over HTTPS sends them.
func TestServeWire(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, newFakeSource(), nil)
	q := query("web.service.cluster.", dns.TypeSRV)
	q.Id = 0 // RFC 8484 4.1: DoH clients send ID 0
	wire, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	reply, _, err := s.ServeWire(wire, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000})
	if err != nil {
		t.Fatalf("ServeWire: %v", err)
	}
	got := new(dns.Msg)
	if err := got.Unpack(reply); err != nil {
		t.Fatalf("unpack the reply: %v", err)
	}
	want := exchange(t, s, q, "tcp")
	if got.Id != 0 || got.Rcode != want.Rcode || !slices.Equal(strs(got.Answer), strs(want.Answer)) {
		t.Errorf("got id %d, %s %v; want id 0, %s %v", got.Id, dns.RcodeToString[got.Rcode], got.Answer,
			dns.RcodeToString[want.Rcode], want.Answer)
	}
	if _, _, err := s.ServeWire(reply, nil); !errors.Is(err, ErrBadWireQuery) {
		t.Errorf("a response: got %v, want ErrBadWireQuery", err)
	}
	for _, garbage := range [][]byte{nil, {1, 2, 3}, wire[:len(wire)-3]} {
		if _, _, err := s.ServeWire(garbage, nil); !errors.Is(err, ErrBadWireQuery) {
			t.Errorf("%x: got %v, want ErrBadWireQuery", garbage, err)
		}
	}
}

// TestMinTTL: the HTTP freshness of a reply is its smallest answer TTL,
// else its SOA's negative TTL, else 0.
func TestMinTTL(t *testing.T) {
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	soa := "cluster. 60 IN SOA ns.cluster. hostmaster.cluster. 1 3600 600 86400 "
	for _, tc := range []struct {
		name        string
		answer, ns  []dns.RR
		want        uint32
		cutLastByte bool
	}{
		{name: "answers", answer: []dns.RR{rr("a.cluster. 30 IN A 10.0.0.1"), rr("a.cluster. 10 IN A 10.0.0.2"), rr("b.a.cluster. 20 IN A 10.0.0.3")}, want: 10},
		{name: "TTL 0", answer: []dns.RR{rr("a.cluster. 0 IN A 10.0.0.1")}, want: 0},
		{name: "SOA minimum", ns: []dns.RR{rr(soa + "5")}, want: 5},
		{name: "SOA TTL", ns: []dns.RR{rr(soa + "600")}, want: 60},
		{name: "nothing", want: 0},
		{name: "cut", answer: []dns.RR{rr("a.cluster. 30 IN A 10.0.0.1")}, cutLastByte: true, want: 0},
	} {
		m := query("a.cluster.", dns.TypeA)
		m.Response, m.Answer, m.Ns, m.Compress = true, tc.answer, tc.ns, true
		m.SetEdns0(1232, false)
		wire, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if tc.cutLastByte {
			wire = wire[:len(wire)-1-11] // into the answer, before the OPT record
		}
		if got := minTTL(wire); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestDNSOverTLSPerClient: a client's DNS over TLS connections count
// against MaxTCPConnsPerClient together with its plain TCP ones, and
// another client is still served.
func TestDNSOverTLSPerClient(t *testing.T) {
	t.Parallel()
	serverTLS, clientTLS := dotTLS(t)
	s := newConfiguredServer(t, newFakeSource(), func(c *Config) {
		c.TLSAddr, c.TLS, c.MaxTCPConnsPerClient = "127.0.0.1:0", serverTLS, 1
	})
	startServer(t, s)
	q := query("web.service.cluster.", dns.TypeSRV)
	from := func(ip, network string) *dns.Client {
		return &dns.Client{Net: network, TLSConfig: clientTLS, Timeout: 2 * time.Second,
			Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 2 * time.Second}}
	}
	attacker := from("127.0.0.66", "tcp")
	held, err := attacker.Dial(s.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, _, err := attacker.ExchangeWithConn(q, held); err != nil {
		t.Fatalf("the attacker's one connection: %v", err)
	}
	if _, _, err := from("127.0.0.66", "tcp-tls").Exchange(q, s.TLSAddr().String()); err == nil {
		t.Errorf("a TLS connection past the client's one: got an answer, want it closed")
	}
	if r, _, err := from("127.0.0.67", "tcp-tls").Exchange(q, s.TLSAddr().String()); err != nil || len(r.Answer) == 0 {
		t.Errorf("another client over TLS: got %v, %v; want an answer", r, err)
	}
}
