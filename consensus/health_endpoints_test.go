package consensus

import (
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

func (h *endpointHarness) checks(t *testing.T, method string, args any) *rpc.ChecksResponse {
	t.Helper()
	var reply rpc.ChecksResponse
	h.mustCall(t, method, args, &reply)
	return &reply
}

// checkIDs renders checks as "node/checkID".
func checkIDs(checks []*catalog.Check) []string {
	out := []string{}
	for _, c := range checks {
		out = append(out, c.Node+"/"+c.CheckID)
	}
	return out
}

// registerHealthFixture registers web on n2 and n1 (a service check each),
// db on n2 (a service check), and a node check on each node.
func registerHealthFixture(t *testing.T, h *endpointHarness) {
	t.Helper()
	h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "web"},
		&catalog.Check{CheckID: "web-http", Name: "web http", Type: "http", Status: catalog.HealthCritical, Output: "HTTP GET: 503", ServiceID: "web"},
		&catalog.Check{CheckID: "serfHealth", Type: "gossip", Status: catalog.HealthPassing})
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"},
		&catalog.Check{CheckID: "web-ttl", Type: "ttl", Status: catalog.HealthPassing, ServiceID: "web"},
		&catalog.Check{CheckID: "serfHealth", Type: "gossip", Status: catalog.HealthCritical})
	h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "db"},
		&catalog.Check{CheckID: "db-tcp", Type: "tcp", Status: catalog.HealthWarning, ServiceID: "db"})
}

func TestCatalogEndpointHealthReads(t *testing.T) {
	h := startEndpoint(t, true, nil)
	registerHealthFixture(t, h)
	store := h.srv.Store()
	storeRead := func(read func() (uint64, []*catalog.Check, error)) (uint64, []*catalog.Check) {
		idx, checks, err := read()
		if err != nil {
			t.Fatal(err)
		}
		return idx, checks
	}
	for _, tc := range []struct {
		name   string
		method string
		args   func(rpc.QueryOptions) any
		want   []string
		read   func() (uint64, []*catalog.Check, error)
	}{
		{"NodeChecks(n2)", rpc.MethodCatalogNodeChecks,
			func(q rpc.QueryOptions) any { return &rpc.NodeChecksRequest{QueryOptions: q, Node: "N2"} },
			[]string{"n2/db-tcp", "n2/serfHealth", "n2/web-http"},
			func() (uint64, []*catalog.Check, error) { return store.NodeChecks(nil, "n2") }},
		{"NodeChecks(ghost)", rpc.MethodCatalogNodeChecks,
			func(q rpc.QueryOptions) any { return &rpc.NodeChecksRequest{QueryOptions: q, Node: "ghost"} },
			[]string{},
			func() (uint64, []*catalog.Check, error) { return store.NodeChecks(nil, "ghost") }},
		{"ServiceChecks(web)", rpc.MethodCatalogServiceChecks,
			func(q rpc.QueryOptions) any { return &rpc.ServiceChecksRequest{QueryOptions: q, Service: "Web"} },
			[]string{"n1/web-ttl", "n2/web-http"},
			func() (uint64, []*catalog.Check, error) { return store.ServiceChecks(nil, "web") }},
		{"ChecksInState(critical)", rpc.MethodCatalogChecksInState,
			func(q rpc.QueryOptions) any { return &rpc.ChecksInStateRequest{QueryOptions: q, State: "critical"} },
			[]string{"n1/serfHealth", "n2/web-http"},
			func() (uint64, []*catalog.Check, error) { return store.ChecksInState(nil, catalog.HealthCritical) }},
		{"ChecksInState(any)", rpc.MethodCatalogChecksInState,
			func(q rpc.QueryOptions) any { return &rpc.ChecksInStateRequest{QueryOptions: q, State: "any"} },
			[]string{"n1/serfHealth", "n1/web-ttl", "n2/db-tcp", "n2/serfHealth", "n2/web-http"},
			func() (uint64, []*catalog.Check, error) { return store.ChecksInState(nil, catalog.HealthAny) }},
		{"ChecksInState(maintenance)", rpc.MethodCatalogChecksInState,
			func(q rpc.QueryOptions) any { return &rpc.ChecksInStateRequest{QueryOptions: q, State: "maintenance"} },
			[]string{},
			func() (uint64, []*catalog.Check, error) { return store.ChecksInState(nil, catalog.HealthMaintenance) }},
	} {
		idx, want := storeRead(tc.read)
		for _, opts := range []rpc.QueryOptions{{}, {AllowStale: true}, {RequireConsistent: true}, {Datacenter: "DC1"}} {
			got := h.checks(t, tc.method, tc.args(opts))
			if ids := checkIDs(got.Checks); !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("%s %+v: got %v, want %v", tc.name, opts, ids, tc.want)
			}
			// Every field, Type and Raft indexes included, survives the
			// trip through the RPC codec.
			if len(want) > 0 && !reflect.DeepEqual(got.Checks, want) {
				t.Errorf("%s %+v: got %s, want %s", tc.name, opts, dump(got.Checks), dump(want))
			}
			if got.Index != idx || got.Index == 0 || !got.KnownLeader || got.LastContact != 0 {
				t.Errorf("%s %+v: got meta %+v, want index %d from the leader", tc.name, opts, got.QueryMeta, idx)
			}
		}
	}
}

func TestCatalogEndpointHealthValidation(t *testing.T) {
	h := startEndpoint(t, true, nil)
	for _, tc := range []struct {
		name, method string
		args         any
		wantField    string
		wantErr      error
	}{
		{"no node", rpc.MethodCatalogNodeChecks, &rpc.NodeChecksRequest{}, "Node", nil},
		{"bad node", rpc.MethodCatalogNodeChecks, &rpc.NodeChecksRequest{Node: "n 1"}, "Node", nil},
		{"no service", rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{}, "Service", nil},
		{"bad service", rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{Service: "bad_name"}, "Service", nil},
		{"no state", rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{}, "State", nil},
		{"unknown state", rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{State: "ok"}, "State", nil},
		{"state in upper case", rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{State: "ANY"}, "State", nil},
		{"stale and consistent", rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{
			QueryOptions: rpc.QueryOptions{AllowStale: true, RequireConsistent: true}, State: "any"}, "", rpc.ErrConflictingConsistency},
		{"negative wait", rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: 1, MaxQueryTime: -time.Second}, Service: "web"}, "MaxQueryTime", nil},
		{"bad check type", rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
			Node: "n1", Address: "10.0.0.1", Checks: []*catalog.Check{{CheckID: "c", Status: catalog.HealthPassing, Type: "HTTP"}}}}, "Checks[0].Type", nil},
	} {
		expectWireError(t, h.call(tc.method, tc.args, nil), tc.name, tc.wantField, tc.wantErr)
	}
	dc2 := rpc.QueryOptions{Datacenter: "dc2", AllowStale: true}
	for method, args := range map[string]any{
		rpc.MethodCatalogNodeChecks:    &rpc.NodeChecksRequest{QueryOptions: dc2, Node: "n1"},
		rpc.MethodCatalogServiceChecks: &rpc.ServiceChecksRequest{QueryOptions: dc2, Service: "web"},
		rpc.MethodCatalogChecksInState: &rpc.ChecksInStateRequest{QueryOptions: dc2, State: "any"},
	} {
		expectRemoteError(t, h.call(method, args, nil), method+" in dc2", ErrNoPathToDatacenter.Error())
	}
}

func TestCatalogEndpointHealthWithoutLeader(t *testing.T) {
	h := startEndpoint(t, false, func(c *CatalogConfig) { c.LeaderWait = 50 * time.Millisecond })
	expectRemoteError(t, h.call(rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{State: "any"}, nil),
		"ChecksInState", ErrNoLeader.Error())
	got := h.checks(t, rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{
		QueryOptions: rpc.QueryOptions{AllowStale: true}, State: "any"})
	if got.KnownLeader || got.Index != 1 || len(got.Checks) != 0 {
		t.Errorf("stale ChecksInState: got %+v with %d checks, want no leader, index 1, no checks", got.QueryMeta, len(got.Checks))
	}
}

type checksResult struct {
	reply rpc.ChecksResponse
	err   error
}

// startChecksCall runs a call answered with a ChecksResponse on its own
// goroutine; the caller must receive from the channel before the test ends.
func (h *endpointHarness) startChecksCall(method string, args any) <-chan checksResult {
	out := make(chan checksResult, 1)
	go func() {
		var r checksResult
		r.err = h.call(method, args, &r.reply)
		out <- r
	}()
	return out
}

func awaitChecks(t *testing.T, ch <-chan checksResult, within time.Duration) rpc.ChecksResponse {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("blocking query: %v", r.err)
		}
		return r.reply
	case <-time.After(within):
		t.Fatalf("blocking query did not return within %s", within)
	}
	panic("unreachable")
}

func TestCatalogEndpointHealthBlocking(t *testing.T) {
	h := startEndpoint(t, true, nil)
	registerHealthFixture(t, h)
	wait := func(idx uint64, d time.Duration) rpc.QueryOptions {
		return rpc.QueryOptions{MinQueryIndex: idx, MaxQueryTime: d}
	}

	t.Run("ChecksInState returns when a check turns critical", func(t *testing.T) {
		cur := h.checks(t, rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{State: "critical"})
		ch := h.startChecksCall(rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{QueryOptions: wait(cur.Index, time.Minute), State: "critical"})
		h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "db"},
			&catalog.Check{CheckID: "db-tcp", Type: "tcp", Status: catalog.HealthCritical, ServiceID: "db"})
		got := awaitChecks(t, ch, 10*time.Second)
		if want := []string{"n1/serfHealth", "n2/db-tcp", "n2/web-http"}; got.Index <= cur.Index || !reflect.DeepEqual(checkIDs(got.Checks), want) {
			t.Errorf("got %v at index %d, want %v past %d", checkIDs(got.Checks), got.Index, want, cur.Index)
		}
	})

	t.Run("ServiceChecks returns when a check's output changes", func(t *testing.T) {
		cur := h.checks(t, rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{Service: "web"})
		ch := h.startChecksCall(rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{QueryOptions: wait(cur.Index, time.Minute), Service: "web"})
		h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"},
			&catalog.Check{CheckID: "web-ttl", Type: "ttl", Status: catalog.HealthPassing, Output: "renewed", ServiceID: "web"})
		got := awaitChecks(t, ch, 10*time.Second)
		if got.Index <= cur.Index || len(got.Checks) != 2 || got.Checks[0].Output != "renewed" {
			t.Errorf("got %s at index %d, want n1/web-ttl renewed past %d", dump(got.Checks), got.Index, cur.Index)
		}
	})

	t.Run("NodeChecks returns when the node's check changes", func(t *testing.T) {
		cur := h.checks(t, rpc.MethodCatalogNodeChecks, &rpc.NodeChecksRequest{Node: "n1"})
		ch := h.startChecksCall(rpc.MethodCatalogNodeChecks, &rpc.NodeChecksRequest{QueryOptions: wait(cur.Index, time.Minute), Node: "n1"})
		h.register(t, "n1", "10.0.0.1", nil, &catalog.Check{CheckID: "serfHealth", Type: "gossip", Status: catalog.HealthPassing})
		got := awaitChecks(t, ch, 10*time.Second)
		if got.Index <= cur.Index || len(got.Checks) != 2 || got.Checks[0].Status != catalog.HealthPassing {
			t.Errorf("got %s at index %d, want n1/serfHealth passing past %d", dump(got.Checks), got.Index, cur.Index)
		}
	})

	t.Run("returns unchanged when the wait ends", func(t *testing.T) {
		cur := h.checks(t, rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{State: "warning"})
		got := h.checks(t, rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{QueryOptions: wait(cur.Index, 100*time.Millisecond), State: "warning"})
		if got.Index != cur.Index || !reflect.DeepEqual(checkIDs(got.Checks), checkIDs(cur.Checks)) {
			t.Errorf("got %v at index %d, want the unchanged %v at %d", checkIDs(got.Checks), got.Index, checkIDs(cur.Checks), cur.Index)
		}
	})
}
