package resolver

import (
	"testing"

	"github.com/miekg/dns"
)

func TestSetTCOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SetTC = false
	s, err := New(cfg, testZones(t), manyInstances(100), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := exchange(t, s, query("web.service.cluster.", dns.TypeSRV), "udp")
	r.Compress = true
	packed, err := r.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated || len(r.Answer) == 0 || len(r.Answer) == 100 || len(packed) > dns.MinMsgSize {
		t.Errorf("got TC=%v, %d answers, %d bytes; want records cut to 512 bytes without TC", r.Truncated, len(r.Answer), len(packed))
	}
}
