package resolver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// TestServiceAnswerBuiltOncePerSet: repeated questions answered from one
// set share the records built for the first; another query type, another
// name or another set builds its own.
func TestServiceAnswerBuiltOncePerSet(t *testing.T) {
	src := newStaticSource(
		instance("node1", "10.0.0.1", "web", "", 80),
		instance("node2", "10.0.0.2", "web", "", 80),
	)
	s := newTestServer(t, src, nil)
	z := s.zone
	q := func(name string) zones.Query {
		_, qq := s.parse(name)
		return qq
	}
	srv1 := answerOf(s, z, q("web.service.cluster."), dns.TypeSRV, src.set)
	srv2 := answerOf(s, z, q("web.service.cluster."), dns.TypeSRV, src.set)
	if len(srv1.Answer) != 2 || &srv1.Answer[0] != &srv2.Answer[0] {
		t.Errorf("second SRV answer from the same set: records rebuilt, want the first's")
	}
	a := answerOf(s, z, q("web.service.cluster."), dns.TypeA, src.set)
	if len(a.Answer) != 2 || a.Answer[0].Header().Rrtype != dns.TypeA {
		t.Errorf("A answer: got %v, want two A records (not the memoized SRV)", a.Answer)
	}
	dc := answerOf(s, z, q("web.service.dc1.cluster."), dns.TypeSRV, src.set)
	if dc.Answer[0].Header().Name != "web.service.dc1.cluster." {
		t.Errorf("answer for the name with its datacenter: owner %q", dc.Answer[0].Header().Name)
	}
	other := newStaticSource(instance("node3", "10.0.0.3", "web", "", 80))
	if got := answerOf(s, z, q("web.service.cluster."), dns.TypeSRV, other.set); len(got.Answer) != 1 {
		t.Errorf("answer from another set: got %d records, want its own 1", len(got.Answer))
	}
	// Past the limit answers are still right, only no longer kept.
	for i := range memoLimit + 4 {
		name := "web.service.cluster."
		if i%2 == 1 {
			name = "web.service.dc1.cluster."
		}
		qtype := uint16(dns.TypeA)
		if i%3 == 0 {
			qtype = dns.TypeSRV
		}
		if got := answerOf(s, z, q(name), qtype, src.set); len(got.Answer) != 2 {
			t.Fatalf("answer %d: got %d records, want 2", i, len(got.Answer))
		}
	}
}

func TestQueryContext(t *testing.T) {
	// Deadline without Done: no timer. (A deadline far off, so that a
	// loaded machine cannot pass it before the check.)
	c := newQueryContext(time.Hour)
	if d, ok := c.Deadline(); !ok || time.Until(d) > time.Hour {
		t.Errorf("Deadline: got %v, %v", d, ok)
	}
	if c.Err() != nil || c.timer != nil {
		t.Errorf("fresh context: Err %v, timer %v; want nil, nil", c.Err(), c.timer)
	}
	// Err turns at the deadline.
	c = newQueryContext(20 * time.Millisecond)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed at the deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("Err after the deadline: got %v, want DeadlineExceeded", c.Err())
	}

	// cancel releases a waiter, and a context derived from it.
	c = newQueryContext(time.Hour)
	child, stop := context.WithCancel(c)
	defer stop()
	done := c.Done()
	c.cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed by cancel")
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("derived context not cancelled")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err after cancel: got %v, want Canceled", c.Err())
	}
	c.cancel() // twice is harmless

	// Cancelled before anyone asked: Done is closed at once.
	c = newQueryContext(time.Hour)
	c.cancel()
	select {
	case <-c.Done():
	default:
		t.Error("Done of a cancelled context is open")
	}
}

// TestStaleAnswersCarryShortTTLs: records answered from stale data have a
// TTL of at most StaleTTL, and the shared records are left alone.
func TestStaleAnswersCarryShortTTLs(t *testing.T) {
	src := newStaticSource(instance("node1", "10.0.0.1", "web", "", 80))
	zc := zones.DefaultConfig()
	zc.Domain, zc.NSAddress = "cluster.", "10.0.0.53"
	zc.ServiceTTLs = map[string]time.Duration{"*": time.Hour}
	z, err := zones.New(zc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	s, err := New(cfg, []*zones.Zone{z}, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, q := s.parse("web.service.cluster.")
	fresh := answerOf(s, s.zone, q, dns.TypeSRV, src.set)
	stale := answerOf(s, s.zone, q, dns.TypeSRV, src.set.Staled())
	if got := fresh.Answer[0].Header().Ttl; got != 3600 {
		t.Fatalf("fresh TTL: got %d, want 3600", got)
	}
	for _, rr := range append(stale.Answer, stale.Extra...) {
		if rr.Header().Ttl > StaleTTL {
			t.Errorf("stale record %s: TTL %d, want at most %d", rr.Header().Name, rr.Header().Ttl, StaleTTL)
		}
	}
	if got := fresh.Answer[0].Header().Ttl; got != 3600 {
		t.Errorf("fresh record after a stale answer: TTL %d, want 3600 (shared records untouched)", got)
	}
}

// answerOf is s's answer to a service question, whether kept or not.
func answerOf(s *Server, z *zones.Zone, q zones.Query, qtype uint16, set *Instances) zones.Answer {
	ans, _ := s.serviceAnswer(z, q, qtype, set)
	return ans
}
