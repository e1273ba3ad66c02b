package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// startQueryServers starts n networked servers of datacenter dc with
// their Catalog and PreparedQuery endpoints registered (the latter built
// by cfg) and waits for a leader.
func startQueryServers(t *testing.T, n int, dc string, cfg consensus.PreparedQueryConfig) ([]*consensustest.Node, *consensustest.Node) {
	t.Helper()
	nodes := consensustest.StartCluster(t, n)
	for _, node := range nodes {
		cc := consensus.DefaultCatalogConfig()
		cc.Datacenter = dc
		cat, err := consensus.NewCatalog(node.Server, rpctest.NewPool(t), cc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cat.Close)
		pq, err := consensus.NewPreparedQuery(cat, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.Publish(node.RPC); err != nil {
			t.Fatal(err)
		}
		if err := node.RPC.Register(rpc.PreparedQueryEndpoint, pq); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, consensustest.WaitForLeader(t, nodes, within)
}

// remoteFunc adapts a function to consensus.RemoteQueryExecutor.
type remoteFunc func(ctx context.Context, dc string, q *catalog.PreparedQuery) (*catalog.QueryResult, error)

func (f remoteFunc) ExecuteRemote(ctx context.Context, dc string, q *catalog.PreparedQuery) (*catalog.QueryResult, error) {
	return f(ctx, dc, q)
}

// remoteDCs is a RemoteQueryExecutor over real servers of other
// datacenters: it sends ExecuteRemote to the server of dc, as the WAN
// forwarding will, and fails like an unroutable datacenter for any other.
func remoteDCs(p *rpc.Pool, servers map[string]string, asked *askedDCs) consensus.RemoteQueryExecutor {
	return remoteFunc(func(ctx context.Context, dc string, q *catalog.PreparedQuery) (*catalog.QueryResult, error) {
		asked.add(dc)
		addr, ok := servers[dc]
		if !ok {
			return nil, fmt.Errorf("datacenter %s: %w", dc, consensus.ErrNoPathToDatacenter)
		}
		var reply rpc.PreparedQueryExecuteResponse
		args := &rpc.PreparedQueryExecuteRemoteRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}, Query: *q}
		if err := p.Call(ctx, addr, rpc.MethodPreparedQueryExecuteRemote, args, &reply); err != nil {
			return nil, err
		}
		return &reply.Result, nil
	})
}

// askedDCs records the datacenters a RemoteQueryExecutor was asked about,
// from the endpoint's goroutines.
type askedDCs struct {
	mu  sync.Mutex
	dcs []string
}

func (a *askedDCs) add(dc string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dcs = append(a.dcs, dc)
}

// take returns the datacenters asked about since the last take.
func (a *askedDCs) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.dcs
	a.dcs = nil
	return out
}

func registerWeb(t *testing.T, p *rpc.Pool, n *consensustest.Node, node, addr string, status catalog.HealthStatus) {
	t.Helper()
	catalogCall(t, p, n, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: node, Address: addr, Service: &catalog.Service{Service: "web", Port: 80, Tags: []string{"v1"}},
		Checks: []*catalog.Check{{CheckID: "web-check", Name: "web", ServiceID: "web", Status: status}},
	}}, nil)
}

func createQuery(t *testing.T, p *rpc.Pool, n *consensustest.Node, q catalog.PreparedQuery) string {
	t.Helper()
	var reply rpc.PreparedQueryApplyResponse
	catalogCall(t, p, n, rpc.MethodPreparedQueryApply, &rpc.PreparedQueryApplyRequest{Op: catalog.QueryCreate, Query: q}, &reply)
	if !catalog.IsQueryID(reply.ID) {
		t.Fatalf("create on %s: got ID %q, want a UUID", n.ID, reply.ID)
	}
	return reply.ID
}

// TestPreparedQueryApplyViaFollower: definitions written to a follower
// are applied through the leader and read back from any server; bad
// definitions are refused naming the field, unknown IDs are not found.
func TestPreparedQueryApplyViaFollower(t *testing.T) {
	nodes, _ := startQueryServers(t, 3, "dc1", consensus.DefaultPreparedQueryConfig())
	p := rpctest.NewPool(t)
	f := catalogFollowers(nodes)

	id := createQuery(t, p, f[0], catalog.PreparedQuery{Name: "web-any", Service: catalog.ServiceQuery{Service: "web"}})
	var got rpc.PreparedQueriesResponse
	catalogCall(t, p, f[1], rpc.MethodPreparedQueryGet, &rpc.PreparedQueryGetRequest{QueryID: id}, &got)
	if len(got.Queries) != 1 || got.Queries[0].Name != "web-any" || got.Queries[0].ID != id {
		t.Fatalf("Get %s on %s: got %+v, want web-any", id, f[1].ID, got.Queries)
	}

	upd := *got.Queries[0]
	upd.Service.OnlyPassing = true
	catalogCall(t, p, f[1], rpc.MethodPreparedQueryApply, &rpc.PreparedQueryApplyRequest{Op: catalog.QueryUpdate, Query: upd}, &rpc.PreparedQueryApplyResponse{})
	var list rpc.PreparedQueriesResponse
	catalogCall(t, p, f[0], rpc.MethodPreparedQueryList, &rpc.PreparedQueryListRequest{}, &list)
	if len(list.Queries) != 1 || !list.Queries[0].Service.OnlyPassing {
		t.Errorf("List after update: got %+v, want one query with OnlyPassing", list.Queries)
	}

	tests := []struct {
		q     catalog.PreparedQuery
		field string
	}{
		{catalog.PreparedQuery{}, "Service.Service"},
		{catalog.PreparedQuery{Service: catalog.ServiceQuery{Service: "web", Failover: catalog.QueryFailover{NearestN: -2}}}, "Service.Failover.NearestN"},
		{catalog.PreparedQuery{Name: "web-any", Service: catalog.ServiceQuery{Service: "db"}}, "Name"}, // refused by the leader's store
	}
	for _, tt := range tests {
		err := callErr(p, f[0], rpc.MethodPreparedQueryApply, &rpc.PreparedQueryApplyRequest{Op: catalog.QueryCreate, Query: tt.q}, &rpc.PreparedQueryApplyResponse{})
		if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != tt.field {
			t.Errorf("create %+v: got %v, want a FieldError on %s", tt.q, err, tt.field)
		}
	}

	catalogCall(t, p, f[0], rpc.MethodPreparedQueryApply, &rpc.PreparedQueryApplyRequest{Op: catalog.QueryDelete, Query: catalog.PreparedQuery{ID: id}}, &rpc.PreparedQueryApplyResponse{})
	err := callErr(p, f[1], rpc.MethodPreparedQueryGet, &rpc.PreparedQueryGetRequest{QueryID: id}, &got)
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Get after delete: got %v, want catalog.ErrNotFound", err)
	}
	err = callErr(p, f[1], rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: "web-any"}, &rpc.PreparedQueryExecuteResponse{})
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Execute of a deleted query: got %v, want catalog.ErrNotFound", err)
	}
}

// TestPreparedQueryExecuteFailover: a query answers from its own
// datacenter while it has a healthy instance, and from the first failover
// datacenter that has one when it has none, skipping those that cannot be
// reached; it comes back when the local instance recovers.
func TestPreparedQueryExecuteFailover(t *testing.T) {
	p := rpctest.NewPool(t)
	_, dc2 := startQueryServers(t, 1, "dc2", consensus.DefaultPreparedQueryConfig())
	registerWeb(t, p, dc2, "dc2-node", "10.2.0.1", catalog.HealthPassing)

	var asked askedDCs
	cfg := consensus.DefaultPreparedQueryConfig()
	cfg.Remote = remoteDCs(p, map[string]string{"dc2": dc2.Addr}, &asked)
	cfg.Datacenters = func() []string { return []string{"dc0", "dc1", "dc2", "dc3"} }
	_, dc1 := startQueryServers(t, 1, "dc1", cfg)
	registerWeb(t, p, dc1, "dc1-node", "10.1.0.1", catalog.HealthPassing)
	createQuery(t, p, dc1, catalog.PreparedQuery{Name: "web", Service: catalog.ServiceQuery{
		Service: "web", Tags: []string{"v1"}, OnlyPassing: true,
		Failover: catalog.QueryFailover{NearestN: 1, Datacenters: []string{"dc2", "dc3"}},
	}, DNS: catalog.QueryDNS{TTL: "7s"}})

	execute := func() catalog.QueryResult {
		t.Helper()
		var reply rpc.PreparedQueryExecuteResponse
		catalogCall(t, p, dc1, rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: "WEB"}, &reply)
		return reply.Result
	}
	nodeNames := func(r catalog.QueryResult) []string {
		var out []string
		for _, n := range r.Nodes {
			out = append(out, n.Node.Node)
		}
		return out
	}

	got := execute()
	if got.Datacenter != "dc1" || got.Failovers != 0 || len(got.Nodes) != 1 || got.Nodes[0].Node.Node != "dc1-node" ||
		got.Service != "web" || got.DNS.TTL != "7s" || len(got.Nodes[0].Checks) != 1 {
		t.Errorf("healthy locally: got dc %q, %d failovers, nodes %v, %+v; want dc1, 0, [dc1-node]", got.Datacenter, got.Failovers, nodeNames(got), got)
	}
	if a := asked.take(); len(a) != 0 {
		t.Errorf("healthy locally: asked %v, want no other datacenter", a)
	}

	// A warning is not passing: the query fails over. NearestN 1 is dc0
	// (unreachable), then dc2 answers; dc3 is never asked.
	registerWeb(t, p, dc1, "dc1-node", "10.1.0.1", catalog.HealthWarning)
	got = execute()
	if got.Datacenter != "dc2" || got.Failovers != 2 || len(got.Nodes) != 1 || got.Nodes[0].Node.Node != "dc2-node" {
		t.Errorf("local warning: got dc %q, %d failovers, nodes %v; want dc2, 2, [dc2-node]", got.Datacenter, got.Failovers, nodeNames(got))
	}
	if a := asked.take(); fmt.Sprint(a) != "[dc0 dc2]" {
		t.Errorf("local warning: asked %v, want [dc0 dc2]", a)
	}

	// Nowhere healthy, and two known datacenters (dc0, dc3) could not be
	// asked: that is not "no instance anywhere", so the execution fails
	// (DNS answers SERVFAIL rather than a cacheable NXDOMAIN).
	registerWeb(t, p, dc1, "dc1-node", "10.1.0.1", catalog.HealthCritical)
	registerWeb(t, p, dc2, "dc2-node", "10.2.0.1", catalog.HealthCritical)
	err := callErr(p, dc1, rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: "web"}, &rpc.PreparedQueryExecuteResponse{})
	if err == nil || !strings.Contains(err.Error(), "2 failover datacenter(s) could not be asked") {
		t.Errorf("nowhere healthy, dc0 and dc3 unreachable: got %v, want an error naming the 2 datacenters not asked", err)
	}
	if a := asked.take(); fmt.Sprint(a) != "[dc0 dc2 dc3]" {
		t.Errorf("nowhere healthy: asked %v, want [dc0 dc2 dc3]", a)
	}

	registerWeb(t, p, dc1, "dc1-node", "10.1.0.1", catalog.HealthPassing)
	if got = execute(); got.Datacenter != "dc1" || len(got.Nodes) != 1 {
		t.Errorf("local recovered: got dc %q, nodes %v; want dc1, [dc1-node]", got.Datacenter, nodeNames(got))
	}
}

// TestPreparedQueryDefaultRemote: without an injected executor, failing
// over sends ExecuteRemote for the other datacenter through the endpoint
// itself; a server that cannot route there (no WAN forwarding) fails that
// datacenter with ErrNoPathToDatacenter, and the query answers empty from
// its own.
func TestPreparedQueryDefaultRemote(t *testing.T) {
	p := rpctest.NewPool(t)
	_, dc1 := startQueryServers(t, 1, "dc1", consensus.DefaultPreparedQueryConfig())
	registerWeb(t, p, dc1, "dc1-node", "10.1.0.1", catalog.HealthCritical)
	id := createQuery(t, p, dc1, catalog.PreparedQuery{Service: catalog.ServiceQuery{
		Service: "web", Failover: catalog.QueryFailover{Datacenters: []string{"dc2"}},
	}})
	var reply rpc.PreparedQueryExecuteResponse
	catalogCall(t, p, dc1, rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: id}, &reply)
	if r := reply.Result; r.Datacenter != "dc1" || r.Failovers != 1 || len(r.Nodes) != 0 {
		t.Errorf("got dc %q, %d failovers, %d nodes; want dc1, 1, 0", r.Datacenter, r.Failovers, len(r.Nodes))
	}
	err := callErr(p, dc1, rpc.MethodPreparedQueryExecuteRemote, &rpc.PreparedQueryExecuteRemoteRequest{
		QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Query: catalog.PreparedQuery{Service: catalog.ServiceQuery{Service: "web"}},
	}, &reply)
	if err == nil {
		t.Errorf("ExecuteRemote for dc2 on a dc1 server without a route: got nil error")
	}
	err = callErr(p, dc1, rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: "nope"}, &reply)
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Execute of an unknown query: got %v, want catalog.ErrNotFound", err)
	}
}

// TestPreparedQueryFailoverTargets: a query's Failover.Targets are tried
// in order, as Datacenters are; the query's stored Token is not sent to
// them.
func TestPreparedQueryFailoverTargets(t *testing.T) {
	p := rpctest.NewPool(t)
	_, dc2 := startQueryServers(t, 1, "dc2", consensus.DefaultPreparedQueryConfig())
	registerWeb(t, p, dc2, "dc2-node", "10.2.0.1", catalog.HealthPassing)

	var asked askedDCs
	var tokens []string
	remote := remoteDCs(p, map[string]string{"dc2": dc2.Addr}, &asked)
	cfg := consensus.DefaultPreparedQueryConfig()
	cfg.Remote = remoteFunc(func(ctx context.Context, dc string, q *catalog.PreparedQuery) (*catalog.QueryResult, error) {
		tokens = append(tokens, q.Token) // the endpoint asks one datacenter at a time
		return remote.ExecuteRemote(ctx, dc, q)
	})
	_, dc1 := startQueryServers(t, 1, "dc1", cfg)
	registerWeb(t, p, dc1, "dc1-node", "10.1.0.1", catalog.HealthCritical)
	createQuery(t, p, dc1, catalog.PreparedQuery{Name: "web", Token: "11111111-2222-3333-4444-555555555555", Service: catalog.ServiceQuery{
		Service:  "web",
		Failover: catalog.QueryFailover{Targets: []catalog.QueryFailoverTarget{{Datacenter: "dc3"}, {Datacenter: "dc2"}}},
	}})
	var reply rpc.PreparedQueryExecuteResponse
	catalogCall(t, p, dc1, rpc.MethodPreparedQueryExecute, &rpc.PreparedQueryExecuteRequest{QueryIDOrName: "web"}, &reply)
	if got := reply.Result; got.Datacenter != "dc2" || got.Failovers != 2 || len(got.Nodes) != 1 {
		t.Errorf("got dc %q, %d failovers, %d nodes; want dc2, 2, 1", got.Datacenter, got.Failovers, len(got.Nodes))
	}
	if a := asked.take(); fmt.Sprint(a) != "[dc3 dc2]" {
		t.Errorf("asked %v, want [dc3 dc2]", a)
	}
	if fmt.Sprint(tokens) != "[ ]" {
		t.Errorf("tokens sent with the query: got %q, want none", tokens)
	}
}
