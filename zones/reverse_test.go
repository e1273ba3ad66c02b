package zones

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestParseReverse(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // "" when the name is not an address
	}{
		{"4.3.2.1.in-addr.arpa.", "1.2.3.4"},
		{"0.0.0.10.in-addr.arpa.", "10.0.0.0"},
		{"255.255.255.255.in-addr.arpa.", "255.255.255.255"},
		{"3.2.1.in-addr.arpa.", ""},
		{"5.4.3.2.1.in-addr.arpa.", ""},
		{"256.3.2.1.in-addr.arpa.", ""},
		{"04.3.2.1.in-addr.arpa.", ""},
		{"a.3.2.1.in-addr.arpa.", ""},
		{"in-addr.arpa.", ""},
		{"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", "2001:db8::1"},
		{"b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.0.0.0.0.1.2.3.4.ip6.arpa.", "4321:0:1:2:3:4:567:89ab"},
		{"1.0.0.0.ip6.arpa.", ""},
		{"g.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", ""},
		{"web.service.cluster.", ""},
	} {
		got, ok := ParseReverse(tc.name)
		if tc.want == "" {
			if ok {
				t.Errorf("ParseReverse(%q): got %s, want not an address", tc.name, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(tc.want) {
			t.Errorf("ParseReverse(%q): got %s %v, want %s", tc.name, got, ok, tc.want)
		}
	}
}

func TestReverseAnswer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PTRTTL = 42 * time.Second
	z, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const q = "1.0.0.10.in-addr.arpa."
	a := z.ReverseAnswer(q, dns.TypePTR, []string{"Web-1"}, []string{"db"})
	want := []string{"web-1.node.dc1.cluster.", "db.service.dc1.cluster."}
	if a.Result != Success || len(a.Answer) != len(want) {
		t.Fatalf("got %v %v, want %d PTRs", a.Result, a.Answer, len(want))
	}
	for i, rr := range a.Answer {
		ptr := rr.(*dns.PTR)
		if ptr.Ptr != want[i] || ptr.Hdr.Name != q || ptr.Hdr.Ttl != 42 {
			t.Errorf("PTR %d: got %v, want %s %s", i, rr, q, want[i])
		}
	}
	if got := z.ReverseAnswer(q, dns.TypeA, []string{"n"}, nil).Result; got != NoData {
		t.Errorf("A for a held address: got %v, want NoData", got)
	}
	if got := z.ReverseAnswer(q, dns.TypePTR, nil, nil); got.Result != NameError || got.Ns != nil {
		t.Errorf("unheld address: got %v with Ns %v, want NameError without SOA", got.Result, got.Ns)
	}
}

func FuzzParseReverse(f *testing.F) {
	f.Add("4.3.2.1.in-addr.arpa.")
	f.Add("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.")
	f.Fuzz(func(t *testing.T, name string) {
		a, ok := ParseReverse(name)
		if !ok {
			return
		}
		back, err := dns.ReverseAddr(a.String())
		if err != nil || back != name {
			t.Fatalf("ParseReverse(%q) = %s, whose reverse name is %q (%v)", name, a, back, err)
		}
	})
}
