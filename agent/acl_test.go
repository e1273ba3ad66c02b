package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/waittest"
)

const (
	mgmtSecret    = "6f1e1c0a-9a51-4b69-8a5b-0c4f1d2e3a4b"
	anonymousID   = "00000000-0000-0000-0000-000000000002"
	aclTestWait   = 15 * time.Second
	permissionMsg = "Permission denied"
)

// aclServerConfig is a one-server datacenter with ACLs on, deny by
// default, and an initial management token its own agent writes with.
func aclServerConfig(t *testing.T, name string) config.Config {
	cfg := agenttest.ServerConfig(t, name, 1)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	cfg.ACL.Tokens.InitialManagement = mgmtSecret
	cfg.ACL.Tokens.Agent = mgmtSecret
	return cfg
}

// call makes an HTTP request to a with token (none when ""), and returns
// the status and body.
func call(t *testing.T, a *agent.Agent, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+a.HTTPAddr().String()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Consul-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// mustCall is call expecting 200; it decodes the body into out when set.
func mustCall(t *testing.T, a *agent.Agent, token, method, path string, body, out any) {
	t.Helper()
	code, b := call(t, a, token, method, path, body)
	if code != http.StatusOK {
		t.Fatalf("%s %s: got %d %s, want 200", method, path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// waitManagement waits until the servers created the initial management
// token (the leader does when it takes office).
func waitManagement(t *testing.T, a *agent.Agent) {
	t.Helper()
	waittest.For(t, aclTestWait, "the initial management token", func() error {
		if code, b := call(t, a, mgmtSecret, "GET", "/v1/acl/token/self", nil); code != http.StatusOK {
			return fmt.Errorf("token self: %d %s", code, b)
		}
		return nil
	})
}

// serviceNames lists the services of the catalog as the management token
// reads them.
func serviceNames(t *testing.T, a *agent.Agent) map[string][]string {
	t.Helper()
	var out map[string][]string
	mustCall(t, a, mgmtSecret, "GET", "/v1/catalog/services", nil, &out)
	return out
}

// makeToken creates a policy with rules and a token holding it, and
// returns the token's secret.
func makeToken(t *testing.T, a *agent.Agent, name, rules string) string {
	t.Helper()
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{"Name": name, "Rules": rules}, nil)
	var tok struct{ SecretID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{"Policies": []map[string]string{{"Name": name}}}, &tok)
	if tok.SecretID == "" {
		t.Fatal("token create answered no SecretID")
	}
	return tok.SecretID
}

func dnsRcode(t *testing.T, a *agent.Agent, name string) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, a.DNSAddr().String())
	if err != nil {
		t.Fatalf("dns %s: %v", name, err)
	}
	return r.Rcode
}

func TestACLTokensAndPoliciesAreEnforced(t *testing.T) {
	t.Parallel()
	s := agenttest.Start(t, aclServerConfig(t, "s1"))
	waitManagement(t, s)
	web := map[string]any{"Name": "web", "Port": 80}

	// Anonymous writes are refused, through the agent and the catalog.
	code, body := call(t, s, "", "PUT", "/v1/agent/service/register", web)
	if code != http.StatusForbidden || !strings.Contains(string(body), permissionMsg) {
		t.Fatalf("anonymous register: got %d %s, want 403 %s", code, body, permissionMsg)
	}
	reg := map[string]any{"Node": "x1", "Address": "10.0.0.9", "Service": map[string]any{"Service": "web", "Port": 80}}
	if code, body := call(t, s, "", "PUT", "/v1/catalog/register", reg); code != http.StatusForbidden {
		t.Fatalf("anonymous catalog register: got %d %s, want 403", code, body)
	}
	if _, ok := serviceNames(t, s)["web"]; ok {
		t.Fatal("a refused registration changed the catalog")
	}
	if code, _ := call(t, s, "f2b4d0a6-0000-4000-8000-000000000000", "GET", "/v1/catalog/services", nil); code != http.StatusForbidden {
		t.Fatalf("unknown token: got %d, want 403", code)
	}

	// A token for web can register web, not db.
	webToken := makeToken(t, s, "web-writer", `service "web" { policy = "write" }`)
	mustCall(t, s, webToken, "PUT", "/v1/agent/service/register", web, nil)
	code, body = call(t, s, webToken, "PUT", "/v1/agent/service/register", map[string]any{"Name": "db", "Port": 5432})
	if code != http.StatusForbidden || !strings.Contains(string(body), "service:write") || !strings.Contains(string(body), "db") {
		t.Fatalf("db with the web token: got %d %s, want 403 naming service:write on db", code, body)
	}
	if _, ok := serviceNames(t, s)["web"]; !ok {
		t.Fatal("web is not in the catalog after its registration")
	}

	// DNS answers as the anonymous token reads: nothing, until the
	// anonymous token is given a policy that reads services and nodes.
	if rc := dnsRcode(t, s, "web.service.cluster"); rc != dns.RcodeNameError {
		t.Fatalf("web for anonymous DNS: got %s, want NXDOMAIN", dns.RcodeToString[rc])
	}
	mustCall(t, s, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{
		"Name": "dns-read", "Rules": `service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }`}, nil)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/acl/token/"+anonymousID,
		map[string]any{"Policies": []map[string]string{{"Name": "dns-read"}}}, nil)
	waittest.For(t, aclTestWait, "web in DNS once anonymous may read it", func() error {
		if rc := dnsRcode(t, s, "web.service.cluster"); rc != dns.RcodeSuccess {
			return fmt.Errorf("rcode %s", dns.RcodeToString[rc])
		}
		return nil
	})

	// What only operators and managers may do.
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/snapshot"}, {"PUT", "/v1/agent/leave"}, {"GET", "/v1/acl/tokens"},
		{"GET", "/v1/operator/raft/configuration"},
	} {
		if code, body := call(t, s, "", c.method, c.path, nil); code != http.StatusForbidden {
			t.Errorf("anonymous %s %s: got %d %s, want 403", c.method, c.path, code, body)
		}
	}

	// Lists never show secrets.
	code, body = call(t, s, mgmtSecret, "GET", "/v1/acl/tokens", nil)
	if code != http.StatusOK || strings.Contains(string(body), webToken) || strings.Contains(string(body), mgmtSecret) {
		t.Fatalf("token list: got %d %s, want 200 without secrets", code, body)
	}
}

// TestServersEnforceWhateverTheAgentSays plays an agent that does not
// check tokens (ACLs off in its own config), joined to a secured server:
// what it accepts locally, the servers refuse.
func TestServersEnforceWhateverTheAgentSays(t *testing.T) {
	t.Parallel()
	scfg := aclServerConfig(t, "s1")
	s := agenttest.Start(t, scfg)
	waitManagement(t, s)
	rogue := agenttest.Start(t, agenttest.ClientConfig(t, "rogue", agenttest.GossipAddr(scfg)))
	waittest.For(t, aclTestWait, "the rogue client to find the server", func() error {
		code, body := call(t, rogue, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80})
		if code == http.StatusForbidden && strings.Contains(string(body), permissionMsg) {
			return nil
		}
		return fmt.Errorf("register through the rogue: %d %s", code, body)
	})
	if _, ok := serviceNames(t, s)["web"]; ok {
		t.Fatal("the rogue agent's registration reached the catalog")
	}
}
