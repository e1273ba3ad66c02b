package resolver

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
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
