package acl

import "slices"

// Authorizer answers what the policies of one token allow. Build it with
// New (or take ManageAll, a management token's); the zero value
// denies everything. It is immutable and safe for concurrent use, and its
// checks do not allocate.
//
// For a name, an exact rule beats every prefix rule and the longest
// matching prefix beats shorter ones ("" matches every name). write grants
// list and read; list (keys only) grants read; deny grants nothing. A name
// no rule covers gets the default, except ACL management (ACLRead,
// ACLWrite), which only an explicit acl rule grants.
type Authorizer struct {
	defaultAllow bool
	trees        [numResources]tree   // segment resources
	top          [numResources]Access // operator, acl, keyring
}

// New merges policies (nil ones are skipped) into an Authorizer. Rules of
// different policies for the same exact name, the same prefix or the same
// top-level resource merge by precedence: deny over write over list over
// read. Merging happens per segment, before the exact-beats-prefix and
// longest-prefix rules apply. defaultAllow is the answer where no rule
// applies (Consul's acl.default_policy).
func New(defaultAllow bool, policies ...*Policy) *Authorizer {
	a := &Authorizer{defaultAllow: defaultAllow}
	var perRes [numResources]map[string]*entry
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, r := range p.rules {
			if r.Resource.topLevel() {
				a.top[r.Resource] = max(a.top[r.Resource], r.Access)
				continue
			}
			m := perRes[r.Resource]
			if m == nil {
				m = make(map[string]*entry)
				perRes[r.Resource] = m
			}
			e := m[r.Segment]
			if e == nil {
				e = &entry{key: r.Segment}
				m[r.Segment] = e
			}
			if r.Prefix {
				e.prefix = max(e.prefix, r.Access)
			} else {
				e.exact = max(e.exact, r.Access)
			}
		}
	}
	for res, m := range perRes {
		if len(m) == 0 {
			continue
		}
		entries := make([]entry, 0, len(m))
		for _, e := range m {
			entries = append(entries, *e)
		}
		slices.SortFunc(entries, func(x, y entry) int {
			switch {
			case x.key < y.key:
				return -1
			case x.key > y.key:
				return 1
			}
			return 0
		})
		a.trees[res] = buildTree(entries)
	}
	return a
}

// manageAll is immutable and shared.
var manageAll = newManageAll()

// ManageAll returns the authorizer of a management token: everything is
// allowed, ACL management included.
func ManageAll() *Authorizer { return manageAll }

func newManageAll() *Authorizer {
	p := &Policy{}
	for r := ResourceService; r < numResources; r++ {
		p.rules = append(p.rules, Rule{Resource: r, Prefix: !r.topLevel(), Access: AccessWrite})
	}
	return New(true, p)
}

// allowed answers a check on a segment resource.
func (a *Authorizer) allowed(res Resource, name string, want Access) bool {
	acc := a.trees[res].lookup(name)
	if acc == AccessNone {
		return a.defaultAllow
	}
	return acc.grants(want)
}

// allowedTop answers a check on operator, acl or keyring.
func (a *Authorizer) allowedTop(res Resource, want Access) bool {
	acc := a.top[res]
	if acc == AccessNone {
		return a.defaultAllow && res != ResourceACL
	}
	return acc.grants(want)
}

// ServiceRead reports whether the token may discover the service name
// (DNS, catalog and health reads).
func (a *Authorizer) ServiceRead(name string) bool {
	return a.allowed(ResourceService, name, AccessRead)
}

// ServiceWrite reports whether the token may register or deregister
// instances of the service name.
func (a *Authorizer) ServiceWrite(name string) bool {
	return a.allowed(ResourceService, name, AccessWrite)
}

// NodeRead reports whether the token may read the node name.
func (a *Authorizer) NodeRead(name string) bool { return a.allowed(ResourceNode, name, AccessRead) }

// NodeWrite reports whether the token may register or change the node name.
func (a *Authorizer) NodeWrite(name string) bool { return a.allowed(ResourceNode, name, AccessWrite) }

// AgentRead reports whether the token may read the agent of the node
// nodeName (its members, config, metrics).
func (a *Authorizer) AgentRead(nodeName string) bool {
	return a.allowed(ResourceAgent, nodeName, AccessRead)
}

// AgentWrite reports whether the token may change the agent of the node
// nodeName (join, leave, reload, maintenance).
func (a *Authorizer) AgentWrite(nodeName string) bool {
	return a.allowed(ResourceAgent, nodeName, AccessWrite)
}

// QueryRead reports whether the token may read or execute the prepared
// query name.
func (a *Authorizer) QueryRead(name string) bool { return a.allowed(ResourceQuery, name, AccessRead) }

// QueryWrite reports whether the token may create, change or delete the
// prepared query name.
func (a *Authorizer) QueryWrite(name string) bool { return a.allowed(ResourceQuery, name, AccessWrite) }

// KeyRead reports whether the token may read the key.
func (a *Authorizer) KeyRead(key string) bool { return a.allowed(ResourceKey, key, AccessRead) }

// KeyList reports whether the token may list the keys under key. A read
// rule does not grant it; list and write do.
func (a *Authorizer) KeyList(key string) bool { return a.allowed(ResourceKey, key, AccessList) }

// KeyWrite reports whether the token may write or delete the key.
func (a *Authorizer) KeyWrite(key string) bool { return a.allowed(ResourceKey, key, AccessWrite) }

// KeyWritePrefix reports whether the token may write every key under
// prefix (a recursive delete): no rule for a key under prefix, exact or
// prefix, may grant less than write, and the longest prefix rule covering
// prefix itself must grant write; without such a rule the default applies.
func (a *Authorizer) KeyWritePrefix(prefix string) bool {
	covering, allWrite := a.trees[ResourceKey].writePrefix(prefix)
	if !allWrite {
		return false
	}
	if covering != AccessNone {
		return covering == AccessWrite
	}
	return a.defaultAllow
}

// SessionRead reports whether the token may read sessions on the node.
func (a *Authorizer) SessionRead(node string) bool {
	return a.allowed(ResourceSession, node, AccessRead)
}

// SessionWrite reports whether the token may create or destroy sessions on
// the node.
func (a *Authorizer) SessionWrite(node string) bool {
	return a.allowed(ResourceSession, node, AccessWrite)
}

// EventRead reports whether the token may list user events of the name.
func (a *Authorizer) EventRead(name string) bool { return a.allowed(ResourceEvent, name, AccessRead) }

// EventWrite reports whether the token may fire user events of the name.
func (a *Authorizer) EventWrite(name string) bool { return a.allowed(ResourceEvent, name, AccessWrite) }

// OperatorRead reports whether the token may read cluster-level state
// (Raft peers, autopilot).
func (a *Authorizer) OperatorRead() bool { return a.allowedTop(ResourceOperator, AccessRead) }

// OperatorWrite reports whether the token may change cluster-level state.
func (a *Authorizer) OperatorWrite() bool { return a.allowedTop(ResourceOperator, AccessWrite) }

// ACLRead reports whether the token may read tokens and policies. Never by
// default.
func (a *Authorizer) ACLRead() bool { return a.allowedTop(ResourceACL, AccessRead) }

// ACLWrite reports whether the token may manage tokens and policies. Never
// by default.
func (a *Authorizer) ACLWrite() bool { return a.allowedTop(ResourceACL, AccessWrite) }

// KeyringRead reports whether the token may list the gossip keyring.
func (a *Authorizer) KeyringRead() bool { return a.allowedTop(ResourceKeyring, AccessRead) }

// KeyringWrite reports whether the token may change the gossip keyring.
func (a *Authorizer) KeyringWrite() bool { return a.allowedTop(ResourceKeyring, AccessWrite) }
