package consensus

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/porttest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// twoDCs is a server of dc1 whose router knows dc2's servers, and a server
// of dc2: each a cluster of one with its Catalog endpoint on loopback.
type twoDCs struct {
	dc1, dc2 *endpointHarness
	router   *Router
}

func startTwoDCs(t *testing.T) *twoDCs {
	t.Helper()
	r := newTestRouter(t, "dc1")
	dc2 := startEndpoint(t, true, func(c *CatalogConfig) { c.Datacenter = "dc2" })
	dc1 := startEndpoint(t, true, func(c *CatalogConfig) { c.Router = r })
	r.Update([]gossip.Member{wanMember("s1", "dc2", dc2.addr, gossip.StatusAlive)})
	return &twoDCs{dc1: dc1, dc2: dc2, router: r}
}

func TestForwardReadToAnotherDatacenter(t *testing.T) {
	dcs := startTwoDCs(t)
	dcs.dc2.register(t, "n2", "10.0.2.10", &catalog.Service{Service: "web", Port: 80})

	for _, opts := range []rpc.QueryOptions{{Datacenter: "dc2"}, {Datacenter: "DC2", AllowStale: true}, {Datacenter: "dc2", RequireConsistent: true}} {
		got := dcs.dc1.instances(t, &rpc.ServiceInstancesRequest{QueryOptions: opts, Service: "web"})
		if len(got.Instances) != 1 || got.Instances[0].Node.Node != "n2" || got.Instances[0].Node.Datacenter != "dc2" {
			t.Errorf("%+v on dc1: got %+v, want n2 of dc2", opts, got.Instances)
		}
		if got.Index == 0 || !got.KnownLeader {
			t.Errorf("%+v on dc1: got meta %+v, want dc2's index and leader", opts, got.QueryMeta)
		}
	}
	// The local datacenter is still answered locally.
	if got := dcs.dc1.instances(t, &rpc.ServiceInstancesRequest{Service: "web"}); len(got.Instances) != 0 {
		t.Errorf("web in dc1: got %d instances, want none (it is in dc2 only)", len(got.Instances))
	}
	var nodes rpc.NodesResponse
	dcs.dc1.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}}, &nodes)
	if len(nodes.Nodes) != 1 || nodes.Nodes[0].Node != "n2" {
		t.Errorf("Nodes of dc2 through dc1: got %v, want n2", nodes.Nodes)
	}
	var checks rpc.ChecksResponse
	dcs.dc1.mustCall(t, rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, State: "any"}, &checks)
	// A remote error keeps its structure across both hops.
	err := dcs.dc1.call(rpc.MethodCatalogNodeServices, &rpc.NodeServicesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2", AllowStale: true, RequireConsistent: true}, Node: "n2"}, nil)
	if !errors.Is(err, rpc.ErrConflictingConsistency) {
		t.Errorf("conflicting options for dc2: got %v, want ErrConflictingConsistency", err)
	}
}

func TestForwardWriteToAnotherDatacenter(t *testing.T) {
	dcs := startTwoDCs(t)
	dcs.dc1.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: "dc2"},
		Registration: catalog.RegisterRequest{Node: "n2", Address: "10.0.2.10", Service: &catalog.Service{Service: "db", Port: 5432}},
	}, nil)
	_, insts, err := dcs.dc2.srv.Store().ServiceInstances(nil, "db", "")
	if err != nil || len(insts) != 1 || insts[0].Node.Datacenter != "dc2" {
		t.Fatalf("dc2's store after a write through dc1: got %+v (%v), want db on n2 of dc2", insts, err)
	}
	if _, local, _ := dcs.dc1.srv.Store().ServiceInstances(nil, "db", ""); len(local) != 0 {
		t.Errorf("dc1's store: got %d db instances, want none", len(local))
	}
	dcs.dc1.mustCall(t, rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{
		WriteRequest:   rpc.WriteRequest{Datacenter: "dc2"},
		Deregistration: catalog.DeregisterRequest{Node: "n2"},
	}, nil)
	if _, n, _ := dcs.dc2.srv.Store().Node(nil, "n2"); n != nil {
		t.Errorf("dc2's n2 after a deregistration through dc1: got %+v, want gone", n)
	}
	// A field error of dc2 reaches the caller as such.
	err = dcs.dc1.call(rpc.MethodCatalogRegister, &rpc.RegisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: "dc2"},
		Registration: catalog.RegisterRequest{Datacenter: "dc1", Node: "n2", Address: "10.0.2.10"},
	}, nil)
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Datacenter" {
		t.Errorf("a dc1 node written to dc2: got %v, want a field error naming Datacenter", err)
	}
}

// TestForwardBlockingQueryToAnotherDatacenter holds a blocking query for
// dc2 on dc1 past the forward's ForwardTimeout: the forward waits as long
// as the query may.
func TestForwardBlockingQueryToAnotherDatacenter(t *testing.T) {
	r := newTestRouter(t, "dc1")
	dc2 := startEndpoint(t, true, func(c *CatalogConfig) { c.Datacenter = "dc2" })
	dc1 := startEndpoint(t, true, func(c *CatalogConfig) { c.Router, c.ForwardTimeout = r, 200*time.Millisecond })
	r.Update([]gossip.Member{wanMember("s1", "dc2", dc2.addr, gossip.StatusAlive)})
	dc2.register(t, "n2", "10.0.2.10", &catalog.Service{Service: "web", Port: 80})
	cur := dc1.instances(t, &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Service: "web"})

	type result struct {
		reply rpc.ServiceInstancesResponse
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		res.err = dc1.call(rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{Datacenter: "dc2", MinQueryIndex: cur.Index, MaxQueryTime: time.Minute},
			Service:      "web",
		}, &res.reply)
		done <- res
	}()
	select {
	case res := <-done:
		t.Fatalf("blocking query returned before any change: %+v, %v", res.reply, res.err)
	case <-time.After(500 * time.Millisecond): // past ForwardTimeout: the wait is kept
	}
	dc2.register(t, "n3", "10.0.2.11", &catalog.Service{Service: "web", Port: 80})
	select {
	case res := <-done:
		if res.err != nil || len(res.reply.Instances) != 2 || res.reply.Index <= cur.Index {
			t.Errorf("blocking query after a write in dc2: got %d instances at index %d (%v), want 2 past %d",
				len(res.reply.Instances), res.reply.Index, res.err, cur.Index)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocking query for dc2 did not return within 5s of a write there")
	}
}

// TestForwardBlockingReadLeavesAHungServer (issue 28, build 3): a blocking
// read whose server in another datacenter hangs halfway through the wait
// (stopped, or cut off: its connection stays open) is found out by a
// ping and goes to another server of that datacenter (here the same one
// behind another proxy, so the index holds) for what is left of the wait
// only: it ends about when its wait does, with the current index, not
// with an error when the forward's time runs out.
func TestForwardBlockingReadLeavesAHungServer(t *testing.T) {
	r := newTestRouter(t, "dc1")
	dc2 := startEndpoint(t, true, func(c *CatalogConfig) { c.Datacenter = "dc2" })
	dc1 := startEndpoint(t, true, func(c *CatalogConfig) { c.Router = r })
	f1, f2 := rpctest.NewFreezer(t, dc2.addr), rpctest.NewFreezer(t, dc2.addr)
	r.Update([]gossip.Member{
		wanMember("s1", "dc2", f1.Addr(), gossip.StatusAlive),
		wanMember("s2", "dc2", f2.Addr(), gossip.StatusAlive),
	})
	// f1 first (see TestForwardRetriesAnotherServer).
	swap := r.Servers("dc2")[0] != f1.Addr()
	r.randN = func(n int) int {
		if swap {
			return 0
		}
		return n - 1
	}
	dc2.register(t, "n2", "10.0.2.10", &catalog.Service{Service: "web", Port: 80})
	cur := dc1.instances(t, &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Service: "web"})

	const wait = 4 * time.Second
	errc := make(chan error, 1)
	var reply rpc.ServiceInstancesResponse
	start := time.Now()
	go func() {
		errc <- dc1.call(rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{Datacenter: "dc2", MinQueryIndex: cur.Index, MaxQueryTime: wait},
			Service:      "web",
		}, &reply)
	}()
	time.Sleep(wait / 4) // the hang comes once the read waits on f1
	f1.Freeze()
	var err error
	select {
	case err = <-errc:
	case <-time.After(3 * wait):
		t.Fatal("the blocking read did not return")
	}
	elapsed := time.Since(start)
	// Its wait, the remote server's jitter, and the ping that finds f1 hung.
	bound := wait + wait/16 + dcPings.After + dcPings.Timeout + time.Second
	switch {
	case err != nil:
		t.Errorf("blocking read across the hang failed after %s: %v", elapsed.Round(time.Millisecond), err)
	case elapsed > bound:
		t.Errorf("blocking read of %s took %s, want at most %s (a second full wait on the next server?)", wait, elapsed.Round(time.Millisecond), bound)
	case reply.Index != cur.Index:
		t.Errorf("got index %d, want the current %d", reply.Index, cur.Index)
	}
	f1.Thaw()
}

func TestForwardRetriesAnotherServer(t *testing.T) {
	dcs := startTwoDCs(t)
	dead := porttest.Refused(t)
	dcs.router.Update([]gossip.Member{
		wanMember("s0", "dc2", dead, gossip.StatusAlive),
		wanMember("s1", "dc2", dcs.dc2.addr, gossip.StatusAlive),
	})
	// The dead server first. Of two servers, sorted, route's shuffle
	// keeps the order when randN answers the largest index, and swaps
	// them when it answers 0.
	swap := dcs.router.Servers("dc2")[0] != dead
	dcs.router.randN = func(n int) int {
		if swap {
			return 0
		}
		return n - 1
	}
	if got, _ := dcs.router.route("dc2"); got[0] != dead {
		t.Fatalf("route order %v: want the dead server %s first", got, dead)
	}
	// A write never sent to the dead server (the dial was refused) is
	// retried too.
	dcs.dc1.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: "dc2"},
		Registration: catalog.RegisterRequest{Node: "n2", Address: "10.0.2.10", Service: &catalog.Service{Service: "web", Port: 80}},
	}, nil)
	got := dcs.dc1.instances(t, &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Service: "web"})
	if len(got.Instances) != 1 {
		t.Errorf("web in dc2 past a dead server: got %d instances, want 1", len(got.Instances))
	}
}

// TestForwardReadPastARemoteServerWithNoLeader: a read that a server of
// another datacenter answers with "no leader" (it lost its leader and has
// not seen the next one yet) goes on to the next server there, as the
// client door moves on from a server that knows no leader; a write is not
// retried.
func TestForwardReadPastARemoteServerWithNoLeader(t *testing.T) {
	dcs := startTwoDCs(t)
	lost := startEndpoint(t, false, func(c *CatalogConfig) { c.Datacenter = "dc2"; c.LeaderWait = 100 * time.Millisecond })
	dcs.router.Update([]gossip.Member{
		wanMember("s0", "dc2", lost.addr, gossip.StatusAlive),
		wanMember("s1", "dc2", dcs.dc2.addr, gossip.StatusAlive),
	})
	// The server with no leader first (see TestForwardRetriesAnotherServer).
	swap := dcs.router.Servers("dc2")[0] != lost.addr
	dcs.router.randN = func(n int) int {
		if swap {
			return 0
		}
		return n - 1
	}
	dcs.dc2.register(t, "n2", "10.0.2.10", &catalog.Service{Service: "web", Port: 80})
	got := dcs.dc1.instances(t, &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Service: "web"})
	if len(got.Instances) != 1 {
		t.Errorf("web in dc2 past a server with no leader: got %d instances, want 1", len(got.Instances))
	}
	err := dcs.dc1.call(rpc.MethodCatalogRegister, &rpc.RegisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: "dc2"},
		Registration: catalog.RegisterRequest{Node: "n3", Address: "10.0.2.11"},
	}, nil)
	if !errors.Is(err, rpc.ErrNoLeader) {
		t.Errorf("a write to a server of dc2 with no leader: got %v, want its ErrNoLeader", err)
	}
}

func TestForwardNoPath(t *testing.T) {
	dcs := startTwoDCs(t)
	read := func(dc string) error {
		return dcs.dc1.call(rpc.MethodCatalogServiceInstances,
			&rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc}, Service: "web"}, &rpc.ServiceInstancesResponse{})
	}
	expectNoPath := func(what string, err error, wantSubstr string) {
		t.Helper()
		if !errors.Is(err, rpc.ErrNoPathToDatacenter) || !strings.Contains(err.Error(), wantSubstr) {
			t.Errorf("%s: got %v, want an error wrapping ErrNoPathToDatacenter mentioning %q", what, err, wantSubstr)
		}
	}
	expectNoPath("unknown dc9", read("dc9"), `unknown datacenter "dc9"`)
	if err := read("dc9"); !errors.Is(err, rpc.ErrUnknownDatacenter) {
		t.Errorf("unknown dc9: got %v, want it to wrap ErrUnknownDatacenter", err)
	}

	// Every server of dc2 unreachable: the read fails, quickly, saying so.
	dcs.router.Update([]gossip.Member{
		wanMember("s1", "dc2", porttest.Refused(t), gossip.StatusAlive),
		wanMember("s2", "dc2", porttest.Refused(t), gossip.StatusAlive),
	})
	start := time.Now()
	expectNoPath("dc2 unreachable", read("dc2"), "2 of its servers tried, none answered")
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("dc2 unreachable: failed after %s, want fast", took)
	}
	// No server of dc2 alive any more.
	dcs.router.Update([]gossip.Member{wanMember("s1", "dc2", dcs.dc2.addr, gossip.StatusFailed)})
	expectNoPath("dc2 with every server failed", read("dc2"), "no path to datacenter dc2: none of its servers is alive")
	// dc1 keeps answering.
	if err := read("dc1"); err != nil {
		t.Errorf("dc1 read while dc2 is down: %v", err)
	}
	// A server in no WAN pool has no path anywhere else.
	solo := startEndpoint(t, true, nil)
	err := solo.call(rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: "dc2"}, Deregistration: catalog.DeregisterRequest{Node: "n1"},
	}, nil)
	expectNoPath("a server without a router", err, "no path to datacenter dc2")
}

// TestForwardLoopGuard sends dc2 a request for dc3 as if dc1 had forwarded
// it there: dc2 knows dc3 but refuses to send it on.
func TestForwardLoopGuard(t *testing.T) {
	r2 := newTestRouter(t, "dc2")
	dc3 := startEndpoint(t, true, func(c *CatalogConfig) { c.Datacenter = "dc3" })
	dc2 := startEndpoint(t, true, func(c *CatalogConfig) { c.Datacenter, c.Router = "dc2", r2 })
	r2.Update([]gossip.Member{wanMember("s1", "dc3", dc3.addr, gossip.StatusAlive)})

	q := rpc.QueryOptions{Datacenter: "dc3"}
	dc2.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: q}, &rpc.NodesResponse{})
	q.FromDatacenter = "dc1"
	err := dc2.call(rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: q}, &rpc.NodesResponse{})
	if !errors.Is(err, rpc.ErrNoPathToDatacenter) || !strings.Contains(err.Error(), `from datacenter "dc1"`) {
		t.Errorf("a request from dc1 for dc3 on dc2: got %v, want a no-path error naming dc1", err)
	}
	err = dc2.call(rpc.MethodCatalogRegister, &rpc.RegisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: "dc3", FromDatacenter: "dc1"},
		Registration: catalog.RegisterRequest{Node: "n3", Address: "10.0.3.1"},
	}, nil)
	if !errors.Is(err, rpc.ErrNoPathToDatacenter) {
		t.Errorf("a write from dc1 for dc3 on dc2: got %v, want a no-path error", err)
	}
	// A request from another datacenter for this one is answered.
	q.Datacenter = "dc2"
	dc2.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: q}, &rpc.NodesResponse{})
}

func TestListDatacenters(t *testing.T) {
	dcs := startTwoDCs(t)
	for _, tc := range []struct {
		h    *endpointHarness
		want []string
	}{
		{dcs.dc1, []string{"dc1", "dc2"}},
		{dcs.dc2, []string{"dc2"}}, // in no WAN pool
	} {
		var got rpc.DatacentersResponse
		tc.h.mustCall(t, rpc.MethodCatalogListDatacenters, &rpc.DatacentersRequest{}, &got)
		if !slices.Equal(got.Datacenters, tc.want) {
			t.Errorf("ListDatacenters: got %v, want %v", got.Datacenters, tc.want)
		}
	}
}

func TestCatalogConfigRouterDatacenter(t *testing.T) {
	cfg := DefaultCatalogConfig()
	cfg.Datacenter = "dc1"
	cfg.Router = newTestRouter(t, "dc2")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Router") {
		t.Errorf("a router of dc2 for an endpoint of dc1: got %v, want an error naming Router", err)
	}
}
