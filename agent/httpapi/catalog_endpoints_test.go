package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// The exact JSON field names Consul gives for each shape.
var (
	nodeKeys           = sorted("ID", "Node", "Address", "Datacenter", "TaggedAddresses", "Meta", "CreateIndex", "ModifyIndex")
	catalogServiceKeys = sorted("ID", "Node", "Address", "Datacenter", "TaggedAddresses", "NodeMeta", "ServiceKind",
		"ServiceID", "ServiceName", "ServiceTags", "ServiceAddress", "ServicePort", "ServiceMeta", "ServiceWeights",
		"ServiceEnableTagOverride", "CreateIndex", "ModifyIndex")
	healthEntryKeys   = sorted("Node", "Service", "Checks")
	healthServiceKeys = sorted("ID", "Service", "Tags", "Meta", "Port", "Address", "Weights", "EnableTagOverride",
		"Datacenter", "CreateIndex", "ModifyIndex")
	healthCheckKeys = sorted("Node", "CheckID", "Name", "Status", "Notes", "Output", "ServiceID", "ServiceName",
		"ServiceTags", "Type", "CreateIndex", "ModifyIndex")
	weightsKeys = sorted("Passing", "Warning")
)

// testCatalog has three instances of web, one per health state, and a db.
func testCatalog() *fakeCatalog {
	n1 := &catalog.Node{ID: "id-1", Node: "n1", Address: "10.0.0.1", Datacenter: "dc1",
		Meta: map[string]string{"rack": "a"}, RaftIndex: catalog.RaftIndex{CreateIndex: 1, ModifyIndex: 2}}
	n2 := &catalog.Node{Node: "n2", Address: "10.0.0.2", Datacenter: "dc1"}
	n3 := &catalog.Node{Node: "n3", Address: "10.0.0.3", Datacenter: "dc2"}
	check := func(node, id, svc string, status catalog.HealthStatus) *catalog.Check {
		c := &catalog.Check{Node: node, CheckID: id, Name: id + " check", Status: status, Output: "out " + id, Notes: "notes",
			Type: "gossip", RaftIndex: catalog.RaftIndex{CreateIndex: 7, ModifyIndex: 8}}
		if svc != "" {
			c.ServiceID, c.ServiceName, c.Type = svc, "web", "http"
		}
		return c
	}
	return &fakeCatalog{
		index: 42,
		nodes: []*catalog.Node{n1, n2, n3},
		services: map[string][]string{
			"web": {"primary", "v1"},
			"db":  {},
		},
		instances: []catalog.ServiceInstance{
			{Node: n1, Service: &catalog.Service{ID: "web-1", Service: "web", Tags: []string{"primary", "v1"},
				Address: "10.1.0.1", Port: 8080, Meta: map[string]string{"version": "1"},
				Weights: catalog.Weights{Passing: 10, Warning: 1}, RaftIndex: catalog.RaftIndex{CreateIndex: 3, ModifyIndex: 4}},
				Checks: []*catalog.Check{check("n1", "web-1-http", "web-1", catalog.HealthPassing)}},
			{Node: n2, Service: &catalog.Service{ID: "web-2", Service: "web", Tags: []string{"v1"}, Port: 8080,
				Weights: catalog.DefaultWeights},
				Checks: []*catalog.Check{check("n2", "serfHealth", "", catalog.HealthWarning)}},
			{Node: n3, Service: &catalog.Service{ID: "web-3", Service: "web", Port: 8080, Weights: catalog.DefaultWeights},
				Checks: []*catalog.Check{check("n3", "web-3-http", "web-3", catalog.HealthCritical)}},
			{Node: n1, Service: &catalog.Service{ID: "db", Service: "db", Port: 5432, Weights: catalog.DefaultWeights}},
		},
	}
}

func TestCatalogServices(t *testing.T) {
	rec := serve(newServer(t, nil, testCatalog()), http.MethodGet, "/v1/catalog/services", "")
	wantStatus(t, rec, http.StatusOK)
	wantIndex(t, rec, "42")
	got := decode[map[string]any](t, rec)
	want := map[string]any{"web": []any{"primary", "v1"}, "db": []any{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s, want %v", rec.Body, want)
	}
}

func TestCatalogNodes(t *testing.T) {
	rec := serve(newServer(t, nil, testCatalog()), http.MethodGet, "/v1/catalog/nodes", "")
	wantStatus(t, rec, http.StatusOK)
	wantIndex(t, rec, "42")
	got := decode[[]any](t, rec)
	if len(got) != 3 {
		t.Fatalf("got %d nodes, want 3: %s", len(got), rec.Body)
	}
	for _, n := range got {
		if k := keys(t, n); !slices.Equal(k, nodeKeys) {
			t.Errorf("got node keys %v, want %v", k, nodeKeys)
		}
	}
	want := map[string]any{"ID": "id-1", "Node": "n1", "Address": "10.0.0.1", "Datacenter": "dc1",
		"TaggedAddresses": map[string]any{}, "Meta": map[string]any{"rack": "a"}, "CreateIndex": 1.0, "ModifyIndex": 2.0}
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("got first node %v, want %v", got[0], want)
	}
	if meta := got[1].(map[string]any)["Meta"]; !reflect.DeepEqual(meta, map[string]any{}) {
		t.Errorf("got Meta %v for a node without any, want {}", meta)
	}
}

func TestCatalogService(t *testing.T) {
	tests := []struct {
		target  string
		askName string
		askTag  string
		want    []string // ServiceIDs
	}{
		{"/v1/catalog/service/web", "web", "", []string{"web-1", "web-2", "web-3"}},
		{"/v1/catalog/service/WEB", "WEB", "", []string{"web-1", "web-2", "web-3"}},
		{"/v1/catalog/service/web?tag=v1", "web", "v1", []string{"web-1", "web-2"}},
		{"/v1/catalog/service/web?tag=primary", "web", "primary", []string{"web-1"}},
		{"/v1/catalog/service/web?tag=nope", "web", "nope", []string{}},
		{"/v1/catalog/service/nope", "nope", "", []string{}},
		{"/v1/catalog/service/web%2Dx", "web-x", "", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			cat := testCatalog()
			rec := serve(newServer(t, nil, cat), http.MethodGet, tt.target, "")
			wantStatus(t, rec, http.StatusOK)
			wantIndex(t, rec, "42")
			if name, tag := cat.asked(); name != tt.askName || tag != tt.askTag {
				t.Errorf("catalog asked for name %q tag %q, want %q %q", name, tag, tt.askName, tt.askTag)
			}
			got := decode[[]map[string]any](t, rec)
			ids := []string{}
			for _, e := range got {
				ids = append(ids, e["ServiceID"].(string))
				if k := keys(t, e); !slices.Equal(k, catalogServiceKeys) {
					t.Errorf("got keys %v, want %v", k, catalogServiceKeys)
				}
				if k := keys(t, e["ServiceWeights"]); !slices.Equal(k, weightsKeys) {
					t.Errorf("got ServiceWeights keys %v, want %v", k, weightsKeys)
				}
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("got %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestCatalogServiceFields(t *testing.T) {
	rec := serve(newServer(t, nil, testCatalog()), http.MethodGet, "/v1/catalog/service/web", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[[]map[string]any](t, rec)
	want := map[string]any{
		"ID": "id-1", "Node": "n1", "Address": "10.0.0.1", "Datacenter": "dc1", "NodeMeta": map[string]any{"rack": "a"},
		"TaggedAddresses": map[string]any{}, "ServiceKind": "", "ServiceEnableTagOverride": false,
		"ServiceID": "web-1", "ServiceName": "web", "ServiceTags": []any{"primary", "v1"},
		"ServiceAddress": "10.1.0.1", "ServicePort": 8080.0, "ServiceMeta": map[string]any{"version": "1"},
		"ServiceWeights": map[string]any{"Passing": 10.0, "Warning": 1.0},
		"CreateIndex":    3.0, "ModifyIndex": 4.0,
	}
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("got %v,\nwant %v", got[0], want)
	}
	// Empty collections are [] and {}, not null.
	web3 := got[2]
	for _, k := range []string{"ServiceTags", "ServiceMeta", "NodeMeta"} {
		if web3[k] == nil {
			t.Errorf("web-3: got %s null, want empty", k)
		}
	}
}

func TestHealthService(t *testing.T) {
	tests := []struct {
		target string
		want   []string // Service.IDs
	}{
		{"/v1/health/service/web", []string{"web-1", "web-2", "web-3"}},
		{"/v1/health/service/web?passing", []string{"web-1"}},
		{"/v1/health/service/web?passing=", []string{"web-1"}},
		{"/v1/health/service/web?passing=true", []string{"web-1"}},
		{"/v1/health/service/web?passing=1", []string{"web-1"}},
		{"/v1/health/service/web?passing=false", []string{"web-1", "web-2", "web-3"}},
		{"/v1/health/service/web?passing=0", []string{"web-1", "web-2", "web-3"}},
		{"/v1/health/service/web?tag=v1", []string{"web-1", "web-2"}},
		{"/v1/health/service/web?tag=v1&passing", []string{"web-1"}},
		{"/v1/health/service/db?passing", []string{"db"}},
		{"/v1/health/service/nope", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := serve(newServer(t, nil, testCatalog()), http.MethodGet, tt.target, "")
			wantStatus(t, rec, http.StatusOK)
			wantIndex(t, rec, "42")
			got := decode[[]map[string]any](t, rec)
			ids := []string{}
			for _, e := range got {
				if k := keys(t, e); !slices.Equal(k, healthEntryKeys) {
					t.Fatalf("got entry keys %v, want %v", k, healthEntryKeys)
				}
				svc := e["Service"].(map[string]any)
				ids = append(ids, svc["ID"].(string))
				if k := keys(t, e["Node"]); !slices.Equal(k, nodeKeys) {
					t.Errorf("got Node keys %v, want %v", k, nodeKeys)
				}
				if k := keys(t, svc); !slices.Equal(k, healthServiceKeys) {
					t.Errorf("got Service keys %v, want %v", k, healthServiceKeys)
				}
				checks, ok := e["Checks"].([]any)
				if !ok {
					t.Errorf("got Checks %v, want an array", e["Checks"])
				}
				for _, c := range checks {
					if k := keys(t, c); !slices.Equal(k, healthCheckKeys) {
						t.Errorf("got check keys %v, want %v", k, healthCheckKeys)
					}
				}
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("got %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestHealthServiceFields(t *testing.T) {
	rec := serve(newServer(t, nil, testCatalog()), http.MethodGet, "/v1/health/service/web", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[[]map[string]any](t, rec)
	want := map[string]any{
		"Node": map[string]any{"ID": "id-1", "Node": "n1", "Address": "10.0.0.1", "Datacenter": "dc1",
			"TaggedAddresses": map[string]any{}, "Meta": map[string]any{"rack": "a"}, "CreateIndex": 1.0, "ModifyIndex": 2.0},
		"Service": map[string]any{"ID": "web-1", "Service": "web", "Tags": []any{"primary", "v1"},
			"Meta": map[string]any{"version": "1"}, "Port": 8080.0, "Address": "10.1.0.1",
			"Weights": map[string]any{"Passing": 10.0, "Warning": 1.0}, "EnableTagOverride": false, "Datacenter": "dc1",
			"CreateIndex": 3.0, "ModifyIndex": 4.0},
		"Checks": []any{map[string]any{"Node": "n1", "CheckID": "web-1-http", "Name": "web-1-http check",
			"Status": "passing", "Notes": "notes", "Output": "out web-1-http", "ServiceID": "web-1",
			"ServiceName": "web", "ServiceTags": []any{"primary", "v1"}, "Type": "http",
			"CreateIndex": 7.0, "ModifyIndex": 8.0}},
	}
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("got %v,\nwant %v", got[0], want)
	}
	// The service's datacenter is its node's, not the agent's.
	if dc := got[2]["Service"].(map[string]any)["Datacenter"]; dc != "dc2" {
		t.Errorf("web-3 on n3: got Datacenter %v, want dc2", dc)
	}
	rec = serve(newServer(t, nil, testCatalog()), http.MethodGet, "/v1/health/service/db", "")
	db := decode[[]map[string]any](t, rec)
	if checks, ok := db[0]["Checks"].([]any); !ok || len(checks) != 0 {
		t.Errorf("db without checks: got Checks %v, want []", db[0]["Checks"])
	}
	if tags, ok := db[0]["Service"].(map[string]any)["Tags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("db without tags: got Tags %v, want []", db[0]["Service"].(map[string]any)["Tags"])
	}
}

func TestEmptyListsAreArrays(t *testing.T) {
	h := newServer(t, nil, &fakeCatalog{index: 1})
	for _, target := range []string{"/v1/catalog/nodes", "/v1/catalog/service/web", "/v1/health/service/web"} {
		rec := serve(h, http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusOK)
		if got := strings.TrimSpace(rec.Body.String()); got != "[]" {
			t.Errorf("%s: got %s, want []", target, got)
		}
	}
}

func TestPretty(t *testing.T) {
	h := newServer(t, nil, testCatalog())
	for _, target := range []string{"/v1/catalog/nodes", "/v1/catalog/services", "/v1/catalog/service/web",
		"/v1/health/service/web", "/v1/agent/services"} {
		t.Run(target, func(t *testing.T) {
			plain := serve(h, http.MethodGet, target, "")
			pretty := serve(h, http.MethodGet, target+"?pretty", "")
			wantStatus(t, pretty, http.StatusOK)
			if strings.Count(plain.Body.String(), "\n") != 1 {
				t.Errorf("without ?pretty: got %q, want one line", plain.Body)
			}
			var want bytes.Buffer
			if err := json.Indent(&want, bytes.TrimSpace(plain.Body.Bytes()), "", "    "); err != nil {
				t.Fatal(err)
			}
			want.WriteByte('\n')
			if got := pretty.Body.String(); got != want.String() {
				t.Errorf("with ?pretty: got\n%s\nwant\n%s", got, want.String())
			}
			if ct := pretty.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("got Content-Type %q, want application/json", ct)
			}
			if got, want := pretty.Header().Get("X-Consul-Index"), plain.Header().Get("X-Consul-Index"); got != want {
				t.Errorf("got X-Consul-Index %q, want %q", got, want)
			}
		})
	}
}

func TestCatalogReadErrors(t *testing.T) {
	tests := []struct {
		err  error
		code int
	}{
		{fmt.Errorf("list nodes: %w", errBoom), http.StatusInternalServerError},
		{fmt.Errorf("raft:\nno leader"), http.StatusInternalServerError},
		{fmt.Errorf("look up: %w", catalog.ErrNotFound), http.StatusNotFound},
	}
	for _, tt := range tests {
		h := newServer(t, nil, &fakeCatalog{err: tt.err})
		for _, target := range []string{"/v1/catalog/nodes", "/v1/catalog/services", "/v1/catalog/service/web", "/v1/health/service/web"} {
			rec := serve(h, http.MethodGet, target, "")
			if rec.Code != tt.code {
				t.Errorf("%s with %q: got status %d, want %d", target, tt.err, rec.Code, tt.code)
			}
			if got := keys(t, errorBody(t, rec)); !slices.Equal(got, []string{"error"}) {
				t.Errorf("%s: got keys %v, want [error]", target, got)
			}
			if rec.Header().Get("X-Consul-Index") != "" {
				t.Errorf("%s: got X-Consul-Index on an error", target)
			}
		}
	}
}

func TestStatusLeader(t *testing.T) {
	for _, leader := range []string{"10.0.0.1:8300", ""} {
		s := newServerWith(t, nil, nil, fakeStatus(leader))
		rec := serve(s, http.MethodGet, "/v1/status/leader", "")
		wantStatus(t, rec, http.StatusOK)
		if got := decode[string](t, rec); got != leader {
			t.Errorf("got %q, want %q", got, leader)
		}
		if !strings.HasPrefix(rec.Body.String(), `"`) {
			t.Errorf("got %s, want a JSON string", rec.Body)
		}
	}
}

func wantIndex(t testing.TB, rec interface{ Header() http.Header }, want string) {
	t.Helper()
	if got := rec.Header().Get("X-Consul-Index"); got != want {
		t.Errorf("got X-Consul-Index %q, want %q", got, want)
	}
	if got := rec.Header().Get("X-Consul-KnownLeader"); got != "true" {
		t.Errorf("got X-Consul-KnownLeader %q, want true", got)
	}
}

// TestTaggedAddressesKept: the tagged addresses of a catalog registration
// (the node's, the service's) and of an agent registration reach the
// catalog and the agent, and the reads give them back in Consul's shapes.
func TestTaggedAddressesKept(t *testing.T) {
	cat, l := &fakeCatalog{}, &fakeLocal{}
	h := newServer(t, l, cat)
	body := `{"Node":"ext","Address":"192.0.2.1","TaggedAddresses":{"wan":"198.51.100.1"},
		"Service":{"ID":"db1","Service":"db","Port":5432,"TaggedAddresses":{"wan":{"Address":"198.51.100.1","Port":15432}}}}`
	wantStatus(t, serve(h, http.MethodPut, "/v1/catalog/register", body), http.StatusOK)
	wantSvc := map[string]catalog.ServiceAddress{"wan": {Address: "198.51.100.1", Port: 15432}}
	if reg := cat.registered[0]; reg.TaggedAddresses["wan"] != "198.51.100.1" || !maps.Equal(reg.Service.TaggedAddresses, wantSvc) {
		t.Errorf("catalog registration: got node %v, service %v", reg.TaggedAddresses, reg.Service.TaggedAddresses)
	}
	body = `{"ID":"web1","Name":"web","Port":80,"TaggedAddresses":{"lan":{"Address":"10.0.0.1","Port":8080}}}`
	wantStatus(t, serve(h, http.MethodPut, "/v1/agent/service/register", body), http.StatusOK)
	if got := l.added[0].TaggedAddresses; !maps.Equal(got, map[string]catalog.ServiceAddress{"lan": {Address: "10.0.0.1", Port: 8080}}) {
		t.Errorf("agent registration: got %v", got)
	}

	n := &catalog.Node{Node: "ext", Address: "192.0.2.1", Datacenter: "dc1", TaggedAddresses: map[string]string{"wan": "198.51.100.1"}}
	svc := &catalog.Service{ID: "db1", Service: "db", Port: 5432, Weights: catalog.DefaultWeights, TaggedAddresses: wantSvc}
	h = newServer(t, &fakeLocal{services: []*catalog.Service{svc}}, &fakeCatalog{index: 1, nodes: []*catalog.Node{n},
		instances: []catalog.ServiceInstance{{Node: n, Service: svc}}})
	wantNode := map[string]any{"wan": "198.51.100.1"}
	wantService := map[string]any{"wan": map[string]any{"Address": "198.51.100.1", "Port": 15432.0}}
	cs := decode[[]map[string]any](t, serve(h, http.MethodGet, "/v1/catalog/service/db", ""))[0]
	if !reflect.DeepEqual(cs["TaggedAddresses"], wantNode) || !reflect.DeepEqual(cs["ServiceTaggedAddresses"], wantService) {
		t.Errorf("catalog/service: got %v and %v", cs["TaggedAddresses"], cs["ServiceTaggedAddresses"])
	}
	e := decode[[]struct{ Node, Service map[string]any }](t, serve(h, http.MethodGet, "/v1/health/service/db", ""))[0]
	if !reflect.DeepEqual(e.Node["TaggedAddresses"], wantNode) || !reflect.DeepEqual(e.Service["TaggedAddresses"], wantService) {
		t.Errorf("health/service: got %v and %v", e.Node["TaggedAddresses"], e.Service["TaggedAddresses"])
	}
	nodes := decode[[]map[string]any](t, serve(h, http.MethodGet, "/v1/catalog/nodes", ""))
	if !reflect.DeepEqual(nodes[0]["TaggedAddresses"], wantNode) {
		t.Errorf("catalog/nodes: got %v", nodes[0]["TaggedAddresses"])
	}
	as := decode[map[string]map[string]any](t, serve(h, http.MethodGet, "/v1/agent/services", ""))
	if !reflect.DeepEqual(as["db1"]["TaggedAddresses"], wantService) {
		t.Errorf("agent/services: got %v", as["db1"]["TaggedAddresses"])
	}
}
