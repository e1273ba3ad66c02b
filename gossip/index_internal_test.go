package gossip

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// indexNode is a LAN client of dc1 named name, with node ID id, at ip.
func indexNode(tb testing.TB, name, id string, ip netip.Addr) *memberlist.Node {
	tb.Helper()
	md, err := encodeMeta(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1, NodeID: id})
	if err != nil {
		tb.Fatal(err)
	}
	return &memberlist.Node{Name: name, Addr: net.IP(ip.AsSlice()), Port: 8301, Meta: md}
}

// backdate makes the member named name look failed or left for twice
// RetainDead, as it would be long after it went away.
func backdate(p *Pool, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[name]
	m.Since = time.Now().Add(-2 * p.cfg.RetainDead)
	p.members[name] = m
}

// memberNames lists ms as "name/status", in order.
func memberNames(ms []Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name+"/"+m.Status.String())
	}
	return out
}

func TestIndexFollowsMembers(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	ev := eventDelegate{p: p}
	ip1, ip2, ip9 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.9")
	ev.NotifyJoin(indexNode(t, "web-1", "AAAA-1", ip1))
	ev.NotifyJoin(indexNode(t, "Web-1", "bbbb-2", ip2)) // memberlist names are case sensitive
	ev.NotifyJoin(indexNode(t, "db", "aaaa-1", ip2))    // the ID of web-1: a conflict
	ev.NotifyJoin(indexNode(t, "noid", "", ip9))

	check := func(what string, got []Member, want ...string) {
		t.Helper()
		if g := memberNames(got); !slices.Equal(g, want) {
			t.Errorf("%s: got %q, want %q", what, g, want)
		}
	}
	check("MembersAt(10.0.0.1)", p.MembersAt(ip1), "web-1/alive")
	check("MembersAt(::ffff:10.0.0.2)", p.MembersAt(netip.AddrFrom16(ip2.As16())), "Web-1/alive", "db/alive")
	check("MembersAt(10.0.0.3)", p.MembersAt(netip.MustParseAddr("10.0.0.3")))
	check(`MembersByNode("WEB-1")`, p.MembersByNode("WEB-1"), "Web-1/alive", "web-1/alive")
	check(`MembersByNode("web-2")`, p.MembersByNode("web-2"))
	check(`MembersByID("aaaa-1")`, p.MembersByID("aaaa-1"), "db/alive", "web-1/alive")
	check(`MembersByID("")`, p.MembersByID(""))

	// An update moves web-1 to another address and node ID.
	ev.NotifyUpdate(indexNode(t, "web-1", "cccc-3", ip9))
	check("after the move, MembersAt(10.0.0.1)", p.MembersAt(ip1))
	check("after the move, MembersAt(10.0.0.9)", p.MembersAt(ip9), "noid/alive", "web-1/alive")
	check(`after the move, MembersByID("AAAA-1")`, p.MembersByID("AAAA-1"), "db/alive")
	check(`after the move, MembersByID("CCCC-3")`, p.MembersByID("CCCC-3"), "web-1/alive")

	// A failed member is found, failed, until RetainDead after it failed.
	ev.NotifyLeave(indexNode(t, "db", "aaaa-1", ip2))
	check(`db failed: MembersByID("aaaa-1")`, p.MembersByID("aaaa-1"), "db/failed")
	check("db failed: MembersAt(10.0.0.2)", p.MembersAt(ip2), "Web-1/alive", "db/failed")
	backdate(p, "db")
	check(`db failed long ago: MembersByNode("db")`, p.MembersByNode("db"))
	check(`db failed long ago: MembersByID("aaaa-1")`, p.MembersByID("aaaa-1"))
	check("db failed long ago: MembersAt(10.0.0.2)", p.MembersAt(ip2), "Web-1/alive")
	if slices.ContainsFunc(p.Members(), func(m Member) bool { return m.Name == "db" }) {
		t.Error("Members lists db, failed longer than RetainDead ago")
	}

	// Members forgets an expired member from the indexes too.
	ev.NotifyLeave(indexNode(t, "noid", "", ip9))
	backdate(p, "noid")
	p.Members()
	p.mu.Lock()
	held := fmt.Sprint(p.index.byAddr[ip9], p.index.byNode[foldKey("noid")], p.index.byID[foldKey("aaaa-1")])
	p.mu.Unlock()
	if want := "[web-1] [] []"; held != want {
		t.Errorf("index after noid and db expired: byAddr[10.0.0.9], byNode[noid], byID[aaaa-1] = %s, want %s", held, want)
	}
}

// TestIndexAgreesWithMembers drives a pool through random joins, moves,
// failures, returns and expiries, and checks after each that every lookup
// returns what a scan of Members with strings.EqualFold finds.
func TestIndexAgreesWithMembers(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	ev := eventDelegate{p: p}
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "A", "b", "c", "self"}
	ids := []string{"", "id-1", "ID-1", "id-2"}
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::1")}
	for step := range 2000 {
		name := names[rng.IntN(len(names))]
		n := indexNode(t, name, ids[rng.IntN(len(ids))], ips[rng.IntN(len(ips))])
		switch rng.IntN(4) {
		case 0:
			ev.NotifyJoin(n)
		case 1:
			ev.NotifyUpdate(n)
		case 2:
			ev.NotifyLeave(n)
		case 3:
			p.mu.Lock()
			m, ok := p.members[name]
			p.mu.Unlock()
			if ok && m.Status != StatusAlive {
				backdate(p, name)
			}
		}
		var got, want []string
		for _, ip := range ips {
			got = append(got, memberNames(p.MembersAt(ip))...)
		}
		for _, name := range names {
			got = append(got, memberNames(p.MembersByNode(strings.ToUpper(name)))...)
		}
		for _, id := range ids {
			got = append(got, memberNames(p.MembersByID(id))...)
		}
		all := p.Members()
		for _, ip := range ips {
			want = append(want, memberNames(filter(all, func(m Member) bool { return m.Addr == ip }))...)
		}
		for _, name := range names {
			want = append(want, memberNames(filter(all, func(m Member) bool { return strings.EqualFold(m.Node, name) }))...)
		}
		for _, id := range ids {
			want = append(want, memberNames(filter(all, func(m Member) bool { return id != "" && strings.EqualFold(m.ID, id) }))...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: lookups found %q, a scan of Members %q", step, got, want)
		}
	}
}

func filter(ms []Member, keep func(Member) bool) []Member {
	var out []Member
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// FuzzFoldKey checks that two strings share a foldKey exactly when
// strings.EqualFold holds between them, the comparison the node-owner
// check made before it had an index.
func FuzzFoldKey(f *testing.F) {
	for _, pair := range [][2]string{
		{"web-1", "WEB-1"},
		{"s", "ſ"},            // U+017F folds to s
		{"k", "\u212a"},       // the Kelvin sign folds to k
		{"σ", "ς"},            // both fold to Σ
		{"Straße", "STRAſSE"}, // mixed ASCII and not
		{"ß", "ss"},           // not simple folding
		{"i", "İ"},            // U+0130 folds to nothing else
		{"\xff", "\xfe"},      // EqualFold decodes both as U+FFFD
		{"\xff", "\uFFFD"},    // and this one too
		{"abc", "abcd"},       // lengths differ
		{"", ""},              //
		{"ǅ", "ǆ"},            // title case
		{"\u0345", "\u03b9"},  // combining ypogegrammeni folds to ι
	} {
		f.Add(pair[0], pair[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, other := range []string{b, strings.ToUpper(a), strings.ToLower(a), strings.ToTitle(a)} {
			if fold, same := strings.EqualFold(a, other), foldKey(a) == foldKey(other); fold != same {
				t.Errorf("EqualFold(%q, %q) = %v, but foldKey gives %q and %q", a, other, fold, foldKey(a), foldKey(other))
			}
		}
	})
}

// BenchmarkLookup compares finding members in a pool of 1,000 with a
// scan of Members, as the server did on every connection and write, and
// with the indexes.
func BenchmarkLookup(b *testing.B) {
	const size = 1000
	cfg := Config{NodeName: "self", Pool: LAN, Datacenter: "dc1", RetainDead: time.Minute}
	p := newPool(cfg, slog.New(slog.DiscardHandler))
	ev := eventDelegate{p: p}
	for i := range size {
		ip := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		ev.NotifyJoin(indexNode(b, fmt.Sprintf("node-%04d", i), fmt.Sprintf("id-%04d", i), ip))
	}
	ip := netip.AddrFrom4([4]byte{10, 0, 1, 244}) // node-0500
	b.Run("scan-Members", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, m := range p.Members() {
				if m.Addr == ip {
					n++
				}
			}
			if n != 1 {
				b.Fatalf("found %d members at %s, want 1", n, ip)
			}
		}
	})
	for _, bc := range []struct {
		name string
		find func() []Member
	}{
		{"MembersAt", func() []Member { return p.MembersAt(ip) }},
		{"MembersByNode", func() []Member { return p.MembersByNode("node-0500") }},
		{"MembersByID", func() []Member { return p.MembersByID("id-0500") }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := bc.find(); len(got) != 1 || got[0].Name != "node-0500" {
					b.Fatalf("found %v, want node-0500", memberNames(got))
				}
			}
		})
	}
}
