package acl

import "strings"

// Resource is what a rule is about.
type Resource uint8

// The resources of the rule language. The first six and event take a name
// or prefix (a segment); operator, acl and keyring are single top-level
// values. Event comes last so that the others keep their numbers.
const (
	ResourceService Resource = iota + 1
	ResourceNode
	ResourceAgent
	ResourceQuery
	ResourceKey
	ResourceSession
	ResourceOperator
	ResourceACL
	ResourceKeyring
	ResourceEvent

	numResources = iota + 1
)

var resourceNames = [numResources]string{
	ResourceService:  "service",
	ResourceNode:     "node",
	ResourceAgent:    "agent",
	ResourceQuery:    "query",
	ResourceKey:      "key",
	ResourceSession:  "session",
	ResourceOperator: "operator",
	ResourceACL:      "acl",
	ResourceKeyring:  "keyring",
	ResourceEvent:    "event",
}

// String returns the resource's keyword in rules ("service").
func (r Resource) String() string {
	if int(r) < len(resourceNames) && resourceNames[r] != "" {
		return resourceNames[r]
	}
	return "unknown"
}

// topLevel reports whether r is written as `operator = "read"` rather than
// as blocks with a segment.
func (r Resource) topLevel() bool { return r >= ResourceOperator && r <= ResourceKeyring }

// Access is the level a rule grants. Its order is the precedence of merged
// rules: a higher level replaces a lower one for the same exact name or
// prefix, so deny beats write, write beats list, list beats read.
type Access uint8

// The access levels. AccessNone is "no rule" and never appears in a parsed
// Policy. list is for keys only: it allows listing the keys under a prefix
// and reading them.
const (
	AccessNone Access = iota
	AccessRead
	AccessList
	AccessWrite
	AccessDeny
)

var accessNames = [...]string{AccessNone: "none", AccessRead: "read", AccessList: "list", AccessWrite: "write", AccessDeny: "deny"}

// String returns the level as written in rules ("write").
func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return "unknown"
}

// grants reports whether a rule of level a allows the access want (one of
// read, list, write). AccessNone grants nothing; callers apply the default.
func (a Access) grants(want Access) bool {
	switch a {
	case AccessWrite:
		return true
	case AccessList:
		return want == AccessRead || want == AccessList
	case AccessRead:
		return want == AccessRead
	}
	return false
}

// Rule is one rule of a Policy: `service_prefix "web-" { policy = "read" }`
// is {ResourceService, "web-", true, AccessRead}. Top-level resources have
// an empty Segment and Prefix false.
type Rule struct {
	Resource Resource
	Segment  string
	Prefix   bool
	Access   Access
}

// compareRules orders rules canonically: by resource, exact rules before
// prefix rules, then by segment.
func compareRules(a, b Rule) int {
	switch {
	case a.Resource != b.Resource:
		return int(a.Resource) - int(b.Resource)
	case a.Prefix != b.Prefix:
		if a.Prefix {
			return 1
		}
		return -1
	}
	return strings.Compare(a.Segment, b.Segment)
}

// Policy is a parsed, validated set of rules. Rules for the same resource,
// segment and kind (exact or prefix) are merged into one, by the precedence
// of Access. A Policy is immutable.
type Policy struct {
	rules []Rule // merged, sorted by compareRules
}
