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

	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

func TestRegisterMapsBodyToService(t *testing.T) {
	full := &catalog.Service{
		ID: "web-1", Service: "web", Tags: []string{"primary", "v1"}, Address: "10.0.0.5", Port: 8080,
		Meta: map[string]string{"version": "1.2"}, Weights: catalog.Weights{Passing: 3, Warning: 1},
	}
	tests := []struct {
		name string
		body string
		want *catalog.Service
	}{
		{"Consul's field names",
			`{"ID":"web-1","Name":"web","Tags":["primary","v1"],"Address":"10.0.0.5","Port":8080,
			  "Meta":{"version":"1.2"},"Weights":{"Passing":3,"Warning":1}}`, full},
		{"lowercase keys",
			`{"id":"web-1","name":"web","tags":["primary","v1"],"address":"10.0.0.5","port":8080,
			  "meta":{"version":"1.2"},"weights":{"passing":3,"warning":1}}`, full},
		{"mixed case keys",
			`{"Id":"web-1","NAME":"web","tAgs":["primary","v1"],"Address":"10.0.0.5","PORT":8080,
			  "Meta":{"version":"1.2"},"Weights":{"PASSING":3,"warning":1}}`, full},
		// Defaults are the Local's to fill in.
		{"name only", `{"Name":"web"}`, &catalog.Service{Service: "web"}},
		{"null fields", `{"Name":"web","Tags":null,"Meta":null,"Weights":null}`, &catalog.Service{Service: "web"}},
		{"warning weight zero", `{"Name":"web","Weights":{"Passing":2,"Warning":0}}`,
			&catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLocal{}
			rec := serve(newServer(t, l, nil), http.MethodPut, "/v1/agent/service/register", tt.body)
			wantStatus(t, rec, http.StatusOK)
			if len(l.added) != 1 {
				t.Fatalf("Local got %d services, want 1", len(l.added))
			}
			if got := l.added[0]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Local got %+v, want %+v", *got, *tt.want)
			}
		})
	}
}

func TestRegisterRejectsBadInput(t *testing.T) {
	big := `{"Name":"web","Meta":{"k":"` + strings.Repeat("x", testMaxBody) + `"}}`
	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"missing name", `{"Port":80}`, "Name"},
		{"empty name", `{"Name":""}`, "Name"},
		{"null object", `null`, "Name"},
		{"name with underscore", `{"Name":"my_web"}`, "Name"},
		{"name too long", `{"Name":"` + strings.Repeat("a", 64) + `"}`, "Name"},
		{"ID with slash", `{"Name":"web","ID":"a/b"}`, "ID"},
		{"tag with a dot", `{"Name":"web","Tags":["v1.2"]}`, "Tags[0]"},
		{"second tag bad", `{"Name":"web","Tags":["v1","-x"]}`, "Tags[1]"},
		{"port 70000", `{"Name":"web","Port":70000}`, "Port"},
		{"port -1", `{"Name":"web","Port":-1}`, "Port"},
		{"weights 0,0", `{"Name":"web","Weights":{"Passing":0,"Warning":0}}`, "Weights.Passing"},
		{"weights empty object", `{"Name":"web","Weights":{}}`, "Weights.Passing"},
		{"passing weight 0", `{"Name":"web","Weights":{"Passing":0,"Warning":1}}`, "Weights.Passing"},
		{"warning weight -1", `{"Name":"web","Weights":{"Passing":1,"Warning":-1}}`, "Weights.Warning"},
		{"bad meta key", `{"Name":"web","Meta":{"a.b":"x"}}`, "Meta[a.b]"},
		{"bad address", `{"Name":"web","Address":"not-an-ip"}`, "Address"},
		{"unknown field", `{"Name":"web","Bogus":1}`, "Bogus"},
		{"unknown nested field", `{"Name":"web","Weights":{"Passing":1,"Heavy":2}}`, "Heavy"},
		{"port of wrong type", `{"Name":"web","Port":"80"}`, "Port"},
		{"port not an integer", `{"Name":"web","Port":80.5}`, "Port"},
		{"port overflows int", `{"Name":"web","Port":1e30}`, "Port"},
		{"tags of wrong type", `{"Name":"web","Tags":"v1"}`, "Tags"},
		{"nested wrong type", `{"Name":"web","Weights":{"Passing":"1"}}`, "Weights.Passing"},
		{"malformed JSON", `{"Name":web}`, "body"},
		{"truncated JSON", `{"Name":"web"`, "body"},
		{"not JSON", `Name=web`, "body"},
		{"empty body", ``, "body"},
		{"whitespace only", " \n\t", "body"},
		{"two JSON objects", `{"Name":"web"}{"Name":"db"}`, "body"},
		{"trailing garbage", `{"Name":"web"} x`, "body"},
		{"array instead of object", `[{"Name":"web"}]`, "body"},
		{"string instead of object", `"web"`, "body"},
		{"oversized body", big, "body"},
		{"oversized by trailing space", `{"Name":"web"}` + strings.Repeat(" ", testMaxBody), "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, cat := realLocal(t)
			h := newServer(t, st, nil)
			wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/register",
				`{"Name":"web","Port":80,"Tags":["v1"]}`), http.StatusOK)
			before := st.Services()
			writes, inCatalog := cat.snapshot()

			rec := serve(h, http.MethodPut, "/v1/agent/service/register", tt.body)
			wantStatus(t, rec, http.StatusBadRequest)
			body := errorBody(t, rec)
			if got, want := keys(t, body), []string{"error", "field", "reason"}; !slices.Equal(got, want) {
				t.Errorf("got keys %v, want %v (body %s)", got, want, rec.Body)
			}
			if got := body["field"]; got != tt.field {
				t.Errorf("got field %q, want %q (body %s)", got, tt.field, rec.Body)
			}
			if reason, _ := body["reason"].(string); reason == "" {
				t.Errorf("got body %s, want a reason", rec.Body)
			}

			if got := st.Services(); !reflect.DeepEqual(got, before) {
				t.Errorf("local services changed: got %v, want %v", got, before)
			}
			if gotWrites, got := cat.snapshot(); gotWrites != writes || !reflect.DeepEqual(got, inCatalog) {
				t.Errorf("catalog changed: got %d writes %v, want %d writes %v", gotWrites, got, writes, inCatalog)
			}
		})
	}
}

func TestRegisterThenListWithRealLocal(t *testing.T) {
	st, cat := realLocal(t)
	h := newServer(t, st, nil)
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/register", `{"Name":"web","Port":80}`), http.StatusOK)

	rec := serve(h, http.MethodGet, "/v1/agent/services", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[map[string]map[string]any](t, rec)
	web, ok := got["web"]
	if !ok || len(got) != 1 {
		t.Fatalf("got %s, want one service under the ID defaulted from its name", rec.Body)
	}
	if w := web["Weights"]; !reflect.DeepEqual(w, map[string]any{"Passing": 1.0, "Warning": 1.0}) {
		t.Errorf("got Weights %v, want the defaults 1/1", w)
	}
	if _, inCatalog := cat.snapshot(); len(inCatalog) != 1 {
		t.Errorf("catalog holds %v, want web", inCatalog)
	}
}

func TestDeregister(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		code  int
		gone  string // the ID that must be removed on success
		field string // for a 400
	}{
		{"plain ID", "/v1/agent/service/deregister/web", http.StatusOK, "web", ""},
		{"escaped ID", "/v1/agent/service/deregister/a%3Ab%26c%3Dd%2Be", http.StatusOK, "a:b&c=d+e", ""},
		{"same ID unescaped", "/v1/agent/service/deregister/a:b&c=d+e", http.StatusOK, "a:b&c=d+e", ""},
		{"escaped letters", "/v1/agent/service/deregister/%77%65%62", http.StatusOK, "web", ""},
		{"unknown ID", "/v1/agent/service/deregister/nope", http.StatusNotFound, "", ""},
		{"ID differing in case", "/v1/agent/service/deregister/WEB", http.StatusNotFound, "", ""},
		{"escaped slash", "/v1/agent/service/deregister/web%2Fx", http.StatusNotFound, "", ""},
		{"ID with slash", "/v1/agent/service/deregister/web/x", http.StatusNotFound, "", ""},
		{"no ID", "/v1/agent/service/deregister/", http.StatusBadRequest, "", "ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, cat := realLocal(t)
			h := newServer(t, st, nil)
			for _, body := range []string{`{"Name":"web"}`, `{"ID":"a:b&c=d+e","Name":"odd"}`} {
				wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/register", body), http.StatusOK)
			}
			all := []string{"a:b&c=d+e", "web"}

			rec := serve(h, http.MethodPut, tt.path, "")
			wantStatus(t, rec, tt.code)
			want := all
			if tt.code == http.StatusOK {
				if rec.Body.Len() != 0 {
					t.Errorf("got body %q, want none", rec.Body)
				}
				want = slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == tt.gone })
			} else {
				body := errorBody(t, rec)
				if got := body["field"]; tt.field != "" && got != tt.field {
					t.Errorf("got field %v, want %q", got, tt.field)
				}
				if tt.code == http.StatusNotFound && !slices.Equal(keys(t, body), []string{"error"}) {
					t.Errorf("got body %s, want only \"error\"", rec.Body)
				}
			}
			var got []string
			for _, s := range st.Services() {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("local services: got %v, want %v", got, want)
			}
			_, inCatalog := cat.snapshot()
			if ids := slices.Sorted(maps.Keys(inCatalog)); !slices.Equal(ids, want) {
				t.Errorf("catalog services: got %v, want %v", ids, want)
			}
		})
	}
}

func TestAgentServices(t *testing.T) {
	l := &fakeLocal{services: []*catalog.Service{
		{ID: "db-1", Service: "db", Tags: []string{"primary"}, Address: "10.0.0.7", Port: 5432,
			Meta: map[string]string{"k": "v"}, Weights: catalog.Weights{Passing: 3, Warning: 0},
			RaftIndex: catalog.RaftIndex{CreateIndex: 5, ModifyIndex: 6}},
		{ID: "web", Service: "web", Port: 80, Weights: catalog.DefaultWeights},
	}}
	rec := serve(newServer(t, l, nil), http.MethodGet, "/v1/agent/services", "")
	wantStatus(t, rec, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("got Content-Type %q, want application/json", ct)
	}
	got := decode[map[string]any](t, rec)
	want := map[string]any{
		"db-1": map[string]any{
			"ID": "db-1", "Service": "db", "Tags": []any{"primary"}, "Address": "10.0.0.7", "Port": 5432.0,
			"Meta": map[string]any{"k": "v"}, "Weights": map[string]any{"Passing": 3.0, "Warning": 0.0},
			"EnableTagOverride": false, "Datacenter": "dc1",
		},
		"web": map[string]any{
			"ID": "web", "Service": "web", "Tags": []any{}, "Address": "", "Port": 80.0,
			"Meta": map[string]any{}, "Weights": map[string]any{"Passing": 1.0, "Warning": 1.0},
			"EnableTagOverride": false, "Datacenter": "dc1",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s, want %v", rec.Body, want)
	}
}

// TestAgentServicesFilter: ?filter selects among the agent's services with
// the fields of Consul's AgentService, as consul services list -filter and
// the official client's ServicesWithFilter send it.
func TestAgentServicesFilter(t *testing.T) {
	l := &fakeLocal{services: []*catalog.Service{
		{ID: "db-1", Service: "db", Tags: []string{"primary"}, Port: 5432, Meta: map[string]string{"env": "prod"}},
		{ID: "db-2", Service: "db", Tags: []string{"replica"}, Port: 5433, Meta: map[string]string{"env": "test"}},
		{ID: "web", Service: "web", Port: 80},
	}}
	h := newServer(t, l, nil)
	for expr, want := range map[string][]string{
		`Service == "db"`:                 {"db-1", "db-2"},
		`"primary" in Tags`:               {"db-1"},
		`Meta.env == "test"`:              {"db-2"},
		`Port == 5433 and Service != "x"`: {"db-2"},
		`ID matches "^w"`:                 {"web"},
		`Service == "none"`:               {},
	} {
		rec := serve(h, http.MethodGet, "/v1/agent/services?filter="+url.QueryEscape(expr), "")
		wantStatus(t, rec, http.StatusOK)
		got := slices.Sorted(maps.Keys(decode[map[string]any](t, rec)))
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", expr, got, want)
		}
	}
	rec := serve(h, http.MethodGet, "/v1/agent/services?filter="+url.QueryEscape("Port == web"), "")
	if rec.Code != http.StatusBadRequest || errorBody(t, rec)["field"] != "filter" {
		t.Errorf("a number compared with a word: got %d %s, want 400 naming filter", rec.Code, rec.Body)
	}
}

func TestAgentServicesEmpty(t *testing.T) {
	rec := serve(newServer(t, &fakeLocal{}, nil), http.MethodGet, "/v1/agent/services", "")
	wantStatus(t, rec, http.StatusOK)
	if got := strings.TrimSpace(rec.Body.String()); got != "{}" {
		t.Errorf("got %s, want {}", got)
	}
}

func TestLocalErrors(t *testing.T) {
	multiLine := errors.New("raft: apply timed out\nafter 5s")
	tests := []struct {
		name  string
		err   error
		code  int
		field string
		msg   string // the error message must contain it
	}{
		{"not synced", fmt.Errorf("register service %q: %w: %w", "web", local.ErrNotSynced, multiLine),
			http.StatusServiceUnavailable, "", local.ErrNotSynced.Error() + ": raft: apply timed out; after 5s"},
		{"unknown outcome", fmt.Errorf("x: %w: %w", rpc.ErrUnknownOutcome, rpc.ErrTransport),
			http.StatusServiceUnavailable, "", "may or may not have been applied"},
		{"no server", fmt.Errorf("x: %w", rpc.ErrNoLeader), http.StatusServiceUnavailable, "", "retrying is safe"},
		{"rate limited", fmt.Errorf("x: %w", rpc.ErrRateLimited), http.StatusTooManyRequests, "", "rate limit"},
		{"other failure", errBoom, http.StatusInternalServerError, "", "boom"},
		{"field error", fmt.Errorf("wrapped: %w", &catalog.FieldError{Field: "Tags[2]", Reason: "bad"}),
			http.StatusBadRequest, "Tags[2]", "Tags[2]: bad"},
		{"unknown service", fmt.Errorf("x: %w", local.ErrUnknownService), http.StatusNotFound, "", "unknown service"},
		{"catalog not found", fmt.Errorf("x: %w", catalog.ErrNotFound), http.StatusNotFound, "", "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newServer(t, &fakeLocal{err: tt.err}, nil)
			for _, req := range []struct{ path, body string }{
				{"/v1/agent/service/register", `{"Name":"web"}`},
				{"/v1/agent/service/deregister/web", ""},
			} {
				rec := serve(h, http.MethodPut, req.path, req.body)
				wantStatus(t, rec, tt.code)
				body := errorBody(t, rec)
				if msg := body["error"].(string); !strings.Contains(msg, tt.msg) {
					t.Errorf("%s: got error %q, want it to contain %q", req.path, msg, tt.msg)
				}
				if got, _ := body["field"].(string); got != tt.field {
					t.Errorf("%s: got field %q, want %q", req.path, got, tt.field)
				}
			}
		})
	}
}

func TestRegisterNotSyncedWithRealLocal(t *testing.T) {
	st, cat := realLocal(t)
	h := newServer(t, st, nil)
	cat.setErr(errBoom)

	rec := serve(h, http.MethodPut, "/v1/agent/service/register", `{"Name":"web"}`)
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if msg := errorBody(t, rec)["error"].(string); !strings.Contains(msg, local.ErrNotSynced.Error()) {
		t.Errorf("got error %q, want it to say %q", msg, local.ErrNotSynced)
	}
	// The agent kept the service; anti-entropy will push it.
	got := decode[map[string]any](t, serve(h, http.MethodGet, "/v1/agent/services", ""))
	if _, ok := got["web"]; !ok {
		t.Errorf("got %v, want web listed by the agent", got)
	}
}
