package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// TestAgentHealthService: the health of the agent's own services by ID and
// by name, with Consul's codes (200 passing, 429 warning, 503 critical or
// maintenance, 404 unknown), the node's checks counted, and ?format=text
// answering the status alone.
func TestAgentHealthService(t *testing.T) {
	chk := func(id, svc string, st catalog.HealthStatus) *catalog.Check {
		return &catalog.Check{Node: "n1", CheckID: id, Name: id, Status: st, ServiceID: svc}
	}
	l := &fakeLocal{
		services: []*catalog.Service{
			{ID: "web-1", Service: "web", Port: 80}, {ID: "web-2", Service: "web", Port: 81},
			{ID: "db", Service: "db", Port: 5432}, {ID: "idle", Service: "idle"},
		},
		checks: []*catalog.Check{
			chk("web-1-ttl", "web-1", catalog.HealthPassing),
			chk("web-2-ttl", "web-2", catalog.HealthWarning),
			chk("db-ttl", "db", catalog.HealthPassing),
			chk(catalog.ServiceMaintenancePrefix+"db", "db", catalog.HealthCritical),
		},
	}
	h := newServer(t, l, &fakeCatalog{index: 1})
	for _, tc := range []struct {
		target string
		code   int
		status string
	}{
		{"/v1/agent/health/service/id/web-1", 200, "passing"},
		{"/v1/agent/health/service/id/web-2", 429, "warning"},
		{"/v1/agent/health/service/id/db", 503, "maintenance"},
		{"/v1/agent/health/service/id/idle", 200, "passing"},
		{"/v1/agent/health/service/name/web", 429, "warning"},
		{"/v1/agent/health/service/name/db", 503, "maintenance"},
	} {
		rec := serve(h, http.MethodGet, tc.target, "")
		if rec.Code != tc.code {
			t.Errorf("%s: got %d %s, want %d", tc.target, rec.Code, rec.Body, tc.code)
			continue
		}
		text := serve(h, http.MethodGet, tc.target+"?format=text", "")
		if text.Code != tc.code || text.Body.String() != tc.status {
			t.Errorf("%s?format=text: got %d %q, want %d %q", tc.target, text.Code, text.Body, tc.code, tc.status)
		}
	}
	byID := decode[map[string]any](t, serve(h, http.MethodGet, "/v1/agent/health/service/id/web-2", ""))
	if byID["AggregatedStatus"] != "warning" || byID["Service"].(map[string]any)["ID"] != "web-2" || len(byID["Checks"].([]any)) != 1 {
		t.Errorf("by ID: got %v, want web-2, warning, its one check", byID)
	}
	byName := decode[[]map[string]any](t, serve(h, http.MethodGet, "/v1/agent/health/service/name/web", ""))
	var got []string
	for _, e := range byName {
		got = append(got, e["Service"].(map[string]any)["ID"].(string)+"="+e["AggregatedStatus"].(string))
	}
	if want := []string{"web-1=passing", "web-2=warning"}; !slices.Equal(got, want) {
		t.Errorf("by name: got %v, want %v", got, want)
	}

	// The node's checks count for every service.
	l.checks = append(l.checks, chk(catalog.NodeMaintenanceCheckID, "", catalog.HealthCritical))
	if rec := serve(h, http.MethodGet, "/v1/agent/health/service/id/web-1?format=text", ""); rec.Code != 503 || rec.Body.String() != "maintenance" {
		t.Errorf("web-1 with the node in maintenance: got %d %s, want 503 maintenance", rec.Code, rec.Body)
	}

	for _, target := range []string{"/v1/agent/health/service/id/nope", "/v1/agent/health/service/name/nope"} {
		rec := serve(h, http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusNotFound)
		if body := rec.Body.String(); !strings.Contains(body, "critical") && strings.TrimSpace(body) != "[]" {
			t.Errorf("%s: got body %s, want critical or an empty list", target, body)
		}
	}
}

// TestAgentHost: Consul's shape, CollectionTime set (Consul's clients
// read it to tell an answer).
func TestAgentHost(t *testing.T) {
	rec := serve(newServer(t, &fakeLocal{}, &fakeCatalog{index: 1}), http.MethodGet, "/v1/agent/host", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[map[string]any](t, rec)
	for _, k := range []string{"Memory", "CPU", "Host", "Disk", "CollectionTime", "Errors"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s in %s", k, rec.Body)
		}
	}
	if ct, _ := got["CollectionTime"].(float64); ct <= 0 {
		t.Errorf("CollectionTime %v, want a time", got["CollectionTime"])
	}
}

// TestAgentForceLeave: the member, ?prune and ?wan reach the cluster; a
// client asked for the WAN pool is a 400 naming wan.
func TestAgentForceLeave(t *testing.T) {
	cl := testCluster()
	h := newClusterServer(t, cl)
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/force-leave/web-3", ""), http.StatusOK)
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/force-leave/web-2?prune", ""), http.StatusOK)
	rec := serve(h, http.MethodPut, "/v1/agent/force-leave/srv-1.dc2?wan=1", "")
	wantStatus(t, rec, http.StatusBadRequest)
	if body := errorBody(t, rec); body["field"] != "wan" {
		t.Errorf("got %v, want field wan", body)
	}
	want := []string{"web-3 prune=false wan=false", "web-2 prune=true wan=false", "srv-1.dc2 prune=false wan=true"}
	if !slices.Equal(cl.forceLeaves, want) {
		t.Errorf("got calls %q, want %q", cl.forceLeaves, want)
	}
	wantStatus(t, serve(h, http.MethodGet, "/v1/agent/force-leave/web-3", ""), http.StatusMethodNotAllowed)
}
