package catalog_test

import (
	"slices"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// noderowsFixture registers nodes whose names are prefixes of one another
// ("web", "web2", "we"), each with a service and a service check, and a
// node-level check on "web". The services and checks of a node are found
// through a prefix of the tables' id index, which must stop at the end of
// the node's name.
func noderowsFixture(t *testing.T) *catalog.Store {
	t.Helper()
	s := newStore(t)
	idx := uint64(0)
	for _, n := range []struct{ node, addr string }{{"web", "10.0.0.1"}, {"web2", "10.0.0.2"}, {"we", "10.0.0.3"}} {
		idx++
		mustRegister(t, s, idx, svcReq(n.node, n.addr, "api-"+n.node, "api-"+n.node))
		idx++
		mustRegister(t, s, idx, checkReq(n.node, check("chk-"+n.node, "api-"+n.node, catalog.HealthPassing)))
	}
	idx++
	mustRegister(t, s, idx, checkReq("web", check("serfHealth", "", catalog.HealthPassing)))
	return s
}

func TestNodeRowsStopAtTheNodeName(t *testing.T) {
	s := noderowsFixture(t)
	for _, tc := range []struct {
		node           string
		services, chks []string
	}{
		{"web", []string{"api-web"}, []string{"chk-web", "serfHealth"}},
		{"WEB", []string{"api-web"}, []string{"chk-web", "serfHealth"}}, // node names ignore case
		{"Web2", []string{"api-web2"}, []string{"chk-web2"}},
		{"we", []string{"api-we"}, []string{"chk-we"}},
		{"w", nil, nil},
		{"web20", nil, nil},
	} {
		_, svcs := nodeServices(t, s, tc.node)
		var gotS []string
		for _, svc := range svcs {
			gotS = append(gotS, svc.ID)
		}
		if !slices.Equal(gotS, tc.services) {
			t.Errorf("NodeServices(%q): got %v, want %v", tc.node, gotS, tc.services)
		}
		_, checks := nodeChecks(t, s, tc.node)
		var gotC []string
		for _, c := range checks {
			gotC = append(gotC, c.CheckID)
		}
		if got := gotC; !slices.Equal(got, tc.chks) {
			t.Errorf("NodeChecks(%q): got %v, want %v", tc.node, got, tc.chks)
		}
	}
}

// Deregistering a node removes its services and checks, and those of no
// other node; what is left is read through the tables' other indexes, so a
// row left behind under the removed node's name would show.
func TestDeregisterNodeLeavesNodesItPrefixes(t *testing.T) {
	s := noderowsFixture(t)
	for _, step := range []struct {
		node             string
		services, checks []string
	}{
		{"WE", []string{"api-web", "api-web2"}, []string{"web/chk-web", "web/serfHealth", "web2/chk-web2"}},
		{"web", []string{"api-web2"}, []string{"web2/chk-web2"}},
	} {
		mustDeregister(t, s, 100, &catalog.DeregisterRequest{Node: step.node})
		_, all, err := s.ServiceNodes(nil)
		if err != nil {
			t.Fatalf("ServiceNodes: %v", err)
		}
		_, svcs, err := s.Services(nil)
		if err != nil {
			t.Fatalf("Services: %v", err)
		}
		var got []string
		for _, si := range all {
			got = append(got, si.Service.ID)
		}
		if !slices.Equal(got, step.services) || len(svcs) != len(step.services) {
			t.Errorf("after deregistering node %s: got instances %v and services %v, want %v", step.node, got, svcs, step.services)
		}
		_, checks := checksInState(t, s, nil, catalog.HealthAny)
		if got := checkNames(checks); !slices.Equal(got, step.checks) {
			t.Errorf("after deregistering node %s: got checks %v, want %v", step.node, got, step.checks)
		}
	}
}

// A node-level check touches every service of its node, and of no other
// node its name is a prefix of.
func TestChangesOfNodeCheckStopAtTheNodeName(t *testing.T) {
	s := noderowsFixture(t)
	before := s.ChangesSince(nil, 0).Index
	mustRegister(t, s, 100, checkReq("WEB", check("serfHealth", "", catalog.HealthCritical)))
	c := s.ChangesSince(nil, before)
	if want := []string{"api-web"}; c.Reset || !slices.Equal(c.Services, want) {
		t.Errorf("changes after a check of node web: got %+v, want services %v", c, want)
	}
}
