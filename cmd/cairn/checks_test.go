package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairndns/cairn/api"
)

func TestRegisterWithCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[string]any
	}{
		{"http", []string{"-check-http", "http://127.0.0.1:8080/health", "-check-interval", "10s", "-check-timeout", "2s"},
			map[string]any{"HTTP": "http://127.0.0.1:8080/health", "Interval": "10s", "Timeout": "2s"}},
		{"tcp with every option", []string{"-check-tcp", "127.0.0.1:5432", "-check-interval", "1m30s",
			"-check-status", "passing", "-check-deregister-after", "90m"},
			map[string]any{"TCP": "127.0.0.1:5432", "Interval": "1m30s", "Status": "passing", "DeregisterCriticalServiceAfter": "90m"}},
		{"udp", []string{"-check-udp", "127.0.0.1:53", "-check-interval", "5s"},
			map[string]any{"UDP": "127.0.0.1:53", "Interval": "5s"}},
		{"grpc", []string{"-check-grpc", "127.0.0.1:9000/web", "-check-interval", "5s"},
			map[string]any{"GRPC": "127.0.0.1:9000/web", "Interval": "5s"}},
		{"ttl", []string{"-check-ttl", "30s"}, map[string]any{"TTL": "30s"}},
		{"args keep commas and spaces", []string{"-check-args", "/usr/bin/check", "-check-args", "--hosts=a,b",
			"-check-args", "two words", "-check-interval", "1m"},
			map[string]any{"Args": []any{"/usr/bin/check", "--hosts=a,b", "two words"}, "Interval": "1m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := registerAgent(t)
			args := append([]string{"services", "register", "-http-addr", agent.URL, "-name", "web", "-port", "8080"}, tc.flags...)
			stdout, stderr, code := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("got exit code %d, stderr %q", code, stderr)
			}
			if stdout != "Registered service: web\n" {
				t.Errorf("got stdout %q", stdout)
			}
			got := bodyMap(t, agent.only(t, "PUT", "/v1/agent/service/register").Body)
			want := map[string]any{"Name": "web", "Port": 8080.0, "Check": tc.want}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("agent got body\n%v\nwant\n%v", got, want)
			}
		})
	}
}

func TestRegisterCheckFlagErrors(t *testing.T) {
	agent := registerAgent(t)
	file := writeFile(t, "web.json", serviceFiles["bare.json"])
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-name", "web", "-check-http", "http://x/", "-check-tcp", "x:1"},
			[]string{"give one check, not -check-http and -check-tcp", `"checks"`}},
		{[]string{"-name", "web", "-check-interval", "10s"}, []string{"-check-interval needs a check", "-check-http"}},
		{[]string{"-name", "web", "-check-status", "passing"}, []string{"-check-status needs a check"}},
		{[]string{"-name", "web", "-check-ttl", "soon"}, []string{`-check-ttl "soon"`, "duration"}},
		{[]string{"-name", "web", "-check-ttl", "0s"}, []string{`-check-ttl "0s"`, "positive"}},
		{[]string{"-name", "web", "-check-tcp", "x:1", "-check-interval", "10"}, []string{`-check-interval "10"`}},
		{[]string{"-name", "web", "-check-http", "http://x/", "-check-interval", "1s", "-check-timeout", "-1s"},
			[]string{`-check-timeout "-1s"`}},
		{[]string{"-name", "web", "-check-ttl", "10s", "-check-status", "ok"}, []string{`-check-status "ok"`, "passing, warning or critical"}},
		{[]string{"-name", "web", "-check-http", "", "-check-interval", "1s"}, []string{"-check-http is empty"}},
		{[]string{"-name", "web", "-check-args", "", "-check-interval", "1s"}, []string{"-check-args", "program"}},
		{[]string{"-check-ttl", "10s", file}, []string{"either FILE or -check-ttl"}},
	} {
		args := append([]string{"services", "register", "-http-addr", agent.URL}, tc.args...)
		_, stderr, code := runCLI(t, args...)
		wantUsage(t, stderr, code, tc.want...)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestRegisterCheckRejectedByAgent(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/service/register": {status: 400,
		body: `{"error": "Check.Args: script checks are disabled on this agent", "field": "Check.Args",
			"reason": "script checks are disabled on this agent"}`}})
	_, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, "-name", "web",
		"-check-args", "/bin/true", "-check-interval", "10s")
	wantError(t, stderr, code, `register service "web": agent returned 400: Check.Args: script checks are disabled`)
}

// checkFiles all describe web with the same three checks.
var checkFiles = map[string]string{
	"consul.json": `{"service": {"name": "web", "port": 8080,
		"check": {"id": "web-http", "http": "http://localhost:8080/health", "method": "HEAD",
			"header": {"X-Probe": ["1"]}, "tls_skip_verify": true, "interval": "10s", "timeout": "2s",
			"deregister_critical_service_after": "90m", "success_before_passing": 2},
		"checks": [
			{"ttl": "30s", "status": "passing", "notes": "reported by web"},
			{"args": ["/usr/bin/check", "-q"], "interval": "1m", "failures_before_critical": 3}]}}`,
	"bare.json": `{"Name": "web", "Port": 8080,
		"Check": {"CheckID": "web-http", "HTTP": "http://localhost:8080/health", "Method": "HEAD",
			"Header": {"X-Probe": ["1"]}, "TLSSkipVerify": true, "Interval": "10s", "Timeout": "2s",
			"DeregisterCriticalServiceAfter": "90m", "SuccessBeforePassing": 2},
		"Checks": [
			{"TTL": "30s", "Status": "passing", "Notes": "reported by web"},
			{"ScriptArgs": ["/usr/bin/check", "-q"], "Interval": "1m", "FailuresBeforeCritical": 3}]}`,
	"consul.hcl": `
service {
  name = "web"
  port = 8080
  check {
    id = "web-http"
    http = "http://localhost:8080/health"
    method = "HEAD"
    header = { X-Probe = ["1"] }
    tls_skip_verify = true
    interval = "10s"
    timeout = "2s"
    deregister_critical_service_after = "90m"
    success_before_passing = 2
  }
  checks = [
    { ttl = "30s", status = "passing", notes = "reported by web" },
    { args = ["/usr/bin/check", "-q"], interval = "1m", failures_before_critical = 3 },
  ]
}
`,
}

func TestRegisterFromFileWithChecks(t *testing.T) {
	want := api.AgentServiceRegistration{
		Name: "web", Port: 8080,
		Check: &api.AgentServiceCheck{
			CheckID: "web-http", HTTP: "http://localhost:8080/health", Method: "HEAD",
			Header: map[string][]string{"X-Probe": {"1"}}, TLSSkipVerify: true, Interval: "10s", Timeout: "2s",
			DeregisterCriticalServiceAfter: "90m", SuccessBeforePassing: 2,
		},
		Checks: api.AgentServiceChecks{
			{TTL: "30s", Status: "passing", Notes: "reported by web"},
			{Args: []string{"/usr/bin/check", "-q"}, Interval: "1m", FailuresBeforeCritical: 3},
		},
	}
	for name, content := range checkFiles {
		t.Run(name, func(t *testing.T) {
			agent := registerAgent(t)
			if _, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, writeFile(t, name, content)); code != 0 {
				t.Fatalf("got exit code %d, stderr %q", code, stderr)
			}
			var got api.AgentServiceRegistration
			if err := json.Unmarshal(agent.only(t, "PUT", "/v1/agent/service/register").Body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("agent got %+v\ncheck %+v\nchecks %+v %+v\nwant check %+v\nchecks %+v %+v",
					got, got.Check, got.Checks[0], got.Checks[1], want.Check, want.Checks[0], want.Checks[1])
			}
		})
	}
}

func TestRegisterFileWithOneHCLCheckInChecks(t *testing.T) {
	agent := registerAgent(t)
	file := writeFile(t, "one.hcl", "service {\n  name = \"web\"\n  checks = [{ ttl = \"5s\" }]\n}\n")
	if _, stderr, code := runCLI(t, "services", "register", "-http-addr", agent.URL, file); code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	got := bodyMap(t, agent.only(t, "PUT", "/v1/agent/service/register").Body)
	want := map[string]any{"Name": "web", "Checks": []any{map[string]any{"TTL": "5s"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("agent got %v, want %v", got, want)
	}
}

func TestChecksList(t *testing.T) {
	long := "HTTP GET http://localhost:8080/health: 503 Service Unavailable\nOutput: the database is down, retrying"
	agent := newFakeAgent(t, map[string]answer{"GET /v1/agent/checks": {body: `{
		"service:web": {"Node": "n1", "CheckID": "service:web", "Name": "Service 'web' check", "Status": "critical",
			"Output": ` + jsonString(long) + `, "ServiceID": "web", "ServiceName": "web", "Type": "http"},
		"mem": {"Node": "n1", "CheckID": "mem", "Name": "Memory", "Status": "passing", "Output": "ok", "Type": "ttl"},
		"_node_maintenance": {"Node": "n1", "CheckID": "_node_maintenance", "Name": "Node Maintenance Mode",
			"Status": "maintenance", "Notes": "kernel", "Type": "maintenance"}}`}})
	stdout, stderr, code := runCLI(t, "checks", "list", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), stdout)
	}
	for i, prefix := range []string{"CheckID ", "_node_maintenance ", "mem ", "service:web "} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d: got %q, want it to start with %q", i, lines[i], prefix)
		}
	}
	if col := strings.Index(lines[0], "Status"); strings.Index(lines[3], "critical") != col || strings.Index(lines[2], "passing") != col {
		t.Errorf("columns are not aligned:\n%s", stdout)
	}
	out := lines[3][strings.Index(lines[0], "Output"):]
	if want := "HTTP GET http://localhost:8080/health: 503 Service Unavaila…"; out != want {
		t.Errorf("got output column %q, want %q (one line, cut to %d runes)", out, want, outputWidth)
	}
	agent.only(t, "GET", "/v1/agent/checks")

	agent.reset()
	stdout, stderr, code = runCLI(t, "checks", "list", "-http-addr", agent.URL, "-format", "json")
	if code != 0 {
		t.Fatalf("json: got exit code %d, stderr %q", code, stderr)
	}
	var got []api.AgentCheck
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("json: %v in %s", err, stdout)
	}
	if len(got) != 3 || got[0].CheckID != "_node_maintenance" || got[2].Output != long || got[0].Notes != "kernel" {
		t.Errorf("json: got %+v, want the 3 checks sorted by ID with whole output", got)
	}

	_, stderr, code = runCLI(t, "checks", "list", "-http-addr", agent.URL, "-format", "yaml")
	wantUsage(t, stderr, code, `-format "yaml"`)
	_, stderr, code = runCLI(t, "checks", "list", "-http-addr", agent.URL, "extra")
	wantUsage(t, stderr, code, `unexpected argument "extra"`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestChecksTTL(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/check/pass/service:web":     {},
		"PUT /v1/agent/check/warn/service:web":     {},
		"PUT /v1/agent/check/fail/a%2Fb":           {},
		"PUT /v1/agent/check/pass/not-ttl":         {status: 400, body: `{"error": "CheckID: check \"not-ttl\": not a TTL check", "field": "CheckID", "reason": "check \"not-ttl\": not a TTL check"}`},
		"PUT /v1/agent/check/pass/service:web%201": {},
	})
	for _, tc := range []struct {
		args             []string
		path, query, out string
	}{
		{[]string{"pass", "-note", "all good", "service:web"}, "/v1/agent/check/pass/service:web", "note=all+good", "Check service:web: passing\n"},
		{[]string{"warn", "service:web"}, "/v1/agent/check/warn/service:web", "", "Check service:web: warning\n"},
		{[]string{"fail", "-note", "down", "a/b"}, "/v1/agent/check/fail/a%2Fb", "note=down", "Check a/b: critical\n"},
		{[]string{"pass", "service:web 1"}, "/v1/agent/check/pass/service:web%201", "", "Check service:web 1: passing\n"},
	} {
		agent.reset()
		args := append([]string{"checks", tc.args[0], "-http-addr", agent.URL}, tc.args[1:]...)
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: got exit code %d, stderr %q", tc.args, code, stderr)
		}
		if stdout != tc.out {
			t.Errorf("%v: got stdout %q, want %q", tc.args, stdout, tc.out)
		}
		if got := agent.only(t, "PUT", tc.path); got.Query != tc.query {
			t.Errorf("%v: got query %q, want %q", tc.args, got.Query, tc.query)
		}
	}

	agent.reset()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"pass"}, []string{"missing CHECK-ID", `"cairn checks pass -h"`}},
		{[]string{"warn", "a", "b"}, []string{"want one CHECK-ID, got 2 arguments"}},
		{[]string{"fail", "a", "-nope", "x"}, []string{`unknown flag "-nope" after CHECK-ID "a"`}},
		{[]string{"pass", " "}, []string{"CHECK-ID is empty"}},
	} {
		args := append([]string{"checks", tc.args[0], "-http-addr", agent.URL}, tc.args[1:]...)
		_, stderr, code := runCLI(t, args...)
		wantUsage(t, stderr, code, tc.want...)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests for bad usage, want none", n)
	}
	_, stderr, code := runCLI(t, "checks", "pass", "-http-addr", agent.URL, "not-ttl")
	wantError(t, stderr, code, `pass check "not-ttl": agent returned 400: CheckID: check "not-ttl": not a TTL check`)
	_, stderr, code = runCLI(t, "checks", "fail", "-http-addr", agent.URL, "gone")
	wantError(t, stderr, code, `fail check "gone": agent returned 404`)
}

func TestMaint(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/maintenance":                 {},
		"PUT /v1/agent/service/maintenance/web":     {},
		"PUT /v1/agent/service/maintenance/web%2F1": {},
		"PUT /v1/agent/service/maintenance/ghost":   {status: 404, body: `{"error": "service \"ghost\": unknown service"}`},
	})
	for _, tc := range []struct {
		args             []string
		path, query, out string
	}{
		{[]string{"-enable"}, "/v1/agent/maintenance", "enable=true", "Node maintenance is now enabled\n"},
		{[]string{"-enable", "-reason", "kernel upgrade"}, "/v1/agent/maintenance", "enable=true&reason=kernel+upgrade",
			"Node maintenance is now enabled\n"},
		{[]string{"-disable"}, "/v1/agent/maintenance", "enable=false", "Node maintenance is now disabled\n"},
		{[]string{"-enable", "-service", "web", "-reason", "deploy"}, "/v1/agent/service/maintenance/web",
			"enable=true&reason=deploy", "Service maintenance is now enabled for \"web\"\n"},
		{[]string{"-disable", "-service", "web/1"}, "/v1/agent/service/maintenance/web%2F1", "enable=false",
			"Service maintenance is now disabled for \"web/1\"\n"},
	} {
		agent.reset()
		stdout, stderr, code := runCLI(t, append([]string{"maint", "-http-addr", agent.URL}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: got exit code %d, stderr %q", tc.args, code, stderr)
		}
		if stdout != tc.out {
			t.Errorf("%v: got stdout %q, want %q", tc.args, stdout, tc.out)
		}
		if got := agent.only(t, "PUT", tc.path); got.Query != tc.query {
			t.Errorf("%v: got query %q, want %q", tc.args, got.Query, tc.query)
		}
	}

	agent.reset()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"either -enable or -disable", `"cairn maint -h"`}},
		{[]string{"-enable", "-disable"}, []string{"either -enable or -disable"}},
		{[]string{"-disable", "-reason", "x"}, []string{"-reason goes with -enable"}},
		{[]string{"-enable", "-service", ""}, []string{"-service is empty"}},
		{[]string{"-enable", "extra"}, []string{`unexpected argument "extra"`}},
	} {
		_, stderr, code := runCLI(t, append([]string{"maint", "-http-addr", agent.URL}, tc.args...)...)
		wantUsage(t, stderr, code, tc.want...)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests for bad usage, want none", n)
	}
	_, stderr, code := runCLI(t, "maint", "-http-addr", agent.URL, "-enable", "-service", "ghost")
	wantError(t, stderr, code, `service "ghost" maintenance: agent returned 404: service "ghost": unknown service`)
}

const healthBody = `[
	{"Node": {"Node": "n2", "Address": "10.0.0.2"}, "Service": {"ID": "web", "Service": "web", "Port": 80},
	 "Checks": [{"CheckID": "serfHealth", "Status": "passing"}, {"CheckID": "service:web", "Status": "critical"},
	            {"CheckID": "ttl", "Status": "passing"}]},
	{"Node": {"Node": "n1", "Address": "10.0.0.1"}, "Service": {"ID": "web-b", "Service": "web", "Address": "10.1.1.1", "Port": 81},
	 "Checks": [{"CheckID": "serfHealth", "Status": "passing"}, {"CheckID": "_service_maintenance:web-b", "Status": "maintenance"}]},
	{"Node": {"Node": "n1", "Address": "10.0.0.1"}, "Service": {"ID": "web-a", "Service": "web", "Port": 80},
	 "Checks": [{"CheckID": "serfHealth", "Status": "passing"}, {"CheckID": "service:web-a", "Status": "warning"}]},
	{"Node": {"Node": "n3", "Address": "10.0.0.3"}, "Service": {"ID": "web", "Service": "web", "Port": 80}, "Checks": []}]`

func TestHealth(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/health/service/web": {body: healthBody}})
	stdout, stderr, code := runCLI(t, "health", "-http-addr", agent.URL, "web")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	want := [][]string{
		{"Node", "ServiceID", "Address", "Port", "Status", "Checks"},
		{"n1", "web-a", "10.0.0.1", "80", "warning", "1", "warning,", "1", "passing"},
		{"n1", "web-b", "10.1.1.1", "81", "maintenance", "1", "maintenance,", "1", "passing"},
		{"n2", "web", "10.0.0.2", "80", "critical", "1", "critical,", "2", "passing"},
		{"n3", "web", "10.0.0.3", "80", "passing"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), stdout)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); !reflect.DeepEqual(got, w) {
			t.Errorf("line %d: got %q, want fields %q", i, lines[i], w)
		}
	}
	if got := agent.only(t, "GET", "/v1/health/service/web"); got.Query != "" {
		t.Errorf("got query %q, want none", got.Query)
	}

	agent.reset()
	stdout, stderr, code = runCLI(t, "health", "-http-addr", agent.URL, "-passing", "-format", "json", "web")
	if code != 0 {
		t.Fatalf("json: got exit code %d, stderr %q", code, stderr)
	}
	if got := agent.only(t, "GET", "/v1/health/service/web"); got.Query != "passing=1" {
		t.Errorf("got query %q, want passing=1", got.Query)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("json: %v in %s", err, stdout)
	}
	if len(got) != 4 || got[0]["ServiceID"] != "web-a" || got[0]["Status"] != "warning" || got[3]["Address"] != "10.0.0.3" {
		t.Errorf("json: got %v", got)
	}
	if checks, ok := got[3]["Checks"].([]any); !ok || len(checks) != 0 {
		t.Errorf("json: got Checks %v for an instance without checks, want []", got[3]["Checks"])
	}
}

func TestHealthErrors(t *testing.T) {
	agent := newFakeAgent(t, nil)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"missing SERVICE", `"cairn health -h"`}},
		{[]string{"web", "-nope"}, []string{`unknown flag "-nope" after SERVICE "web"`}},
		{[]string{"web", "db"}, []string{"want one SERVICE"}},
		{[]string{"-format", "xml", "web"}, []string{`-format "xml"`}},
	} {
		_, stderr, code := runCLI(t, append([]string{"health", "-http-addr", agent.URL}, tc.args...)...)
		wantUsage(t, stderr, code, tc.want...)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}
