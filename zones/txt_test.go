package zones

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

func TestNodeAnswerTXT(t *testing.T) {
	on := recordsZone(t)
	onlyTXT := testZone(t, func(c *Config) { c.NodeTTL = 20 * time.Second; c.SOA.MinTTL = 5; c.AdditionalNodeMetaTXT = false })
	off := testZone(t, func(c *Config) { c.NodeTTL = 20 * time.Second; c.SOA.MinTTL = 5; c.NodeMetaTXT = false })
	soa := []string{on.SOA().String()}
	meta := map[string]string{"rack": "r1", "az": "eu-1a", "env": ""}
	v4 := &catalog.Node{Node: "node1", Address: "10.0.0.1", Meta: meta}
	v6 := &catalog.Node{Node: "node1", Address: "2001:db8::1", Meta: meta}
	bare := &catalog.Node{Node: "node1", Address: "10.0.0.1"}
	const owner = "node1.node.cluster.\t20\tIN\t"
	txt := []string{owner + `TXT	"az=eu-1a"`, owner + `TXT	"env="`, owner + `TXT	"rack=r1"`}
	a := []string{owner + "A\t10.0.0.1"}
	tests := []struct {
		name              string
		z                 *Zone
		qtype             uint16
		node              *catalog.Node
		res               Result
		answer, ns, extra []string
	}{
		{"TXT sorted by key", on, dns.TypeTXT, v4, Success, txt, nil, nil},
		{"A with TXT in extra", on, dns.TypeA, v4, Success, a, nil, txt},
		{"AAAA with TXT in extra", on, dns.TypeAAAA, v6, Success, []string{owner + "AAAA\t2001:db8::1"}, nil, txt},
		{"ANY stays minimal", on, dns.TypeANY, v4, Success, a, nil, nil},
		{"AAAA of IPv4 node has no extra", on, dns.TypeAAAA, v4, NoData, nil, soa, nil},
		{"TXT without meta", on, dns.TypeTXT, bare, NoData, nil, soa, nil},
		{"A without meta", on, dns.TypeA, bare, Success, a, nil, nil},
		{"TXT without additional", onlyTXT, dns.TypeTXT, v4, Success, txt, nil, nil},
		{"A without additional", onlyTXT, dns.TypeA, v4, Success, a, nil, nil},
		{"TXT disabled", off, dns.TypeTXT, v4, NoData, nil, soa, nil},
		{"A with TXT disabled", off, dns.TypeA, v4, Success, a, nil, nil},
		{"TXT of no node", on, dns.TypeTXT, nil, NameError, nil, soa, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.z.NodeAnswer(tt.z.Parse("node1.node.cluster."), tt.qtype, tt.node)
			checkAnswer(t, got, tt.res, tt.answer, tt.ns, tt.extra)
		})
	}
}

// TestNodeMetaTXTWire packs TXT records of awkward metadata and checks
// that the client reads back exactly key=value.
func TestNodeMetaTXTWire(t *testing.T) {
	long := strings.Repeat("x", catalog.MaxMetaValueLen)
	meta := map[string]string{
		"plain": "v",
		"bs":    `a\b`,
		"quote": `say "hi"`,
		"ctl":   "a\x00b\n\xff",
		"long":  long,
		"semi":  "a;b (c)",
	}
	rrset := nodeMetaTXT("node1.node.cluster.", 0, meta)
	m := new(dns.Msg)
	m.SetQuestion("node1.node.cluster.", dns.TypeTXT)
	m.Answer = rrset
	wire, err := m.Pack()
	if err != nil {
		t.Fatalf("pack: %v", err)
	}
	var back dns.Msg
	if err := back.Unpack(wire); err != nil {
		t.Fatalf("unpack: %v", err)
	}
	want := []string{"bs=" + meta["bs"], "ctl=" + meta["ctl"], "long=" + long, "plain=v", "quote=" + meta["quote"], "semi=" + meta["semi"]}
	if len(back.Answer) != len(want) {
		t.Fatalf("records: got %d, want %d", len(back.Answer), len(want))
	}
	for i, rr := range back.Answer {
		var got strings.Builder
		for _, s := range rr.(*dns.TXT).Txt {
			got.WriteString(unescapeTXT(t, s))
		}
		if got.String() != want[i] {
			t.Errorf("record %d: got %q, want %q", i, got.String(), want[i])
		}
	}
	if n := len(rrset[2].(*dns.TXT).Txt); n != 3 { // "long=" + 512 bytes: 255 + 255 + 7
		t.Errorf("strings of the long pair: got %d, want 3", n)
	}
}

// unescapeTXT undoes miekg/dns's escaping of a character-string.
func unescapeTXT(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i+2 < len(s) && s[i] >= '0' && s[i] <= '9' {
			b.WriteByte((s[i]-'0')*100 + (s[i+1]-'0')*10 + s[i+2] - '0')
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestEscapeTXT(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"a=b", "a=b"},
		{`a\b`, `a\\b`},
		{"\x00\x7f\xff", `\000\127\255`},
		{`"q"`, `"q"`},
	}
	for _, tt := range tests {
		if got := escapeTXT(tt.in); got != tt.want {
			t.Errorf("escapeTXT(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEmptyNonTerminalAnswer(t *testing.T) {
	z := recordsZone(t)
	soa := []string{z.SOA().String()}
	tests := []struct {
		qname string
		res   Result
	}{
		{"service.cluster.", NoData},
		{"node.cluster.", NoData},
		{"addr.cluster.", NoData},
		{"dc1.cluster.", NoData},
		{"service.dc1.cluster.", NoData},
		{"node.dc1.cluster.", NoData},
		{"addr.dc1.cluster.", NoData},
		{"dc2.cluster.", NameError},
		{"service.dc2.cluster.", NameError},
	}
	for _, tt := range tests {
		q := z.Parse(tt.qname)
		if q.Kind != KindEmptyNonTerminal {
			t.Fatalf("Parse(%q).Kind: got %v, want %v", tt.qname, q.Kind, KindEmptyNonTerminal)
		}
		got := z.EmptyNonTerminalAnswer(q)
		t.Run(tt.qname, func(t *testing.T) { checkAnswer(t, got, tt.res, nil, soa, nil) })
	}
}
