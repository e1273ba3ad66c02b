package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// coordCatalog is a fakeCatalog that also serves coordinates.
type coordCatalog struct {
	*fakeCatalog
	coords []*catalog.CoordinateEntry

	mu      sync.Mutex
	updated []string // "dc/node" of each update
}

var _ coordinateBackend = (*coordCatalog)(nil)

func (c *coordCatalog) CoordinateNodes(_ context.Context, opts queryOpts) ([]*catalog.CoordinateEntry, queryMeta, error) {
	return c.coords, c.meta(opts), nil
}

func (c *coordCatalog) CoordinateNode(_ context.Context, opts queryOpts, node string) ([]*catalog.CoordinateEntry, queryMeta, error) {
	for _, e := range c.coords {
		if strings.EqualFold(e.Node, node) {
			return []*catalog.CoordinateEntry{e}, c.meta(opts), nil
		}
	}
	return nil, c.meta(opts), nil
}

func (c *coordCatalog) CoordinateDatacenters(context.Context) ([]rpc.DatacenterCoordinates, error) {
	return []rpc.DatacenterCoordinates{{Datacenter: "dc1", AreaID: "wan", Coordinates: c.coords}}, nil
}

func (c *coordCatalog) CoordinateUpdate(_ context.Context, dc, node string, _ *catalog.Coordinate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updated = append(c.updated, dc+"/"+node)
	return nil
}

func newCoordServer(t *testing.T, cat any) http.Handler {
	t.Helper()
	cfg := testConfig()
	cfg.NodeName = "agent1"
	s := newAPI(t, cfg, httpapi.Deps{Door: fakeDoor{backends: []any{cat, fakeStatus("10.0.0.1:8300")}}})
	return s.Handler()
}

func TestCoordinateEndpoints(t *testing.T) {
	t.Parallel()
	c := &coordCatalog{fakeCatalog: &fakeCatalog{index: 7}, coords: []*catalog.CoordinateEntry{
		{Node: "n1", Coord: &catalog.Coordinate{Vec: []float64{0.5, 0, 0, 0, 0, 0, 0, 0}, Error: 1.5, Height: 1e-5}},
	}}
	h := newCoordServer(t, c)

	rec := serve(h, http.MethodGet, "/v1/coordinate/nodes", "")
	wantStatus(t, rec, http.StatusOK)
	want := `[{"Node":"n1","Segment":"","Partition":"","Coord":{"Vec":[0.5,0,0,0,0,0,0,0],"Error":1.5,"Adjustment":0,"Height":0.00001}}]` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("GET /v1/coordinate/nodes: got %s, want %s", got, want)
	}
	if got := rec.Header().Get("X-Consul-Index"); got != "7" {
		t.Errorf("X-Consul-Index: got %q, want 7", got)
	}
	wantStatus(t, serve(h, http.MethodGet, "/v1/coordinate/node/N1", ""), http.StatusOK)
	wantStatus(t, serve(h, http.MethodGet, "/v1/coordinate/node/n2", ""), http.StatusNotFound)
	rec = serve(h, http.MethodGet, "/v1/coordinate/datacenters", "")
	wantStatus(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), `"Datacenter":"dc1","AreaID":"wan","Coordinates":[{"Node":"n1"`) {
		t.Errorf("GET /v1/coordinate/datacenters: got %s", rec.Body)
	}

	for _, tc := range []struct{ body, field string }{
		{`{"Coord": {"Vec": [0,0,0,0,0,0,0,0]}}`, "Node"},
		{`{"Node": "n1"}`, "Coord"},
		{`{"Node": "n1", "Coord": {"Vec": [0, 0]}}`, "Coord.Vec"},
		{`{"Node": "n1", "Segment": "alpha", "Coord": {"Vec": [0,0,0,0,0,0,0,0]}}`, "Segment"},
	} {
		rec := serve(h, http.MethodPut, "/v1/coordinate/update", tc.body)
		wantStatus(t, rec, http.StatusBadRequest)
		if msg, _ := errorBody(t, rec)["error"].(string); !strings.Contains(msg, tc.field) {
			t.Errorf("PUT %s: got %q, want an error naming %s", tc.body, msg, tc.field)
		}
	}
	wantStatus(t, serve(h, http.MethodPut, "/v1/coordinate/update?dc=DC2", `{"Node": "n1", "Coord": {"Vec": [0,0,0,0,0,0,0,0], "Height": 1e-5}}`), http.StatusOK)
	if len(c.updated) != 1 || c.updated[0] != "dc2/n1" {
		t.Errorf("updates: got %v, want dc2/n1", c.updated)
	}
}

// TestNearParam: ?near reaches the catalog, "_agent" as the agent's node.
func TestNearParam(t *testing.T) {
	t.Parallel()
	f := &fakeCatalog{}
	h := newCoordServer(t, f)
	for _, tc := range []struct{ target, want string }{
		{"/v1/catalog/nodes?near=_agent", "agent1"},
		{"/v1/catalog/nodes?near=n7", "n7"},
		{"/v1/health/service/web?near=_agent", "agent1"},
		{"/v1/catalog/service/web?near=n3", "n3"},
		{"/v1/catalog/service/web", ""},
	} {
		wantStatus(t, serve(h, http.MethodGet, tc.target, ""), http.StatusOK)
		if got := f.opts().Near; got != tc.want {
			t.Errorf("GET %s: catalog asked near %q, want %q", tc.target, got, tc.want)
		}
	}
}
