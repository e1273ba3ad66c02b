package acl

import (
	"errors"
	"testing"
)

// FuzzParse feeds rules from the network's point of view: Parse must not
// panic, must return a *ParseError or a policy, and a policy must survive
// an authorizer.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		sampleHCL,
		sampleJSON,
		"",
		"{}",
		`service "web" { policy = "writ" }`,
		`service "web" { policy = "read"`,
		`{"service": {"web": {"policy": "read"}}`,
		`service = [{ web = { policy = "read" } }]`,
		`{"service": [{"a": {"policy": "read"}}, 1]}`,
		`key_prefix "${x}" { policy = "list" }`,
		"key \"a\\x00\\u2028\" { policy = <<EOF\nwrite\nEOF\n}",
		`operator = "read" operator = "deny"`,
		`{"service": {"web": {"policy": null, "intentions": true}}}`,
		`service "a" "b" "c" { policy = "read" }`,
		`{"key": {"\ud800": {"policy": "read"}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rules string) {
		p, err := Parse(rules)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse: got error of type %T, want *ParseError", err)
			}
			return
		}
		for _, r := range p.rules {
			if r.Access == AccessNone || r.Access > AccessDeny {
				t.Fatalf("rule %v has access %v", r, r.Access)
			}
			if r.Access == AccessList && r.Resource != ResourceKey {
				t.Fatalf("rule %v: list on %v", r, r.Resource)
			}
		}
		for _, defaultAllow := range []bool{false, true} {
			a := New(defaultAllow, p, p)
			for _, r := range p.rules {
				for _, m := range allMethods {
					ask(a, m, r.Segment)
				}
				a.ACLRead()
				a.ACLWrite()
			}
		}
	})
}
