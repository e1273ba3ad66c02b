package catalog_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

func TestServiceNodes(t *testing.T) {
	s := newStore(t)
	mustRegister(t, s, 1, svcReq("node-b", "10.0.0.2", "web-2", "web", "v1"))
	mustRegister(t, s, 2, svcReq("node-a", "10.0.0.1", "web-1", "web"))
	mustRegister(t, s, 3, svcReq("node-a", "10.0.0.1", "db", "db"))
	r := svcReq("node-a", "10.0.0.1", "api", "api")
	r.Checks = []*catalog.Check{{CheckID: "c", Name: "c", Status: catalog.HealthCritical, ServiceID: "api"}}
	mustRegister(t, s, 4, r)
	mustRegister(t, s, 5, nodeReq("node-c", "10.0.0.3"))

	ws := catalog.NewWatchSet()
	idx, got, err := s.ServiceNodes(ws)
	if err != nil {
		t.Fatalf("ServiceNodes: %v", err)
	}
	var rows []string
	for _, in := range got {
		rows = append(rows, fmt.Sprintf("%s/%s/%s@%s checks=%d", in.Service.Service, in.Node.Node, in.Service.ID, in.Node.Address, len(in.Checks)))
	}
	want := []string{
		"api/node-a/api@10.0.0.1 checks=0",
		"db/node-a/db@10.0.0.1 checks=0",
		"web/node-a/web-1@10.0.0.1 checks=0",
		"web/node-b/web-2@10.0.0.2 checks=0",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("ServiceNodes: got %q, want %q", rows, want)
	}
	if idx != 5 {
		t.Errorf("ServiceNodes index: got %d, want 5 (the nodes table's)", idx)
	}

	// A node's change wakes the watcher: a filter may select on node fields.
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		ws.Watch(nil)
	}()
	mustRegister(t, s, 6, &catalog.RegisterRequest{Datacenter: "dc1", Node: "node-b", Address: "10.0.0.2", NodeMeta: map[string]string{"rack": "r1"}})
	<-fired
}

// TestTaggedAddresses: a node's and a service's tagged addresses are kept
// as registered, a change to them alone is a change (new ModifyIndex), and
// they survive a dump and restore.
func TestTaggedAddresses(t *testing.T) {
	s := newStore(t)
	r := svcReq("node1", "10.0.0.1", "web-1", "web")
	r.TaggedAddresses = map[string]string{"lan": "10.0.0.1", "wan": "192.0.2.1"}
	r.Service.TaggedAddresses = map[string]catalog.ServiceAddress{"wan": {Address: "192.0.2.1", Port: 8080}}
	mustRegister(t, s, 1, r)

	n := getNode(t, s, "node1")
	if want := map[string]string{"lan": "10.0.0.1", "wan": "192.0.2.1"}; !maps.Equal(n.TaggedAddresses, want) {
		t.Errorf("node tagged addresses: got %v, want %v", n.TaggedAddresses, want)
	}
	_, svcs := nodeServices(t, s, "node1")
	if want := map[string]catalog.ServiceAddress{"wan": {Address: "192.0.2.1", Port: 8080}}; !maps.Equal(svcs[0].TaggedAddresses, want) {
		t.Errorf("service tagged addresses: got %v, want %v", svcs[0].TaggedAddresses, want)
	}

	// The store keeps its own copy of the node's map.
	r.TaggedAddresses["lan"] = "10.9.9.9"
	if got := getNode(t, s, "node1").TaggedAddresses["lan"]; got != "10.0.0.1" {
		t.Errorf("node tagged address after the request's map changed: got %q, want 10.0.0.1", got)
	}

	r2 := svcReq("node1", "10.0.0.1", "web-1", "web")
	r2.TaggedAddresses = map[string]string{"lan": "10.0.0.1", "wan": "192.0.2.9"}
	r2.Service.TaggedAddresses = map[string]catalog.ServiceAddress{"wan": {Address: "192.0.2.1", Port: 9090}}
	mustRegister(t, s, 2, r2)
	if n := getNode(t, s, "node1"); n.ModifyIndex != 2 || n.TaggedAddresses["wan"] != "192.0.2.9" {
		t.Errorf("node after a new wan address: got %+v, want ModifyIndex 2 and wan 192.0.2.9", n)
	}
	if _, svcs := nodeServices(t, s, "node1"); svcs[0].ModifyIndex != 2 || svcs[0].TaggedAddresses["wan"].Port != 9090 {
		t.Errorf("service after a new wan port: got %+v, want ModifyIndex 2 and port 9090", svcs[0])
	}

	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	s2 := newStore(t)
	if err := s2.Restore(d); err != nil {
		t.Fatal(err)
	}
	if got := getNode(t, s2, "node1").TaggedAddresses["wan"]; got != "192.0.2.9" {
		t.Errorf("restored node wan address: got %q", got)
	}
	if _, svcs := nodeServices(t, s2, "node1"); svcs[0].TaggedAddresses["wan"].Port != 9090 {
		t.Errorf("restored service tagged addresses: got %v", svcs[0].TaggedAddresses)
	}
}
