package resolver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// startUDPServer starts a test server on src with sockets UDP sockets,
// shut down when the test ends.
func startUDPServer(t testing.TB, src Source, sockets int) *Server {
	t.Helper()
	s := newTestServer(t, src, nil)
	s.cfg.UDPSockets = sockets
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

// TestUDPSocketsShareAPort checks that the sockets of Config.UDPSockets
// share one port (TCP's), are all bound, and each answers: queries from
// new source ports are sent until every socket has read one.
func TestUDPSocketsShareAPort(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("only Linux spreads a port's datagrams over several sockets")
	}
	const n = 4
	s := startUDPServer(t, newFakeSource(), n)
	addr := s.UDPAddr().(*net.UDPAddr)
	if len(s.udp) != n {
		t.Fatalf("sockets: got %d, want %d", len(s.udp), n)
	}
	if tcp := s.TCPAddr().(*net.TCPAddr); tcp.Port != addr.Port {
		t.Errorf("ports: got UDP %d and TCP %d, want the same", addr.Port, tcp.Port)
	}
	for i, sock := range s.udp {
		if got := sock.conn.LocalAddr().String(); got != addr.String() {
			t.Errorf("socket %d: bound to %s, want %s", i, got, addr)
		}
	}
	// A read of /proc/net/udp walks the kernel's hash table in chunks and
	// can skip sockets while other tests open and close theirs: it is
	// read again until it agrees, for a while.
	got := boundUDPSockets(t, addr.Port)
	for end := time.Now().Add(5 * time.Second); got != n && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		got = boundUDPSockets(t, addr.Port)
	}
	if got != n {
		t.Errorf("/proc/net/udp: got %d sockets on port %d, want %d", got, addr.Port, n)
	}
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second} // a new source port per exchange
	deadline := time.Now().Add(10 * time.Second)
	for sent := 0; ; sent++ {
		idle := 0
		for _, sock := range s.udp {
			if sock.read.Load() == 0 {
				idle++
			}
		}
		if idle == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d queries from as many ports, %d of %d sockets have read none", sent, idle, n)
		}
		reply, _, err := c.Exchange(query("web.service.cluster.", dns.TypeSRV), addr.String())
		if err != nil || reply.Rcode != dns.RcodeSuccess || len(reply.Answer) != 2 {
			t.Fatalf("exchange %d: got %v, %v; want 2 answers", sent, reply, err)
		}
	}
}

// boundUDPSockets counts the IPv4 UDP sockets bound to port.
func boundUDPSockets(t *testing.T, port int) int {
	t.Helper()
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer f.Close()
	suffix := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 1 && strings.HasSuffix(fields[1], suffix) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /proc/net/udp: %v", err)
	}
	return n
}

// TestUDPBurst sends a few thousand queries at once from many client
// sockets, each keeping a window of them in flight, and checks that each
// is answered, to its ID and question. A query unanswered for a while is
// sent again, as a stub resolver does: the kernel may drop datagrams when
// a socket's buffer is full, which is not the server's doing.
func TestUDPBurst(t *testing.T) {
	t.Parallel()
	const clients, perClient, window = 32, 100, 16
	s := startUDPServer(t, manyInstances(3), 0)
	addr := s.UDPAddr().(*net.UDPAddr)
	questions := []dns.Question{
		{Name: "web.service.cluster.", Qtype: dns.TypeA, Qclass: dns.ClassINET},
		{Name: "node1.node.cluster.", Qtype: dns.TypeA, Qclass: dns.ClassINET},
		{Name: "nope.service.cluster.", Qtype: dns.TypeSRV, Qclass: dns.ClassINET},
		{Name: "cluster.", Qtype: dns.TypeSOA, Qclass: dns.ClassINET},
	}
	want := []struct{ rcode, answers int }{{dns.RcodeSuccess, 3}, {dns.RcodeSuccess, 1}, {dns.RcodeNameError, 0}, {dns.RcodeSuccess, 1}}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			if err := burst(addr, c, perClient, window, questions, want); err != nil {
				errs <- fmt.Errorf("client %d: %w", c, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// burst sends n queries to addr from one socket, window at a time, and
// checks every reply (see TestUDPBurst).
func burst(addr *net.UDPAddr, client, n, window int, qs []dns.Question, want []struct{ rcode, answers int }) error {
	conn, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	type pending struct {
		q    int
		wire []byte
		sent time.Time
	}
	inflight := map[uint16]*pending{}
	next, done := 0, 0
	deadline := time.Now().Add(20 * time.Second)
	buf := make([]byte, 4096)
	for done < n {
		for ; next < n && len(inflight) < window; next++ {
			m := &dns.Msg{Question: []dns.Question{qs[(client+next)%len(qs)]}}
			m.Id = uint16(client<<10 | next)
			wire, err := m.Pack()
			if err != nil {
				return err
			}
			inflight[m.Id] = &pending{q: (client + next) % len(qs), wire: wire, sent: time.Now()}
			if _, err := conn.Write(wire); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d queries unanswered", n-done, n)
		}
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		k, err := conn.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			for _, p := range inflight {
				if time.Since(p.sent) > 500*time.Millisecond {
					p.sent = time.Now()
					_, _ = conn.Write(p.wire)
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:k]); err != nil {
			return fmt.Errorf("unpack a reply: %w", err)
		}
		p, ok := inflight[r.Id]
		if !ok {
			continue // a reply to a query sent again
		}
		w := want[p.q]
		if len(r.Question) != 1 || r.Question[0] != qs[p.q] || r.Rcode != w.rcode || len(r.Answer) != w.answers {
			return fmt.Errorf("reply %d: got %v rcode %s with %d answers, want %v %s with %d",
				r.Id, r.Question, dns.RcodeToString[r.Rcode], len(r.Answer), qs[p.q], dns.RcodeToString[w.rcode], w.answers)
		}
		delete(inflight, r.Id)
		done++
	}
	return nil
}

// TestUDPShutdownUnderLoad shuts a server down while clients flood it,
// and checks that Shutdown returns and no reader is left.
func TestUDPShutdownUnderLoad(t *testing.T) {
	t.Parallel()
	s := startUDPServer(t, manyInstances(3), 0)
	addr := s.UDPAddr().(*net.UDPAddr)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			conn, err := net.DialUDP("udp", nil, addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			wire, _ := query("web.service.cluster.", dns.TypeA).Pack()
			buf := make([]byte, 4096)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 8 {
					_, _ = conn.Write(wire)
				}
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
				for {
					if _, err := conn.Read(buf); err != nil {
						break
					}
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); total(s) < 1000; {
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d queries in 10s, want 1000 before shutting down", total(s))
		}
		time.Sleep(time.Millisecond) // polling the condition
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown under load: %v", err)
	}
	for i, sock := range s.udp {
		if n := sock.readers.Load(); n != 0 {
			t.Errorf("socket %d: %d readers left after Shutdown, want 0", i, n)
		}
	}
}

// total returns the datagrams read by every socket of s.
func total(s *Server) uint64 {
	var n uint64
	for _, sock := range s.udp {
		n += sock.read.Load()
	}
	return n
}

// TestUDPLikeMiekg sends malformed and odd datagrams both to cairn's UDP
// readers and to a miekg/dns server with the same handler, which cairn's
// served UDP before, and checks that each gets the same reply (or none).
func TestUDPLikeMiekg(t *testing.T) {
	t.Parallel()
	s := startUDPServer(t, newFakeSource(), 1)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	started := make(chan struct{})
	ref := &dns.Server{PacketConn: pc, Handler: s, UDPSize: readBufferSize, NotifyStartedFunc: func() { close(started) }}
	var wg sync.WaitGroup
	wg.Go(func() { _ = ref.ActivateAndServe() })
	t.Cleanup(func() { _ = ref.Shutdown(); wg.Wait() })
	<-started

	good, _ := query("cluster.", dns.TypeSOA).Pack()
	with := func(b []byte, edit func([]byte)) []byte {
		b = append([]byte(nil), b...)
		edit(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
	}{
		{"a query", good},
		{"short", good[:5]},
		{"a bare header", make([]byte, 12)},
		{"a response", with(good, func(b []byte) { b[2] |= 0x80 })},
		{"an update", with(good, func(b []byte) { b[2] |= 5 << 3 })},
		{"a status query", with(good, func(b []byte) { b[2] |= 2 << 3 })},
		{"a notify", with(good, func(b []byte) { b[2] |= 4 << 3 })},
		{"two questions", with(good, func(b []byte) { b[5] = 2 })},
		{"three additional records", with(good, func(b []byte) { b[11] = 3 })},
		{"a cut question", good[:len(good)-2]},
		{"flags set", with(good, func(b []byte) { b[2] |= 0x07; b[3] |= 0xF0 })},
		{"junk", []byte("not a dns message at all")},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, want := roundTrip(t, s.UDPAddr(), tt.b), roundTrip(t, pc.LocalAddr(), tt.b)
			if string(got) != string(want) {
				t.Errorf("reply: got %x, want miekg/dns's %x", got, want)
			}
		})
	}
}

// roundTrip sends b to addr and returns the reply, nil when none comes
// within half a second.
func roundTrip(t *testing.T, addr net.Addr, b []byte) []byte {
	t.Helper()
	conn, err := net.Dial("udp", addr.String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// TestUDPSlowQueryDoesNotStall checks that queries waiting on a silent
// recursor do not stop a socket's other queries from being answered.
func TestUDPSlowQueryDoesNotStall(t *testing.T) {
	t.Parallel()
	u := startUpstream(t, nil, silent)
	s := recursingServer(t, RecursorSequential, time.Second, u.addr)
	s.cfg.UDPSockets = 1
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	addr := s.UDPAddr().String()
	const slow = 2
	for i := range slow {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.Close()
		wire, _ := query(fmt.Sprintf("host%d.example.com.", i), dns.TypeA).Pack()
		if _, err := conn.Write(wire); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); total(s) < slow; {
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d of the %d slow queries", total(s), slow)
		}
		time.Sleep(time.Millisecond) // polling the condition
	}
	c := &dns.Client{Net: "udp", Timeout: 500 * time.Millisecond}
	reply, rtt, err := c.Exchange(query("web.service.cluster.", dns.TypeSRV), addr)
	if err != nil || reply.Rcode != dns.RcodeSuccess {
		t.Fatalf("a cached query behind %d slow ones: got %v, %v; want an answer within 500ms", slow, reply, err)
	}
	t.Logf("answered in %s behind %d queries waiting on a silent recursor", rtt, slow)
}

// BenchmarkUDP measures the whole UDP path over loopback: a client per
// goroutine sends an SRV query for 3 instances and waits for the reply.
// Allocations include the client's.
func BenchmarkUDP(b *testing.B) {
	src := webThree()
	s := startUDPServer(b, src, 0)
	wire, _ := query("web.service.cluster.", dns.TypeSRV).Pack()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.DialUDP("udp", nil, s.UDPAddr().(*net.UDPAddr))
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		buf := make([]byte, 4096)
		for pb.Next() {
			if _, err := conn.Write(wire); err != nil {
				b.Error(err)
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := conn.Read(buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestUDPWildcardReplySource checks that a server bound to an unspecified
// address replies from the address each query was sent to: a connected
// client (as a stub resolver's socket is) drops a reply from another.
// 127.0.0.2 reaches the host on Linux, but the kernel's own choice of
// source towards the client would be 127.0.0.1.
func TestUDPWildcardReplySource(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 is a local address on Linux")
	}
	for _, bind := range []string{"0.0.0.0:0", "[::]:0"} {
		t.Run(bind, func(t *testing.T) {
			s := newTestServer(t, newFakeSource(), nil)
			s.cfg.Addr = bind
			s.cfg.UDPSockets = 2
			if err := s.Start(); err != nil {
				t.Skipf("Start on %s: %v", bind, err)
			}
			t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
			port := s.UDPAddr().(*net.UDPAddr).Port
			for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
				c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
				reply, _, err := c.Exchange(query("web.service.cluster.", dns.TypeSRV), net.JoinHostPort(ip, fmt.Sprint(port)))
				if err != nil || reply.Rcode != dns.RcodeSuccess {
					t.Errorf("query to %s of a server on %s: got %v, %v; want an answer from %s", ip, bind, reply, err, ip)
				}
			}
		})
	}
}
