package main

import (
	"testing"
)

func TestCatalogServices(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/catalog/services": {
		body: `{"web": ["v2", "v1"], "consul": [], "db": ["primary"]}`}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "consul\ndb\nweb\n"},
		{[]string{"-tags"}, "consul\ndb      primary\nweb     v1,v2\n"},
	} {
		args := append([]string{"catalog", "services", "-http-addr", agent.URL}, tc.args...)
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: got exit code %d, stderr %q", tc.args, code, stderr)
		}
		if stdout != tc.want {
			t.Errorf("%v: got\n%q\nwant\n%q", tc.args, stdout, tc.want)
		}
	}
}

func TestCatalogNodes(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/catalog/nodes": {body: `[
		{"Node": "zeta", "Address": "10.0.0.9", "Datacenter": "dc1"},
		{"Node": "alpha-long-name", "Address": "10.0.0.1", "Datacenter": "dc1"}]`}})
	stdout, stderr, code := runCLI(t, "catalog", "nodes", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	want := "Node             Address   DC\n" +
		"alpha-long-name  10.0.0.1  dc1\n" +
		"zeta             10.0.0.9  dc1\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	agent.only(t, "GET", "/v1/catalog/nodes")
}

func TestCatalogDatacenters(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/catalog/datacenters": {body: `["dc1", "dc2", "eu-west"]`}})
	stdout, stderr, code := runCLI(t, "catalog", "datacenters", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "dc1\ndc2\neu-west\n"; stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	agent.only(t, "GET", "/v1/catalog/datacenters")
}
