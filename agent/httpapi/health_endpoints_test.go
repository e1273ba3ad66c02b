package httpapi_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// checksCatalog holds checks on two nodes in every state, listed out of
// order.
func checksCatalog() *fakeCatalog {
	c := func(node, id, svc string, status catalog.HealthStatus, typ string) *catalog.Check {
		out := &catalog.Check{Node: node, CheckID: id, Name: id + " check", Status: status, Type: typ,
			Output: "out " + id, RaftIndex: catalog.RaftIndex{CreateIndex: 5, ModifyIndex: 6}}
		if svc != "" {
			out.ServiceID, out.ServiceName = svc+"-"+node, svc
		}
		return out
	}
	return &fakeCatalog{index: 77, checks: []*catalog.Check{
		c("n2", "service:web-n2", "web", catalog.HealthCritical, "http"),
		c("n1", "serfHealth", "", catalog.HealthPassing, "gossip"),
		c("n1", "service:web-n1", "web", catalog.HealthPassing, "http"),
		c("n2", "serfHealth", "", catalog.HealthWarning, "gossip"),
		c("n1", "_service_maintenance:db-n1", "db", catalog.HealthMaintenance, "maintenance"),
	}}
}

func TestHealthCheckReads(t *testing.T) {
	tests := []struct {
		target string
		asked  string
		want   []string // node/checkID, in order
	}{
		{"/v1/health/checks/web", "web", []string{"n1/service:web-n1", "n2/service:web-n2"}},
		{"/v1/health/checks/WEB", "WEB", []string{"n1/service:web-n1", "n2/service:web-n2"}},
		{"/v1/health/checks/nope", "nope", []string{}},
		{"/v1/health/node/n1", "n1", []string{"n1/_service_maintenance:db-n1", "n1/serfHealth", "n1/service:web-n1"}},
		{"/v1/health/node/n9", "n9", []string{}},
		{"/v1/health/state/passing", "passing", []string{"n1/serfHealth", "n1/service:web-n1"}},
		{"/v1/health/state/warning", "warning", []string{"n2/serfHealth"}},
		{"/v1/health/state/critical", "critical", []string{"n2/service:web-n2"}},
		{"/v1/health/state/maintenance", "maintenance", []string{"n1/_service_maintenance:db-n1"}},
		{"/v1/health/state/any", "any", []string{"n1/_service_maintenance:db-n1", "n1/serfHealth",
			"n1/service:web-n1", "n2/service:web-n2", "n2/serfHealth"}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			cat := checksCatalog()
			rec := serve(newServer(t, nil, cat), http.MethodGet, tt.target, "")
			wantStatus(t, rec, http.StatusOK)
			wantIndex(t, rec, "77")
			if name, _ := cat.asked(); name != tt.asked {
				t.Errorf("catalog asked for %q, want %q", name, tt.asked)
			}
			got := decode[[]map[string]any](t, rec)
			ids := []string{}
			for _, c := range got {
				if k := keys(t, c); !slices.Equal(k, healthCheckKeys) {
					t.Errorf("got keys %v, want %v", k, healthCheckKeys)
				}
				ids = append(ids, c["Node"].(string)+"/"+c["CheckID"].(string))
			}
			// Sorted by node, then check ID (byte order: '_' < 's').
			wantSorted := slices.Clone(tt.want)
			slices.SortFunc(wantSorted, func(a, b string) int {
				an, aid, _ := strings.Cut(a, "/")
				bn, bid, _ := strings.Cut(b, "/")
				if an != bn {
					return strings.Compare(an, bn)
				}
				return strings.Compare(aid, bid)
			})
			if !slices.Equal(ids, wantSorted) {
				t.Errorf("got %v, want %v", ids, wantSorted)
			}
		})
	}
}

func TestHealthCheckFields(t *testing.T) {
	rec := serve(newServer(t, nil, checksCatalog()), http.MethodGet, "/v1/health/checks/web", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[[]map[string]any](t, rec)
	want := map[string]any{
		"Node": "n1", "CheckID": "service:web-n1", "Name": "service:web-n1 check", "Status": "passing",
		"Notes": "", "Output": "out service:web-n1", "ServiceID": "web-n1", "ServiceName": "web", "ServiceTags": []any{},
		"Type": "http", "CreateIndex": 5.0, "ModifyIndex": 6.0,
	}
	if len(got) == 0 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("got %v,\nwant first %v", got, want)
	}
}

func TestHealthStateRejectsUnknownState(t *testing.T) {
	for _, state := range []string{"unknown", "Passing", "PASSING", "ok", "%20passing"} {
		cat := checksCatalog()
		rec := serve(newServer(t, nil, cat), http.MethodGet, "/v1/health/state/"+state, "")
		wantStatus(t, rec, http.StatusBadRequest)
		if got := errorBody(t, rec)["field"]; got != "state" {
			t.Errorf("%s: got field %v, want state", state, got)
		}
		if name, _ := cat.asked(); name != "" {
			t.Errorf("%s: catalog was asked for %q, want not asked", state, name)
		}
	}
	for _, target := range []string{"/v1/health/state/", "/v1/health/node/", "/v1/health/checks/", "/v1/health/state/any/x"} {
		rec := serve(newServer(t, nil, checksCatalog()), http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusNotFound)
		errorBody(t, rec)
	}
}

func TestHealthCheckReadErrors(t *testing.T) {
	for _, target := range []string{"/v1/health/checks/web", "/v1/health/node/n1", "/v1/health/state/any"} {
		rec := serve(newServer(t, nil, &fakeCatalog{err: errBoom}), http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusInternalServerError)
		if msg, _ := errorBody(t, rec)["error"].(string); !strings.Contains(msg, "boom") {
			t.Errorf("%s: got error %q, want boom", target, msg)
		}
	}
}

func TestHealthServicePassingLeavesOutMaintenance(t *testing.T) {
	n1 := &catalog.Node{Node: "n1", Address: "10.0.0.1", Datacenter: "dc1"}
	svc := func(id string) *catalog.Service {
		return &catalog.Service{ID: id, Service: "web", Weights: catalog.DefaultWeights}
	}
	check := func(id string, st catalog.HealthStatus) *catalog.Check {
		return &catalog.Check{Node: "n1", CheckID: id, Status: st}
	}
	cat := &fakeCatalog{index: 3, instances: []catalog.ServiceInstance{
		{Node: n1, Service: svc("ok"), Checks: []*catalog.Check{check("serfHealth", catalog.HealthPassing)}},
		{Node: n1, Service: svc("maint"), Checks: []*catalog.Check{check("_service_maintenance:maint", catalog.HealthMaintenance)}},
		{Node: n1, Service: svc("crit"), Checks: []*catalog.Check{check("c", catalog.HealthCritical)}},
		{Node: n1, Service: svc("warn"), Checks: []*catalog.Check{check("w", catalog.HealthWarning)}},
		{Node: n1, Service: svc("none")},
	}}
	for target, want := range map[string][]string{
		"/v1/health/service/web":         {"ok", "maint", "crit", "warn", "none"},
		"/v1/health/service/web?passing": {"ok", "none"},
	} {
		rec := serve(newServer(t, nil, cat), http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusOK)
		var ids []string
		for _, e := range decode[[]map[string]any](t, rec) {
			ids = append(ids, e["Service"].(map[string]any)["ID"].(string))
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: got %v, want %v", target, ids, want)
		}
	}
}

// TestTTLCheckWithRealLocal registers a service with a TTL check through
// the API over a real local.State, reports it passing, and reads it back.
func TestTTLCheckWithRealLocal(t *testing.T) {
	st, cat := realLocal(t)
	h := newServer(t, st, nil)
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/register",
		`{"Name":"web","Port":80,"Tags":["v1"],"Check":{"TTL":"1m"}}`), http.StatusOK)

	status := func() string {
		rec := serve(h, http.MethodGet, "/v1/agent/checks", "")
		wantStatus(t, rec, http.StatusOK)
		got := decode[map[string]map[string]any](t, rec)
		c, ok := got["service:web"]
		if !ok {
			t.Fatalf("got checks %s, want service:web", rec.Body)
		}
		if c["ServiceID"] != "web" || c["Type"] != "ttl" || !reflect.DeepEqual(c["ServiceTags"], []any{"v1"}) {
			t.Errorf("got %v, want a ttl check of web tagged v1", c)
		}
		return c["Status"].(string)
	}
	if got := status(); got != "critical" {
		t.Errorf("before any report: got %s, want critical", got)
	}
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/check/pass/service:web?note=fine", ""), http.StatusOK)
	deadline := time.Now().Add(5 * time.Second)
	for status() != "passing" {
		if time.Now().After(deadline) {
			t.Fatal("the check did not turn passing after /pass")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A TCP check is not fed from outside.
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/check/register",
		`{"ID":"port","ServiceID":"web","TCP":"127.0.0.1:1","Interval":"1h"}`), http.StatusOK)
	rec := serve(h, http.MethodPut, "/v1/agent/check/pass/port", "")
	wantStatus(t, rec, http.StatusBadRequest)
	if got := errorBody(t, rec)["field"]; got != "CheckID" {
		t.Errorf("pass of a TCP check: got field %v, want CheckID", got)
	}
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/check/pass/nope", ""), http.StatusNotFound)
	rec = serve(h, http.MethodPut, "/v1/agent/check/register", `{"ID":"x","ServiceID":"nope","TTL":"1m"}`)
	wantStatus(t, rec, http.StatusBadRequest)
	if got := errorBody(t, rec)["field"]; got != "ServiceID" {
		t.Errorf("check of an unknown service: got field %v, want ServiceID", got)
	}

	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/check/deregister/port", ""), http.StatusOK)
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/check/deregister/port", ""), http.StatusNotFound)

	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/maintenance/web?enable=true&reason=deploy", ""), http.StatusOK)
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/maintenance/nope?enable=true", ""), http.StatusNotFound)
	got := decode[map[string]map[string]any](t, serve(h, http.MethodGet, "/v1/agent/checks", ""))
	var maint map[string]any
	for _, c := range got {
		if c["Type"] == "maintenance" {
			maint = c
		}
	}
	if maint == nil || maint["Status"] != "critical" || maint["ServiceID"] != "web" || maint["Notes"] != "deploy" {
		t.Errorf("after enabling maintenance: got checks %v, want one of type maintenance, critical (as Consul's), on web noted deploy", got)
	}
	if !cat.hasCheck(maint["CheckID"]) {
		t.Errorf("the catalog does not hold the maintenance check %v", maint["CheckID"])
	}
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/maintenance/web?enable=false", ""), http.StatusOK)
	if cat.hasCheck(maint["CheckID"]) {
		t.Errorf("the catalog still holds the maintenance check %v", maint["CheckID"])
	}
	for _, c := range decode[map[string]map[string]any](t, serve(h, http.MethodGet, "/v1/agent/checks", "")) {
		if c["Type"] == "maintenance" {
			t.Errorf("after disabling maintenance: %v is still in maintenance", c["CheckID"])
		}
	}
}
