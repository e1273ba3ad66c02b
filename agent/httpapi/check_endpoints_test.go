package httpapi_test

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
)

// agentCheckKeys are the exact JSON field names of a check in
// GET /v1/agent/checks (Consul's AgentCheck).
var agentCheckKeys = sorted("Node", "CheckID", "Name", "Status", "Notes", "Output", "ServiceID", "ServiceName",
	"ServiceTags", "Type")

// scriptConfig is the test configuration with script checks enabled.
func scriptConfig() httpapi.Config {
	cfg := testConfig()
	cfg.EnableScriptChecks = true
	return cfg
}

func TestRegisterServiceWithChecks(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		scripts bool
		want    []*checks.Definition
	}{
		{"no checks", `{"Name":"web"}`, false, nil},
		{"one HTTP check with every option",
			`{"ID":"web-1","Name":"web","Check":{"CheckID":"web-http","Name":"web health","Notes":"n",
			  "HTTP":"https://127.0.0.1:8443/health","Method":"HEAD","Header":{"X-Probe":["1","2"]},"Body":"ping",
			  "TLSSkipVerify":true,"TLSServerName":"web.example","Interval":"10s","Timeout":"2s","Status":"passing",
			  "SuccessBeforePassing":2,"FailuresBeforeWarning":1,"FailuresBeforeCritical":3,
			  "DeregisterCriticalServiceAfter":"1h30m","OutputMaxSize":100}}`, false,
			[]*checks.Definition{{
				ID: "web-http", Name: "web health", Notes: "n", ServiceID: "web-1", Status: catalog.HealthPassing,
				HTTP: "https://127.0.0.1:8443/health", Method: "HEAD", Header: map[string][]string{"X-Probe": {"1", "2"}},
				Body: "ping", TLSSkipVerify: true, TLSServerName: "web.example", Interval: 10 * time.Second,
				Timeout: 2 * time.Second, SuccessBeforePassing: 2, FailuresBeforeWarning: 1, FailuresBeforeCritical: 3,
				DeregisterCriticalServiceAfter: 90 * time.Minute, OutputMaxSize: 100,
			}}},
		{"one check gets service:<id>, Consul's default name, defaults filled",
			`{"ID":"web-1","Name":"web","Check":{"TTL":"30s"}}`, false,
			[]*checks.Definition{{ID: "service:web-1", Name: "Service 'web' check", ServiceID: "web-1", Status: catalog.HealthCritical,
				TTL: 30 * time.Second, Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize}}},
		{"the service ID defaults to its name",
			`{"Name":"web","check":{"tcp":"127.0.0.1:80","interval":"1m"}}`, false,
			[]*checks.Definition{{ID: "service:web", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical,
				TCP: "127.0.0.1:80", Interval: time.Minute, Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize}}},
		{"several checks are numbered, Check first, given IDs kept",
			`{"Name":"web","Check":{"TTL":"10s"},"Checks":[{"UDP":"127.0.0.1:53","Interval":"5s","ServiceID":"other"},
			  {"ID":"mine","GRPC":"127.0.0.1:9000/web","GRPCUseTLS":true,"Interval":"5s","Timeout":"1s"},
			  {"AliasService":"db"}]}`, false,
			[]*checks.Definition{
				{ID: "service:web:1", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical, TTL: 10 * time.Second,
					Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize},
				{ID: "service:web:2", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical, UDP: "127.0.0.1:53",
					Interval: 5 * time.Second, Timeout: 5 * time.Second, OutputMaxSize: checks.DefaultOutputMaxSize},
				{ID: "mine", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical,
					GRPC: "127.0.0.1:9000/web", GRPCUseTLS: true, Interval: 5 * time.Second, Timeout: time.Second,
					OutputMaxSize: checks.DefaultOutputMaxSize},
				{ID: "service:web:4", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical, AliasService: "db",
					Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize},
			}},
		{"durations as numbers of nanoseconds, null and empty",
			`{"Name":"web","Checks":[{"TCP":"h:1","Interval":1500000000,"Timeout":1e9,"DeregisterCriticalServiceAfter":null},
			  {"TTL":"10s","Interval":""}]}`, false,
			[]*checks.Definition{
				{ID: "service:web:1", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical, TCP: "h:1",
					Interval: 1500 * time.Millisecond, Timeout: time.Second, OutputMaxSize: checks.DefaultOutputMaxSize},
				{ID: "service:web:2", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical, TTL: 10 * time.Second,
					Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize},
			}},
		{"script check, Args under Consul's client name ScriptArgs",
			`{"Name":"web","Check":{"ScriptArgs":["/bin/check","-q"],"Interval":"30s"}}`, true,
			[]*checks.Definition{{ID: "service:web", Name: "Service 'web' check", ServiceID: "web", Status: catalog.HealthCritical,
				Args: []string{"/bin/check", "-q"}, Interval: 30 * time.Second, Timeout: checks.DefaultTimeout,
				OutputMaxSize: checks.DefaultOutputMaxSize}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLocal{}
			cfg := testConfig()
			cfg.EnableScriptChecks = tt.scripts
			rec := serve(newServerConfig(t, cfg, l), http.MethodPut, "/v1/agent/service/register", tt.body)
			wantStatus(t, rec, http.StatusOK)
			if len(l.addedDef) != 1 {
				t.Fatalf("Local got %d services, want 1", len(l.addedDef))
			}
			got := l.addedDef[0]
			if len(got) != len(tt.want) {
				t.Fatalf("Local got %d checks, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], tt.want[i]) {
					t.Errorf("check %d: got\n%+v\nwant\n%+v", i, *got[i], *tt.want[i])
				}
			}
		})
	}
}

// badCheckBodies are check objects that must be refused, with the field
// named relative to the check.
var badCheckBodies = []struct {
	name, check, field string
}{
	{"unparsable interval", `{"TCP":"h:1","Interval":"10 seconds"}`, "Interval"},
	{"interval without unit", `{"TCP":"h:1","Interval":"10"}`, "Interval"},
	{"fractional nanoseconds", `{"TCP":"h:1","Interval":1.5}`, "Interval"},
	{"interval of wrong type", `{"TCP":"h:1","Interval":true}`, "Interval"},
	{"interval as an object", `{"TCP":"h:1","Interval":{"s":1}}`, "Interval"},
	{"negative timeout", `{"TCP":"h:1","Interval":"1s","Timeout":"-1s"}`, "Timeout"},
	{"bad TTL", `{"TTL":"soon"}`, "TTL"},
	{"bad deregister-after", `{"TTL":"10s","DeregisterCriticalServiceAfter":"1d"}`, "DeregisterCriticalServiceAfter"},
	{"no interval for HTTP", `{"HTTP":"http://127.0.0.1/health"}`, "Interval"},
	{"bad URL", `{"HTTP":"127.0.0.1/health","Interval":"10s"}`, "HTTP"},
	{"two kinds", `{"TCP":"h:1","UDP":"h:1","Interval":"1s"}`, "UDP"},
	{"bad status", `{"TTL":"10s","Status":"maintenance"}`, "Status"},
	{"scripts disabled", `{"Args":["/bin/true"],"Interval":"1s"}`, "Args"},
	{"ID and CheckID differ", `{"ID":"a","CheckID":"b","TTL":"10s"}`, "CheckID"},
	{"Args and ScriptArgs", `{"Args":["/bin/a"],"ScriptArgs":["/bin/b"],"Interval":"1s"}`, "ScriptArgs"},
	{"check ID with slash", `{"CheckID":"a/b","TTL":"10s"}`, "CheckID"},
	{"negative threshold", `{"TTL":"10s","FailuresBeforeCritical":-1}`, "FailuresBeforeCritical"},
}

func TestRegisterServiceRejectsBadChecks(t *testing.T) {
	type tc struct{ name, body, field string }
	var tests []tc
	for _, b := range badCheckBodies {
		tests = append(tests,
			tc{"Check: " + b.name, `{"Name":"web","Check":` + b.check + `}`, "Check." + b.field},
			tc{"Checks[1]: " + b.name, `{"Name":"web","Checks":[{"TTL":"10s"},` + b.check + `]}`, "Checks[1]." + b.field})
	}
	tests = append(tests,
		tc{"no kind", `{"Name":"web","Check":{"Interval":"10s"}}`, "Check"},
		tc{"no kind in Checks", `{"Name":"web","Checks":[{"TTL":"1s"},{}]}`, "Checks[1]"},
		tc{"null check", `{"Name":"web","Checks":[null]}`, "Checks[0]"},
		tc{"duplicate IDs", `{"Name":"web","Check":{"CheckID":"c","TTL":"1s"},"Checks":[{"CheckID":"c","TTL":"1s"}]}`, "Checks[0].CheckID"},
		tc{"given ID equal to a numbered one", `{"Name":"web","Checks":[{"TTL":"1s"},{"ID":"service:web:1","TTL":"1s"}]}`, "Checks[1].ID"},
		tc{"unknown field in a check", `{"Name":"web","Check":{"TTL":"1s","Bogus":1}}`, "Bogus"},
		tc{"check of wrong type", `{"Name":"web","Check":[{"TTL":"1s"}]}`, "Check"},
		tc{"bad service reported before its check", `{"Name":"my_web","Check":{"HTTP":"x"}}`, "Name"},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLocal{}
			rec := serve(newServer(t, l, nil), http.MethodPut, "/v1/agent/service/register", tt.body)
			wantStatus(t, rec, http.StatusBadRequest)
			body := errorBody(t, rec)
			if got := body["field"]; got != tt.field {
				t.Errorf("got field %v, want %q (body %s)", got, tt.field, rec.Body)
			}
			if len(l.added) != 0 {
				t.Errorf("Local got %d services, want none", len(l.added))
			}
		})
	}
}

func TestCheckRegister(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *checks.Definition
	}{
		{"node TTL check with ID", `{"ID":"mem","Name":"Memory","Notes":"free memory","TTL":"15s","Status":"warning"}`,
			&checks.Definition{ID: "mem", Name: "Memory", Notes: "free memory", Status: catalog.HealthWarning,
				TTL: 15 * time.Second, Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize}},
		{"CheckID instead of ID", `{"CheckID":"mem","TTL":"15s"}`,
			&checks.Definition{ID: "mem", Name: "TTL 15s", Status: catalog.HealthCritical,
				TTL: 15 * time.Second, Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize}},
		{"the ID defaults to the name", `{"Name":"disk","TCP":"127.0.0.1:22","Interval":"1m"}`,
			&checks.Definition{ID: "disk", Name: "disk", Status: catalog.HealthCritical, TCP: "127.0.0.1:22",
				Interval: time.Minute, Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize}},
		{"a service's check", `{"ServiceID":"web","HTTP":"http://127.0.0.1/","Interval":"5s"}`,
			&checks.Definition{ID: "service:web", Name: "HTTP GET http://127.0.0.1/", ServiceID: "web", Status: catalog.HealthCritical,
				HTTP: "http://127.0.0.1/", Method: "GET", Interval: 5 * time.Second, Timeout: 5 * time.Second,
				OutputMaxSize: checks.DefaultOutputMaxSize}},
		{"alias of a node", `{"id":"n2-alive","aliasnode":"n2"}`,
			&checks.Definition{ID: "n2-alive", Name: "Alias node n2", Status: catalog.HealthCritical, AliasNode: "n2",
				Timeout: checks.DefaultTimeout, OutputMaxSize: checks.DefaultOutputMaxSize}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLocal{services: []*catalog.Service{{ID: "web", Service: "web"}}}
			rec := serve(newServer(t, l, nil), http.MethodPut, "/v1/agent/check/register", tt.body)
			wantStatus(t, rec, http.StatusOK)
			if rec.Body.Len() != 0 {
				t.Errorf("got body %q, want none", rec.Body)
			}
			added, _, _, _ := l.calls()
			if len(added) != 1 {
				t.Fatalf("Local got %d checks, want 1", len(added))
			}
			if !reflect.DeepEqual(added[0], tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", *added[0], *tt.want)
			}
		})
	}
}

func TestCheckRegisterScripts(t *testing.T) {
	body := `{"ID":"backup","Args":["/usr/local/bin/check-backup"],"Interval":"1h"}`
	l := &fakeLocal{}
	rec := serve(newServer(t, l, nil), http.MethodPut, "/v1/agent/check/register", body)
	wantStatus(t, rec, http.StatusBadRequest)
	if got := errorBody(t, rec)["field"]; got != "Args" {
		t.Errorf("scripts disabled: got field %v, want Args", got)
	}
	rec = serve(newServerConfig(t, scriptConfig(), l), http.MethodPut, "/v1/agent/check/register", body)
	wantStatus(t, rec, http.StatusOK)
	if added, _, _, _ := l.calls(); len(added) != 1 || !slices.Equal(added[0].Args, []string{"/usr/local/bin/check-backup"}) {
		t.Errorf("scripts enabled: Local got %+v, want the script check", added)
	}
}

func TestCheckRegisterRejectsBadInput(t *testing.T) {
	type tc struct{ name, body, field string }
	var tests []tc
	for _, b := range badCheckBodies {
		if !strings.Contains(b.check, `"ID"`) && !strings.Contains(b.check, `"CheckID"`) {
			b.check = `{"ID":"c",` + b.check[1:]
		}
		tests = append(tests, tc{b.name, b.check, b.field})
	}
	tests = append(tests,
		tc{"no ID and no name", `{"TTL":"10s"}`, "ID"},
		tc{"a name that cannot be an ID", `{"Name":"free memory","TTL":"10s"}`, "ID"},
		tc{"bad ID", `{"ID":"a b","TTL":"10s"}`, "ID"},
		tc{"no kind", `{"ID":"c"}`, "Check"},
		tc{"unknown service", `{"ID":"c","ServiceID":"nope","TTL":"10s"}`, "ServiceID"},
		tc{"unknown field", `{"ID":"c","TTL":"10s","Script":"x"}`, "Script"},
		tc{"empty body", ``, "body"},
		tc{"array", `[{"ID":"c","TTL":"10s"}]`, "body"},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLocal{}
			rec := serve(newServer(t, l, nil), http.MethodPut, "/v1/agent/check/register", tt.body)
			wantStatus(t, rec, http.StatusBadRequest)
			if got := errorBody(t, rec)["field"]; got != tt.field {
				t.Errorf("got field %v, want %q (body %s)", got, tt.field, rec.Body)
			}
			// Only the Local's own refusal (the unknown service) reaches it.
			if added, _, _, _ := l.calls(); len(added) != 0 && tt.field != "ServiceID" {
				t.Errorf("Local got %d checks, want none", len(added))
			}
		})
	}
}

// ttlLocal is a fakeLocal holding a TTL check, a TCP check and a service.
func ttlLocal() *fakeLocal {
	return &fakeLocal{
		services: []*catalog.Service{{ID: "web", Service: "web", Tags: []string{"v1"}}},
		checks: []*catalog.Check{
			{Node: "node1", CheckID: "service:web", Name: "TTL 30s", Status: catalog.HealthCritical,
				ServiceID: "web", ServiceName: "web", Type: checks.TypeTTL},
			{Node: "node1", CheckID: "a:b&c", Name: "TTL 1m", Status: catalog.HealthPassing, Type: checks.TypeTTL},
			{Node: "node1", CheckID: "ssh", Name: "TCP 127.0.0.1:22", Status: catalog.HealthPassing, Output: "connected",
				Type: checks.TypeTCP},
		},
		ttl: map[string]bool{"service:web": true, "a:b&c": true},
	}
}

func TestCheckDeregister(t *testing.T) {
	tests := []struct {
		path  string
		code  int
		id    string // asked of the Local
		field string
	}{
		{"/v1/agent/check/deregister/ssh", http.StatusOK, "ssh", ""},
		{"/v1/agent/check/deregister/a%3Ab%26c", http.StatusOK, "a:b&c", ""},
		{"/v1/agent/check/deregister/service:web", http.StatusOK, "service:web", ""},
		{"/v1/agent/check/deregister/nope", http.StatusNotFound, "nope", ""},
		{"/v1/agent/check/deregister/", http.StatusBadRequest, "", "CheckID"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			l := ttlLocal()
			rec := serve(newServer(t, l, nil), http.MethodPut, tt.path, "")
			wantStatus(t, rec, tt.code)
			if tt.code != http.StatusOK {
				body := errorBody(t, rec)
				if got, _ := body["field"].(string); got != tt.field {
					t.Errorf("got field %q, want %q", got, tt.field)
				}
			}
			var want []string
			if tt.id != "" {
				want = []string{tt.id}
			}
			if _, removed, _, _ := l.calls(); !slices.Equal(removed, want) {
				t.Errorf("Local asked to remove %v, want %v", removed, want)
			}
		})
	}
}

func TestCheckTTL(t *testing.T) {
	tests := []struct {
		path  string
		code  int
		want  []ttlUpdate
		field string
	}{
		{"/v1/agent/check/pass/service:web?note=all+good", http.StatusOK,
			[]ttlUpdate{{"service:web", catalog.HealthPassing, "all good"}}, ""},
		{"/v1/agent/check/warn/service:web", http.StatusOK, []ttlUpdate{{"service:web", catalog.HealthWarning, ""}}, ""},
		{"/v1/agent/check/fail/a%3Ab%26c?note=down%0Anow", http.StatusOK,
			[]ttlUpdate{{"a:b&c", catalog.HealthCritical, "down\nnow"}}, ""},
		{"/v1/agent/check/pass/nope", http.StatusNotFound, []ttlUpdate{{"nope", catalog.HealthPassing, ""}}, ""},
		{"/v1/agent/check/pass/ssh", http.StatusBadRequest, []ttlUpdate{{"ssh", catalog.HealthPassing, ""}}, "CheckID"},
		{"/v1/agent/check/warn/", http.StatusBadRequest, nil, "CheckID"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			l := ttlLocal()
			rec := serve(newServer(t, l, nil), http.MethodPut, tt.path, "")
			wantStatus(t, rec, tt.code)
			if tt.code == http.StatusOK && rec.Body.Len() != 0 {
				t.Errorf("got body %q, want none", rec.Body)
			}
			if tt.code != http.StatusOK {
				if got, _ := errorBody(t, rec)["field"].(string); got != tt.field {
					t.Errorf("got field %q, want %q", got, tt.field)
				}
			}
			if _, _, got, _ := l.calls(); !slices.Equal(got, tt.want) {
				t.Errorf("Local got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckUpdate(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		body  string
		code  int
		want  []ttlUpdate
		field string
	}{
		{"passing", "/v1/agent/check/update/service:web", `{"Status":"passing","Output":"ok"}`, http.StatusOK,
			[]ttlUpdate{{"service:web", catalog.HealthPassing, "ok"}}, ""},
		{"warning, lowercase keys", "/v1/agent/check/update/service:web", `{"status":"warning","output":"slow"}`, http.StatusOK,
			[]ttlUpdate{{"service:web", catalog.HealthWarning, "slow"}}, ""},
		{"critical without output", "/v1/agent/check/update/a%3Ab%26c", `{"Status":"critical"}`, http.StatusOK,
			[]ttlUpdate{{"a:b&c", catalog.HealthCritical, ""}}, ""},
		{"no status", "/v1/agent/check/update/service:web", `{"Output":"x"}`, http.StatusBadRequest, nil, "Status"},
		{"maintenance", "/v1/agent/check/update/service:web", `{"Status":"maintenance"}`, http.StatusBadRequest, nil, "Status"},
		{"Consul's short form", "/v1/agent/check/update/service:web", `{"Status":"pass"}`, http.StatusBadRequest, nil, "Status"},
		{"unknown field", "/v1/agent/check/update/service:web", `{"Status":"passing","Note":"x"}`, http.StatusBadRequest, nil, "Note"},
		{"empty body", "/v1/agent/check/update/service:web", ``, http.StatusBadRequest, nil, "body"},
		{"unknown check", "/v1/agent/check/update/nope", `{"Status":"passing"}`, http.StatusNotFound,
			[]ttlUpdate{{"nope", catalog.HealthPassing, ""}}, ""},
		{"not a TTL check", "/v1/agent/check/update/ssh", `{"Status":"passing"}`, http.StatusBadRequest,
			[]ttlUpdate{{"ssh", catalog.HealthPassing, ""}}, "CheckID"},
		{"no ID", "/v1/agent/check/update/", `{"Status":"passing"}`, http.StatusBadRequest, nil, "CheckID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ttlLocal()
			rec := serve(newServer(t, l, nil), http.MethodPut, tt.path, tt.body)
			wantStatus(t, rec, tt.code)
			if tt.code != http.StatusOK {
				if got, _ := errorBody(t, rec)["field"].(string); got != tt.field {
					t.Errorf("got field %q, want %q (body %s)", got, tt.field, rec.Body)
				}
			}
			if _, _, got, _ := l.calls(); !slices.Equal(got, tt.want) {
				t.Errorf("Local got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAgentChecks(t *testing.T) {
	rec := serve(newServer(t, ttlLocal(), nil), http.MethodGet, "/v1/agent/checks", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[map[string]map[string]any](t, rec)
	if ids := slices.Sorted(maps.Keys(got)); !slices.Equal(ids, []string{"a:b&c", "service:web", "ssh"}) {
		t.Fatalf("got checks %v, want a:b&c, service:web and ssh", ids)
	}
	for id, c := range got {
		if k := keys(t, map[string]any(c)); !slices.Equal(k, agentCheckKeys) {
			t.Errorf("%s: got keys %v, want %v", id, k, agentCheckKeys)
		}
	}
	want := map[string]any{
		"Node": "node1", "CheckID": "service:web", "Name": "TTL 30s", "Status": "critical", "Notes": "", "Output": "",
		"ServiceID": "web", "ServiceName": "web", "ServiceTags": []any{"v1"}, "Type": "ttl",
	}
	if !reflect.DeepEqual(got["service:web"], want) {
		t.Errorf("got %v,\nwant %v", got["service:web"], want)
	}
	if tags, ok := got["ssh"]["ServiceTags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("node check: got ServiceTags %v, want []", got["ssh"]["ServiceTags"])
	}

	rec = serve(newServer(t, &fakeLocal{}, nil), http.MethodGet, "/v1/agent/checks", "")
	wantStatus(t, rec, http.StatusOK)
	if body := strings.TrimSpace(rec.Body.String()); body != "{}" {
		t.Errorf("no checks: got %s, want {}", body)
	}
}

// TestAgentChecksFilter: ?filter selects among the agent's checks with the
// fields of Consul's AgentCheck.
func TestAgentChecksFilter(t *testing.T) {
	h := newServer(t, ttlLocal(), nil)
	for expr, want := range map[string][]string{
		`Status == "passing"`:          {"a:b&c", "ssh"},
		`Status != "passing"`:          {"service:web"},
		`ServiceName == "web"`:         {"service:web"},
		`"v1" in ServiceTags`:          {"service:web"},
		`Type == "tcp" or Type == "x"`: {"ssh"},
		`Output contains "refused"`:    {},
	} {
		rec := serve(h, http.MethodGet, "/v1/agent/checks?filter="+url.QueryEscape(expr), "")
		wantStatus(t, rec, http.StatusOK)
		got := slices.Sorted(maps.Keys(decode[map[string]any](t, rec)))
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", expr, got, want)
		}
	}
}

func TestMaintenance(t *testing.T) {
	tests := []struct {
		path  string
		code  int
		want  []maintCall
		field string
	}{
		{"/v1/agent/service/maintenance/web?enable=true&reason=deploy+v2", http.StatusOK,
			[]maintCall{{"web", true, "deploy v2"}}, ""},
		{"/v1/agent/service/maintenance/web?enable=false", http.StatusOK, []maintCall{{"web", false, ""}}, ""},
		{"/v1/agent/service/maintenance/web?enable=1", http.StatusOK, []maintCall{{"web", true, ""}}, ""},
		{"/v1/agent/service/maintenance/nope?enable=true", http.StatusNotFound, []maintCall{{"nope", true, ""}}, ""},
		{"/v1/agent/service/maintenance/web", http.StatusBadRequest, nil, "enable"},
		{"/v1/agent/service/maintenance/web?enable", http.StatusBadRequest, nil, "enable"},
		{"/v1/agent/service/maintenance/web?enable=maybe", http.StatusBadRequest, nil, "enable"},
		{"/v1/agent/service/maintenance/?enable=true", http.StatusBadRequest, nil, "ServiceID"},
		{"/v1/agent/maintenance?enable=true&reason=kernel", http.StatusOK, []maintCall{{"", true, "kernel"}}, ""},
		{"/v1/agent/maintenance?enable=false", http.StatusOK, []maintCall{{"", false, ""}}, ""},
		{"/v1/agent/maintenance", http.StatusBadRequest, nil, "enable"},
		{"/v1/agent/maintenance?enable=yes", http.StatusBadRequest, nil, "enable"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			l := ttlLocal()
			rec := serve(newServer(t, l, nil), http.MethodPut, tt.path, "")
			wantStatus(t, rec, tt.code)
			if tt.code != http.StatusOK {
				if got, _ := errorBody(t, rec)["field"].(string); got != tt.field {
					t.Errorf("got field %q, want %q (body %s)", got, tt.field, rec.Body)
				}
			}
			if _, _, _, got := l.calls(); !slices.Equal(got, tt.want) {
				t.Errorf("Local got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckWritesLocalErrors(t *testing.T) {
	requests := []struct{ path, body string }{
		{"/v1/agent/check/register", `{"ID":"c","TTL":"10s"}`},
		{"/v1/agent/check/deregister/service:web", ""},
		{"/v1/agent/check/pass/service:web", ""},
		{"/v1/agent/check/update/service:web", `{"Status":"passing"}`},
		{"/v1/agent/service/maintenance/web?enable=true", ""},
		{"/v1/agent/maintenance?enable=true", ""},
	}
	for _, tt := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("x: %w: %w", local.ErrNotSynced, errBoom), http.StatusServiceUnavailable},
		{errors.New("disk full"), http.StatusInternalServerError},
	} {
		for _, req := range requests {
			l := ttlLocal()
			l.err = tt.err
			rec := serve(newServer(t, l, nil), http.MethodPut, req.path, req.body)
			wantStatus(t, rec, tt.code)
			if msg, _ := errorBody(t, rec)["error"].(string); !strings.Contains(msg, tt.err.Error()) {
				t.Errorf("%s: got error %q, want it to hold %q", req.path, msg, tt.err)
			}
		}
	}
}

func TestCheckEndpointsMethods(t *testing.T) {
	for _, tt := range []struct{ path, allow string }{
		{"/v1/agent/check/register", "PUT"},
		{"/v1/agent/check/deregister/x", "PUT"},
		{"/v1/agent/check/pass/x", "PUT"},
		{"/v1/agent/check/warn/x", "PUT"},
		{"/v1/agent/check/fail/x", "PUT"},
		{"/v1/agent/check/update/x", "PUT"},
		{"/v1/agent/checks", "GET"},
		{"/v1/agent/service/maintenance/x?enable=true", "PUT"},
		{"/v1/agent/maintenance?enable=true", "PUT"},
		{"/v1/health/checks/web", "GET"},
		{"/v1/health/node/n1", "GET"},
		{"/v1/health/state/any", "GET"},
	} {
		l := ttlLocal()
		h := newServer(t, l, testCatalog())
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
			if m == tt.allow {
				continue
			}
			rec := serve(h, m, tt.path, "")
			wantStatus(t, rec, http.StatusMethodNotAllowed)
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("%s %s: got Allow %q, want %q", m, tt.path, got, tt.allow)
			}
			errorBody(t, rec)
		}
		if added, removed, ttl, maint := l.calls(); len(added)+len(removed)+len(ttl)+len(maint) != 0 {
			t.Errorf("%s: the Local was called for a refused method", tt.path)
		}
	}
}
