package acl

import "strings"

// tree is an immutable radix tree of the rules of one resource, keyed by
// segment; a node holds the exact rule and the prefix rule for its key.
// One walk down a name finds both its exact rule and its longest prefix
// rule, in O(len(name)) and without allocating.
type tree struct {
	root *node
}

type node struct {
	label  string // the bytes of the key between the parent and this node
	exact  Access // rule for exactly this key, AccessNone if none
	prefix Access // rule for this key as a prefix, AccessNone if none
	// allWrite: every rule at this node and below grants write (used by
	// KeyWritePrefix).
	allWrite bool
	edges    []byte // first byte of each child's label, sorted
	children []*node
}

// entry is one key's rules, the input of buildTree.
type entry struct {
	key           string
	exact, prefix Access
}

// buildTree returns the tree of entries, which must be sorted by key with
// no key twice.
func buildTree(entries []entry) tree {
	if len(entries) == 0 {
		return tree{}
	}
	return tree{root: buildNode(entries, 0)}
}

// buildNode makes the node for entries, whose keys share their first depth
// bytes (the parent's key). The node's key is the longest prefix common to
// all of them, which for sorted keys is that of the first and the last.
func buildNode(entries []entry, depth int) *node {
	first, last := entries[0].key, entries[len(entries)-1].key
	end := depth
	for end < len(first) && end < len(last) && first[end] == last[end] {
		end++
	}
	n := &node{label: first[depth:end]}
	i := 0
	if len(first) == end { // the node's own key sorts first
		n.exact, n.prefix = entries[0].exact, entries[0].prefix
		i = 1
	}
	n.allWrite = writeOrNone(n.exact) && writeOrNone(n.prefix)
	for i < len(entries) {
		b := entries[i].key[end]
		j := i + 1
		for j < len(entries) && entries[j].key[end] == b {
			j++
		}
		child := buildNode(entries[i:j], end)
		n.edges = append(n.edges, b)
		n.children = append(n.children, child)
		n.allWrite = n.allWrite && child.allWrite
		i = j
	}
	return n
}

func writeOrNone(a Access) bool { return a == AccessNone || a == AccessWrite }

// child returns the child whose label starts with b, or nil.
func (n *node) child(b byte) *node {
	lo, hi := 0, len(n.edges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case n.edges[m] < b:
			lo = m + 1
		case n.edges[m] > b:
			hi = m
		default:
			return n.children[m]
		}
	}
	return nil
}

// lookup returns the rule that governs name: its exact rule if there is
// one, else its longest prefix rule, else AccessNone.
func (t *tree) lookup(name string) Access {
	best := AccessNone
	for n := t.root; n != nil; {
		if !strings.HasPrefix(name, n.label) {
			break
		}
		name = name[len(n.label):]
		if n.prefix != AccessNone {
			best = n.prefix
		}
		if name == "" {
			if n.exact != AccessNone {
				return n.exact
			}
			break
		}
		n = n.child(name[0])
	}
	return best
}

// writePrefix returns the longest prefix rule that covers prefix itself
// (AccessNone if none) and whether every rule for a key that starts with
// prefix, exact or prefix, grants write.
func (t *tree) writePrefix(prefix string) (covering Access, allWrite bool) {
	rest := prefix
	for n := t.root; n != nil; {
		if len(rest) <= len(n.label) {
			// prefix ends within or at the end of n's label: n and all
			// below it are under prefix.
			if !strings.HasPrefix(n.label, rest) {
				return covering, true
			}
			if len(rest) == len(n.label) && n.prefix != AccessNone {
				covering = n.prefix
			}
			return covering, n.allWrite
		}
		if !strings.HasPrefix(rest, n.label) {
			return covering, true
		}
		rest = rest[len(n.label):]
		if n.prefix != AccessNone {
			covering = n.prefix
		}
		n = n.child(rest[0])
	}
	return covering, true
}
