package local_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
)

// otherNode is seeded into every SyncFull test's catalog; its services must
// survive every sync untouched, including one with an ID the agent also has.
func seedOtherNode(t testing.TB, cat *fakeCatalog) {
	t.Helper()
	cat.seed(t, &catalog.RegisterRequest{Datacenter: nodeDC, Node: "node2", Address: "10.0.0.2", Service: svc("web", "web", 80)})
	cat.seed(t, &catalog.RegisterRequest{Node: "node2", SkipNodeUpdate: true, Service: svc("stale", "stale", 1)})
}

func TestSyncFull(t *testing.T) {
	node := func(addr string) *catalog.RegisterRequest {
		return &catalog.RegisterRequest{Datacenter: nodeDC, ID: nodeID, Node: nodeName, Address: addr,
			NodeMeta: map[string]string{"rack": "r1"}}
	}
	withSvc := func(s *catalog.Service) *catalog.RegisterRequest {
		return &catalog.RegisterRequest{Node: nodeName, SkipNodeUpdate: true, Service: s}
	}
	tests := []struct {
		name  string
		seed  []*catalog.RegisterRequest // the catalog before the sync
		local []*catalog.Service         // the agent's services
	}{
		{name: "registers a missing node"},
		{name: "registers a missing node with its services",
			local: []*catalog.Service{svc("web", "web", 80, "v1"), svc("db", "db", 5432)}},
		{name: "re-adds a service the catalog lost",
			seed:  []*catalog.RegisterRequest{node(nodeAddr), withSvc(svc("web", "web", 80, "v1"))},
			local: []*catalog.Service{svc("web", "web", 80, "v1"), svc("db", "db", 5432)}},
		{name: "corrects a service the catalog holds differently",
			seed:  []*catalog.RegisterRequest{node(nodeAddr), withSvc(svc("web", "web", 9999))},
			local: []*catalog.Service{svc("web", "web", 80, "v1")}},
		{name: "removes a service the agent does not have",
			seed:  []*catalog.RegisterRequest{node(nodeAddr), withSvc(svc("web", "web", 80)), withSvc(svc("old", "old", 81))},
			local: []*catalog.Service{svc("web", "web", 80)}},
		{name: "removes every service when the agent has none",
			seed: []*catalog.RegisterRequest{node(nodeAddr), withSvc(svc("old", "old", 81))}},
		{name: "updates a node whose address changed",
			seed:  []*catalog.RegisterRequest{node("10.9.9.9"), withSvc(svc("web", "web", 80))},
			local: []*catalog.Service{svc("web", "web", 80)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := newFakeCatalog(t)
			seedOtherNode(t, cat)
			for _, req := range tt.seed {
				cat.seed(t, req)
			}
			_, other, err := cat.store.NodeServices(nil, "node2")
			if err != nil {
				t.Fatal(err)
			}
			st := newState(t, testConfig(t.TempDir()), cat)
			addUnsynced(t, st, cat, tt.local...)

			if err := st.SyncFull(context.Background()); err != nil {
				t.Fatalf("SyncFull: %v", err)
			}

			n := cat.node(t, nodeName)
			if n == nil || n.Address != nodeAddr || n.ID != nodeID || n.Datacenter != nodeDC || n.Meta["rack"] != "r1" ||
				n.TaggedAddresses["wan"] != "192.0.2.1" {
				t.Errorf("catalog node: got %+v, want %s at %s in %s with rack=r1 and wan 192.0.2.1", n, nodeName, nodeAddr, nodeDC)
			}
			sameSet(t, cat, nodeName, st.Services())
			if _, got, _ := cat.store.NodeServices(nil, "node2"); !reflect.DeepEqual(got, other) {
				t.Errorf("node2's services changed: got %v, want %v", got, other)
			}
			if cat.node(t, "node2") == nil {
				t.Errorf("node2 was removed")
			}

			// A second sync finds nothing to do.
			idx := cat.store.Index()
			_, writes := cat.counts()
			if err := st.SyncFull(context.Background()); err != nil {
				t.Fatalf("second SyncFull: %v", err)
			}
			if got := cat.store.Index(); got != idx {
				t.Errorf("second SyncFull moved the store index: got %d, want %d", got, idx)
			}
			if _, got := cat.counts(); got != writes {
				t.Errorf("second SyncFull wrote: got %d writes, want %d", got, writes)
			}
		})
	}
}

// TestPushesLeaveTheNodeToTheSync: a service's registration leaves an
// existing node row alone (SkipNodeUpdate), so it needs the service's
// rights only (the servers ask node:write of a registration that would
// change the node), and creates the row when there is none; the full sync
// writes the row when it differs, tagged addresses included.
func TestPushesLeaveTheNodeToTheSync(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(""), cat)
	mustAdd(t, st, svc("web", "web", 80))
	if req := cat.lastRegister(); req == nil || !req.SkipNodeUpdate {
		t.Fatalf("a push: got %+v, want SkipNodeUpdate", req)
	}
	if n := cat.node(t, nodeName); n == nil || n.TaggedAddresses["wan"] != "192.0.2.1" {
		t.Fatalf("the node a push created: got %+v, want it with its tagged addresses", n)
	}

	// Someone rewrites the node without its tagged addresses: a push
	// leaves it so, the next full sync puts them back.
	cat.seed(t, &catalog.RegisterRequest{Datacenter: nodeDC, ID: nodeID, Node: nodeName, Address: nodeAddr,
		NodeMeta: map[string]string{"rack": "r1"}})
	mustAdd(t, st, svc("db", "db", 5432))
	if n := cat.node(t, nodeName); n == nil || n.TaggedAddresses != nil {
		t.Fatalf("node after a push: got %+v, want it as it was rewritten", n)
	}
	if err := st.SyncFull(context.Background()); err != nil {
		t.Fatalf("SyncFull: %v", err)
	}
	if n := cat.node(t, nodeName); n == nil || n.TaggedAddresses["lan"] != nodeAddr || n.TaggedAddresses["wan"] != "192.0.2.1" {
		t.Errorf("node after the sync: got %+v, want its tagged addresses back", n)
	}
	if req := cat.lastRegister(); req == nil || req.SkipNodeUpdate || req.Service != nil {
		t.Errorf("the sync's write: got %+v, want the node alone, written", req)
	}
}

func TestSyncFullInSyncDoesNotWrite(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(""), cat)
	mustAdd(t, st, &catalog.Service{ID: "web-1", Service: "web", Tags: []string{"a", "b"}, Port: 80,
		Meta: map[string]string{"k": "v"}, Address: "10.1.1.1", Weights: catalog.Weights{Passing: 3, Warning: 0}})
	mustAdd(t, st, svc("db", "db", 5432))

	idx := cat.store.Index()
	_, writes := cat.counts()
	if err := st.SyncFull(context.Background()); err != nil {
		t.Fatalf("SyncFull: %v", err)
	}
	if got := cat.store.Index(); got != idx {
		t.Errorf("got store index %d, want %d", got, idx)
	}
	if _, got := cat.counts(); got != writes {
		t.Errorf("got %d writes, want %d", got, writes)
	}
}

func TestSyncFullCatalogDown(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(""), cat)
	cat.setFailing(true)
	if err := st.SyncFull(context.Background()); err == nil {
		t.Fatalf("got nil error with the catalog down, want one")
	}
}

// TestConcurrentAddAndSync adds and removes services from many goroutines
// while full syncs run back to back; at the end the catalog holds exactly
// the agent's services, without a final sync. Run it with -race.
func TestConcurrentAddAndSync(t *testing.T) {
	const workers, perWorker = 8, 25
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(t.TempDir()), cat)
	ctx := context.Background()

	stopSync := make(chan struct{})
	var syncErr error
	var syncs int
	var syncer sync.WaitGroup
	syncer.Go(func() {
		for {
			select {
			case <-stopSync:
				return
			default:
			}
			if err := st.SyncFull(ctx); err != nil {
				syncErr = err
				return
			}
			syncs++
		}
	})

	errs := make(chan error, workers*perWorker*2)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := fmt.Sprintf("svc-%d-%d", w, i)
				if err := st.AddService(ctx, svc(id, "web", 1000+i, fmt.Sprintf("w%d", w)), nil); err != nil {
					errs <- err
				}
				_ = st.Services()
				if i%3 == 0 {
					if err := st.RemoveService(ctx, id); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(stopSync)
	syncer.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	if syncErr != nil {
		t.Fatalf("SyncFull: %v", syncErr)
	}
	t.Logf("%d full syncs ran alongside the workers", syncs)

	local := st.Services()
	if want := workers * (perWorker - (perWorker+2)/3); len(local) != want {
		t.Errorf("agent holds %d services, want %d", len(local), want)
	}
	sameSet(t, cat, nodeName, local)
}

// holdWrite makes the next write of service id block until the returned
// release is called; entered closes once a caller is blocked there.
// release is safe to call more than once, and the test calls it when it
// ends so that no goroutine stays blocked.
func holdWrite(t testing.TB, cat *fakeCatalog, id string) (entered <-chan struct{}, release func()) {
	t.Helper()
	in, out := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	var free sync.Once
	cat.setGate(func(serviceID string) {
		// Only the first write blocks; later ones pass at once (a
		// sync.Once would make them wait for the first).
		if serviceID == id && held.CompareAndSwap(false, true) {
			close(in)
			<-out
		}
	})
	release = func() { free.Do(func() { close(out) }) }
	t.Cleanup(release)
	return in, release
}

func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("gave up after %s waiting for %s", waitFor, what)
	}
}

// TestSyncFullDoesNotUndoConcurrentChanges holds a full sync in the middle
// of its write of a service while the service is changed through the
// State, and checks that the sync's stale view does not win: a removal or
// an addition made meanwhile is what the catalog ends up with.
func TestSyncFullDoesNotUndoConcurrentChanges(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		setup  func(t *testing.T, st *local.State, cat *fakeCatalog) // leaves web out of step
		change func(st *local.State) error                           // what races the sync
		done   func(st *local.State) bool                            // the change is visible locally
	}{
		{
			name: "remove while the sync re-adds",
			setup: func(t *testing.T, st *local.State, cat *fakeCatalog) {
				addUnsynced(t, st, cat, svc("web", "web", 80)) // the sync will register it
			},
			change: func(st *local.State) error { return st.RemoveService(ctx, "web") },
			done:   func(st *local.State) bool { return len(st.Services()) == 0 },
		},
		{
			name: "add while the sync removes",
			setup: func(t *testing.T, st *local.State, cat *fakeCatalog) {
				st2 := newState(t, testConfig(""), cat) // another incarnation left web behind
				mustAdd(t, st2, svc("web", "web", 80))  // the sync will deregister it
			},
			change: func(st *local.State) error { return st.AddService(ctx, svc("web", "web", 80), nil) },
			done:   func(st *local.State) bool { return len(st.Services()) == 1 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := newFakeCatalog(t)
			st := newState(t, testConfig(""), cat)
			tt.setup(t, st, cat)
			entered, release := holdWrite(t, cat, "web")

			var wg sync.WaitGroup
			var syncErr, changeErr error
			wg.Go(func() { syncErr = st.SyncFull(ctx) })
			waitClosed(t, entered, "the sync to write web")
			// The change waits for the held sync (changes and syncs are
			// serialised); whichever order they land in, the catalog must
			// end up with the change.
			wg.Go(func() { changeErr = tt.change(st) })
			release()
			wg.Wait()
			if syncErr != nil || changeErr != nil {
				t.Fatalf("got sync error %v, change error %v; want neither", syncErr, changeErr)
			}
			if !tt.done(st) {
				t.Fatalf("the change is not in the agent's state: %v", st.Services())
			}
			sameSet(t, cat, nodeName, st.Services())
		})
	}
}
