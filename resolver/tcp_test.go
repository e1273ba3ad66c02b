package resolver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/internal/waittest"
)

// TestTCPPipelining sends two queries on one TCP connection before
// reading either reply (RFC 7766), then checks that the server closes the
// connection once it has been idle for TCPIdleTimeout.
func TestTCPPipelining(t *testing.T) {
	const idle = 200 * time.Millisecond
	s := newTestServer(t, newFakeSource(), nil)
	s.cfg.TCPIdleTimeout = idle
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Shutdown(context.Background())

	conn, err := dns.DialTimeout("tcp", s.TCPAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("SetDeadline: %v", err)
	}
	q1, q2 := query("web.service.cluster.", dns.TypeSRV), query("node1.node.cluster.", dns.TypeA)
	for _, q := range []*dns.Msg{q1, q2} {
		if err := conn.WriteMsg(q); err != nil {
			t.Fatalf("write query %d: %v", q.Id, err)
		}
	}
	want := map[uint16]int{q1.Id: 2, q2.Id: 1} // answers per query
	for range 2 {
		reply, err := conn.ReadMsg()
		if err != nil {
			t.Fatalf("read reply: %v", err)
		}
		n, ok := want[reply.Id]
		if !ok || reply.Rcode != dns.RcodeSuccess || len(reply.Answer) != n {
			t.Fatalf("reply %d: got rcode %s and %d answers, want one of the queries answered NOERROR (%v)",
				reply.Id, dns.RcodeToString[reply.Rcode], len(reply.Answer), want)
		}
		delete(want, reply.Id)
	}

	// Now idle: the server must close the connection after about idle,
	// well before the 5s deadline.
	idleSince := time.Now()
	_, err = conn.ReadMsg()
	waited := time.Since(idleSince)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("idle connection still open after %s, want it closed after %s", waited, idle)
	case !errors.Is(err, io.EOF):
		t.Fatalf("read on an idle connection: got %v, want EOF", err)
	case waited < idle/2:
		t.Errorf("idle connection closed after %s, want about %s", waited, idle)
	}
}

// TestTCPConnsPerClient is the attack of one address holding every TCP
// connection the server allows: 127.0.0.66 opens 1,000 connections and
// keeps them, and 127.0.0.67 must still get its answer over TCP. The
// attacker would keep each connection open by sending a query within each
// timeout; the test lengthens the timeouts instead.
func TestTCPConnsPerClient(t *testing.T) {
	t.Parallel()
	const attack = 1000
	s := newConfiguredServer(t, newFakeSource(), func(c *Config) {
		c.ReadTimeout, c.TCPIdleTimeout = time.Minute, time.Minute
	})
	startServer(t, s)
	addr := s.TCPAddr().String()
	attacker := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 66)}, Timeout: 5 * time.Second}
	for i := range attack {
		c, err := attacker.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("attacker's connection %d: %v", i+1, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	// The kernel completes the handshakes; wait for the server to have
	// accepted (and kept or refused) every one of them.
	waittest.For(t, 30*time.Second, "the server to take the attacker's connections", func() error {
		live, _ := openConns(s.tcp, nil)
		if refused := s.Metrics().TCPRefused; live+int(refused) < attack {
			return fmt.Errorf("%d kept and %d refused of %d", live, refused, attack)
		}
		return nil
	})
	victim := &dns.Client{Net: "tcp", Timeout: 5 * time.Second,
		Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 67)}, Timeout: 5 * time.Second}}
	reply, _, err := victim.Exchange(query("web.service.cluster.", dns.TypeA), addr)
	if err != nil || reply.Rcode != dns.RcodeSuccess || len(reply.Answer) == 0 {
		t.Fatalf("a second address while the first holds %d connections: got %v, %v; want an answer over TCP", attack, reply, err)
	}
	all, held := openConns(s.tcp, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 66)})
	t.Logf("the attacker holds %d connections (%d refused); %d open in all; the second address was answered", held, s.Metrics().TCPRefused, all)
	if held != s.cfg.MaxTCPConnsPerClient {
		t.Errorf("the attacker holds %d connections (of %d open), want MaxTCPConnsPerClient, %d", held, all, s.cfg.MaxTCPConnsPerClient)
	}
}

// openConns returns the connections l counts open: in all, and from the
// client of addr.
func openConns(l *tcpLimits, addr net.Addr) (all, client int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live, l.client[clientKey(addr)]
}
