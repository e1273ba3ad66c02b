package zones

import (
	"os"
	"strings"
	"testing"
)

// dnsReference is the reference of every DNS name form.
const dnsReference = "../docs/reference/dns.md"

// documentedForms is, for each kind of name Parse knows, an example of it
// and the form docs/reference/dns.md gives it in its names table.
var documentedForms = map[Kind]struct{ example, form string }{
	KindOutside:          {"example.com.", "names outside `cluster.`"},
	KindApex:             {"cluster.", "| `cluster` |"},
	KindNameserver:       {"ns.cluster.", "`ns.cluster`"},
	KindService:          {"v1.web.service.dc1.cluster.", "`<service>.service[.<dc>].cluster`"},
	KindNode:             {"n1.node.cluster.", "`<node>.node[.<dc>].cluster`"},
	KindAddr:             {"7f000001.addr.dc1.cluster.", "`<hex-ip>.addr.<dc>.cluster`"},
	KindEmptyNonTerminal: {"service.dc1.cluster.", "`service.cluster`, `dc1.cluster`"},
	KindQuery:            {"web-near.query.cluster.", "`<name or id>.query[.<dc>].cluster`"},
}

// TestDNSReferenceNamesEveryKind fails when a kind of name Parse knows has
// no row in docs/reference/dns.md: a new kind needs its row there and its
// entry in documentedForms.
func TestDNSReferenceNamesEveryKind(t *testing.T) {
	data, err := os.ReadFile(dnsReference)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Datacenter = "dc1"
	z, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for k := KindInvalid + 1; int(k) < len(kindNames); k++ {
		d, ok := documentedForms[k]
		if !ok {
			t.Errorf("kind %s: no entry in documentedForms; add one, and its row in docs/reference/dns.md", k)
			continue
		}
		if got := z.Parse(d.example).Kind; got != k {
			t.Errorf("Parse(%q): got kind %s, want %s (documentedForms' example)", d.example, got, k)
		}
		if !strings.Contains(string(data), d.form) {
			t.Errorf("kind %s: docs/reference/dns.md does not name %s; add its row to the names table", k, d.form)
		}
	}
}
