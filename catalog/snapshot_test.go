package catalog_test

import (
	"reflect"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// populated returns a store with nodes, services (in several cases and with
// tags), node and service checks, and a deregistration, so that the tables'
// indexes differ.
func populated(t *testing.T) *catalog.Store {
	t.Helper()
	s := newStore(t)
	r := svcReq("node1", "10.0.0.1", "web-1", "web", "primary", "v1")
	r.ID = "node-id-1"
	r.NodeMeta = map[string]string{"rack": "r1"}
	r.Service.Meta = map[string]string{"version": "1"}
	r.Checks = []*catalog.Check{
		check("serfHealth", "", catalog.HealthPassing),
		check("web-1-http", "web-1", catalog.HealthWarning),
	}
	r.Checks[0].Type = "gossip"
	r.Checks[1].Type = "http"
	mustRegister(t, s, 3, r)
	r = svcReq("Node2", "10.0.0.2", "web-2", "Web", "v2")
	r.Service.Address = "10.0.1.2"
	r.Service.Weights = catalog.Weights{Passing: 10, Warning: 0}
	mustRegister(t, s, 4, r)
	mustRegister(t, s, 5, svcReq("Node2", "10.0.0.2", "db", "db"))
	mustRegister(t, s, 6, svcReq("node3", "10.0.0.3", "cache", "cache"))
	mustRegister(t, s, 7, checkReq("node2", check("serfHealth", "", catalog.HealthCritical)))
	mustDeregister(t, s, 8, &catalog.DeregisterRequest{Node: "node3"})
	c := check("web-1-http", "web-1", catalog.HealthPassing)
	c.Type = "http"
	mustRegister(t, s, 9, checkReq("node1", c))
	return s
}

// contents is everything the store's reads return, without their indexes.
type contents struct {
	Nodes         []*catalog.Node
	Services      map[string][]string
	NodeServices  map[string][]*catalog.Service
	NodeChecks    map[string][]*catalog.Check
	Instances     map[string][]catalog.ServiceInstance
	ServiceChecks map[string][]*catalog.Check
	ChecksInState map[catalog.HealthStatus][]*catalog.Check
}

func readAll(t *testing.T, s *catalog.Store) contents {
	t.Helper()
	var c contents
	var err error
	if _, c.Nodes, err = s.Nodes(nil); err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	if _, c.Services, err = s.Services(nil); err != nil {
		t.Fatalf("Services: %v", err)
	}
	c.NodeServices = map[string][]*catalog.Service{}
	c.NodeChecks = map[string][]*catalog.Check{}
	for _, n := range c.Nodes {
		_, c.NodeServices[n.Node] = nodeServices(t, s, n.Node)
		_, c.NodeChecks[n.Node] = nodeChecks(t, s, n.Node)
	}
	c.Instances = map[string][]catalog.ServiceInstance{}
	c.ServiceChecks = map[string][]*catalog.Check{}
	for name := range c.Services {
		_, c.Instances[name] = instances(t, s, nil, name, "")
		_, c.ServiceChecks[name] = serviceChecks(t, s, nil, name)
	}
	c.ChecksInState = map[catalog.HealthStatus][]*catalog.Check{}
	for _, st := range []catalog.HealthStatus{catalog.HealthAny, catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical} {
		_, c.ChecksInState[st] = checksInState(t, s, nil, st)
	}
	return c
}

func TestDumpRestoreRoundTrip(t *testing.T) {
	src := populated(t)
	want := readAll(t, src)
	if got := len(want.Nodes); got != 2 {
		t.Fatalf("fixture nodes: got %d, want 2", got)
	}

	d, err := src.Dump()
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	if d.Index != 9 {
		t.Errorf("Dump.Index: got %d, want 9", d.Index)
	}
	if got := len(d.Nodes); got != 2 {
		t.Errorf("Dump.Nodes: got %d, want 2", got)
	}
	if got := len(d.Services); got != 3 {
		t.Errorf("Dump.Services: got %d, want 3", got)
	}
	if got := len(d.Checks); got != 3 {
		t.Errorf("Dump.Checks: got %d, want 3", got)
	}
	for _, c := range d.Checks {
		if want := map[string]string{"serfHealth": "gossip", "web-1-http": "http"}[c.CheckID]; c.Node == "node1" && c.Type != want {
			t.Errorf("dumped check %s/%s: got Type %q, want %q", c.Node, c.CheckID, c.Type, want)
		}
	}

	dst := newStore(t)
	if err := dst.Restore(d); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, want := dst.Index(), src.Index(); got != want {
		t.Errorf("Index after Restore: got %d, want %d", got, want)
	}
	got := readAll(t, dst)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reads after Restore:\ngot  %+v\nwant %+v", got, want)
	}

	// A Dump carries one index, so each table restores to it: no table's
	// index may go backwards, or a blocking query could miss a change.
	srcNodes, _, _ := src.Nodes(nil)
	dstNodes, _, _ := dst.Nodes(nil)
	if dstNodes < srcNodes {
		t.Errorf("nodes table index after Restore: got %d, want at least %d", dstNodes, srcNodes)
	}
	srcSvcs, _ := nodeServices(t, src, "node1")
	dstSvcs, _ := nodeServices(t, dst, "node1")
	if dstSvcs < srcSvcs {
		t.Errorf("services table index after Restore: got %d, want at least %d", dstSvcs, srcSvcs)
	}

	// Lookups that rely on the lowercased indexes work on restored rows.
	if n := getNode(t, dst, "NODE2"); n == nil || n.Node != "Node2" {
		t.Errorf("Node(NODE2) after Restore: got %+v, want Node2", n)
	}
	if _, insts := instances(t, dst, nil, "WEB", "V2"); len(insts) != 1 || insts[0].Service.ID != "web-2" {
		t.Errorf("ServiceInstances(WEB, V2) after Restore: got %v, want [Node2/web-2]", describe(insts))
	}

	// The restored store takes writes as the original would: identical data
	// is a no-op, changes move the index.
	r := svcReq("Node2", "10.0.0.2", "web-2", "Web", "v2")
	r.Service.Address = "10.0.1.2"
	r.Service.Weights = catalog.Weights{Passing: 10, Warning: 0}
	mustRegister(t, dst, 20, r)
	if got := dst.Index(); got != 9 {
		t.Errorf("Index after an identical Register: got %d, want 9", got)
	}
	mustRegister(t, dst, 21, checkReq("node1", check("serfHealth", "", catalog.HealthCritical)))
	if got := dst.Index(); got != 21 {
		t.Errorf("Index after a changing Register: got %d, want 21", got)
	}
}

func TestRestoreReplacesContents(t *testing.T) {
	src := populated(t)
	d, err := src.Dump()
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	want := readAll(t, src)

	dst := newStore(t)
	mustRegister(t, dst, 50, svcReq("other", "10.9.9.9", "api", "api"))
	if err := dst.Restore(d); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if n := getNode(t, dst, "other"); n != nil {
		t.Errorf("node from before Restore: got %+v, want none", n)
	}
	if got := readAll(t, dst); !reflect.DeepEqual(got, want) {
		t.Errorf("reads after Restore:\ngot  %+v\nwant %+v", got, want)
	}
	if got := dst.Index(); got != 9 {
		t.Errorf("Index after Restore: got %d, want 9", got)
	}
}

func TestDumpIsPointInTime(t *testing.T) {
	s := populated(t)
	d, err := s.Dump()
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	mustRegister(t, s, 30, checkReq("node1", check("serfHealth", "", catalog.HealthCritical)))
	mustDeregister(t, s, 31, &catalog.DeregisterRequest{Node: "node2"})

	for _, c := range d.Checks {
		if c.Node == "node1" && c.CheckID == "serfHealth" && c.Status != catalog.HealthPassing {
			t.Errorf("dumped serfHealth status after a write: got %q, want %q", c.Status, catalog.HealthPassing)
		}
	}
	if got := len(d.Nodes); got != 2 {
		t.Errorf("dumped nodes after a deregister: got %d, want 2", got)
	}
	if d.Index != 9 {
		t.Errorf("Dump.Index after writes: got %d, want 9", d.Index)
	}
}

func TestDumpRestoreEmpty(t *testing.T) {
	src := newStore(t)
	d, err := src.Dump()
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	if d.Index != 0 || len(d.Nodes) != 0 || len(d.Services) != 0 || len(d.Checks) != 0 {
		t.Errorf("Dump of an empty store: got %+v, want an empty dump", d)
	}
	dst := populated(t)
	if err := dst.Restore(d); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := dst.Index(); got != 0 {
		t.Errorf("Index: got %d, want 0", got)
	}
	if got := summarize(t, dst); len(got.Nodes) != 0 || len(got.Services) != 0 || len(got.Checks) != 0 {
		t.Errorf("catalog after restoring an empty dump: got %+v, want empty", got)
	}
}
