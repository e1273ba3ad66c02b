package agent_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestARefusalStoresNothing plays writes that a client agent lets through
// (its own config has ACLs off) and the servers refuse: a check, a
// service, node maintenance, and a deregistration of a service the agent
// holds. Each is answered 403 and leaves the agent as it was, also once
// it restarts from its data dir.
func TestARefusalStoresNothing(t *testing.T) {
	t.Parallel()
	scfg := aclServerConfig(t, "s1")
	s := agenttest.Start(t, scfg)
	waitManagement(t, s)
	ccfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg))
	c := agenttest.Start(t, ccfg)
	waittest.For(t, aclTestWait, "c1's web registered with the management token", func() error {
		if code, body := call(t, c, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}); code != http.StatusOK {
			return fmt.Errorf("register: %d %s", code, body)
		}
		return nil
	})

	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/v1/agent/check/register", map[string]any{"ID": "mine", "Name": "mine", "TTL": "10m"}},
		{"PUT", "/v1/agent/service/register", map[string]any{"Name": "db", "Port": 5432}},
		{"PUT", "/v1/agent/maintenance?enable=true", nil},
		{"PUT", "/v1/agent/service/deregister/web", nil},
	} {
		if code, body := call(t, c, "", w.method, w.path, w.body); code != http.StatusForbidden {
			t.Errorf("anonymous %s %s: got %d %s, want 403", w.method, w.path, code, body)
		}
	}
	unchanged := func(when string) {
		t.Helper()
		var services map[string]struct{ Service string }
		mustCall(t, c, mgmtSecret, "GET", "/v1/agent/services", nil, &services)
		if _, ok := services["web"]; len(services) != 1 || !ok {
			t.Errorf("%s: the agent's services are %v, want web only", when, services)
		}
		var checks map[string]healthCheck
		mustCall(t, c, mgmtSecret, "GET", "/v1/agent/checks", nil, &checks)
		if len(checks) != 0 {
			t.Errorf("%s: the agent holds the checks %v, want none", when, checks)
		}
	}
	unchanged("after the refusals")

	if err := agent.Crash(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	c = agenttest.Start(t, ccfg)
	unchanged("after a restart from the data dir")
}
