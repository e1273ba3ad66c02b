package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cairndns/cairn/api"
)

func TestServiceRegisterWithChecks(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	reg := &api.AgentServiceRegistration{
		Name: "web", Port: 8080,
		Check: &api.AgentServiceCheck{
			HTTP: "http://localhost:8080/health", Method: "HEAD",
			Header:   map[string][]string{"X-Probe": {"1"}},
			Interval: "10s", Timeout: "2s", TLSSkipVerify: true,
			DeregisterCriticalServiceAfter: "90m", SuccessBeforePassing: 2,
		},
		Checks: api.AgentServiceChecks{
			{CheckID: "web-ttl", TTL: "30s", Status: api.HealthPassing},
			{Args: []string{"/bin/check", "-q"}, Interval: "1m"},
		},
	}
	if err := c.Agent().ServiceRegister(context.Background(), reg); err != nil {
		t.Fatalf("ServiceRegister: %v", err)
	}
	got := only(t, seen)
	checkRequest(t, got, "PUT", "/v1/agent/service/register", "")
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatalf("body %s: %v", got.Body, err)
	}
	want := map[string]any{
		"Name": "web", "Port": 8080.0,
		"Check": map[string]any{
			"HTTP": "http://localhost:8080/health", "Method": "HEAD",
			"Header": map[string]any{"X-Probe": []any{"1"}}, "Interval": "10s", "Timeout": "2s",
			"TLSSkipVerify": true, "DeregisterCriticalServiceAfter": "90m", "SuccessBeforePassing": 2.0,
		},
		"Checks": []any{
			map[string]any{"CheckID": "web-ttl", "TTL": "30s", "Status": "passing"},
			map[string]any{"Args": []any{"/bin/check", "-q"}, "Interval": "1m"},
		},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("got body %s, want %v", got.Body, want)
	}
}

func TestCheckRegister(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	reg := &api.AgentCheckRegistration{
		ID: "mem", Name: "Memory", Notes: "free memory", ServiceID: "web",
		AgentServiceCheck: api.AgentServiceCheck{TTL: "15s", Status: api.HealthWarning},
	}
	if err := c.Agent().CheckRegister(context.Background(), reg); err != nil {
		t.Fatalf("CheckRegister: %v", err)
	}
	got := only(t, seen)
	checkRequest(t, got, "PUT", "/v1/agent/check/register", "")
	want := `{"ID":"mem","Name":"Memory","Notes":"free memory","ServiceID":"web","Status":"warning","TTL":"15s"}`
	if string(got.Body) != want {
		t.Errorf("got body %s, want %s", got.Body, want)
	}
	if err := c.Agent().CheckRegister(context.Background(), nil); err == nil {
		t.Error("CheckRegister(nil): got no error, want one")
	}
}

func TestCheckPathsAreEscaped(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		call        func(*api.Agent) error
		path, query string
	}{
		{"deregister", func(a *api.Agent) error { return a.CheckDeregister(ctx, "service:web 1") },
			"/v1/agent/check/deregister/service:web%201", ""},
		{"pass with note", func(a *api.Agent) error { return a.PassTTL(ctx, "service:web", "all good & fine") },
			"/v1/agent/check/pass/service:web", "note=all+good+%26+fine"},
		{"pass without note", func(a *api.Agent) error { return a.PassTTL(ctx, "ttl", "") },
			"/v1/agent/check/pass/ttl", ""},
		{"warn", func(a *api.Agent) error { return a.WarnTTL(ctx, "a/b", "slow") },
			"/v1/agent/check/warn/a%2Fb", "note=slow"},
		{"fail", func(a *api.Agent) error { return a.FailTTL(ctx, "ttl", "down") },
			"/v1/agent/check/fail/ttl", "note=down"},
		{"service maintenance on", func(a *api.Agent) error { return a.EnableServiceMaintenance(ctx, "web 1", "deploy") },
			"/v1/agent/service/maintenance/web%201", "enable=true&reason=deploy"},
		{"service maintenance on without reason", func(a *api.Agent) error { return a.EnableServiceMaintenance(ctx, "web", "") },
			"/v1/agent/service/maintenance/web", "enable=true"},
		{"service maintenance off", func(a *api.Agent) error { return a.DisableServiceMaintenance(ctx, "web") },
			"/v1/agent/service/maintenance/web", "enable=false"},
		{"node maintenance on", func(a *api.Agent) error { return a.EnableNodeMaintenance(ctx, "kernel upgrade") },
			"/v1/agent/maintenance", "enable=true&reason=kernel+upgrade"},
		{"node maintenance off", func(a *api.Agent) error { return a.DisableNodeMaintenance(ctx) },
			"/v1/agent/maintenance", "enable=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, seen := fakeAgent(t, reply{})
			if err := tc.call(c.Agent()); err != nil {
				t.Fatalf("got error %v", err)
			}
			got := only(t, seen)
			checkRequest(t, got, "PUT", tc.path, tc.query)
			if len(got.Body) != 0 {
				t.Errorf("got body %q, want none", got.Body)
			}
		})
	}
}

func TestEmptyIDsAreRefused(t *testing.T) {
	ctx := context.Background()
	c, seen := fakeAgent(t, reply{})
	a := c.Agent()
	for name, err := range map[string]error{
		"CheckDeregister":           a.CheckDeregister(ctx, ""),
		"PassTTL":                   a.PassTTL(ctx, "", "x"),
		"WarnTTL":                   a.WarnTTL(ctx, "", ""),
		"FailTTL":                   a.FailTTL(ctx, "", ""),
		"UpdateTTL":                 a.UpdateTTL(ctx, "", "", api.HealthPassing),
		"EnableServiceMaintenance":  a.EnableServiceMaintenance(ctx, "", "r"),
		"DisableServiceMaintenance": a.DisableServiceMaintenance(ctx, ""),
	} {
		if err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("%s with an empty ID: got error %v, want one saying it is empty", name, err)
		}
	}
	if _, _, err := c.Health().Node(ctx, ""); err == nil {
		t.Error("Health().Node(\"\"): got no error, want one")
	}
	if _, _, err := c.Health().Checks(ctx, ""); err == nil {
		t.Error("Health().Checks(\"\"): got no error, want one")
	}
	if n := len(seen()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestUpdateTTL(t *testing.T) {
	for _, tc := range []struct{ status, want string }{
		{"passing", "passing"}, {"pass", "passing"},
		{"warning", "warning"}, {"warn", "warning"},
		{"critical", "critical"}, {"fail", "critical"},
	} {
		c, seen := fakeAgent(t, reply{})
		if err := c.Agent().UpdateTTL(context.Background(), "service:web", "load 0.3", tc.status); err != nil {
			t.Fatalf("UpdateTTL(%q): %v", tc.status, err)
		}
		got := only(t, seen)
		checkRequest(t, got, "PUT", "/v1/agent/check/update/service:web", "")
		if want := `{"Status":"` + tc.want + `","Output":"load 0.3"}`; string(got.Body) != want {
			t.Errorf("UpdateTTL(%q): got body %s, want %s", tc.status, got.Body, want)
		}
	}
	c, seen := fakeAgent(t, reply{})
	for _, bad := range []string{"", "maintenance", "ok", "PASSING"} {
		if err := c.Agent().UpdateTTL(context.Background(), "ttl", "", bad); err == nil || !strings.Contains(err.Error(), "status") {
			t.Errorf("UpdateTTL(status %q): got error %v, want one about the status", bad, err)
		}
	}
	if n := len(seen()); n != 0 {
		t.Errorf("agent saw %d requests for bad statuses, want none", n)
	}
}

func TestUpdateTTLUnknownCheck(t *testing.T) {
	c, _ := fakeAgent(t, reply{Status: 404, Body: `{"error": "check \"nope\": unknown check"}`})
	err := c.Agent().UpdateTTL(context.Background(), "nope", "", api.HealthPassing)
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 404 {
		t.Errorf("got error %v, want a *StatusError with code 404", err)
	}
}

func TestAgentChecks(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `{
		"service:web": {"Node": "n1", "CheckID": "service:web", "Name": "Service 'web' check",
			"Status": "passing", "Notes": "", "Output": "HTTP GET: 200 OK", "ServiceID": "web",
			"ServiceName": "web", "ServiceTags": ["v1"], "Type": "http"},
		"mem": {"Node": "n1", "CheckID": "mem", "Name": "Memory", "Status": "warning",
			"ServiceTags": [], "Type": "ttl"}}`})
	got, err := c.Agent().Checks(context.Background())
	if err != nil {
		t.Fatalf("Checks: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/agent/checks", "")
	want := map[string]*api.AgentCheck{
		"service:web": {Node: "n1", CheckID: "service:web", Name: "Service 'web' check", Status: "passing",
			Output: "HTTP GET: 200 OK", ServiceID: "web", ServiceName: "web", ServiceTags: []string{"v1"}, Type: "http"},
		"mem": {Node: "n1", CheckID: "mem", Name: "Memory", Status: "warning", ServiceTags: []string{}, Type: "ttl"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v / %+v, want %+v / %+v", got["service:web"], got["mem"], want["service:web"], want["mem"])
	}

	c, _ = fakeAgent(t, reply{Body: `null`})
	if got, err := c.Agent().Checks(context.Background()); err != nil || got == nil || len(got) != 0 {
		t.Errorf("for null: got %v, %v; want an empty map", got, err)
	}
}

func TestHealthChecksNodeState(t *testing.T) {
	body := `[{"Node": "n1", "CheckID": "serfHealth", "Name": "Serf Health Status", "Status": "passing",
		"Type": "gossip", "CreateIndex": 3, "ModifyIndex": 4},
		{"Node": "n1", "CheckID": "service:web", "Status": "critical", "ServiceID": "web",
		"ServiceName": "web", "Output": "connection refused", "Type": "http", "CreateIndex": 5, "ModifyIndex": 9}]`
	want := api.HealthChecks{
		{Node: "n1", CheckID: "serfHealth", Name: "Serf Health Status", Status: "passing", Type: "gossip",
			CreateIndex: 3, ModifyIndex: 4},
		{Node: "n1", CheckID: "service:web", Status: "critical", ServiceID: "web", ServiceName: "web",
			Output: "connection refused", Type: "http", CreateIndex: 5, ModifyIndex: 9},
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(*api.Health) (api.HealthChecks, *api.QueryMeta, error)
		path string
	}{
		{"node", func(h *api.Health) (api.HealthChecks, *api.QueryMeta, error) { return h.Node(ctx, "n 1") },
			"/v1/health/node/n%201"},
		{"checks", func(h *api.Health) (api.HealthChecks, *api.QueryMeta, error) { return h.Checks(ctx, "web") },
			"/v1/health/checks/web"},
		{"state any", func(h *api.Health) (api.HealthChecks, *api.QueryMeta, error) { return h.State(ctx, api.HealthAny) },
			"/v1/health/state/any"},
		{"state maintenance", func(h *api.Health) (api.HealthChecks, *api.QueryMeta, error) {
			return h.State(ctx, api.HealthMaintenance)
		}, "/v1/health/state/maintenance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, seen := fakeAgent(t, reply{Header: map[string]string{"X-Consul-Index": "12"}, Body: body})
			got, meta, err := tc.call(c.Health())
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			checkRequest(t, only(t, seen), "GET", tc.path, "")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if meta.LastIndex != 12 {
				t.Errorf("got LastIndex %d, want 12", meta.LastIndex)
			}
		})
	}
}

func TestHealthStateRefusesUnknownState(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `[]`})
	for _, state := range []string{"", "unknown", "Passing", "passing/x"} {
		if _, _, err := c.Health().State(context.Background(), state); err == nil || !strings.Contains(err.Error(), "want passing") {
			t.Errorf("State(%q): got error %v, want one listing the states", state, err)
		}
	}
	if n := len(seen()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestAggregatedStatus(t *testing.T) {
	check := func(status string) *api.HealthCheck { return &api.HealthCheck{Status: status} }
	for _, tc := range []struct {
		checks api.HealthChecks
		want   string
	}{
		{nil, api.HealthPassing},
		{api.HealthChecks{check("passing"), check("passing")}, api.HealthPassing},
		{api.HealthChecks{check("passing"), check("warning")}, api.HealthWarning},
		{api.HealthChecks{check("critical"), check("warning"), nil}, api.HealthCritical},
		{api.HealthChecks{check("warning"), check("bogus")}, api.HealthCritical},
		{api.HealthChecks{check("critical"), check("maintenance"), check("passing")}, api.HealthMaintenance},
	} {
		if got := tc.checks.AggregatedStatus(); got != tc.want {
			var states []string
			for _, c := range tc.checks {
				if c != nil {
					states = append(states, c.Status)
				}
			}
			t.Errorf("AggregatedStatus of %v: got %q, want %q", states, got, tc.want)
		}
	}
}
