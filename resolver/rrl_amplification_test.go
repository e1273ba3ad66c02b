package resolver

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/resolver/resolvertest"
)

// reflectFrom sends queries (cycling through qs) from c at rate a second for
// d, and returns the bytes sent and the bytes of the replies received
// until a little after: what a victim whose address the queries spoof is
// sent. The schedule catches up when the sender falls behind, so that
// the rate holds on a loaded machine.
func reflectFrom(t *testing.T, c *net.UDPConn, qs [][]byte, rate int, d time.Duration) (in, out int) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 65535)
		for {
			n, err := c.Read(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			out += n
		}
	})
	start := time.Now()
	sent := 0
	for elapsed := time.Duration(0); elapsed < d; elapsed = time.Since(start) {
		for due := int(elapsed * time.Duration(rate) / time.Second); sent < due; sent++ {
			q := qs[sent%len(qs)]
			q[0], q[1] = byte(sent>>8), byte(sent)
			if _, err := c.Write(q); err != nil {
				t.Fatalf("send: %v", err)
			}
			in += len(q)
		}
		time.Sleep(2 * time.Millisecond) // pacing the sender, not waiting for a condition
	}
	if err := c.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return in, out
}

// TestRRLAmplification is the reflection attack of issue 27: one spoofed
// source (127.0.0.66) sends 1,000 queries a second for large answers (SRV,
// A, AAAA of large services, with EDNS 4096), and the bytes sent back to
// it must stay within 3 times the bytes it sent. Without a server cookie
// no reply is over 512 bytes, and RRL sends a network at most 100 of
// those a second, truncating the rest to the size of the query, whether
// one name is asked or many.
func TestRRLAmplification(t *testing.T) {
	t.Parallel()
	s := newConfiguredServer(t, bigSource(), func(c *Config) { c.RRL = DefaultConfig().RRL })
	startServer(t, s)
	pack := func(qname string, qtype uint16) []byte {
		m := query(qname, qtype)
		m.SetEdns0(4096, false)
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		from string
		qs   [][]byte
	}{
		{"one name", "127.0.0.66", [][]byte{pack("big.service.cluster.", dns.TypeSRV)}},
		{"many names", "127.0.1.66", [][]byte{pack("big.service.cluster.", dns.TypeSRV), pack("many.service.cluster.", dns.TypeA),
			pack("big6.service.cluster.", dns.TypeAAAA), pack("big.service.cluster.", dns.TypeA),
			pack("many.service.cluster.", dns.TypeSRV), pack("big6.service.cluster.", dns.TypeSRV)}},
	} {
		in, out := reflectFrom(t, udpClient(t, tc.from, s), tc.qs, 1000, 1500*time.Millisecond)
		ratio := float64(out) / float64(in)
		t.Logf("%s: %d bytes in, %d out: %.2f times", tc.name, in, out, ratio)
		if ratio > 3 {
			t.Errorf("%s: %d bytes sent back for %d sent, %.2f times; want at most 3 times", tc.name, out, in, ratio)
		}
	}
}

// TestRRLSparesRealClients: what a stub resolver asks many times a second
// from one address is never limited: small answers (at most
// MinAmplification times the query), and any answer to a client that
// returns a valid server cookie.
func TestRRLSparesRealClients(t *testing.T) {
	s := newConfiguredServer(t, bigSource(), func(c *Config) { c.RRL = DefaultConfig().RRL })
	w := resolvertest.NewRecorder("udp")
	var sc [serverCookieLen]byte
	client := unhexT(t, "0102030405060708")
	s.cookies.serverCookie(&sc, client, clientIP(w.RemoteAddr()), uint32(time.Now().Unix()))
	proved := append(client, sc[:]...)
	for _, tc := range []struct {
		name  string
		pkt   []byte
		whole bool // the reply is expected whole, not truncated
	}{
		{"a small answer", cookieQuery(t, "web.service.cluster.", dns.TypeA, 1232, nil), true},
		{"a large answer, cookie proved", cookieQuery(t, "big.service.cluster.", dns.TypeSRV, 1232, proved), true},
	} {
		const n = 1000 // 10 times the rates, at once
		for i := range n {
			w.Reset()
			if _, err := s.servePacket(w, tc.pkt); err != nil {
				t.Fatal(err)
			}
			m, err := w.Reply()
			if err != nil || m.Rcode != dns.RcodeSuccess || m.Truncated || len(m.Answer) == 0 {
				t.Fatalf("%s, query %d of %d: got %v, %v; want the whole answer", tc.name, i+1, n, m, err)
			}
		}
	}
	if rl := s.Metrics().RateLimited; rl.Dropped+rl.Slipped != 0 {
		t.Errorf("limited %+v, want none", rl)
	}
}
