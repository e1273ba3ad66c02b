package httpapi_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// TestQueryOptionsReachTheCatalog: ?dc, ?index, ?wait, ?stale and
// ?consistent reach the Catalog as QueryOptions, and its QueryMeta comes
// back as Consul's headers.
func TestQueryOptionsReachTheCatalog(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  queryOpts
	}{
		{"", queryOpts{}},
		{"?dc=DC2&index=5&wait=10s&stale", queryOpts{Datacenter: "dc2", MinIndex: 5, MaxWait: 10 * time.Second, AllowStale: true}},
		{"?consistent&wait=5m&nosuch=1", queryOpts{RequireConsistent: true, MaxWait: 5 * time.Minute}},
	} {
		for _, path := range []string{"/v1/catalog/nodes", "/v1/catalog/services", "/v1/catalog/service/web", "/v1/catalog/node/n1",
			"/v1/catalog/node-services/n1", "/v1/health/service/web", "/v1/health/checks/web", "/v1/health/node/n1", "/v1/health/state/any"} {
			cat := &fakeCatalog{index: 42}
			rec := serve(newServer(t, &fakeLocal{}, cat), http.MethodGet, path+tc.query, "")
			wantStatus(t, rec, http.StatusOK)
			if got := cat.opts(); got != tc.want {
				t.Errorf("%s%s: got options %+v, want %+v", path, tc.query, got, tc.want)
			}
			for h, want := range map[string]string{"X-Consul-Index": "42", "X-Consul-KnownLeader": "true", "X-Consul-LastContact": "3"} {
				if got := rec.Header().Get(h); got != want {
					t.Errorf("%s: %s: got %q, want %q", path, h, got, want)
				}
			}
		}
	}
}

// TestTagsAndFilter: repeated ?tag keeps instances with every tag, and
// ?filter applies Consul's filter language to the entries.
func TestTagsAndFilter(t *testing.T) {
	n1 := &catalog.Node{Node: "n1", Address: "10.0.0.1", Datacenter: "dc1"}
	n2 := &catalog.Node{Node: "n2", Address: "10.0.0.2", Datacenter: "dc1"}
	cat := &fakeCatalog{index: 7, nodes: []*catalog.Node{n1, n2}, instances: []catalog.ServiceInstance{
		{Node: n1, Service: &catalog.Service{ID: "web1", Service: "web", Tags: []string{"v1", "primary"}},
			Checks: []*catalog.Check{{Node: "n1", CheckID: "c1", Status: catalog.HealthPassing, ServiceID: "web1"}}},
		{Node: n2, Service: &catalog.Service{ID: "web2", Service: "web", Tags: []string{"v1"}},
			Checks: []*catalog.Check{{Node: "n2", CheckID: "c2", Status: catalog.HealthCritical, ServiceID: "web2"}}},
	}}
	h := newServer(t, &fakeLocal{}, cat)
	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"/v1/health/service/web?tag=v1&tag=primary", []string{"web1"}},
		{"/v1/health/service/web?tag=v1", []string{"web1", "web2"}},
		{`/v1/health/service/web?filter=Node.Node+%3D%3D+"n2"`, []string{"web2"}},
		{`/v1/health/service/web?filter=Service.Tags+contains+"primary"`, []string{"web1"}},
		{`/v1/health/service/web?filter=any+Checks+as+c+%7B+c.Status+%3D%3D+"critical"+%7D`, []string{"web2"}},
	} {
		rec := serve(h, http.MethodGet, tc.target, "")
		wantStatus(t, rec, http.StatusOK)
		var got []string
		for _, e := range decode[[]struct{ Service struct{ ID string } }](t, rec) {
			got = append(got, e.Service.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.target, got, tc.want)
		}
	}
	rec := serve(h, http.MethodGet, "/v1/catalog/service/web?filter=Nope+%3D%3D", "")
	wantStatus(t, rec, http.StatusBadRequest)
	if f := errorBody(t, rec)["field"]; f != "filter" {
		t.Errorf("bad filter: field %v, want filter", f)
	}
}

// TestCatalogRegisterBody: Consul's registration body, with fields cairn
// does not use, reaches the Catalog with the datacenter asked.
func TestCatalogRegisterBody(t *testing.T) {
	cat := &fakeCatalog{}
	h := newServer(t, &fakeLocal{}, cat)
	body := `{"Node":"ext","Address":"192.0.2.1","TaggedAddresses":null,"Datacenter":"DC1",
		"Service":{"ID":"db1","Service":"db","Port":5432,"Weights":{"Passing":0,"Warning":0},"Proxy":null},
		"Check":{"CheckID":"up","ServiceID":"db1","Definition":{}}}`
	wantStatus(t, serve(h, http.MethodPut, "/v1/catalog/register", body), http.StatusOK)
	wantStatus(t, serve(h, http.MethodPut, "/v1/catalog/deregister?dc=dc2", `{"Node":"ext"}`), http.StatusOK)
	wantStatus(t, serve(h, http.MethodPut, "/v1/catalog/deregister", `{}`), http.StatusBadRequest)
	wantStatus(t, serve(h, http.MethodGet, "/v1/catalog/register", ""), http.StatusMethodNotAllowed)
	if len(cat.registered) != 1 || len(cat.deregistered) != 1 {
		t.Fatalf("got %d registrations, %d deregistrations; want 1 and 1", len(cat.registered), len(cat.deregistered))
	}
	reg := cat.registered[0]
	if reg.Service == nil || reg.Service.ID != "db1" || reg.Service.Weights != (catalog.Weights{}) ||
		len(reg.Checks) != 1 || reg.Checks[0].Status != catalog.HealthCritical || reg.Checks[0].Node != "ext" {
		t.Errorf("registration: got %+v", reg)
	}
	if !slices.Equal(cat.writeDCs, []string{"dc1", "dc2"}) {
		t.Errorf("write datacenters: got %v, want [dc1 dc2]", cat.writeDCs)
	}
}
