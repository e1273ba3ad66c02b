package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const sampleHCL = `
# a comment
service "web" { policy = "write" }
service_prefix "" { policy = "read" }
service "db" {
  policy     = "read"
  intentions = "deny"
}
node "n1" { policy = "write" }
node_prefix "" { policy = "read" }
agent "n1" { policy = "write" }
agent_prefix "n" { policy = "read" }
query "q" { policy = "deny" }
query_prefix "" { policy = "read" }
key "app/config" { policy = "deny" }
key_prefix "app/" { policy = "list" }
session "n1" { policy = "write" }
session_prefix "" { policy = "read" }
operator = "read"
acl = "write"
keyring = "deny"
`

const sampleJSON = `{
  "service": {"web": {"policy": "write"}, "db": {"policy": "read", "intentions": "deny"}},
  "service_prefix": {"": {"policy": "read"}},
  "node": {"n1": {"policy": "write"}},
  "node_prefix": {"": {"policy": "read"}},
  "agent": {"n1": {"policy": "write"}},
  "agent_prefix": {"n": {"policy": "read"}},
  "query": {"q": {"policy": "deny"}},
  "query_prefix": {"": {"policy": "read"}},
  "key": {"app/config": {"policy": "deny"}},
  "key_prefix": {"app/": {"policy": "list"}},
  "session": {"n1": {"policy": "write"}},
  "session_prefix": {"": {"policy": "read"}},
  "operator": "read",
  "acl": "write",
  "keyring": "deny"
}`

var sampleRules = []Rule{
	{ResourceService, "db", false, AccessRead},
	{ResourceService, "web", false, AccessWrite},
	{ResourceService, "", true, AccessRead},
	{ResourceNode, "n1", false, AccessWrite},
	{ResourceNode, "", true, AccessRead},
	{ResourceAgent, "n1", false, AccessWrite},
	{ResourceAgent, "n", true, AccessRead},
	{ResourceQuery, "q", false, AccessDeny},
	{ResourceQuery, "", true, AccessRead},
	{ResourceKey, "app/config", false, AccessDeny},
	{ResourceKey, "app/", true, AccessList},
	{ResourceSession, "n1", false, AccessWrite},
	{ResourceSession, "", true, AccessRead},
	{ResourceOperator, "", false, AccessRead},
	{ResourceACL, "", false, AccessWrite},
	{ResourceKeyring, "", false, AccessDeny},
}

func TestParseForms(t *testing.T) {
	tests := []struct {
		name, rules string
		want        []Rule
	}{
		{"hcl", sampleHCL, sampleRules},
		{"json", sampleJSON, sampleRules},
		{"json with leading space", "\n  " + sampleJSON, sampleRules},
		{"empty", "", []Rule{}},
		{"empty json", "{}", []Rule{}},
		{"comments only", "# nothing\n// here\n", []Rule{}},
		{"hcl object form", `service = { web = { policy = "read" } }`,
			[]Rule{{ResourceService, "web", false, AccessRead}}},
		{"hcl unquoted labels", `service web { policy = "read" }`,
			[]Rule{{ResourceService, "web", false, AccessRead}}},
		{"json list of blocks", `{"service": [{"a": {"policy": "read"}}, {"b": {"policy": "write"}}]}`,
			[]Rule{{ResourceService, "a", false, AccessRead}, {ResourceService, "b", false, AccessWrite}}},
		{"json escapes", `{"key": {"a\/b\u00e9\"": {"policy": "read"}}}`,
			[]Rule{{ResourceKey, "a/bé\"", false, AccessRead}}},
		{"hcl escapes", `key "a\"b\\c" { policy = "read" }`,
			[]Rule{{ResourceKey, `a"b\c`, false, AccessRead}}},
		{"list on key", `key "k" { policy = "list" }`,
			[]Rule{{ResourceKey, "k", false, AccessList}}},
		{"intentions only checked", `service "web" { intentions = "write"
			policy = "deny" }`,
			[]Rule{{ResourceService, "web", false, AccessDeny}}},
		{"duplicates merge by precedence", `
			service "web" { policy = "deny" }
			service "web" { policy = "read" }
			service_prefix "web" { policy = "read" }
			service_prefix "web" { policy = "write" }
			key "k" { policy = "list" }
			key "k" { policy = "read" }
			operator = "write"
			operator = "read"`,
			[]Rule{
				{ResourceService, "web", false, AccessDeny},
				{ResourceService, "web", true, AccessWrite},
				{ResourceKey, "k", false, AccessList},
				{ResourceOperator, "", false, AccessWrite},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.rules)
			if err != nil {
				t.Fatalf("Parse: got error %v, want none", err)
			}
			if got := p.rules; !slices.Equal(got, tt.want) {
				t.Errorf("rules:\ngot  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, rules string
		want        string
	}{
		{"bad policy", `service "web" { policy = "writ" }`,
			`acl: service "web": policy "writ" is not one of read, write, deny`},
		{"bad key policy", `key_prefix "a/" { policy = "all" }`,
			`acl: key_prefix "a/": policy "all" is not one of read, list, write, deny`},
		{"bad policy json", `{"service_prefix": {"": {"policy": "writ"}}}`,
			`acl: service_prefix "": policy "writ" is not one of read, write, deny`},
		{"upper case policy", `node "n" { policy = "READ" }`,
			`acl: node "n": policy "READ" is not one of read, write, deny`},
		{"empty policy", `node "n" { policy = "" }`,
			`acl: node "n": policy "" is not one of read, write, deny`},
		{"list on service", `service "web" { policy = "list" }`,
			`acl: service "web": policy "list" is only valid for key and key_prefix`},
		{"list on operator", `operator = "list"`,
			`acl: operator: policy "list" is only valid for key and key_prefix`},
		{"bad top-level value", `acl = "manage"`,
			`acl: acl: policy "manage" is not one of read, write, deny`},
		{"unknown resource", `servce "web" { policy = "read" }`,
			`acl: servce: unknown resource`},
		{"unknown resource json", `{"intention": {"": {"policy": "read"}}}`,
			`acl: intention: unknown resource`},
		{"unknown key", `service "web" { polcy = "read" }`,
			`acl: service "web": unknown key "polcy"`},
		{"intentions outside service", `node "n" { policy = "read"
			intentions = "read" }`,
			`acl: node "n": unknown key "intentions"`},
		{"bad intentions", `service "web" { policy = "read"
			intentions = "list" }`,
			`acl: service "web": intentions: policy "list" is only valid for key and key_prefix`},
		{"missing policy", `service "web" {}`,
			`acl: service "web": policy is missing`},
		{"policy twice", `service "web" { policy = "read"
			policy = "write" }`,
			`acl: service "web": policy given more than once`},
		{"policy not a string", `service "web" { policy = 1 }`,
			`acl: service "web": policy must be a string: "read", "write" or "deny"`},
		{"policy null json", `{"service": {"web": {"policy": null}}}`,
			`acl: service "web": policy must be a string: "read", "write" or "deny"`},
		{"policy a block", `service "web" { policy { x = "y" } }`,
			`acl: service "web": policy must be a string: "read", "write" or "deny"`},
		{"block not an object", `service = "read"`,
			`acl: service: must be a block: write service "name" { policy = "read" }`},
		{"body not an object", `{"service": {"web": "read"}}`,
			`acl: service "web": must be a block: { policy = "read" }`},
		{"top-level as block", `operator "x" { policy = "read" }`,
			`acl: operator: takes a policy string, not a block: write operator = "read"`},
		{"top-level not a string", `keyring = 1`,
			`acl: keyring: policy must be a string: "read", "write" or "deny"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.rules)
			if err == nil {
				t.Fatalf("Parse: got policy %v, want error %q", p.rules, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\ngot  %s\nwant %s", got, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("got error of type %T, want *ParseError", err)
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	for _, rules := range []string{
		`service "web" { policy = "read"`,
		`service "web" { policy = }`,
		`{"service": {"web": {"policy": "read"}}`,
		`{"service": }`,
		`{"service": {"web": {"policy": "read"}}} trailing`,
		`service "web" { policy = "read\q" }`,
	} {
		p, err := Parse(rules)
		if err == nil {
			t.Errorf("Parse(%q): got policy %v, want error", rules, p.rules)
			continue
		}
		if got := err.Error(); !strings.HasPrefix(got, "acl: parse rules: ") {
			t.Errorf("Parse(%q): got error %q, want prefix %q", rules, got, "acl: parse rules: ")
		}
	}
}

func TestParseLimits(t *testing.T) {
	big := strings.Repeat(" ", MaxRulesSize+1)
	_, err := Parse(big)
	if want := "acl: rules are 65537 bytes, more than the limit of 65536"; err == nil || err.Error() != want {
		t.Errorf("oversized: got error %v, want %q", err, want)
	}

	var b strings.Builder
	for range MaxRules + 1 {
		b.WriteString("operator=\"read\"\n")
	}
	_, err = Parse(b.String())
	if want := "acl: more than 1000 rules"; err == nil || err.Error() != want {
		t.Errorf("too many rules: got error %v, want %q", err, want)
	}

	b.Reset()
	for range MaxRules {
		b.WriteString("operator=\"read\"\n")
	}
	if _, err := Parse(b.String()); err != nil {
		t.Errorf("exactly %d rules: got error %v, want none", MaxRules, err)
	}
}

// TestParseAdversarial: HCL v1 spends time quadratic in nesting depth on
// a broken text, so depth is bounded before it parses; errors echoed to
// clients stay short.
func TestParseAdversarial(t *testing.T) {
	tests := []struct {
		name, rules, want string
	}{
		{"deep lists", "a = " + strings.Repeat("[", 60000), "acl: parse rules: blocks or lists nested deeper than 32 levels"},
		{"deep blocks", strings.Repeat("a {", 20000), "acl: parse rules: blocks or lists nested deeper than 32 levels"},
		{"deep after stray closers", strings.Repeat("]", 100) + strings.Repeat("[", 100), "acl: parse rules: blocks or lists nested deeper than 32 levels"},
		{"deep json", strings.Repeat(`{"a":`, 12000), ""},
		{"brackets in strings are not nesting", `key "` + strings.Repeat("[", 100) + `" { policy = "read" }`, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse(tt.rules)
			if d := time.Since(start); d > time.Second {
				t.Errorf("Parse took %v, want under 1s", d)
			}
			switch {
			case tt.want == "none":
				if err != nil {
					t.Errorf("got error %v, want none", err)
				}
			case err == nil:
				t.Errorf("got no error, want one")
			case tt.want != "" && err.Error() != tt.want:
				t.Errorf("got error %q, want %q", err, tt.want)
			case len(err.Error()) > maxErrorLen+50:
				t.Errorf("got an error of %d bytes, want at most %d", len(err.Error()), maxErrorLen+50)
			}
		})
	}
	_, err := Parse("a = " + strings.Repeat("[1,", 30))
	if err == nil || len(err.Error()) > maxErrorLen+50 {
		t.Errorf("nested list error: got %d bytes (%v), want at most %d", len(fmt.Sprint(err)), err, maxErrorLen+50)
	}
}

func TestIdentityRulesParse(t *testing.T) {
	for _, rules := range []string{ServiceIdentityRules("web-1"), NodeIdentityRules("n_1")} {
		if _, err := Parse(rules); err != nil {
			t.Errorf("Parse(%q): %v", rules, err)
		}
	}
	a := New(false, mustParse(t, ServiceIdentityRules("web")))
	if !a.ServiceWrite("web") || !a.ServiceWrite("web-sidecar-proxy") || a.ServiceWrite("db") || !a.ServiceRead("db") || !a.NodeRead("n1") || a.NodeWrite("n1") {
		t.Error("service identity web: got the wrong grants")
	}
	n := New(false, mustParse(t, NodeIdentityRules("n1")))
	if !n.NodeWrite("n1") || n.NodeWrite("n2") || !n.ServiceRead("web") || n.ServiceWrite("web") {
		t.Error("node identity n1: got the wrong grants")
	}
}
