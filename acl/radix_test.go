package acl

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// bruteLookup is the definition lookup must meet: the exact rule for name,
// else the rule of the longest prefix of name, else AccessNone.
func bruteLookup(entries map[string]entry, name string) Access {
	if e, ok := entries[name]; ok && e.exact != AccessNone {
		return e.exact
	}
	best, bestLen := AccessNone, -1
	for k, e := range entries {
		if e.prefix != AccessNone && strings.HasPrefix(name, k) && len(k) > bestLen {
			best, bestLen = e.prefix, len(k)
		}
	}
	return best
}

// bruteWritePrefix is the definition writePrefix must meet.
func bruteWritePrefix(entries map[string]entry, prefix string) (Access, bool) {
	covering, coverLen := AccessNone, -1
	all := true
	for k, e := range entries {
		if e.prefix != AccessNone && strings.HasPrefix(prefix, k) && len(k) > coverLen {
			covering, coverLen = e.prefix, len(k)
		}
		if strings.HasPrefix(k, prefix) && !(writeOrNone(e.exact) && writeOrNone(e.prefix)) {
			all = false
		}
	}
	return covering, all
}

// TestTreeMatchesBruteForce compares the radix tree with the definitions
// over random rule sets on a small alphabet, where keys share prefixes.
func TestTreeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = "ab/"[rng.IntN(3)]
		}
		return string(b)
	}
	for round := range 500 {
		entries := map[string]entry{}
		var rules []Rule
		for range rng.IntN(12) {
			r := Rule{Resource: ResourceKey, Segment: word(), Prefix: rng.IntN(2) == 0, Access: Access(1 + rng.IntN(4))}
			rules = append(rules, r)
			e := entries[r.Segment]
			e.key = r.Segment
			if r.Prefix {
				e.prefix = max(e.prefix, r.Access)
			} else {
				e.exact = max(e.exact, r.Access)
			}
			entries[r.Segment] = e
		}
		a := New(false, &Policy{rules: rules})
		tr := &a.trees[ResourceKey]
		for range 40 {
			name := word()
			if got, want := tr.lookup(name), bruteLookup(entries, name); got != want {
				t.Fatalf("round %d, rules %v: lookup(%q): got %v, want %v", round, rules, name, got, want)
			}
			gotC, gotAll := tr.writePrefix(name)
			wantC, wantAll := bruteWritePrefix(entries, name)
			if gotC != wantC || gotAll != wantAll {
				t.Fatalf("round %d, rules %v: writePrefix(%q): got %v, %v, want %v, %v", round, rules, name, gotC, gotAll, wantC, wantAll)
			}
		}
	}
}
