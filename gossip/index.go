package gossip

import (
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file holds the pool's indexes: a server finds the members at a
// connection's address, or holding a node name or ID a registration
// gives, on every connection and write, so these lookups must not list
// and sort the whole pool as Members does.

// names is an index from a key to the names of the members holding it,
// sorted, so that lookups return members in the order Members does.
type names[K comparable] map[K][]string

func (n names[K]) add(k K, name string) {
	s := n[k]
	if i, found := slices.BinarySearch(s, name); !found {
		n[k] = slices.Insert(s, i, name)
	}
}

func (n names[K]) remove(k K, name string) {
	s := n[k]
	i, found := slices.BinarySearch(s, name)
	switch {
	case !found:
	case len(s) == 1:
		delete(n, k)
	default:
		n[k] = slices.Delete(s, i, i+1)
	}
}

// index finds members by address, node name and node ID. It holds names
// only; the members themselves are read from Pool.members, so an update
// that keeps the three keys (a status or metadata change) leaves it alone.
type index struct {
	byAddr names[netip.Addr]
	byNode names[string] // by foldKey(Node)
	byID   names[string] // by foldKey(ID); members without an ID are left out
}

func newIndex() index {
	return index{byAddr: names[netip.Addr]{}, byNode: names[string]{}, byID: names[string]{}}
}

func (x index) add(m Member) {
	x.byAddr.add(m.Addr, m.Name)
	x.byNode.add(foldKey(m.Node), m.Name)
	if m.ID != "" {
		x.byID.add(foldKey(m.ID), m.Name)
	}
}

func (x index) remove(m Member) {
	x.byAddr.remove(m.Addr, m.Name)
	x.byNode.remove(foldKey(m.Node), m.Name)
	if m.ID != "" {
		x.byID.remove(foldKey(m.ID), m.Name)
	}
}

// put records m in the member map and the indexes. Every change to a
// member's Addr, Node or ID goes through put; p.mu must be held.
func (p *Pool) put(m Member) {
	old, known := p.members[m.Name]
	p.members[m.Name] = m
	if known && old.Addr == m.Addr && old.Node == m.Node && old.ID == m.ID {
		return
	}
	if known {
		p.index.remove(old)
	}
	p.index.add(m)
}

// expired reports whether m failed or left more than RetainDead ago: the
// pool forgets it then. p.mu must be held.
func (p *Pool) expired(m Member, now time.Time) bool {
	return m.Status != StatusAlive && now.Sub(m.Since) > p.cfg.RetainDead
}

// forget drops the member named name from the pool, with its leave
// intent, keys and index entries. p.mu must be held.
func (p *Pool) forget(name string) {
	if m, ok := p.members[name]; ok {
		p.index.remove(m)
	}
	delete(p.members, name)
	delete(p.intents, name)
	delete(p.memberKeys, name)
}

// MembersAt returns the members whose gossip address is ip (compared
// unmapped), of any status, as Members would list them, sorted by name;
// nil when there is none. Unlike Members it does not scan the pool: the
// server admits every connection with it.
func (p *Pool) MembersAt(ip netip.Addr) []Member {
	ip = ip.Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookup(p.index.byAddr[ip])
}

// MembersByNode returns the members whose node name is node, compared as
// strings.EqualFold does, like MembersAt. memberlist names are case
// sensitive, so two members may differ in case only; on the WAN each
// datacenter may have a server of that node name.
func (p *Pool) MembersByNode(node string) []Member {
	k := foldKey(node)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookup(p.index.byNode[k])
}

// MembersByID returns the members whose node ID is id, compared as
// strings.EqualFold does, like MembersAt; nil for "". More than one is a
// conflict: the pool refuses to merge alive peers with one ID (delegate.go),
// but a failed member may share the ID of an alive one.
func (p *Pool) MembersByID(id string) []Member {
	if id == "" {
		return nil
	}
	k := foldKey(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookup(p.index.byID[k])
}

// lookup returns the members named in held (an index entry), forgetting
// those expired as Members does. p.mu must be held.
func (p *Pool) lookup(held []string) []Member {
	var out []Member
	var expired []string
	now := time.Now()
	for _, name := range held {
		m := p.members[name]
		if p.expired(m, now) {
			// Not forgotten here: that would change held under the loop.
			expired = append(expired, name)
			continue
		}
		out = append(out, m)
	}
	for _, name := range expired {
		p.forget(name)
	}
	return out
}

// foldKey returns a key that two strings share exactly when
// strings.EqualFold holds between them: each rune replaced by the smallest
// rune it folds to (unicode.SimpleFold), or for ASCII letters by the lower
// case, so that the usual lowercase names are their own key and cost no
// allocation. strings.ToLower would not do: EqualFold matches "ſ"
// (U+017F) with "s" and the Kelvin sign with "k", and the node-owner check
// built on this must refuse what a scan with EqualFold refused.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	// Ranging over a string yields utf8.RuneError for each invalid byte,
	// as EqualFold's decoding does.
	for _, r := range s {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		if 'A' <= low && low <= 'Z' {
			low += 'a' - 'A' // the orbit's ASCII lower case, as for ASCII strings
		}
		b.WriteRune(low)
	}
	return b.String()
}
