package consensus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// testCoord returns a valid coordinate x seconds along the first axis.
func testCoord(x float64) *catalog.Coordinate {
	v := make([]float64, catalog.CoordinateDimensionality)
	v[0] = x
	return &catalog.Coordinate{Vec: v, Error: 0.5, Height: 1e-5}
}

// startCoordinate registers a Coordinate endpoint on h's RPC server and
// runs its batcher until the test ends.
func startCoordinate(t *testing.T, h *endpointHarness, tune func(*CoordinateConfig)) *Coordinate {
	t.Helper()
	cfg := DefaultCoordinateConfig()
	cfg.UpdatePeriod = 20 * time.Millisecond
	if tune != nil {
		tune(&cfg)
	}
	e, err := NewCoordinate(h.cat, cfg, nil)
	if err != nil {
		t.Fatalf("NewCoordinate: %v", err)
	}
	if err := h.rpc.Register(rpc.CoordinateEndpoint, e); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return e
}

func (h *endpointHarness) updateCoord(node string, c *catalog.Coordinate, token string) error {
	return h.call(rpc.MethodCoordinateUpdate, &rpc.CoordinateUpdateRequest{
		WriteRequest: rpc.WriteRequest{Token: token}, Node: node, Coord: c}, nil)
}

// TestCoordinateUpdateListAndNear: updates are applied in one batch,
// read back in node order, and sort the catalog's reads with Near.
func TestCoordinateUpdateListAndNear(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, true, nil)
	// A period far longer than the four updates take: they land in one
	// entry, or two when a tick falls between them.
	startCoordinate(t, h, func(c *CoordinateConfig) { c.UpdatePeriod = time.Second })
	web := func(id string) *catalog.Service { return &catalog.Service{ID: id, Service: "web", Port: 80} }
	h.register(t, "n1", "10.0.0.1", web("w1"))
	h.register(t, "n2", "10.0.0.2", web("w2"))
	h.register(t, "n3", "10.0.0.3", web("w3"))
	h.register(t, "n4", "10.0.0.4", web("w4")) // never sends a coordinate
	before := h.srv.raft.LastIndex()
	for node, x := range map[string]float64{"n1": 0, "n2": 0.010, "n3": 0.020, "ghost": 0.030} {
		if err := h.updateCoord(node, testCoord(x), ""); err != nil {
			t.Fatalf("Update %s: %v", node, err)
		}
	}
	var list rpc.CoordinatesResponse
	waittest.For(t, 5*time.Second, "the coordinates to be applied", func() error {
		list = rpc.CoordinatesResponse{}
		if err := h.call(rpc.MethodCoordinateListNodes, &rpc.CoordinateListRequest{}, &list); err != nil {
			return err
		}
		if len(list.Coordinates) != 3 {
			return fmt.Errorf("got %d coordinates, want 3", len(list.Coordinates))
		}
		return nil
	})
	var names []string
	for _, c := range list.Coordinates {
		names = append(names, c.Node)
	}
	if !reflect.DeepEqual(names, []string{"n1", "n2", "n3"}) {
		t.Errorf("ListNodes: got %v, want n1 n2 n3 (ghost is no node)", names)
	}
	// Batched: not an entry per update.
	if got := h.srv.raft.LastIndex() - before; got < 1 || got > 2 {
		t.Errorf("the updates took %d log entries, want 1 (2 if a tick fell between them)", got)
	}

	var one rpc.CoordinatesResponse
	h.mustCall(t, rpc.MethodCoordinateNode, &rpc.CoordinateNodeRequest{Node: "N2"}, &one)
	if len(one.Coordinates) != 1 || one.Coordinates[0].Coord.Vec[0] != 0.010 {
		t.Errorf("Node(N2): got %+v, want n2's coordinate", one.Coordinates)
	}
	one = rpc.CoordinatesResponse{}
	h.mustCall(t, rpc.MethodCoordinateNode, &rpc.CoordinateNodeRequest{Node: "n4"}, &one)
	if len(one.Coordinates) != 0 {
		t.Errorf("Node(n4): got %+v, want none", one.Coordinates)
	}

	for _, tc := range []struct {
		near string
		want []string
	}{
		{"n3", []string{"n3", "n2", "n1", "n4"}},
		{"n1", []string{"n1", "n2", "n3", "n4"}},
		{"", []string{"n1", "n2", "n3", "n4"}},
		{"n4", []string{"n1", "n2", "n3", "n4"}}, // no coordinate: the catalog's order
	} {
		r := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web", Near: tc.near})
		var got []string
		for _, in := range r.Instances {
			got = append(got, in.Node.Node)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ServiceInstances near %q: got %v, want %v", tc.near, got, tc.want)
		}
		var nodes rpc.NodesResponse
		h.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{Near: tc.near}, &nodes)
		got = got[:0]
		for _, n := range nodes.Nodes {
			got = append(got, n.Node)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Nodes near %q: got %v, want %v", tc.near, got, tc.want)
		}
	}
}

func TestCoordinateUpdateRejectsBadInput(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, true, nil)
	startCoordinate(t, h, nil)
	nan := testCoord(0)
	nan.Vec[5] = nan.Vec[5] / nan.Vec[5] // 0/0: NaN
	for _, tc := range []struct {
		node  string
		c     *catalog.Coordinate
		field string
	}{
		{"n1", nil, "Coord"},
		{"n1", &catalog.Coordinate{Vec: []float64{1, 2, 3}}, "Coord.Vec"},
		{"n1", nan, "Coord.Vec[5]"},
		{"", testCoord(0), "Node"},
	} {
		err := h.updateCoord(tc.node, tc.c, "")
		var fe *catalog.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Update(%q, %+v): got %v, want a field error naming %s", tc.node, tc.c, err, tc.field)
		}
	}
}

// TestCoordinateBatcher: the queue keeps each node's latest update, refuses
// new nodes once BatchSize × MaxBatches wait, and a flush writes one log
// entry per BatchSize updates.
func TestCoordinateBatcher(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, true, nil)
	for _, n := range []string{"a", "b", "c"} {
		h.register(t, n, "10.0.0.1", nil)
	}
	cfg := DefaultCoordinateConfig()
	cfg.BatchSize, cfg.MaxBatches = 2, 1
	e, err := NewCoordinate(h.cat, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b", "A"} {
		if err := e.enqueue(catalog.CoordinateEntry{Node: u, Coord: testCoord(0.001)}); err != nil {
			t.Fatalf("enqueue %s: %v", u, err)
		}
	}
	if err := e.enqueue(catalog.CoordinateEntry{Node: "c", Coord: testCoord(0)}); !errors.Is(err, rpc.ErrRateLimited) {
		t.Fatalf("enqueue past the limit: got %v, want rpc.ErrRateLimited", err)
	}
	before := h.srv.raft.LastIndex()
	if err := e.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.raft.LastIndex() - before; got != 1 {
		t.Errorf("2 updates with BatchSize 2 took %d entries, want 1", got)
	}
	// The queue is empty again: three now, in two entries.
	e.cfg.MaxBatches = 2
	for _, u := range []string{"a", "b", "c"} {
		if err := e.enqueue(catalog.CoordinateEntry{Node: u, Coord: testCoord(0.002)}); err != nil {
			t.Fatalf("enqueue %s: %v", u, err)
		}
	}
	before = h.srv.raft.LastIndex()
	if err := e.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.raft.LastIndex() - before; got != 2 {
		t.Errorf("3 updates with BatchSize 2 took %d entries, want 2", got)
	}
	_, all, _ := h.srv.Store().Coordinates(nil)
	if len(all) != 3 || all[0].Coord.Vec[0] != 0.002 {
		t.Errorf("after the flushes: got %+v, want a, b and c at 0.002", all)
	}
}

func TestCoordinateUpdateNeedsNodeWrite(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, true, func(c *CatalogConfig) { c.ACL.Enabled = true })
	startCoordinate(t, h, nil)
	if err := h.rpc.Register(rpc.ACLEndpoint, NewACL(h.cat)); err != nil {
		t.Fatal(err)
	}
	mgmt, tok := h.aclTokens(t, "n1", `node "n1" { policy = "write" }`)
	h.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Token: mgmt},
		Registration: catalog.RegisterRequest{Node: "n2", Address: "10.0.0.2"}}, nil)
	if err := h.updateCoord("n1", testCoord(0), tok); err != nil {
		t.Errorf("n1 with node:write on n1: %v", err)
	}
	if err := h.updateCoord("n2", testCoord(0), tok); !errors.Is(err, rpc.ErrPermissionDenied) {
		t.Errorf("n2 with node:write on n1 only: got %v, want permission denied", err)
	}
}

func TestFSMCoordinates(t *testing.T) {
	t.Parallel()
	f := newTestFSM(t)
	at := time.Now()
	if res := applyAt(t, f, 1, at, cmdRegister, &catalog.RegisterRequest{Datacenter: "dc1", Node: "n1", Address: "10.0.0.1"}); res != nil {
		t.Fatalf("register: %v", res)
	}
	batch := &catalog.CoordinateBatch{Updates: []catalog.CoordinateEntry{{Node: "n1", Coord: testCoord(0.5)}}}
	if res := applyAt(t, f, 2, at, cmdCoordinates, batch); res != nil {
		t.Fatalf("coordinates: %v", res)
	}
	idx, all, _ := f.store.Coordinates(nil)
	if idx != 2 || len(all) != 1 || !reflect.DeepEqual(all[0].Coord, testCoord(0.5)) {
		t.Errorf("after cmdCoordinates: got %d %+v, want n1's at index 2", idx, all)
	}
}

// coordWAN is a WAN pool of fixed members and coordinates.
type coordWAN struct {
	local   gossip.Member
	members []gossip.Member
	coords  map[string]gossip.Coordinate
}

func (w coordWAN) Members() []gossip.Member   { return w.members }
func (w coordWAN) LocalMember() gossip.Member { return w.local }
func (w coordWAN) Coordinate() (gossip.Coordinate, bool) {
	c, ok := w.coords[w.local.Name]
	return c, ok
}
func (w coordWAN) PeerCoordinates() map[string]gossip.Coordinate {
	out := map[string]gossip.Coordinate{}
	for k, v := range w.coords {
		if k != w.local.Name {
			out[k] = v
		}
	}
	return out
}

func gossipCoord(x float64) gossip.Coordinate {
	c := testCoord(x)
	return gossip.Coordinate{Vec: c.Vec, Error: c.Error, Height: c.Height}
}

// TestNearestDatacenters: datacenters sort by the median distance to
// their servers; the own one first, those without coordinates last.
func TestNearestDatacenters(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, false, nil)
	member := func(node, dc string) gossip.Member {
		return gossip.Member{Name: node + "." + dc, Node: node, Datacenter: dc, Status: gossip.StatusAlive}
	}
	wan := coordWAN{
		local: member("s1", "dc1"),
		members: []gossip.Member{member("s1", "dc1"), member("a1", "dc2"), member("a2", "dc2"), member("a3", "dc2"),
			member("b1", "dc3"), member("c1", "dc4")},
		coords: map[string]gossip.Coordinate{
			"s1.dc1": gossipCoord(0),
			// dc2's median is 0.050 despite one close server.
			"a1.dc2": gossipCoord(0.001), "a2.dc2": gossipCoord(0.050), "a3.dc2": gossipCoord(0.090),
			"b1.dc3": gossipCoord(0.020),
		},
	}
	e, err := NewCoordinate(h.cat, CoordinateConfig{UpdatePeriod: time.Second, BatchSize: 1, MaxBatches: 1, WAN: wan}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := e.NearestDatacenters([]string{"dc4", "dc2", "dc1", "dc3"})
	if want := []string{"dc1", "dc3", "dc2", "dc4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	var reply rpc.DatacenterCoordinatesResponse
	if err := e.ListDatacenters(context.Background(), &rpc.DatacentersRequest{}, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Datacenters) != 4 || reply.Datacenters[1].Datacenter != "dc2" || len(reply.Datacenters[1].Coordinates) != 3 ||
		reply.Datacenters[1].AreaID != "wan" || len(reply.Datacenters[3].Coordinates) != 0 ||
		reply.Datacenters[0].Coordinates[0].Node != "s1" {
		t.Errorf("ListDatacenters: got %+v", reply.Datacenters)
	}
}

// TestPreparedQueryNear: a query's Service.Near sorts its answer from the
// agent executing it ("_agent") or from a named node, and says so
// (Ordered); without Near the catalog's order stands.
func TestPreparedQueryNear(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, true, nil)
	startCoordinate(t, h, nil)
	pq, err := NewPreparedQuery(h.cat, DefaultPreparedQueryConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rpc.Register(rpc.PreparedQueryEndpoint, pq); err != nil {
		t.Fatal(err)
	}
	for i, x := range []float64{0.030, 0.010, 0.020, -1} {
		node := fmt.Sprintf("n%d", i+1)
		h.register(t, node, fmt.Sprintf("10.0.0.%d", i+1), &catalog.Service{ID: "web", Service: "web", Port: 80})
		if x >= 0 {
			if err := h.updateCoord(node, testCoord(x), ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	waittest.For(t, 5*time.Second, "three coordinates", func() error {
		if _, all, _ := h.srv.Store().Coordinates(nil); len(all) != 3 {
			return fmt.Errorf("got %d coordinates, want 3", len(all))
		}
		return nil
	})
	for _, tc := range []struct {
		name, near, agent string
		want              []string
		ordered           bool
	}{
		{"from-agent", catalog.QueryNearAgent, "n1", []string{"n1", "n3", "n2", "n4"}, true},
		{"from-n2", "n2", "n1", []string{"n2", "n3", "n1", "n4"}, true},
		{"unsorted", "", "n3", []string{"n1", "n2", "n3", "n4"}, false},
	} {
		var created rpc.PreparedQueryApplyResponse
		h.mustCall(t, rpc.MethodPreparedQueryApply, &rpc.PreparedQueryApplyRequest{Op: catalog.QueryCreate,
			Query: catalog.PreparedQuery{Name: tc.name, Service: catalog.ServiceQuery{Service: "web", Near: tc.near}}}, &created)
		var reply rpc.PreparedQueryExecuteResponse
		h.mustCall(t, rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: tc.name, Agent: tc.agent}, &reply)
		var got []string
		for _, in := range reply.Result.Nodes {
			got = append(got, in.Node.Node)
		}
		if !reflect.DeepEqual(got, tc.want) || reply.Result.Ordered != tc.ordered {
			t.Errorf("%s: got %v ordered %v, want %v ordered %v", tc.name, got, reply.Result.Ordered, tc.want, tc.ordered)
		}
	}
	err = h.call(rpc.MethodPreparedQueryApply, &rpc.PreparedQueryApplyRequest{Op: catalog.QueryCreate,
		Query: catalog.PreparedQuery{Name: "bad", Service: catalog.ServiceQuery{Service: "web", Near: "not a node"}}}, &rpc.PreparedQueryApplyResponse{})
	var fe *catalog.FieldError
	if !errors.As(err, &fe) || fe.Field != "Service.Near" {
		t.Errorf("Near %q: got %v, want a field error naming Service.Near", "not a node", err)
	}
}
