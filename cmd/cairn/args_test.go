package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// TestFlagsFirst: a command's own flags move ahead of its positional
// arguments, with their values; anything else stays where it was.
func TestFlagsFirst(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, tc := range []struct{ in, want string }{
		// The example, and flags on both sides.
		{"checks fail web1-ttl -http-addr X", "checks fail -http-addr X web1-ttl"},
		{"checks fail -note n web1-ttl -http-addr X", "checks fail -note n -http-addr X web1-ttl"},
		// --name, -name=value, a boolean flag (which takes no value), help.
		{"health web --passing -format json", "health --passing -format json web"},
		{"health web -format=json -passing", "health -format=json -passing web"},
		{"health web -passing=false db", "health -passing=false web db"},
		{"health web -h", "health -h web"},
		// The value of a flag may look like a flag.
		{"services register f.json -check-timeout -1s", "services register -check-timeout -1s f.json"},
		// Not a flag of the command: left where it is (kv put KEY -5).
		{"checks fail a -nope x", "checks fail a -nope x"},
		{"kv put key -5", "kv put key -5"},
		{"kv put key -", "kv put key -"},
		// "--" ends the flags: it comes before every positional argument.
		{"checks fail a -- -http-addr", "checks fail -- a -http-addr"},
		{"checks fail -http-addr X -- -odd-id", "checks fail -http-addr X -- -odd-id"},
		{"join 10.0.0.1 -wan 10.0.0.2", "join -wan 10.0.0.1 10.0.0.2"},
		// Left alone: a program's own arguments, groups, unknown commands.
		{"watch -type nodes ./h.sh -http-addr X", "watch -type nodes ./h.sh -http-addr X"},
		{"checks bogus -http-addr X", "checks bogus -http-addr X"},
		{"nope a -http-addr X", "nope a -http-addr X"},
		{"checks", "checks"},
		{"", ""},
	} {
		in := append([]string{"cairn"}, strings.Fields(tc.in)...)
		want := append([]string{"cairn"}, strings.Fields(tc.want)...)
		if got := flagsFirst(app, in); !slices.Equal(got, want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, want)
		}
	}
}

// TestFlagsAfterArguments: flags typed after a command's arguments are
// taken, for every kind of command, and reach the agent.
func TestFlagsAfterArguments(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/check/fail/web1-ttl":  {},
		"PUT /v1/agent/check/fail/-odd":      {},
		"GET /v1/health/service/web":         {body: `[]`},
		"PUT /v1/agent/join/10.0.0.1":        {},
		"PUT /v1/agent/check/pass/web1-ttl":  {},
		"PUT /v1/agent/check/warn/web1-ttl":  {},
		"PUT /v1/agent/service/deregister/x": {},
	})
	for _, tc := range []struct {
		args        []string
		path, query string
	}{
		{[]string{"checks", "fail", "web1-ttl", "-http-addr", agent.URL}, "/v1/agent/check/fail/web1-ttl", ""},
		{[]string{"checks", "pass", "web1-ttl", "-http-addr", agent.URL, "-note", "ok"}, "/v1/agent/check/pass/web1-ttl", "note=ok"},
		{[]string{"checks", "warn", "web1-ttl", "--http-addr=" + agent.URL}, "/v1/agent/check/warn/web1-ttl", ""},
		{[]string{"checks", "fail", "-http-addr", agent.URL, "--", "-odd"}, "/v1/agent/check/fail/-odd", ""},
		{[]string{"health", "web", "-passing", "-http-addr", agent.URL}, "/v1/health/service/web", "passing="},
		{[]string{"join", "10.0.0.1", "-http-addr", agent.URL}, "/v1/agent/join/10.0.0.1", ""},
	} {
		agent.reset()
		_, stderr, code := runCLI(t, tc.args...)
		if code != 0 {
			t.Errorf("%q: got exit code %d, stderr %q", tc.args, code, stderr)
			continue
		}
		if got := agent.only(t, agent.requests()[0].Method, tc.path); !strings.HasPrefix(got.Query, tc.query) {
			t.Errorf("%q: got query %q, want it to start with %q", tc.args, got.Query, tc.query)
		}
	}
}
