package resolver

import (
	"errors"
	"testing"

	"github.com/miekg/dns"
)

func TestServeDNSReverse(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src, nil)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		aa    bool
		ptrs  []string
	}{
		{"1.0.0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, true, []string{"node1.node.dc1.cluster."}},
		{"2.1.0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, true, []string{"web.service.dc1.cluster."}},
		{"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", dns.TypePTR, dns.RcodeSuccess, true, []string{"node6.node.dc1.cluster."}},
		{"1.0.0.10.IN-ADDR.ARPA.", dns.TypePTR, dns.RcodeSuccess, true, []string{"node1.node.dc1.cluster."}},
		{"1.0.0.10.in-addr.arpa.", dns.TypeA, dns.RcodeSuccess, true, nil}, // NODATA
		// Not held, or not a whole address: like any outside name, and with
		// no recursors that is REFUSED.
		{"9.9.9.10.in-addr.arpa.", dns.TypePTR, dns.RcodeRefused, false, nil},
		{"0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeRefused, false, nil},
	} {
		r := exchange(t, s, query(tc.name, tc.qtype), "udp")
		var got []string
		for _, rr := range r.Answer {
			ptr, ok := rr.(*dns.PTR)
			if !ok || ptr.Hdr.Name != tc.name {
				t.Errorf("%s: got answer %v, want PTRs owned by the question name", tc.name, rr)
				continue
			}
			got = append(got, ptr.Ptr)
		}
		if r.Rcode != tc.rcode || r.Authoritative != tc.aa || len(got) != len(tc.ptrs) || len(got) > 0 && got[0] != tc.ptrs[0] {
			t.Errorf("%s %s: got %s aa=%v %v, want %s aa=%v %v", tc.name, dns.TypeToString[tc.qtype],
				dns.RcodeToString[r.Rcode], r.Authoritative, got, dns.RcodeToString[tc.rcode], tc.aa, tc.ptrs)
		}
	}
}

func TestServeDNSReverseSourceError(t *testing.T) {
	src := newFakeSource()
	src.err = errors.New("store unavailable")
	r := exchange(t, newTestServer(t, src, nil), query("1.0.0.10.in-addr.arpa.", dns.TypePTR), "udp")
	if r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("got %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
}
