package resolver

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestAnswerLimits(t *testing.T) {
	tests := []struct {
		name           string
		udpLimit, aLim int
		network        string
		qtype          uint16
		answers        int
	}{
		{"no limits UDP", 0, 0, "udp", dns.TypeA, 10},
		{"UDP limit over UDP", 3, 0, "udp", dns.TypeA, 3},
		{"UDP limit over TCP", 3, 0, "tcp", dns.TypeA, 10},
		{"UDP limit SRV", 3, 0, "udp", dns.TypeSRV, 3},
		{"UDP limit above count", 20, 0, "udp", dns.TypeA, 10},
		{"A limit over UDP", 0, 2, "udp", dns.TypeA, 2},
		{"A limit over TCP", 0, 2, "tcp", dns.TypeA, 2},
		{"A limit ANY", 0, 2, "tcp", dns.TypeANY, 2},
		{"A limit leaves SRV", 0, 2, "tcp", dns.TypeSRV, 10},
		{"both over UDP", 3, 5, "udp", dns.TypeA, 3},
		{"both over TCP", 3, 5, "tcp", dns.TypeA, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, manyInstances(10), nil)
			s.cfg.UDPAnswerLimit, s.cfg.ARecordLimit = tt.udpLimit, tt.aLim
			req := query("web.service.cluster.", tt.qtype)
			req.SetEdns0(4096, false) // room for all 10
			reply := exchange(t, s, req, tt.network)
			if len(reply.Answer) != tt.answers || reply.Truncated || reply.Rcode != dns.RcodeSuccess || !reply.Authoritative {
				t.Errorf("got %d answers TC %v rcode %s AA %v, want %d, no TC, NOERROR, AA",
					len(reply.Answer), reply.Truncated, dns.RcodeToString[reply.Rcode], reply.Authoritative, tt.answers)
			}
			if tt.qtype != dns.TypeSRV {
				return
			}
			// The glue left is that of the SRV targets left, and the OPT.
			var targets, glue []string
			for _, rr := range reply.Answer {
				targets = append(targets, rr.(*dns.SRV).Target)
			}
			opts := 0
			for _, rr := range reply.Extra {
				if rr.Header().Rrtype == dns.TypeOPT {
					opts++
					continue
				}
				glue = append(glue, rr.Header().Name)
			}
			slices.Sort(targets)
			slices.Sort(glue)
			if !slices.Equal(glue, targets) || opts != 1 {
				t.Errorf("extra: got glue for %v and %d OPT, want glue for %v and 1 OPT", glue, opts, targets)
			}
		})
	}
}

// TestAnswerLimitsShuffle checks the limit is applied after shuffling,
// so clients get different subsets.
func TestAnswerLimitsShuffle(t *testing.T) {
	s := newTestServer(t, manyInstances(10), nil)
	s.cfg.UDPAnswerLimit = 1
	seen := map[string]bool{}
	for range 50 {
		reply := exchange(t, s, query("web.service.cluster.", dns.TypeA), "udp")
		if len(reply.Answer) != 1 {
			t.Fatalf("answers: got %d, want 1", len(reply.Answer))
		}
		seen[reply.Answer[0].String()] = true
	}
	if len(seen) < 2 {
		t.Errorf("50 replies limited to 1 answer gave %d distinct answers, want several", len(seen))
	}
}

// TestAnswerLimitsNegative checks that limits leave answers without
// records as they are.
func TestAnswerLimitsNegative(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	s.cfg.UDPAnswerLimit, s.cfg.ARecordLimit = 1, 1
	reply := exchange(t, s, query("db.service.cluster.", dns.TypeA), "udp")
	if reply.Rcode != dns.RcodeNameError || len(reply.Ns) != 1 {
		t.Errorf("got rcode %s and %d authority records, want NXDOMAIN and the SOA", dns.RcodeToString[reply.Rcode], len(reply.Ns))
	}
	reply = exchange(t, s, query("cluster.", dns.TypeNS), "udp")
	if len(reply.Answer) != 1 || len(strs(reply.Extra)) != 1 {
		t.Errorf("apex NS: got %d answers and %d extra, want 1 and 1", len(reply.Answer), len(strs(reply.Extra)))
	}
}

func mustRRs(t *testing.T, s ...string) []dns.RR {
	t.Helper()
	var out []dns.RR
	for _, r := range s {
		rr, err := dns.NewRR(r)
		if err != nil {
			t.Fatalf("NewRR(%q): %v", r, err)
		}
		out = append(out, rr)
	}
	return out
}

func rrStrings(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.String())
	}
	return strings.Join(out, "\n")
}

func TestCapAddresses(t *testing.T) {
	in := mustRRs(t, "a. IN A 10.0.0.1", "a. IN TXT x", "a. IN AAAA ::1", "a. IN A 10.0.0.2", "a. IN CNAME b.", "a. IN A 10.0.0.3")
	before := rrStrings(in)
	got := capAddresses(in, 2)
	want := mustRRs(t, "a. IN A 10.0.0.1", "a. IN TXT x", "a. IN AAAA ::1", "a. IN CNAME b.")
	if rrStrings(got) != rrStrings(want) {
		t.Errorf("capAddresses(2):\n got %s\nwant %s", rrStrings(got), rrStrings(want))
	}
	if rrStrings(in) != before {
		t.Errorf("capAddresses changed its input:\n got %s\nwant %s", rrStrings(in), before)
	}
	if got := capAddresses(in, 4); &got[0] != &in[0] || len(got) != len(in) {
		t.Errorf("capAddresses(4) of 4 addresses: got a copy or a cut, want the input itself")
	}
}

func TestTargetedGlue(t *testing.T) {
	answer := mustRRs(t, "s. IN SRV 1 1 80 N1.node.", "s. IN SRV 1 1 80 n3.node.")
	extra := mustRRs(t, "n1.node. IN A 10.0.0.1", "n2.node. IN A 10.0.0.2", "n3.node. IN AAAA ::3", "n2.node. IN TXT x")
	extra = append(extra, &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}})
	before := rrStrings(extra)
	got := targetedGlue(answer, extra)
	want := []dns.RR{extra[0], extra[2], extra[3], extra[4]}
	if rrStrings(got) != rrStrings(want) {
		t.Errorf("targetedGlue:\n got %s\nwant %s", rrStrings(got), rrStrings(want))
	}
	if rrStrings(extra) != before {
		t.Errorf("targetedGlue changed its input")
	}
	noSRV := mustRRs(t, "a. IN A 10.0.0.9")
	if got := targetedGlue(noSRV, extra); len(got) != len(extra) {
		t.Errorf("targetedGlue without SRV answers: got %d records, want all %d", len(got), len(extra))
	}
}
