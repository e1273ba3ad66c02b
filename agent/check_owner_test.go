package agent_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// healthCheck is a check as /v1/health/node and /v1/agent/checks list it.
type healthCheck struct {
	CheckID, ServiceID, Status string
}

// TestCheckOwnersAreVetted plays the holder of a token for service web
// only, who registers checks with the ID of a check web does not own
// (another service's, the node's gossip check, the node's and another
// service's maintenance checks), attached to web, through the agent and
// through the catalog: each is refused, the check stays with its owner,
// and the instances it keeps out of answers stay out.
func TestCheckOwnersAreVetted(t *testing.T) {
	t.Parallel()
	s := agenttest.Start(t, aclServerConfig(t, "s1"))
	waitManagement(t, s)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}, nil)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"Name": "db", "Port": 5432}, nil)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{
		"Name": "api", "Port": 9090, "Check": map[string]any{"CheckID": "api-ttl", "TTL": "10m", "Status": "critical"}}, nil)
	webToken := makeToken(t, s, "web-only", `service "web" { policy = "write" }`)

	passing := func(name string) []string {
		t.Helper()
		var entries []struct{ Node struct{ Node string } }
		mustCall(t, s, mgmtSecret, "GET", "/v1/health/service/"+name+"?passing", nil, &entries)
		var out []string
		for _, e := range entries {
			out = append(out, e.Node.Node)
		}
		return out
	}
	nodeChecks := func() map[string]healthCheck {
		t.Helper()
		var list []healthCheck
		mustCall(t, s, mgmtSecret, "GET", "/v1/health/node/s1", nil, &list)
		out := make(map[string]healthCheck, len(list))
		for _, c := range list {
			out[c.CheckID] = c
		}
		return out
	}
	waittest.For(t, aclTestWait, "s1's gossip check, web and db passing, api out", func() error {
		if c, ok := nodeChecks()["serfHealth"]; !ok || c.Status != "passing" {
			return fmt.Errorf("serfHealth: %+v", c)
		}
		if len(passing("web")) != 1 || len(passing("db")) != 1 || len(passing("api")) != 0 {
			return fmt.Errorf("passing: web %v, db %v, api %v", passing("web"), passing("db"), passing("api"))
		}
		return nil
	})

	for _, tc := range []struct {
		name    string
		checkID string
		owner   string // the ServiceID the check must keep ("" for the node)
		setup   func()
		victim  string // a service kept out of answers by the check
	}{
		{name: "another service's check", checkID: "api-ttl", owner: "api", victim: "api"},
		{name: "the gossip check", checkID: "serfHealth", owner: ""},
		{name: "node maintenance", checkID: "_node_maintenance", owner: "", victim: "db",
			setup: func() { mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/maintenance?enable=true", nil, nil) }},
		{name: "another service's maintenance", checkID: "_service_maintenance:db", owner: "db", victim: "db",
			setup: func() { mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/maintenance/db?enable=true", nil, nil) }},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		for _, via := range []struct {
			endpoint string
			body     map[string]any
		}{
			{"/v1/agent/check/register", map[string]any{"ID": tc.checkID, "Name": "x", "ServiceID": "web", "TTL": "10m", "Status": "passing"}},
			{"/v1/catalog/register", map[string]any{"Node": "s1", "SkipNodeUpdate": true,
				"Checks": []map[string]any{{"CheckID": tc.checkID, "Name": "x", "ServiceID": "web", "Status": "passing"}}}},
		} {
			code, body := call(t, s, webToken, "PUT", via.endpoint, via.body)
			if code != http.StatusForbidden && code != http.StatusBadRequest {
				t.Errorf("%s through %s: got %d %s, want it refused", tc.name, via.endpoint, code, body)
			}
			if c, ok := nodeChecks()[tc.checkID]; !ok || c.ServiceID != tc.owner {
				t.Errorf("%s through %s: the catalog's %s is %+v, want it kept by %q", tc.name, via.endpoint, tc.checkID, c, tc.owner)
			}
			var local map[string]healthCheck
			mustCall(t, s, mgmtSecret, "GET", "/v1/agent/checks", nil, &local)
			if c, ok := local[tc.checkID]; ok && c.ServiceID != tc.owner {
				t.Errorf("%s through %s: the agent holds %s as %+v", tc.name, via.endpoint, tc.checkID, c)
			}
			if tc.victim != "" {
				if got := passing(tc.victim); len(got) != 0 {
					t.Errorf("%s through %s: %s is back in the answers on %v", tc.name, via.endpoint, tc.victim, got)
				}
			}
		}
	}
	if c := nodeChecks()["serfHealth"]; c.Status != "passing" {
		t.Errorf("serfHealth after the attacks: %+v", c)
	}
	// The owners themselves still may.
	mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/maintenance?enable=false", nil, nil)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/maintenance/db?enable=false", nil, nil)
	waittest.For(t, aclTestWait, "db back once out of maintenance", func() error {
		if got := passing("db"); !slices.Equal(got, []string{"s1"}) {
			return fmt.Errorf("db passing on %v", got)
		}
		return nil
	})
	mustCall(t, s, webToken, "PUT", "/v1/agent/check/register", map[string]any{"ID": "web-ttl", "Name": "web", "ServiceID": "web", "TTL": "10m"}, nil)
	if code, body := call(t, s, mgmtSecret, "PUT", "/v1/agent/check/register", map[string]any{"ID": "serfHealth", "Name": "x", "TTL": "10m"}); code != http.StatusBadRequest || !strings.Contains(string(body), "reserved") {
		t.Errorf("serfHealth through the agent with the management token: got %d %s, want 400 naming it reserved", code, body)
	}
}
