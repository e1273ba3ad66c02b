package resolver

import (
	"log/slog"
	"slices"
	"testing"
)

// TestAsk: Ask gives what a client over TCP gets, records in dig's
// presentation format, and refuses what is not a question.
func TestAsk(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, newStaticSource(
		instance("n1", "10.0.0.1", "web", "", 80), instance("n2", "10.0.0.2", "web", "", 80), instance("n3", "10.0.0.3", "web", "", 80),
	), slog.New(slog.DiscardHandler))

	r, err := s.Ask("web.service.cluster", "srv")
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if r.Rcode != "NOERROR" || len(r.Answer) != 3 || len(r.Extra) != 3 {
		t.Fatalf("SRV: got %+v, want NOERROR with 3 answers and their 3 addresses", r)
	}
	slices.Sort(r.Answer)
	if want := "web.service.cluster.\t0\tIN\tSRV\t1 1 80 n1.node.dc1.cluster."; r.Answer[0] != want {
		t.Errorf("first answer: got %q, want %q", r.Answer[0], want)
	}
	if r, err := s.Ask("nope.node.cluster", "A"); err != nil || r.Rcode != "NXDOMAIN" || len(r.Answer) != 0 {
		t.Errorf("a missing node: got %+v, %v; want NXDOMAIN", r, err)
	}
	for _, bad := range [][2]string{{"web.service.cluster", "NOPE"}, {"", "A"}, {"a..b", "A"}} {
		if _, err := s.Ask(bad[0], bad[1]); err == nil {
			t.Errorf("Ask(%q, %q): got no error", bad[0], bad[1])
		}
	}
}
