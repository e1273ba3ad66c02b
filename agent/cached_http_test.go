package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
)

// TestHTTPCachedReads: ?cached service reads come from the agent's cache,
// MISS the first time and HIT after, with Consul's X-Cache and Age
// headers; reads without it carry no such header.
func TestHTTPCachedReads(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	if err := client(t, a).Agent().ServiceRegister(context.Background(), &api.AgentServiceRegistration{Name: "web", Port: 8080}); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (*http.Response, []map[string]any) {
		t.Helper()
		resp, err := http.Get("http://" + a.HTTPAddr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body []map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp, body
	}
	for _, step := range []struct{ path, want string }{
		{"/v1/health/service/web?cached", "MISS"},
		{"/v1/health/service/web?cached", "HIT"},
		{"/v1/catalog/service/web?cached", "HIT"}, // the entry the health read filled
	} {
		resp, body := get(step.path)
		if got := resp.Header.Get("X-Cache"); got != step.want {
			t.Errorf("GET %s: X-Cache %q, want %q", step.path, got, step.want)
		}
		if resp.Header.Get("Age") != "0" || resp.Header.Get("X-Consul-Index") == "" || len(body) != 1 {
			t.Errorf("GET %s: Age %q, index %q, %d entries; want 0, an index, 1 entry",
				step.path, resp.Header.Get("Age"), resp.Header.Get("X-Consul-Index"), len(body))
		}
	}
	resp, _ := get("/v1/health/service/web")
	if got := resp.Header.Get("X-Cache"); got != "" {
		t.Errorf("uncached read: X-Cache %q, want none", got)
	}
}
