package catalog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// changesSince returns the sorted names of s's changes after minIndex.
func changesSince(s *catalog.Store, minIndex uint64) catalog.Changes {
	c := s.ChangesSince(nil, minIndex)
	slices.Sort(c.Services)
	slices.Sort(c.Nodes)
	return c
}

func TestChangesNameWhatEachWriteTouched(t *testing.T) {
	s := newStore(t)
	mustRegister(t, s, 1, svcReq("n1", "10.0.0.1", "web1", "Web"))
	mustRegister(t, s, 2, svcReq("n1", "10.0.0.1", "db1", "db"))
	mustRegister(t, s, 3, svcReq("n2", "10.0.0.2", "api1", "api"))

	if c := changesSince(s, 0); !c.Reset || c.Index != 3 {
		t.Fatalf("since 0 = %+v, want Reset at index 3", c)
	}
	if c := changesSince(s, 1); c.Reset || c.Index != 3 || !slices.Equal(c.Services, []string{"api", "db"}) || !slices.Equal(c.Nodes, []string{"n2"}) {
		t.Fatalf("since 1 = %+v, want index 3, services api db, node n2 (n1 is unchanged)", c)
	}
	if c := changesSince(s, 2); !slices.Equal(c.Services, []string{"api"}) || !slices.Equal(c.Nodes, []string{"n2"}) || c.Index != 3 {
		t.Fatalf("since 2 = %+v, want only api on n2", c)
	}
	if c := changesSince(s, 3); len(c.Services)+len(c.Nodes) != 0 || c.Reset || c.Index != 3 {
		t.Fatalf("since 3 = %+v, want nothing at index 3", c)
	}

	// A registration that changes nothing is not a change.
	mustRegister(t, s, 4, svcReq("n1", "10.0.0.1", "web1", "Web"))
	if c := changesSince(s, 3); c.Index != 3 || len(c.Services) != 0 {
		t.Fatalf("after an identical registration: %+v, want no change", c)
	}

	// A service-level check touches its service only.
	mustRegister(t, s, 5, checkReq("n1", check("c-web", "web1", catalog.HealthCritical)))
	if c := changesSince(s, 4); !slices.Equal(c.Services, []string{"web"}) || len(c.Nodes) != 0 {
		t.Fatalf("service check: %+v, want web only", c)
	}
	// A node-level check touches every service on the node, not the node's
	// own answer.
	mustRegister(t, s, 6, checkReq("n1", check("c-node", "", catalog.HealthCritical)))
	if c := changesSince(s, 5); !slices.Equal(c.Services, []string{"db", "web"}) || len(c.Nodes) != 0 {
		t.Fatalf("node check: %+v, want db and web", c)
	}
	// A new node address touches the node and its services.
	mustRegister(t, s, 7, nodeReq("n2", "10.0.0.22"))
	if c := changesSince(s, 6); !slices.Equal(c.Services, []string{"api"}) || !slices.Equal(c.Nodes, []string{"n2"}) {
		t.Fatalf("node address: %+v, want api on n2", c)
	}
	// Removing a node touches it and everything that was on it.
	mustDeregister(t, s, 8, &catalog.DeregisterRequest{Node: "n1"})
	if c := changesSince(s, 7); !slices.Equal(c.Services, []string{"db", "web"}) || !slices.Equal(c.Nodes, []string{"n1"}) || c.Index != 8 {
		t.Fatalf("node removed: %+v, want db and web on n1 at 8", c)
	}
}

func TestChangesResetWhenTheLogCannotAnswer(t *testing.T) {
	s := newStore(t)
	mustRegister(t, s, 10, svcReq("n1", "10.0.0.1", "web1", "web"))
	if c := changesSince(s, 11); !c.Reset || c.Index != 10 {
		t.Fatalf("index ahead of the store: %+v, want Reset at 10", c)
	}

	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	restored := newStore(t)
	if err := restored.Restore(d); err != nil {
		t.Fatal(err)
	}
	if c := changesSince(restored, 5); !c.Reset || c.Index != 10 {
		t.Fatalf("behind a restore: %+v, want Reset at 10", c)
	}
	mustRegister(t, restored, 11, svcReq("n2", "10.0.0.2", "api1", "api"))
	if c := changesSince(restored, 10); c.Reset || !slices.Equal(c.Services, []string{"api"}) {
		t.Fatalf("after a restore: %+v, want api", c)
	}
}

func TestChangesWatchFiresOnAChange(t *testing.T) {
	s := newStore(t)
	if c := s.ChangesSince(nil, 1); c.Reset || c.Index != 0 {
		t.Fatalf("an empty store since 1: %+v, want nothing (0 counts as 1)", c)
	}
	mustRegister(t, s, 1, svcReq("n1", "10.0.0.1", "web1", "web"))
	ws := catalog.NewWatchSet()
	if c := s.ChangesSince(ws, 1); len(c.Services) != 0 {
		t.Fatalf("since 1: %+v", c)
	}
	mustRegister(t, s, 2, svcReq("n1", "10.0.0.1", "web1", "web")) // no change
	if !ws.Watch(time.After(quietWait)) {
		t.Fatal("the watch fired on a write that changed nothing")
	}
	mustRegister(t, s, 3, svcReq("n1", "10.0.0.1", "web2", "web"))
	if ws.Watch(time.After(fireWait)) {
		t.Fatal("the watch did not fire on a change")
	}
}

func TestChangesNameQueries(t *testing.T) {
	s := newStore(t)
	mustRegister(t, s, 1, svcReq("n1", "10.0.0.1", "web1", "web"))
	mustApplyQuery(t, s, 2, catalog.QueryCreate, webQuery(queryID1, "Web-Nearest"))
	c := changesSince(s, 1)
	slices.Sort(c.Queries)
	if c.Index != 2 || len(c.Services)+len(c.Nodes) != 0 || !slices.Equal(c.Queries, []string{queryID1, "web-nearest"}) {
		t.Fatalf("after a query is defined: %+v, want its ID and lowercased name at index 2", c)
	}
	mustApplyQuery(t, s, 3, catalog.QueryDelete, &catalog.PreparedQuery{ID: queryID1})
	if c := changesSince(s, 2); c.Index != 3 || !slices.Contains(c.Queries, queryID1) {
		t.Fatalf("after a query is deleted: %+v, want its ID at index 3", c)
	}
}
