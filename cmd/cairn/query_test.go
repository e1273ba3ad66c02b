package main

import (
	"reflect"
	"testing"
)

func TestQueryCreate(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"POST /v1/query": {body: `{"ID": "8f246b77-f3e1-ff88-5b48-8ec93abf3e05"}`}})
	stdout, stderr, code := runCLI(t, "query", "create", "-http-addr", agent.URL, "-name", "web-nearest",
		"-service", "web", "-tag", "v1", "-tag", "!canary", "-only-passing", "-nearest", "2", "-failover-dc", "dc3", "-ttl", "10s")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if stdout != "8f246b77-f3e1-ff88-5b48-8ec93abf3e05\n" {
		t.Errorf("got stdout %q, want the ID", stdout)
	}
	got := bodyMap(t, agent.only(t, "POST", "/v1/query").Body)
	want := map[string]any{
		"Name": "web-nearest",
		"Service": map[string]any{
			"Service": "web", "Tags": []any{"v1", "!canary"}, "OnlyPassing": true,
			"Failover": map[string]any{"NearestN": float64(2), "Datacenters": []any{"dc3"}},
		},
		"DNS": map[string]any{"TTL": "10s"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body:\n got %v\nwant %v", got, want)
	}
}

func TestQueryCreateRefused(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"POST /v1/query": {status: 400, body: `{"error": "Service.Failover.NearestN: must not be negative, got -1",
		"field": "Service.Failover.NearestN", "reason": "must not be negative, got -1"}`}})
	_, stderr, code := runCLI(t, "query", "create", "-http-addr", agent.URL, "-service", "web", "-nearest", "-1")
	wantError(t, stderr, code, "Service.Failover.NearestN")
}

func TestQueryListAndExecute(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"GET /v1/query": {body: `[{"ID": "8f246b77-f3e1-ff88-5b48-8ec93abf3e05", "Name": "web-nearest",
			"Service": {"Service": "web", "Failover": {"NearestN": 2, "Datacenters": ["dc3"]}}, "DNS": {}}]`},
		"GET /v1/query/web-nearest/execute": {body: `{"Service": "web", "Datacenter": "dc2", "Failovers": 1, "DNS": {},
			"Nodes": [{"Node": {"Node": "n9", "Address": "10.2.0.9"}, "Service": {"ID": "web", "Service": "web", "Port": 80}, "Checks": []}]}`},
	})
	stdout, stderr, code := runCLI(t, "query", "list", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("list: got exit code %d, stderr %q", code, stderr)
	}
	want := "ID                                    Name         Service  Failover\n" +
		"8f246b77-f3e1-ff88-5b48-8ec93abf3e05  web-nearest  web      nearest 2,dc3\n"
	if stdout != want {
		t.Errorf("list: got\n%s\nwant\n%s", stdout, want)
	}
	agent.reset()
	stdout, stderr, code = runCLI(t, "query", "execute", "-http-addr", agent.URL, "-dc", "dc1", "web-nearest")
	if code != 0 {
		t.Fatalf("execute: got exit code %d, stderr %q", code, stderr)
	}
	want = "Node  Address   Port  DC\nn9    10.2.0.9  80    dc2\n1 instance(s) of web from dc2 after 1 failover(s)\n"
	if stdout != want {
		t.Errorf("execute: got\n%s\nwant\n%s", stdout, want)
	}
	if req := agent.only(t, "GET", "/v1/query/web-nearest/execute"); req.Query != "dc=dc1" {
		t.Errorf("execute: got query %q, want dc=dc1", req.Query)
	}
	_, stderr, code = runCLI(t, "query", "delete", "-http-addr", agent.URL)
	wantUsage(t, stderr, code, "exactly one query ID")
}
