package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairndns/cairn/api"
)

func registerAgent(t *testing.T) *fakeAgent {
	return newFakeAgent(t, map[string]answer{"PUT /v1/agent/service/register": {}})
}

func TestRegisterWithFlags(t *testing.T) {
	agent := registerAgent(t)
	stdout, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL,
		"-name", "web", "-id", "web-1", "-port", "8080", "-address", "10.0.0.5",
		"-tag", "v1", "-tag", "a,b", "-meta", "version=1.2", "-meta", "hosts=a,b", "-meta", "empty=",
		"-meta", "eq=x=y", "-weight-passing", "5")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if stdout != "Registered service: web\n" {
		t.Errorf("got stdout %q, want %q", stdout, "Registered service: web\n")
	}
	got := bodyMap(t, agent.only(t, "PUT", "/v1/agent/service/register").Body)
	want := map[string]any{
		"ID": "web-1", "Name": "web", "Port": float64(8080), "Address": "10.0.0.5",
		"Tags": []any{"v1", "a,b"},
		"Meta": map[string]any{"version": "1.2", "hosts": "a,b", "empty": "", "eq": "x=y"},
		// An unset weight keeps the default, 1.
		"Weights": map[string]any{"Passing": float64(5), "Warning": float64(1)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("agent got body\n%v\nwant\n%v", got, want)
	}
}

func TestRegisterMinimal(t *testing.T) {
	agent := registerAgent(t)
	if _, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, "-name", "web"); code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if got := string(agent.only(t, "PUT", "/v1/agent/service/register").Body); got != `{"Name":"web"}` {
		t.Errorf("agent got body %s, want {\"Name\":\"web\"}", got)
	}
}

func TestRegisterMetaErrors(t *testing.T) {
	agent := registerAgent(t)
	for _, tc := range []struct {
		meta []string
		want string
	}{
		{[]string{"novalue"}, `-meta "novalue": want key=value`},
		{[]string{"=v"}, `-meta "=v": want key=value`},
		{[]string{"k=1", "k=2"}, `key "k" given twice`},
	} {
		args := []string{"services", "register", "-http-addr", agent.URL, "-name", "web"}
		for _, m := range tc.meta {
			args = append(args, "-meta", m)
		}
		_, stderr, code := runCLI(t, args...)
		wantUsage(t, stderr, code, tc.want)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

// The files below all describe the same service.
var serviceFiles = map[string]string{
	"bare.json": `{"ID": "web-1", "Name": "web", "Port": 8080, "Tags": ["v1", "v2"],
		"Address": "10.0.0.5", "Meta": {"version": "1.2"}, "Weights": {"Passing": 5, "Warning": 1}}`,
	"consul.json": `{"service": {"id": "web-1", "name": "web", "port": 8080, "tags": ["v1", "v2"],
		"address": "10.0.0.5", "meta": {"version": "1.2"}, "weights": {"passing": 5, "warning": 1}}}`,
	"bare.hcl": `
ID      = "web-1"
Name    = "web"
Port    = 8080
Tags    = ["v1", "v2"]
Address = "10.0.0.5"
Meta    = { version = "1.2" }
Weights = { Passing = 5, Warning = 1 }
`,
	"consul.hcl": `
service {
  id      = "web-1"
  name    = "web"
  port    = 8080
  tags    = ["v1", "v2"]
  address = "10.0.0.5"
  meta {
    version = "1.2"
  }
  weights {
    passing = 5
    warning = 1
  }
}
`,
	"consul-assign.hcl": `service = {
  id = "web-1"
  name = "web"
  port = 8080
  tags = ["v1", "v2"]
  address = "10.0.0.5"
  meta = { version = "1.2" }
  weights = { passing = 5, warning = 1 }
}`,
}

func TestRegisterFromFile(t *testing.T) {
	want := api.AgentServiceRegistration{
		ID: "web-1", Name: "web", Port: 8080, Tags: []string{"v1", "v2"}, Address: "10.0.0.5",
		Meta: map[string]string{"version": "1.2"}, Weights: &api.AgentWeights{Passing: 5, Warning: 1},
	}
	for name, content := range serviceFiles {
		t.Run(name, func(t *testing.T) {
			agent := registerAgent(t)
			stdout, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, writeFile(t, name, content))
			if code != 0 {
				t.Fatalf("got exit code %d, stderr %q", code, stderr)
			}
			if stdout != "Registered service: web\n" {
				t.Errorf("got stdout %q", stdout)
			}
			var got api.AgentServiceRegistration
			if err := json.Unmarshal(agent.only(t, "PUT", "/v1/agent/service/register").Body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("agent got %+v (weights %+v), want %+v", got, got.Weights, want)
			}
		})
	}
}

func TestRegisterFileErrors(t *testing.T) {
	agent := registerAgent(t)
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"bogus.json", `{"service": {"name": "web", "bogus": {"ttl": "10s"}}}`, []string{"bogus.json", `unknown key "bogus"`}},
		{"checkkey.json", `{"service": {"name": "web", "check": {"ttl": "10s", "ttl_seconds": 3}}}`, []string{`unknown key "ttl_seconds" in "check"`}},
		{"checkskey.hcl", "name = \"web\"\nchecks = [{ ttl = \"10s\" }, { tcp = \"x:1\", intervall = \"1s\" }]", []string{`unknown key "intervall" in "checks[1]"`}},
		{"checkdup.json", `{"name": "web", "check": {"id": "a", "CheckID": "b", "ttl": "1s"}}`, []string{`both set CheckID`}},
		{"checklist.json", `{"name": "web", "check": [{"ttl": "1s"}, {"ttl": "2s"}]}`, []string{`(use "checks" for several)`}},
		{"checktype.json", `{"name": "web", "check": {"ttl": 10}}`, []string{"Check.TTL: got a number, want a string"}},
		{"weights.hcl", `name = "web"` + "\nweights { passing = 1\n critical = 2 }", []string{`unknown key "critical" in "weights"`}},
		{"many.json", `{"services": [{"name": "a"}, {"name": "b"}]}`, []string{"one service per file"}},
		{"two.hcl", "service { name = \"a\" }\nservice { name = \"b\" }", []string{"exactly one service"}},
		{"mixed.json", `{"service": {"name": "web"}, "port": 1}`, []string{`put every key inside "service"`}},
		{"noname.json", `{"Port": 8080}`, []string{`missing key "name"`}},
		{"port.json", `{"Name": "web", "Port": "8080"}`, []string{"Port: got a string, want a number"}},
		{"dup.json", `{"Name": "web", "name": "web2"}`, []string{"given twice"}},
		{"syntax.json", `{"Name": "web",}`, []string{"syntax.json", "parse JSON"}},
		{"syntax.hcl", `name = "web`, []string{"syntax.hcl", "parse HCL"}},
		{"empty.hcl", ``, []string{"holds no service"}},
	} {
		_, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, writeFile(t, tc.name, tc.content))
		wantError(t, stderr, code, tc.want...)
	}
	_, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, "/nonexistent/web.json")
	wantError(t, stderr, code, "/nonexistent/web.json")
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestRegisterUsageErrors(t *testing.T) {
	agent := registerAgent(t)
	file := writeFile(t, "web.json", serviceFiles["bare.json"])
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"missing -name", "FILE", "cairn services register -h"}},
		{[]string{"-port", "80"}, []string{"missing -name"}},
		{[]string{"-name", "web", file}, []string{"either FILE or -name", "not both"}},
		{[]string{"-tag", "v1", file}, []string{"either FILE or -tag"}},
		{[]string{file, "-name", "web"}, []string{"either FILE or -name", "not both"}},
		{[]string{file, "-nope"}, []string{`unknown flag "-nope" after FILE`}},
		{[]string{file, file}, []string{"at most one FILE"}},
	} {
		args := append([]string{"services", "register", "-http-addr", agent.URL}, tc.args...)
		_, stderr, code := runCLI(t, args...)
		wantUsage(t, stderr, code, tc.want...)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestRegisterRejectedByAgent(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/service/register": {status: 400,
		body: `{"error": "Port: must be between 0 and 65535, got 70000", "field": "Port",
			"reason": "must be between 0 and 65535, got 70000"}`}})
	stdout, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, "-name", "web", "-port", "70000")
	want := `Error: register service "web": agent returned 400: Port: must be between 0 and 65535, got 70000` + "\n"
	if code != 1 || stderr != want || stdout != "" {
		t.Errorf("got code %d, stdout %q, stderr %q; want code 1, stderr %q", code, stdout, stderr, want)
	}
}

func TestDeregister(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/service/deregister/web%201": {},
		"PUT /v1/agent/service/deregister/web-1":   {},
		"PUT /v1/agent/service/deregister/web":     {},
	})
	for _, tc := range []struct {
		args       []string
		path, want string
	}{
		{[]string{"-id", "web 1"}, "/v1/agent/service/deregister/web%201", "web 1"},
		{[]string{writeFile(t, "id.json", serviceFiles["consul.json"])}, "/v1/agent/service/deregister/web-1", "web-1"},
		{[]string{writeFile(t, "name.hcl", `service { name = "web" }`)}, "/v1/agent/service/deregister/web", "web"},
	} {
		agent.reset()
		args := append([]string{"services", "deregister", "-http-addr", agent.URL}, tc.args...)
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: got exit code %d, stderr %q", tc.args, code, stderr)
		}
		if want := "Deregistered service: " + tc.want + "\n"; stdout != want {
			t.Errorf("%v: got stdout %q, want %q", tc.args, stdout, want)
		}
		agent.only(t, "PUT", tc.path)
	}
}

func TestDeregisterErrors(t *testing.T) {
	agent := newFakeAgent(t, nil) // every request gets a 404
	file := writeFile(t, "web.json", serviceFiles["bare.json"])
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{nil, exitUsage, []string{"missing -id", "cairn services deregister -h"}},
		{[]string{"-id", "web", file}, exitUsage, []string{"either -id or FILE"}},
		{[]string{"-id", "gone"}, exitError, []string{`deregister service "gone": agent returned 404: no such endpoint`}},
	} {
		args := append([]string{"services", "deregister", "-http-addr", agent.URL}, tc.args...)
		_, stderr, code := runCLI(t, args...)
		wantExit(t, stderr, code, tc.code, tc.want...)
	}
}

func TestServicesList(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/agent/services": {body: `{
		"web-2": {"ID": "web-2", "Service": "web", "Address": "10.0.0.6", "Port": 8081, "Tags": ["v2"]},
		"db": {"ID": "db", "Service": "postgres", "Port": 5432},
		"web-1": {"ID": "web-1", "Service": "web", "Address": "10.0.0.5", "Port": 8080, "Tags": ["v1", "primary"]}}`}})
	stdout, stderr, code := runCLI(t, "services", "list", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	want := [][]string{
		{"ID", "Name", "Address", "Port", "Tags"},
		{"db", "postgres", "5432"},
		{"web-1", "web", "10.0.0.5", "8080", "v1,primary"},
		{"web-2", "web", "10.0.0.6", "8081", "v2"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), stdout)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); !reflect.DeepEqual(got, w) {
			t.Errorf("line %d: got %q, want fields %q", i, lines[i], w)
		}
	}
	// Aligned: every column starts at the same offset on every line.
	if col := strings.Index(lines[0], "Port"); strings.Index(lines[2], "8080") != col || strings.Index(lines[1], "5432") != col {
		t.Errorf("columns are not aligned:\n%s", stdout)
	}
	agent.only(t, "GET", "/v1/agent/services")
}
