package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/porttest"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// clearAgentEnv empties the variables the agent flags read, so that the
// environment the tests run in does not leak into them.
func clearAgentEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{api.TokenEnv, api.HTTPSEnv, api.CACertEnv, api.ClientCertEnv, api.ClientKeyEnv, api.TLSServerNameEnv} {
		t.Setenv(v, "")
		os.Unsetenv(v) // t.Setenv restores it after the test
	}
}

// TestACLAgainstAgent runs the acl commands against a real agent with ACLs
// on and the default policy deny: bootstrap, a policy and a token made with
// the bootstrap token, and the token allowed to register web but not db.
func TestACLAgainstAgent(t *testing.T) {
	clearAgentEnv(t)
	cfg := agenttest.Config(t)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	t.Setenv(api.AddressEnv, agenttest.Start(t, cfg).HTTPAddr().String())

	_, stderr, code := runCLI(t, "acl", "policy", "list")
	wantError(t, stderr, code, "list policies: agent returned 403: Permission denied")

	boot := decodeJSON[api.ACLToken](t, mustRun(t, "acl", "bootstrap", "-format", "json"))
	if boot.AccessorID == "" || !isUUID(boot.SecretID) {
		t.Fatalf("bootstrap: got %+v, want an accessor and a secret", boot)
	}
	_, stderr, code = runCLI(t, "acl", "bootstrap")
	wantError(t, stderr, code, "bootstrap ACLs: agent returned 403: Permission denied: ACL bootstrap no longer allowed (reset index: ",
		"write that index into acl-bootstrap-reset in the leader's data dir")
	mgmt := boot.SecretID

	out := mustRun(t, "acl", "policy", "create", "-token", mgmt, "-name", "web-write",
		"-description", "web may register", "-rules", `service "web" { policy = "write" }`)
	m := regexp.MustCompile(`(?m)^ID: +(\S+)\nName: +web-write\nDescription: +web may register\nRules:\nservice "web" \{ policy = "write" \}\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("policy create: got %q", out)
	}
	policyID := m[1]
	rules := filepath.Join(t.TempDir(), "db.hcl")
	if err := os.WriteFile(rules, []byte("service \"db\" {\n  policy = \"read\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPolicy := decodeJSON[api.ACLPolicy](t, mustRun(t, "acl", "policy", "create", "-token", mgmt, "-name", "db-read",
		"-rules", "@"+rules, "-format", "json"))
	if dbPolicy.Rules != "service \"db\" {\n  policy = \"read\"\n}\n" {
		t.Errorf("policy create -rules @file: got rules %q", dbPolicy.Rules)
	}

	// From here on the management token comes from the environment.
	t.Setenv(api.TokenEnv, mgmt)
	out = mustRun(t, "acl", "token", "create", "-description", "web deployer", "-policy-name", "web-write")
	m = regexp.MustCompile(`^AccessorID: +(\S+)\nSecretID: +(\S+)\nDescription: +web deployer\nLocal: +false\nCreate Time: +.+\nPolicies:\n   ` +
		policyID + ` - web-write\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("token create: got %q", out)
	}
	webAccessor, webSecret := m[1], m[2]

	out = mustRun(t, "acl", "token", "list")
	for _, secret := range []string{mgmt, webSecret, "SecretID"} {
		if strings.Contains(out, secret) {
			t.Errorf("token list shows %q: %q", secret, out)
		}
	}
	if !strings.Contains(out, "AccessorID:       "+webAccessor+"\n") || !strings.Contains(out, "AccessorID:       "+boot.AccessorID+"\n") {
		t.Errorf("token list: got %q, want both tokens", out)
	}
	out = mustRun(t, "acl", "token", "list", "-format", "json")
	if strings.Contains(out, mgmt) || strings.Contains(out, webSecret) || strings.Contains(out, "SecretID") {
		t.Errorf("token list -format json shows a secret: %q", out)
	}
	seen := map[string]bool{}
	for _, tok := range decodeJSON[[]api.ACLTokenListEntry](t, out) {
		seen[tok.AccessorID] = true
	}
	if !seen[boot.AccessorID] || !seen[webAccessor] {
		t.Errorf("token list -format json: got %q, want both tokens", out)
	}

	// The web token may register web and nothing else; the agent's
	// refusal is printed as it words it, and never with the secret.
	_, stderr, code = runCLI(t, "services", "register", "-token", webSecret, "-name", "db", "-port", "5432")
	wantError(t, stderr, code, `register service "db": agent returned 403: Permission denied`, "service:write", `"db"`)
	if strings.Contains(stderr, webSecret) {
		t.Errorf("the refusal shows the token's secret: %q", stderr)
	}
	if out := mustRun(t, "services", "register", "-token", webSecret, "-name", "web", "-port", "80"); out != "Registered service: web\n" {
		t.Errorf("register web with the web token: got %q", out)
	}

	self := decodeJSON[api.ACLToken](t, mustRun(t, "acl", "token", "read", "-self", "-token", webSecret, "-format", "json"))
	if self.AccessorID != webAccessor || self.SecretID != webSecret {
		t.Errorf("token read -self: got %+v, want accessor %s with its secret", self, webAccessor)
	}
	out = mustRun(t, "acl", "token", "read", "-id", webAccessor)
	if strings.Contains(out, webSecret) || !strings.Contains(out, policyID+" - web-write") {
		t.Errorf("token read -id: got %q, want the policy and no secret", out)
	}

	// Updates keep what they are not given.
	upd := decodeJSON[api.ACLToken](t, mustRun(t, "acl", "token", "update", "-id", webAccessor, "-description", "renamed", "-format", "json"))
	if upd.Description != "renamed" || len(upd.Policies) != 1 || upd.Policies[0].Name != "web-write" {
		t.Errorf("token update -description: got %+v, want the policy kept", upd)
	}
	upd = decodeJSON[api.ACLToken](t, mustRun(t, "acl", "token", "update", "-id", webAccessor, "-policy-id", dbPolicy.ID, "-format", "json"))
	if upd.Description != "renamed" || len(upd.Policies) != 1 || upd.Policies[0].Name != "db-read" {
		t.Errorf("token update -policy-id: got %+v, want db-read alone and the description kept", upd)
	}
	pol := decodeJSON[api.ACLPolicy](t, mustRun(t, "acl", "policy", "update", "-id", policyID, "-description", "changed", "-format", "json"))
	if pol.Name != "web-write" || pol.Description != "changed" || pol.Rules != `service "web" { policy = "write" }` {
		t.Errorf("policy update -description: got %+v, want name and rules kept", pol)
	}
	if out := mustRun(t, "acl", "policy", "read", "-name", "web-write"); !strings.Contains(out, "Description:  changed\n") {
		t.Errorf("policy read -name: got %q", out)
	}
	out = mustRun(t, "acl", "policy", "list")
	if !strings.Contains(out, "web-write:\n   ID:           "+policyID+"\n   Description:  changed\n") || !strings.Contains(out, "db-read:\n") {
		t.Errorf("policy list: got %q", out)
	}

	if out := mustRun(t, "acl", "policy", "delete", "-name", "db-read"); out != `Policy "`+dbPolicy.ID+`" deleted successfully`+"\n" {
		t.Errorf("policy delete -name: got %q", out)
	}
	_, stderr, code = runCLI(t, "acl", "policy", "read", "-id", dbPolicy.ID)
	wantError(t, stderr, code, "read policy", "agent returned 404")
	if out := mustRun(t, "acl", "token", "delete", "-id", webAccessor); out != `Token "`+webAccessor+`" deleted successfully`+"\n" {
		t.Errorf("token delete: got %q", out)
	}
	_, stderr, code = runCLI(t, "services", "register", "-token", webSecret, "-name", "web", "-port", "80")
	wantError(t, stderr, code, "agent returned 403")
	if strings.Contains(stderr, webSecret) {
		t.Errorf("the refusal of a deleted token shows its secret: %q", stderr)
	}
}

// TestACLDisabled runs an acl command against a real agent with ACLs off.
func TestACLDisabled(t *testing.T) {
	clearAgentEnv(t)
	_, stderr, code := runCLI(t, "acl", "token", "list", "-http-addr", devAgent(t, "test"))
	wantError(t, stderr, code, "list tokens: agent returned 401: ACL support disabled")
}

// tokenAgent is a fake agent answering with canned bodies by
// "METHOD /path", and recording the requests' tokens and bodies.
type tokenAgent struct {
	URL     string
	mu      sync.Mutex
	tokens  []string
	seen    []seenRequest
	answers map[string]answer
}

func newTokenAgent(t *testing.T, answers map[string]answer) *tokenAgent {
	t.Helper()
	a := &tokenAgent{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
		}
		a.mu.Lock()
		a.tokens = append(a.tokens, r.Header.Get("X-Consul-Token"))
		a.seen = append(a.seen, seenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Body: body})
		a.mu.Unlock()
		ans, ok := a.answers[r.Method+" "+r.URL.EscapedPath()]
		if !ok {
			ans = answer{status: 404, body: `{"error": "no such endpoint"}`}
		}
		w.Header().Set("Content-Type", "application/json")
		if ans.status != 0 {
			w.WriteHeader(ans.status)
		}
		io.WriteString(w, ans.body)
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func (a *tokenAgent) requests() ([]seenRequest, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]seenRequest(nil), a.seen...), append([]string(nil), a.tokens...)
}

const (
	testAccessor = "6a1253d2-1785-24fd-91c2-f8e78c745511"
	testSecret   = "45a3bd52-07c7-47a4-52fd-0745e0cfe967"
	testPolicyID = "e359bd81-baca-903e-7e64-1ccd9fdc78f5"
)

func TestTokenFlagAndEnv(t *testing.T) {
	clearAgentEnv(t)
	agent := newTokenAgent(t, map[string]answer{"GET /v1/agent/services": {body: `{}`}})
	mustRun(t, "services", "list", "-http-addr", agent.URL)
	mustRun(t, "services", "list", "-http-addr", agent.URL, "-token", "from-flag")
	t.Setenv(api.TokenEnv, "from-env")
	mustRun(t, "services", "list", "-http-addr", agent.URL)
	mustRun(t, "services", "list", "-http-addr", agent.URL, "-token", "flag-wins")
	_, tokens := agent.requests()
	if want := []string{"", "from-flag", "from-env", "flag-wins"}; !slices.Equal(tokens, want) {
		t.Errorf("got tokens %q, want %q", tokens, want)
	}

	// Neither help nor an error shows the token.
	out := mustRun(t, "services", "list", "-h")
	if strings.Contains(out, "from-env") || !strings.Contains(out, "-token SECRET") {
		t.Errorf("help: got %q, want -token without its value", out)
	}
	_, stderr, code := runCLI(t, "services", "list", "-http-addr", agent.URL, "-token", "sec\nret")
	wantError(t, stderr, code, "-token: holds a control character")
	if strings.Contains(stderr, "sec") {
		t.Errorf("got stderr %q, want it without the token", stderr)
	}
}

func TestACLRequests(t *testing.T) {
	clearAgentEnv(t)
	token := `{"AccessorID": "` + testAccessor + `", "Description": "old", "Local": true, "CreateTime": "2024-05-01T10:00:00Z",
		"Policies": [{"ID": "` + testPolicyID + `", "Name": "web-write"}]}`
	policy := `{"ID": "` + testPolicyID + `", "Name": "web-write", "Description": "old", "Rules": "service \"web\" {}"}`
	agent := newTokenAgent(t, map[string]answer{
		"PUT /v1/acl/bootstrap":                    {body: token},
		"PUT /v1/acl/token":                        {body: token},
		"GET /v1/acl/token/" + testAccessor:        {body: token},
		"PUT /v1/acl/token/" + testAccessor:        {body: token},
		"DELETE /v1/acl/token/" + testAccessor:     {body: `true`},
		"PUT /v1/acl/policy":                       {body: policy},
		"GET /v1/acl/policy/" + testPolicyID:       {body: policy},
		"GET /v1/acl/policy/name/web%20write":      {body: policy},
		"PUT /v1/acl/policy/" + testPolicyID:       {body: policy},
		"DELETE /v1/acl/policy/" + testPolicyID:    {body: `true`},
		"GET /v1/acl/tokens":                       {body: `[]`},
		"GET /v1/acl/policies":                     {body: `[]`},
		"PUT /v1/agent/service/register":           {status: 403, body: `{"error": "Permission denied: token lacks service:write on \"db\""}`},
		"GET /v1/acl/token/self":                   {status: 401, body: `{"error": "ACL support disabled"}`},
		"GET /v1/acl/policy/" + testPolicyID + "0": {status: 404, body: `{"error": "policy not found"}`},
	})
	t.Setenv(api.AddressEnv, agent.URL)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(t.TempDir(), "rules.hcl")
	if err := os.WriteFile(rulesFile, []byte(`node_prefix "" { policy = "read" }`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string // "METHOD /path body" of each request; body "" for none
	}{
		{[]string{"acl", "bootstrap"}, []string{"PUT /v1/acl/bootstrap "}},
		{[]string{"acl", "bootstrap", secretFile}, []string{`PUT /v1/acl/bootstrap {"BootstrapSecret":"` + testSecret + `"}`}},
		{[]string{"acl", "token", "create", "-description", "d", "-policy-name", "web-write", "-policy-id", testPolicyID,
			"-secret", testSecret, "-accessor", testAccessor, "-local"},
			[]string{`PUT /v1/acl/token {"AccessorID":"` + testAccessor + `","SecretID":"` + testSecret + `","Description":"d",` +
				`"Policies":[{"Name":"web-write"},{"ID":"` + testPolicyID + `"}],"Local":true}`}},
		{[]string{"acl", "token", "create", "-policy-name", "p"}, []string{`PUT /v1/acl/token {"Description":"","Policies":[{"Name":"p"}],"Local":false}`}},
		// An update reads the token and keeps what it is not given, Local
		// above all.
		{[]string{"acl", "token", "update", "-id", testAccessor, "-description", "new"}, []string{
			"GET /v1/acl/token/" + testAccessor + " ",
			`PUT /v1/acl/token/` + testAccessor + ` {"AccessorID":"` + testAccessor + `","Description":"new","Policies":[{"ID":"` + testPolicyID + `"}],"Local":true}`,
		}},
		{[]string{"acl", "token", "update", "-id", testAccessor, "-policy-name", "a", "-policy-name", "b"}, []string{
			"GET /v1/acl/token/" + testAccessor + " ",
			`PUT /v1/acl/token/` + testAccessor + ` {"AccessorID":"` + testAccessor + `","Description":"old","Policies":[{"Name":"a"},{"Name":"b"}],"Local":true}`,
		}},
		{[]string{"acl", "token", "read", "-id", testAccessor}, []string{"GET /v1/acl/token/" + testAccessor + " "}},
		{[]string{"acl", "token", "delete", "-id", testAccessor}, []string{"DELETE /v1/acl/token/" + testAccessor + " "}},
		{[]string{"acl", "token", "list"}, []string{"GET /v1/acl/tokens "}},
		{[]string{"acl", "policy", "create", "-name", "n", "-rules", "@" + rulesFile}, []string{
			`PUT /v1/acl/policy {"Name":"n","Description":"","Rules":"node_prefix \"\" { policy = \"read\" }"}`}},
		{[]string{"acl", "policy", "read", "-name", "web write"}, []string{"GET /v1/acl/policy/name/web%20write "}},
		{[]string{"acl", "policy", "update", "-id", testPolicyID, "-rules", "x"}, []string{
			"GET /v1/acl/policy/" + testPolicyID + " ",
			`PUT /v1/acl/policy/` + testPolicyID + ` {"ID":"` + testPolicyID + `","Name":"web-write","Description":"old","Rules":"x"}`,
		}},
		{[]string{"acl", "policy", "delete", "-name", "web write"}, []string{
			"GET /v1/acl/policy/name/web%20write ", "DELETE /v1/acl/policy/" + testPolicyID + " "}},
		{[]string{"acl", "policy", "list"}, []string{"GET /v1/acl/policies "}},
	} {
		agent.mu.Lock()
		agent.seen = nil
		agent.mu.Unlock()
		mustRun(t, tc.args...)
		seen, _ := agent.requests()
		var got []string
		for _, r := range seen {
			got = append(got, r.Method+" "+r.Path+" "+strings.TrimSpace(string(r.Body)))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: agent saw\n%q\nwant\n%q", tc.args, got, tc.want)
		}
	}

	_, stderr, code := runCLI(t, "services", "register", "-name", "db")
	wantError(t, stderr, code, `register service "db": agent returned 403: Permission denied: token lacks service:write on "db"`)
	_, stderr, code = runCLI(t, "acl", "token", "read", "-self")
	wantError(t, stderr, code, "read own token: agent returned 401: ACL support disabled")
	_, stderr, code = runCLI(t, "acl", "policy", "read", "-id", testPolicyID+"0")
	wantError(t, stderr, code, "agent returned 404: policy not found")
}

func TestACLUsageErrors(t *testing.T) {
	clearAgentEnv(t)
	// Nothing listens here: a command that got past its flags would fail
	// with exit code 1, not 2.
	t.Setenv(api.AddressEnv, porttest.Refused(t))
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"acl", "nope"}, []string{`unknown command "cairn acl nope"`}},
		{[]string{"acl", "policy", "nope"}, []string{`unknown command "cairn acl policy nope"`}},
		{[]string{"acl", "token", "nope"}, []string{`unknown command "cairn acl token nope"`}},
		{[]string{"acl", "bootstrap", "a", "b"}, []string{"want at most one FILE"}},
		{[]string{"acl", "bootstrap", "-format", "yaml"}, []string{`-format "yaml"`}},
		{[]string{"acl", "policy", "create", "-rules", "x"}, []string{"missing -name"}},
		{[]string{"acl", "policy", "create", "-name", "n"}, []string{"missing -rules"}},
		{[]string{"acl", "policy", "create", "-name", "n", "-rules", " "}, []string{"-rules is empty"}},
		{[]string{"acl", "policy", "create", "-name", "n", "-rules", "@"}, []string{"missing the FILE after @"}},
		{[]string{"acl", "policy", "create", "-name", "n", "-rules", "x", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"acl", "policy", "read"}, []string{"missing -id or -name", `"cairn acl policy read -h"`}},
		{[]string{"acl", "policy", "read", "-id", "a", "-name", "b"}, []string{"give -id or -name, not both"}},
		{[]string{"acl", "policy", "read", "-name", ""}, []string{"-name is empty"}},
		{[]string{"acl", "policy", "update", "-name", "n"}, []string{"missing -id"}},
		{[]string{"acl", "policy", "update", "-id", testPolicyID}, []string{"nothing to update"}},
		{[]string{"acl", "policy", "update", "-id", testPolicyID, "-name", ""}, []string{"-name is empty"}},
		{[]string{"acl", "policy", "delete"}, []string{"missing -id or -name"}},
		{[]string{"acl", "policy", "list", "-bogus"}, []string{"-bogus", `"cairn acl policy list -h"`}},
		{[]string{"acl", "token", "create", "-secret", "not-a-uuid"}, []string{"-secret: must be a UUID"}},
		{[]string{"acl", "token", "create", "-accessor", "abc"}, []string{`-accessor "abc": must be a UUID`}},
		{[]string{"acl", "token", "create", "-policy-name", ""}, []string{"-policy-name is empty"}},
		{[]string{"acl", "token", "read"}, []string{"missing -id or -self"}},
		{[]string{"acl", "token", "read", "-id", testAccessor, "-self"}, []string{"give -id or -self, not both"}},
		{[]string{"acl", "token", "update", "-description", "d"}, []string{"missing -id"}},
		{[]string{"acl", "token", "update", "-id", testAccessor}, []string{"nothing to update"}},
		{[]string{"acl", "token", "delete"}, []string{"missing -id"}},
		{[]string{"acl", "token", "delete", "-id", testAccessor, "x"}, []string{`unexpected argument "x"`}},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}

	// The secret given to -secret is never echoed, even when it is wrong.
	_, stderr, _ := runCLI(t, "acl", "token", "create", "-secret", "hunter2-almost-a-uuid")
	if strings.Contains(stderr, "hunter2") {
		t.Errorf("got stderr %q, want it without the secret", stderr)
	}
	// Nor is a bootstrap secret read from a file.
	bad := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(bad, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "acl", "bootstrap", bad)
	wantError(t, stderr, code, "must hold a UUID")
	if strings.Contains(stderr, "hunter2") {
		t.Errorf("got stderr %q, want it without the secret", stderr)
	}
	_, stderr, code = runCLI(t, "acl", "policy", "create", "-name", "n", "-rules", "@/nonexistent/rules.hcl")
	wantError(t, stderr, code, "-rules: open /nonexistent/rules.hcl")
}

func TestACLHelp(t *testing.T) {
	for _, args := range [][]string{
		{"acl"}, {"acl", "bootstrap"}, {"acl", "policy"}, {"acl", "token"},
		{"acl", "policy", "create"}, {"acl", "policy", "list"}, {"acl", "policy", "read"},
		{"acl", "policy", "update"}, {"acl", "policy", "delete"},
		{"acl", "token", "create"}, {"acl", "token", "list"}, {"acl", "token", "read"},
		{"acl", "token", "update"}, {"acl", "token", "delete"},
	} {
		stdout, stderr, code := runCLI(t, append(args, "-h")...)
		if code != 0 || stderr != "" {
			t.Errorf("%v -h: got exit code %d, stderr %q", args, code, stderr)
		}
		if name := "cairn " + strings.Join(args, " "); !strings.Contains(stdout, "USAGE:") || !strings.Contains(stdout, name) {
			t.Errorf("%v -h: got %q, want USAGE naming %q", args, stdout, name)
		}
	}
}

// httpsAgent starts an HTTPS server with a certificate of ca for
// server.dc1.cluster, localhost and 127.0.0.1 that requires a client
// certificate of ca, answering GET /v1/agent/services.
func httpsAgent(t *testing.T, ca *tlsutiltest.CA) *httptest.Server {
	t.Helper()
	certFile, keyFile := ca.Issue(t, true, "dc1")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"web": {"ID": "web", "Service": "web", "Port": 80}}`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	// The handshake failures the tests provoke are expected; keep them
	// out of the test's output.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPSFlags(t *testing.T) {
	clearAgentEnv(t)
	ca := tlsutiltest.NewCA(t)
	srv := httpsAgent(t, ca)
	hostPort := strings.TrimPrefix(srv.URL, "https://")
	cert, key := ca.Issue(t, false, "dc1")
	otherCert, otherKey := tlsutiltest.NewCA(t).Issue(t, false, "dc1")
	withCerts := []string{"-ca-file", ca.CertFile, "-client-cert", cert, "-client-key", key}

	list := func(args ...string) []string { return append([]string{"services", "list"}, args...) }
	for _, args := range [][]string{
		list(append([]string{"-http-addr", srv.URL}, withCerts...)...),
		list(append([]string{"-http-addr", srv.URL, "-tls-server-name", "server.dc1.cluster"}, withCerts...)...),
	} {
		if out := mustRun(t, args...); !strings.Contains(out, "web") {
			t.Errorf("%v: got %q", args, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{list("-http-addr", srv.URL, "-client-cert", cert, "-client-key", key), []string{"certificate signed by unknown authority", "(check -ca-file"}},
		// The agent's refusal of the client's certificate comes as an
		// alert, or as a reset that may overtake it: only the failure is
		// certain.
		{list("-http-addr", srv.URL, "-ca-file", ca.CertFile), []string{"cannot reach the cairn agent at https://"}},
		{list("-http-addr", srv.URL, "-ca-file", ca.CertFile, "-client-cert", otherCert, "-client-key", otherKey), []string{"cannot reach the cairn agent at https://"}},
		{list(append([]string{"-http-addr", srv.URL, "-tls-server-name", "other.example"}, withCerts...)...), []string{"not other.example", "(check -ca-file"}},
		{list("-http-addr", srv.URL, "-ca-file", "/nonexistent/ca.pem"), []string{"Error: -ca-file: open /nonexistent/ca.pem"}},
		{list("-http-addr", srv.URL, "-ca-file", key), []string{"Error: -ca-file: " + key + " holds no PEM certificate"}},
		{list("-http-addr", srv.URL, "-client-cert", cert), []string{"Error: -client-key: missing: a client certificate needs its key"}},
		{list("-http-addr", srv.URL, "-client-key", key), []string{"Error: -client-cert: missing: a client key needs its certificate"}},
		{list("-http-addr", srv.URL, "-client-cert", key, "-client-key", key), []string{"Error: -client-cert: " + key + " holds no PEM certificate"}},
		{list("-http-addr", srv.URL, "-client-cert", cert, "-client-key", otherKey), []string{"Error: -client-key: " + otherKey, "does not match"}},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		wantError(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}

	// The environment does the same, CAIRN_HTTP_SSL turning host:port into
	// https.
	t.Setenv(api.AddressEnv, hostPort)
	t.Setenv(api.CACertEnv, ca.CertFile)
	t.Setenv(api.ClientCertEnv, cert)
	t.Setenv(api.ClientKeyEnv, key)
	t.Setenv(api.TLSServerNameEnv, "server.dc1.cluster")
	_, stderr, code := runCLI(t, "services", "list")
	wantError(t, stderr, code, "agent returned 400") // plain HTTP to an HTTPS server
	t.Setenv(api.HTTPSEnv, "true")
	if out := mustRun(t, "services", "list"); !strings.Contains(out, "web") {
		t.Errorf("from the environment: got %q", out)
	}
	t.Setenv(api.HTTPSEnv, "yes")
	_, stderr, code = runCLI(t, "services", "list")
	wantError(t, stderr, code, `Error: CAIRN_HTTP_SSL: want true or false, got "yes"`)
}

func TestACLSetAgentToken(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/token/agent_recovery": {}})
	stdout, stderr, code := runCLI(t, "acl", "set-agent-token", "-http-addr", agent.URL, "agent_master", "s3cr3t")
	if code != 0 || stderr != "" {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "ACL token \"agent_recovery\" set successfully\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	if got := agent.only(t, "PUT", "/v1/agent/token/agent_recovery"); string(got.Body) != `{"Token":"s3cr3t"}` {
		t.Errorf("got body %s, want the token", got.Body)
	}
	_, stderr, code = runCLI(t, "acl", "set-agent-token", "-http-addr", agent.URL, "bogus", "x")
	wantUsage(t, stderr, code, `KIND "bogus"`)
}
