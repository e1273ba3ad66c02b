package resolver

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

func TestUnhealthyAnswer(t *testing.T) {
	down := instance("node4", "10.0.0.4", "down", "", 90)
	down.Checks = []*catalog.Check{{CheckID: "c", Status: catalog.HealthCritical}}
	for _, tc := range []struct {
		mode    string
		rcode   int
		answers int
		soa     bool
	}{
		{UnhealthyNoData, dns.RcodeSuccess, 0, true},
		{UnhealthyNXDomain, dns.RcodeNameError, 0, true},
		{UnhealthyAll, dns.RcodeSuccess, 1, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			src := newFakeSource()
			src.instances["dc1"]["down"] = []catalog.ServiceInstance{down}
			cfg := DefaultConfig()
			cfg.UnhealthyAnswer = tc.mode
			s, err := New(cfg, testZones(t), src, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := exchange(t, s, query("down.service.cluster.", dns.TypeA), "udp")
			hasSOA := len(r.Ns) == 1 && r.Ns[0].Header().Rrtype == dns.TypeSOA
			if r.Rcode != tc.rcode || len(r.Answer) != tc.answers || hasSOA != tc.soa {
				t.Errorf("got %s with %d answers, SOA %v; want %s with %d, SOA %v",
					dns.RcodeToString[r.Rcode], len(r.Answer), hasSOA, dns.RcodeToString[tc.rcode], tc.answers, tc.soa)
			}
			// A service with a healthy instance never gives out the unhealthy.
			src.instances["dc1"]["down"] = append(src.instances["dc1"]["down"], instance("node5", "10.0.0.5", "down", "", 90))
			r = exchange(t, s, query("down.service.cluster.", dns.TypeA), "udp")
			if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.0.0.5" {
				t.Errorf("with one healthy instance: got %v, want only 10.0.0.5", r.Answer)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.UnhealthyAnswer = "maybe"
	if err := cfg.Validate(); err == nil {
		t.Error("UnhealthyAnswer \"maybe\": got no error")
	}
}
