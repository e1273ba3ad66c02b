package main

import (
	"testing"

	"github.com/cairndns/cairn/internal/porttest"
)

// keyringBody is what a server answers to GET /v1/operator/keyring in the
// middle of a rotation, in Consul's shape.
const keyringBody = `[
	{"WAN": true, "Datacenter": "dc1", "Segment": "",
	 "Keys": {"bmV3bmV3bmV3bmV3bmV3bg==": 3, "b2xkb2xkb2xkb2xkb2xkbw==": 3},
	 "PrimaryKeys": {"bmV3bmV3bmV3bmV3bmV3bg==": 3}, "NumNodes": 3},
	{"WAN": false, "Datacenter": "dc1", "Segment": "",
	 "Keys": {"bmV3bmV3bmV3bmV3bmV3bg==": 5, "b2xkb2xkb2xkb2xkb2xkbw==": 4},
	 "PrimaryKeys": {"b2xkb2xkb2xkb2xkb2xkbw==": 5},
	 "Messages": {"web-3": "did not confirm the change: context deadline exceeded"}, "NumNodes": 5}]`

func TestKeyringList(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantQuery string
		want      string
	}{
		{[]string{"-list"}, "", "" +
			"==> Gathering installed encryption keys...\n" +
			"\n" +
			"WAN:\n" +
			"  b2xkb2xkb2xkb2xkb2xkbw== [3/3]\n" +
			"  bmV3bmV3bmV3bmV3bmV3bg== [3/3]\n" +
			"\n" +
			"dc1 (LAN):\n" +
			"  b2xkb2xkb2xkb2xkb2xkbw== [4/5]\n" +
			"  bmV3bmV3bmV3bmV3bmV3bg== [5/5]\n" +
			"  ! web-3: did not confirm the change: context deadline exceeded\n"},
		{[]string{"-list-primary", "-local-only"}, "local-only=true", "" +
			"==> Gathering installed encryption keys...\n" +
			"\n" +
			"WAN:\n" +
			"  bmV3bmV3bmV3bmV3bmV3bg== [3/3]\n" +
			"\n" +
			"dc1 (LAN):\n" +
			"  b2xkb2xkb2xkb2xkb2xkbw== [5/5]\n" +
			"  ! web-3: did not confirm the change: context deadline exceeded\n"},
	} {
		agent := newFakeAgent(t, map[string]answer{"GET /v1/operator/keyring": {body: keyringBody}})
		stdout, stderr, code := runCLI(t, append([]string{"keyring", "-http-addr", agent.URL}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: got exit code %d, stderr %q", tc.args, code, stderr)
		}
		if stdout != tc.want {
			t.Errorf("%v: got\n%s\nwant\n%s", tc.args, stdout, tc.want)
		}
		if got := agent.only(t, "GET", "/v1/operator/keyring"); got.Query != tc.wantQuery {
			t.Errorf("%v: sent query %q, want %q", tc.args, got.Query, tc.wantQuery)
		}
	}
}

// changedBody is what an agent answers to a change reached everywhere.
const changedBody = `[
	{"WAN": true, "Datacenter": "dc1", "Segment": "", "Keys": {"bmV3bmV3bmV3bmV3bmV3bg==": 4}, "PrimaryKeys": {}, "NumNodes": 4},
	{"WAN": false, "Datacenter": "dc1", "Segment": "", "Keys": {"bmV3bmV3bmV3bmV3bmV3bg==": 5}, "PrimaryKeys": {}, "NumNodes": 5},
	{"WAN": false, "Datacenter": "dc2", "Segment": "", "Keys": {"bmV3bmV3bmV3bmV3bmV3bg==": 1}, "PrimaryKeys": {}, "NumNodes": 1}]`

func TestKeyringChanges(t *testing.T) {
	const key = "bmV3bmV3bmV3bmV3bmV3bg=="
	const pools = "WAN: 4 nodes, 0 errors\ndc1 (LAN): 5 nodes, 0 errors\ndc2 (LAN): 1 node, 0 errors\n"
	for _, tc := range []struct {
		flag, method, want string
	}{
		{"-install", "POST", "==> Installing new gossip encryption key...\n" + pools},
		{"-use", "PUT", "==> Changing primary gossip encryption key...\n" + pools},
		{"-remove", "DELETE", "==> Removing gossip encryption key...\n" + pools},
	} {
		agent := newFakeAgent(t, map[string]answer{tc.method + " /v1/operator/keyring": {body: changedBody}})
		stdout, stderr, code := runCLI(t, "keyring", "-http-addr", agent.URL, tc.flag, key)
		if code != 0 || stdout != tc.want {
			t.Errorf("%s: got exit code %d, stdout %q, stderr %q; want 0, %q", tc.flag, code, stdout, stderr, tc.want)
		}
		got := agent.only(t, tc.method, "/v1/operator/keyring")
		if body := bodyMap(t, got.Body); len(body) != 1 || body["Key"] != key {
			t.Errorf("%s: sent body %s, want {\"Key\": %q}", tc.flag, got.Body, key)
		}
	}
}

// TestKeyringChangeFailed: a change that failed in one pool exits 1 and
// names the pool and the member, whether the agent reports it as an error
// status (as cairn's do) or in a pool of a 200.
func TestKeyringChangeFailed(t *testing.T) {
	const key = "bmV3bmV3bmV3bmV3bmV3bg=="
	agent := newFakeAgent(t, map[string]answer{"POST /v1/operator/keyring": {status: 503,
		body: `{"error": "not done on every pool; sending it again is safe: gossip keyring operation incomplete: keyring install failed in 1 of 3 pools: dc2 (LAN): install failed on 1 of 2 members: c2: did not confirm the change"}`}})
	_, stderr, code := runCLI(t, "keyring", "-http-addr", agent.URL, "-install", key)
	wantError(t, stderr, code, "install the gossip key", "dc2 (LAN)", "c2: did not confirm")

	agent = newFakeAgent(t, map[string]answer{"DELETE /v1/operator/keyring": {body: `[
		{"WAN": true, "Datacenter": "dc1", "Keys": {}, "PrimaryKeys": {}, "NumNodes": 2},
		{"WAN": false, "Datacenter": "dc2", "Keys": {}, "PrimaryKeys": {}, "NumNodes": 2, "NumErrs": 1,
		 "Messages": {"c2": "did not confirm the change"}, "Error": "remove failed on 1 of 2 members"}]`}})
	stdout, stderr, code := runCLI(t, "keyring", "-http-addr", agent.URL, "-remove", key)
	wantError(t, stderr, code, "remove the gossip key", "failed in dc2 (LAN)")
	const want = "==> Removing gossip encryption key...\n" +
		"WAN: 2 nodes, 0 errors\n" +
		"dc2 (LAN): 2 nodes, 1 error\n" +
		"  ! c2: did not confirm the change\n" +
		"  ! failed: remove failed on 1 of 2 members\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
}

func TestKeyringRefused(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"DELETE /v1/operator/keyring": {status: 400,
		body: `{"error": "Key: WAN: gossip key is a primary key of s2.dc1", "field": "Key", "reason": "WAN: gossip key is a primary key of s2.dc1"}`}})
	_, stderr, code := runCLI(t, "keyring", "-http-addr", agent.URL, "-remove", "b2xkb2xkb2xkb2xkb2xkbw==")
	wantError(t, stderr, code, "remove the gossip key", "primary key of s2.dc1")
}

func TestKeyringUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "one of -list"},
		{[]string{"-list", "-install", "a2V5"}, "only one of -list, -install"},
		{[]string{"-install", "a2V5", "-local-only"}, "-local-only goes with -list"},
		{[]string{"-use", ""}, "-use needs a KEY"},
		{[]string{"-list", "extra"}, `unexpected argument "extra"`},
	} {
		_, stderr, code := runCLI(t, append([]string{"keyring", "-http-addr", porttest.Refused(t)}, tc.args...)...)
		wantUsage(t, stderr, code, tc.want)
	}
}
