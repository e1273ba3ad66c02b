package acl

import (
	"testing"
)

func mustParse(t testing.TB, rules string) *Policy {
	t.Helper()
	p, err := Parse(rules)
	if err != nil {
		t.Fatalf("Parse(%q): %v", rules, err)
	}
	return p
}

// check is one question to an authorizer: method names the Authorizer
// method, arg its argument (ignored by the top-level ones).
type check struct {
	method, arg string
	want        bool
}

func ask(a *Authorizer, method, arg string) bool {
	switch method {
	case "ServiceRead":
		return a.ServiceRead(arg)
	case "ServiceWrite":
		return a.ServiceWrite(arg)
	case "NodeRead":
		return a.NodeRead(arg)
	case "NodeWrite":
		return a.NodeWrite(arg)
	case "AgentRead":
		return a.AgentRead(arg)
	case "AgentWrite":
		return a.AgentWrite(arg)
	case "QueryRead":
		return a.QueryRead(arg)
	case "QueryWrite":
		return a.QueryWrite(arg)
	case "KeyRead":
		return a.KeyRead(arg)
	case "KeyList":
		return a.KeyList(arg)
	case "KeyWrite":
		return a.KeyWrite(arg)
	case "KeyWritePrefix":
		return a.KeyWritePrefix(arg)
	case "SessionRead":
		return a.SessionRead(arg)
	case "SessionWrite":
		return a.SessionWrite(arg)
	case "OperatorRead":
		return a.OperatorRead()
	case "OperatorWrite":
		return a.OperatorWrite()
	case "ACLRead":
		return a.ACLRead()
	case "ACLWrite":
		return a.ACLWrite()
	case "KeyringRead":
		return a.KeyringRead()
	case "KeyringWrite":
		return a.KeyringWrite()
	}
	panic("unknown method " + method)
}

// allMethods lists every check, with an argument, for the built-ins.
var allMethods = []string{
	"ServiceRead", "ServiceWrite", "NodeRead", "NodeWrite", "AgentRead", "AgentWrite",
	"QueryRead", "QueryWrite", "KeyRead", "KeyList", "KeyWrite", "KeyWritePrefix",
	"SessionRead", "SessionWrite", "OperatorRead", "OperatorWrite", "KeyringRead", "KeyringWrite",
}

func TestAuthorizer(t *testing.T) {
	tests := []struct {
		name         string
		defaultAllow bool
		policies     []string
		checks       []check
	}{
		{"exact beats prefix", false, []string{`
			service_prefix "" { policy = "write" }
			service "db" { policy = "read" }
			service "secret" { policy = "deny" }`}, []check{
			{"ServiceWrite", "web", true},
			{"ServiceRead", "db", true},
			{"ServiceWrite", "db", false},
			{"ServiceRead", "secret", false},
			{"ServiceRead", "secret2", true},
			{"ServiceRead", "secre", true},
		}},
		{"longest prefix wins", false, []string{`
			service_prefix "" { policy = "read" }
			service_prefix "web" { policy = "write" }
			service_prefix "web-internal" { policy = "deny" }
			service_prefix "web-internal-pub" { policy = "read" }`}, []check{
			{"ServiceRead", "api", true},
			{"ServiceWrite", "api", false},
			{"ServiceWrite", "web", true},
			{"ServiceWrite", "web-front", true},
			{"ServiceRead", "web-internal", false},
			{"ServiceRead", "web-internal-x", false},
			{"ServiceRead", "web-internal-pub", true},
			{"ServiceWrite", "web-internal-pub", false},
			{"ServiceRead", "web-internal-pu", false},
			{"ServiceRead", "", true},
			{"ServiceWrite", "we", false},
		}},
		{"no empty prefix falls to default deny", false, []string{`
			service_prefix "web" { policy = "read" }
			service "db" { policy = "read" }`}, []check{
			{"ServiceRead", "web1", true},
			{"ServiceRead", "we", false},
			{"ServiceRead", "db", true},
			{"ServiceRead", "db1", false},
			{"ServiceRead", "d", false},
			{"ServiceRead", "", false},
		}},
		{"no rule falls to default allow", true, []string{`
			service_prefix "web" { policy = "read" }`}, []check{
			{"ServiceWrite", "web1", false},
			{"ServiceWrite", "api", true},
			{"NodeWrite", "n1", true},
			{"OperatorWrite", "", true},
			{"KeyringWrite", "", true},
			{"ACLRead", "", false},
			{"ACLWrite", "", false},
		}},
		{"deny precedence across policies", false, []string{
			`service "web" { policy = "write" }
			 service_prefix "api" { policy = "write" }
			 node_prefix "" { policy = "read" }
			 operator = "write"`,
			`service "web" { policy = "deny" }
			 service_prefix "api" { policy = "read" }
			 node_prefix "" { policy = "write" }
			 operator = "deny"`,
		}, []check{
			{"ServiceRead", "web", false},
			{"ServiceRead", "api1", true},
			{"ServiceWrite", "api1", true},
			{"NodeWrite", "n1", true},
			{"OperatorRead", "", false},
		}},
		{"merge is per segment, then exact beats prefix", false, []string{
			`service_prefix "" { policy = "deny" }`,
			`service "web" { policy = "read" }`,
		}, []check{
			{"ServiceRead", "web", true},
			{"ServiceRead", "api", false},
		}},
		{"write implies read", false, []string{`
			node "n1" { policy = "write" }
			agent_prefix "" { policy = "write" }
			query "q" { policy = "write" }
			session "s" { policy = "write" }
			operator = "write"
			keyring = "write"
			acl = "write"`}, []check{
			{"NodeRead", "n1", true},
			{"NodeWrite", "n1", true},
			{"NodeRead", "n2", false},
			{"AgentRead", "any", true},
			{"AgentWrite", "any", true},
			{"QueryRead", "q", true},
			{"QueryWrite", "q", true},
			{"SessionRead", "s", true},
			{"SessionWrite", "s", true},
			{"OperatorRead", "", true},
			{"KeyringRead", "", true},
			{"ACLRead", "", true},
			{"ACLWrite", "", true},
		}},
		{"read does not imply write", true, []string{`
			operator = "read"
			keyring = "read"
			acl = "read"
			session_prefix "" { policy = "read" }`}, []check{
			{"OperatorRead", "", true},
			{"OperatorWrite", "", false},
			{"KeyringRead", "", true},
			{"KeyringWrite", "", false},
			{"ACLRead", "", true},
			{"ACLWrite", "", false},
			{"SessionRead", "n", true},
			{"SessionWrite", "n", false},
		}},
		{"deny denies all under default allow", true, []string{`
			query_prefix "" { policy = "deny" }
			keyring = "deny"`}, []check{
			{"QueryRead", "q", false},
			{"QueryWrite", "q", false},
			{"KeyringRead", "", false},
			{"ServiceWrite", "web", true},
		}},
		{"key list", false, []string{`
			key_prefix "app/" { policy = "list" }
			key_prefix "ro/" { policy = "read" }
			key_prefix "rw/" { policy = "write" }
			key "app/secret" { policy = "deny" }`}, []check{
			{"KeyList", "app/", true},
			{"KeyRead", "app/x", true},
			{"KeyWrite", "app/x", false},
			{"KeyRead", "app/secret", false},
			{"KeyList", "app/secret", false},
			{"KeyList", "ro/", false},
			{"KeyRead", "ro/x", true},
			{"KeyList", "rw/", true},
			{"KeyRead", "rw/x", true},
			{"KeyWrite", "rw/x", true},
			{"KeyRead", "other", false},
		}},
		{"key write prefix", false, []string{`
			key_prefix "" { policy = "read" }
			key_prefix "a/" { policy = "write" }
			key "a/locked" { policy = "read" }
			key_prefix "a/b/" { policy = "write" }
			key_prefix "a/c/" { policy = "deny" }
			key "x/y" { policy = "write" }`}, []check{
			{"KeyWritePrefix", "a/b/", true},
			{"KeyWritePrefix", "a/b", true},
			{"KeyWritePrefix", "a/", false},       // a/locked, a/c/ under it
			{"KeyWritePrefix", "a/locked", false}, // the exact rule is under it
			{"KeyWritePrefix", "a/lockedX", true},
			{"KeyWritePrefix", "a/c/", false},
			{"KeyWritePrefix", "a/d", true},
			{"KeyWritePrefix", "", false},
			{"KeyWritePrefix", "x/", false}, // covered by read
			{"KeyWritePrefix", "zzz", false},
		}},
		{"key write prefix without covering rule", false, []string{`
			key_prefix "a/" { policy = "write" }`}, []check{
			{"KeyWritePrefix", "a/", true},
			{"KeyWritePrefix", "", false}, // default deny
			{"KeyWritePrefix", "b", false},
		}},
		{"key write prefix default allow", true, []string{`
			key "a/x" { policy = "deny" }
			key_prefix "b/" { policy = "write" }`}, []check{
			{"KeyWritePrefix", "", false},
			{"KeyWritePrefix", "a/", false},
			{"KeyWritePrefix", "a/y", true},
			{"KeyWritePrefix", "b/", true},
			{"KeyWritePrefix", "c/", true},
		}},
		{"names are case sensitive", false, []string{`
			service "Web" { policy = "read" }`}, []check{
			{"ServiceRead", "Web", true},
			{"ServiceRead", "web", false},
		}},
		{"resources are separate", false, []string{`
			service_prefix "" { policy = "write" }`}, []check{
			{"NodeRead", "web", false},
			{"AgentRead", "web", false},
			{"SessionRead", "web", false},
			{"QueryRead", "web", false},
			{"KeyRead", "web", false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps []*Policy
			for _, rules := range tt.policies {
				ps = append(ps, mustParse(t, rules))
			}
			a := New(tt.defaultAllow, ps...)
			for _, c := range tt.checks {
				if got := ask(a, c.method, c.arg); got != c.want {
					t.Errorf("%s(%q): got %v, want %v", c.method, c.arg, got, c.want)
				}
			}
		})
	}
}

func TestBuiltins(t *testing.T) {
	tests := []struct {
		name              string
		a                 *Authorizer
		want, wantACLRead bool
	}{
		{"ManageAll", ManageAll(), true, true},
		{"zero value", &Authorizer{}, false, false},
		{"New(true)", New(true), true, false},
		{"New(false, nil)", New(false, nil), false, false},
	}
	for _, tt := range tests {
		for _, m := range allMethods {
			for _, arg := range []string{"", "web", "a/b"} {
				if got := ask(tt.a, m, arg); got != tt.want {
					t.Errorf("%s.%s(%q): got %v, want %v", tt.name, m, arg, got, tt.want)
				}
			}
		}
		if got := tt.a.ACLRead(); got != tt.wantACLRead {
			t.Errorf("%s.ACLRead(): got %v, want %v", tt.name, got, tt.wantACLRead)
		}
		if got := tt.a.ACLWrite(); got != tt.wantACLRead {
			t.Errorf("%s.ACLWrite(): got %v, want %v", tt.name, got, tt.wantACLRead)
		}
	}
}

func BenchmarkServiceRead(b *testing.B) {
	p := mustParse(b, `
		service_prefix "" { policy = "read" }
		service_prefix "web" { policy = "write" }
		service_prefix "web-internal" { policy = "deny" }
		service "db" { policy = "write" }
		service "cache" { policy = "deny" }
		node_prefix "" { policy = "read" }`)
	a := New(false, p)
	names := []string{"web-front", "db", "api", "web-internal-x", "cache", "payments-gateway-eu-west-1"}
	b.ReportAllocs()
	var n int
	for i := 0; b.Loop(); i++ {
		if a.ServiceRead(names[i%len(names)]) {
			n++
		}
	}
	_ = n
}

func TestServiceReadAllocs(t *testing.T) {
	p := mustParse(t, `service_prefix "w" { policy = "read" }
		service "web" { policy = "deny" }
		node_prefix "" { policy = "read" }`)
	a := New(false, p)
	allocs := testing.AllocsPerRun(100, func() {
		a.ServiceRead("web")
		a.ServiceRead("west")
		a.NodeRead("n1")
		a.KeyWritePrefix("x")
	})
	if allocs != 0 {
		t.Errorf("allocations per check: got %v, want 0", allocs)
	}
}
