package zones

import (
	"strings"
	"testing"
)

// canonical spells the name a parsed query stands for, with its datacenter
// always written out.
func canonical(z *Zone, q Query) string {
	switch q.Kind {
	case KindService:
		name := q.Name + ".service." + q.Datacenter + "." + z.Domain()
		if q.Tag != "" {
			name = q.Tag + "." + name
		}
		return name
	case KindNode:
		return q.Name + ".node." + q.Datacenter + "." + z.Domain()
	case KindAddr:
		return q.Name + ".addr." + q.Datacenter + "." + z.Domain()
	case KindApex:
		return z.Domain()
	case KindNameserver:
		return "ns." + z.Domain()
	case KindEmptyNonTerminal:
		return keywordService + "." + q.Datacenter + "." + z.Domain() // not <dc>.<domain>: dc may be "ns"
	}
	return ""
}

// asciiUpper uppercases ASCII letters only (strings.ToUpper also maps
// non-ASCII runes, not all of which lowercase back to themselves).
func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"web.service.cluster.", "v1.web.service.dc2.cluster", "node1.node.cluster.",
		"c0a80001.addr.dc1.cluster.", "20010db8000000000000000000000001.addr.dc1.cluster.",
		"cluster.", "ns.cluster.", "example.com.", "a..b.cluster.", `a\.b.cluster.`,
		"a.b.c.d.e.f.cluster.", "", ".", "..", "service.node.addr.cluster.",
		"_web._tcp.service.cluster.", "_web._v1.service.dc2.cluster", "_web.service.cluster.",
		"web._v1.service.cluster.", "__a._b.service.cluster.", "_._.service.cluster.",
		"service.cluster.", "node.dc2.cluster.", "addr.dc1.cluster.", "dc2.cluster.", "_dc2.cluster.",
	} {
		f.Add(s)
	}
	z := testZone(f, nil)
	f.Fuzz(func(t *testing.T, qname string) {
		q := z.Parse(qname)
		if again := z.Parse(q.Qname); again != q {
			t.Fatalf("Parse(%q) = %+v, but Parse of its Qname = %+v", qname, q, again)
		}
		if upper := z.Parse(asciiUpper(qname)); upper != q {
			t.Fatalf("Parse(%q) = %+v, but Parse of it uppercased = %+v", qname, q, upper)
		}
		name := canonical(z, q)
		if name == "" {
			return
		}
		c := z.Parse(name)
		c.Qname = q.Qname
		if c != q {
			t.Fatalf("Parse(%q) = %+v, but Parse of its canonical name %q = %+v", qname, q, name, c)
		}
		named := q.Kind == KindService || q.Kind == KindNode || q.Kind == KindAddr
		if q.Datacenter == "" || (named && !validLabel(q.Name)) || (q.Tag != "" && !validLabel(q.Tag)) {
			t.Fatalf("Parse(%q) = %+v: a valid kind without its name or datacenter", qname, q)
		}
	})
}
