package checks_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		def       checks.Definition
		scripts   bool
		wantField string
		wantIn    string // in the reason
	}{
		{"no kind", checks.Definition{ID: "c", Interval: time.Second}, false, "Checks[1]", "no kind of check"},
		{"two kinds", checks.Definition{ID: "c", HTTP: "http://a/", TCP: "a:1", Interval: time.Second}, false, "Checks[1].TCP", "HTTP is set too"},
		{"TTL and alias", checks.Definition{ID: "c", TTL: time.Second, AliasNode: "n"}, false, "Checks[1].AliasNode", "TTL is set too"},
		{"HTTP without interval", checks.Definition{ID: "c", HTTP: "http://a/"}, false, "Checks[1].Interval", "required for http checks"},
		{"TCP without interval", checks.Definition{ID: "c", TCP: "a:1"}, false, "Checks[1].Interval", "required"},
		{"UDP without interval", checks.Definition{ID: "c", UDP: "a:1"}, false, "Checks[1].Interval", "required"},
		{"gRPC without interval", checks.Definition{ID: "c", GRPC: "a:1"}, false, "Checks[1].Interval", "required"},
		{"script without interval", checks.Definition{ID: "c", Args: []string{"/bin/true"}}, true, "Checks[1].Interval", "required"},
		{"negative interval", checks.Definition{ID: "c", TCP: "a:1", Interval: -time.Second}, false, "Checks[1].Interval", "negative"},
		{"interval in nanoseconds", checks.Definition{ID: "c", TCP: "a:1", Interval: 10}, false, "Checks[1].Interval", "too short"},
		{"alias interval too short", checks.Definition{ID: "c", AliasNode: "n", Interval: time.Millisecond}, false, "Checks[1].Interval", "too short"},
		{"negative timeout", checks.Definition{ID: "c", TCP: "a:1", Interval: time.Second, Timeout: -1}, false, "Checks[1].Timeout", "negative"},
		{"timeout in nanoseconds", checks.Definition{ID: "c", TCP: "a:1", Interval: time.Second, Timeout: 5}, false, "Checks[1].Timeout", "too short"},
		{"negative TTL", checks.Definition{ID: "c", TTL: -time.Second}, false, "Checks[1].TTL", "too short"},
		{"TTL in nanoseconds", checks.Definition{ID: "c", TTL: 30}, false, "Checks[1].TTL", "too short"},
		{"URL unparsable", checks.Definition{ID: "c", HTTP: "http://[::1", Interval: time.Second}, false, "Checks[1].HTTP", "not a URL"},
		{"URL scheme", checks.Definition{ID: "c", HTTP: "ftp://a/", Interval: time.Second}, false, "Checks[1].HTTP", "scheme"},
		{"URL relative", checks.Definition{ID: "c", HTTP: "/health", Interval: time.Second}, false, "Checks[1].HTTP", "scheme"},
		{"URL without host", checks.Definition{ID: "c", HTTP: "http:///health", Interval: time.Second}, false, "Checks[1].HTTP", "no host"},
		{"URL with port only", checks.Definition{ID: "c", HTTP: "http://:80/", Interval: time.Second}, false, "Checks[1].HTTP", "no host"},
		{"bad method", checks.Definition{ID: "c", HTTP: "http://a/", Method: "GET /", Interval: time.Second}, false, "Checks[1].Method", "not an HTTP method"},
		{"bad header name", checks.Definition{ID: "c", HTTP: "http://a/", Header: map[string][]string{"X Y": {"1"}}, Interval: time.Second}, false, "Checks[1].Header", "not a header name"},
		{"header value with newline", checks.Definition{ID: "c", HTTP: "http://a/", Header: map[string][]string{"X": {"1\r\nY: 2"}}, Interval: time.Second}, false, "Checks[1].Header", "line break"},
		{"TCP without port", checks.Definition{ID: "c", TCP: "localhost", Interval: time.Second}, false, "Checks[1].TCP", "missing port"},
		{"TCP without host", checks.Definition{ID: "c", TCP: ":80", Interval: time.Second}, false, "Checks[1].TCP", "no host"},
		{"TCP port 0", checks.Definition{ID: "c", TCP: "a:0", Interval: time.Second}, false, "Checks[1].TCP", "port"},
		{"TCP named port", checks.Definition{ID: "c", TCP: "a:http", Interval: time.Second}, false, "Checks[1].TCP", "port"},
		{"UDP port too big", checks.Definition{ID: "c", UDP: "a:65536", Interval: time.Second}, false, "Checks[1].UDP", "port"},
		{"gRPC without port", checks.Definition{ID: "c", GRPC: "a/svc", Interval: time.Second}, false, "Checks[1].GRPC", "host:port"},
		{"scripts disabled", checks.Definition{ID: "c", Args: []string{"/bin/true"}, Interval: time.Second}, false, "Checks[1].Args", "script checks are disabled; start the agent with -enable-script-checks"},
		{"empty program", checks.Definition{ID: "c", Args: []string{""}, Interval: time.Second}, true, "Checks[1].Args", "empty"},
		{"alias of itself", checks.Definition{ServiceID: "web", AliasService: "web"}, false, "Checks[1].AliasService", "cannot alias"},
		{"status maintenance", checks.Definition{ID: "c", TTL: time.Second, Status: catalog.HealthMaintenance}, false, "Checks[1].Status", "passing, warning or critical"},
		{"status unknown", checks.Definition{ID: "c", TTL: time.Second, Status: "ok"}, false, "Checks[1].Status", "passing, warning or critical"},
		{"negative success threshold", checks.Definition{ID: "c", TTL: time.Second, SuccessBeforePassing: -1}, false, "Checks[1].SuccessBeforePassing", "negative"},
		{"negative warning threshold", checks.Definition{ID: "c", TTL: time.Second, FailuresBeforeWarning: -1}, false, "Checks[1].FailuresBeforeWarning", "negative"},
		{"negative critical threshold", checks.Definition{ID: "c", TTL: time.Second, FailuresBeforeCritical: -1}, false, "Checks[1].FailuresBeforeCritical", "negative"},
		{"warning after critical", checks.Definition{ID: "c", TTL: time.Second, FailuresBeforeWarning: 3, FailuresBeforeCritical: 2}, false, "Checks[1].FailuresBeforeWarning", "never turn warning"},
		{"negative deregister", checks.Definition{ID: "c", TTL: time.Second, DeregisterCriticalServiceAfter: -time.Minute}, false, "Checks[1].DeregisterCriticalServiceAfter", "negative"},
		{"negative output size", checks.Definition{ID: "c", TTL: time.Second, OutputMaxSize: -1}, false, "Checks[1].OutputMaxSize", "negative"},
		{"node check without ID", checks.Definition{TTL: time.Second}, false, "Checks[1].ID", "required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.def
			err := d.Validate("Checks[1].", tc.scripts)
			var fe *catalog.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *catalog.FieldError", err)
			}
			if fe.Field != tc.wantField || !strings.Contains(fe.Reason, tc.wantIn) {
				t.Errorf("got %s: %s; want field %s, reason containing %q", fe.Field, fe.Reason, tc.wantField, tc.wantIn)
			}
		})
	}
}

func TestValidateNoKindWithoutPrefix(t *testing.T) {
	t.Parallel()
	d := checks.Definition{ID: "c"}
	var fe *catalog.FieldError
	if err := d.Validate("", false); !errors.As(err, &fe) || fe.Field != "Check" {
		t.Errorf("got %v, want a FieldError on Check", err)
	}
}

func TestValidateDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   checks.Definition
		want checks.Definition
	}{
		{"HTTP service check",
			checks.Definition{ServiceID: "web", HTTP: "https://web.local/health", Interval: time.Minute},
			checks.Definition{ID: "service:web", Name: "HTTP GET https://web.local/health", ServiceID: "web", Status: catalog.HealthCritical,
				HTTP: "https://web.local/health", Method: "GET", Interval: time.Minute, Timeout: 10 * time.Second, OutputMaxSize: 4096}},
		{"timeout cut to the interval",
			checks.Definition{ID: "db", TCP: "db.local:5432", Interval: 2 * time.Second, Timeout: 5 * time.Second, Status: catalog.HealthPassing},
			checks.Definition{ID: "db", Name: "TCP db.local:5432", Status: catalog.HealthPassing,
				TCP: "db.local:5432", Interval: 2 * time.Second, Timeout: 2 * time.Second, OutputMaxSize: 4096}},
		{"default timeout cut to a short interval",
			checks.Definition{ID: "q", UDP: "[::1]:53", Interval: 500 * time.Millisecond},
			checks.Definition{ID: "q", Name: "UDP [::1]:53", Status: catalog.HealthCritical,
				UDP: "[::1]:53", Interval: 500 * time.Millisecond, Timeout: 500 * time.Millisecond, OutputMaxSize: 4096}},
		{"TTL",
			checks.Definition{ID: "app", TTL: 30 * time.Second, OutputMaxSize: 100},
			checks.Definition{ID: "app", Name: "TTL 30s", Status: catalog.HealthCritical, TTL: 30 * time.Second, Timeout: 10 * time.Second, OutputMaxSize: 100}},
		{"alias keeps its name",
			checks.Definition{ServiceID: "sidecar", Name: "web is up", AliasService: "web", AliasNode: "n1"},
			checks.Definition{ID: "service:sidecar", Name: "web is up", ServiceID: "sidecar", Status: catalog.HealthCritical,
				AliasService: "web", AliasNode: "n1", Timeout: 10 * time.Second, OutputMaxSize: 4096}},
		{"gRPC",
			checks.Definition{ID: "g", GRPC: "127.0.0.1:9090/pkg.Svc", Interval: time.Minute},
			checks.Definition{ID: "g", Name: "gRPC 127.0.0.1:9090/pkg.Svc", Status: catalog.HealthCritical,
				GRPC: "127.0.0.1:9090/pkg.Svc", Interval: time.Minute, Timeout: 10 * time.Second, OutputMaxSize: 4096}},
	}
	for _, tc := range tests {
		got := tc.in
		if err := got.Validate("", false); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tc.name, got, tc.want)
		}
		again := got
		if err := again.Validate("", false); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%s: Validate is not idempotent: got %+v, %v", tc.name, again, err)
		}
	}
}
