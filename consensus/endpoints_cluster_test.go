package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// startCatalogCluster starts three networked servers, each with its
// Catalog endpoint on its rpc server, and returns them with a client pool.
// The endpoints are closed before the servers stop.
func startCatalogCluster(t *testing.T) ([]*consensustest.Node, *rpc.Pool) {
	t.Helper()
	nodes := consensustest.StartCluster(t, 3)
	for _, n := range nodes {
		cfg := consensus.DefaultCatalogConfig()
		cfg.Datacenter = "dc1"
		cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cat.Close)
		if err := cat.Publish(n.RPC); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, rpctest.NewPool(t)
}

func catalogCall(t *testing.T, p *rpc.Pool, n *consensustest.Node, method string, args, reply any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := p.Call(ctx, n.Addr, method, args, reply); err != nil {
		t.Fatalf("%s on %s: %v", method, n.ID, err)
	}
}

func catalogFollowers(nodes []*consensustest.Node) []*consensustest.Node {
	var out []*consensustest.Node
	for _, n := range nodes {
		if !n.Server.IsLeader() {
			out = append(out, n)
		}
	}
	return out
}

// TestCatalogEndpointForwarding sends writes and reads to followers: writes
// are applied through the leader, default reads are answered by the leader
// (so a follower's client reads its own write at once), and stale reads by
// the follower itself once it has caught up.
func TestCatalogEndpointForwarding(t *testing.T) {
	nodes, p := startCatalogCluster(t)
	leader := consensustest.WaitForLeader(t, nodes, within)
	f := catalogFollowers(nodes)
	if len(f) != 2 {
		t.Fatalf("got %d followers, want 2", len(f))
	}

	reg := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Port: 80},
	}}
	catalogCall(t, p, f[0], rpc.MethodCatalogRegister, reg, nil)
	_, onLeader, err := leader.Store.ServiceInstances(nil, "web", "")
	if err != nil || len(onLeader) != 1 {
		t.Fatalf("leader's store after Register on %s: got %d instances (%v), want 1", f[0].ID, len(onLeader), err)
	}

	for _, opts := range []rpc.QueryOptions{{}, {RequireConsistent: true}} {
		var got rpc.ServiceInstancesResponse
		catalogCall(t, p, f[1], rpc.MethodCatalogServiceInstances,
			&rpc.ServiceInstancesRequest{QueryOptions: opts, Service: "web"}, &got)
		if len(got.Instances) != 1 || got.LastContact != 0 || !got.KnownLeader {
			t.Errorf("%+v on %s: got %d instances, meta %+v; want 1, answered by the leader", opts, f[1].ID, len(got.Instances), got.QueryMeta)
		}
	}

	consensustest.WaitFor(t, within, func() error {
		var got rpc.ServiceInstancesResponse
		catalogCall(t, p, f[1], rpc.MethodCatalogServiceInstances,
			&rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}, Service: "web"}, &got)
		if len(got.Instances) != 1 || !got.KnownLeader || got.LastContact >= within {
			return fmt.Errorf("stale read on %s: got %d instances, meta %+v", f[1].ID, len(got.Instances), got.QueryMeta)
		}
		return nil
	})

	// A blocking query on one follower returns when a write sent to the
	// other is applied.
	var cur rpc.ServiceInstancesResponse
	catalogCall(t, p, f[1], rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{Service: "web"}, &cur)
	type result struct {
		reply rpc.ServiceInstancesResponse
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		r.err = p.Call(ctx, f[1].Addr, rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: time.Minute},
			Service:      "web",
		}, &r.reply)
		done <- r
	}()
	reg.Registration.Node, reg.Registration.Address = "client2", "10.0.0.2"
	catalogCall(t, p, f[0], rpc.MethodCatalogRegister, reg, nil)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("blocking query: %v", r.err)
		}
		if r.reply.Index <= cur.Index || len(r.reply.Instances) != 2 {
			t.Errorf("blocking query: got %d instances at index %d, want 2 past %d", len(r.reply.Instances), r.reply.Index, cur.Index)
		}
	case <-time.After(within):
		t.Fatal("blocking query did not return after the write")
	}

	catalogCall(t, p, f[1], rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{
		Deregistration: catalog.DeregisterRequest{Node: "client1"},
	}, nil)
	var nodesReply rpc.NodesResponse
	catalogCall(t, p, f[0], rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &nodesReply)
	if len(nodesReply.Nodes) != 1 || nodesReply.Nodes[0].Node != "client2" {
		t.Errorf("Nodes after Deregister via %s: got %d nodes, want client2 alone", f[1].ID, len(nodesReply.Nodes))
	}
}

// callErr calls method on n and returns the error.
func callErr(p *rpc.Pool, n *consensustest.Node, method string, args, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return p.Call(ctx, n.Addr, method, args, reply)
}

// TestCatalogEndpointErrorsOnFollower: what a client sends to a follower is
// refused with a FieldError naming the field, whether the follower refuses
// it or the leader it forwarded it to does; a node the leader does not
// have comes back as catalog.ErrNotFound. A reverse lookup on a follower
// is answered like the other reads.
func TestCatalogEndpointErrorsOnFollower(t *testing.T) {
	nodes, p := startCatalogCluster(t)
	consensustest.WaitForLeader(t, nodes, within)
	f := catalogFollowers(nodes)[0]

	err := callErr(p, f, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Port: 70000},
	}}, nil)
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Service.Port" {
		t.Errorf("bad port on %s: got %v, want a FieldError for Service.Port", f.ID, err)
	}

	// Validation passes on the follower; the leader's store has no such
	// node, and creates it, as Consul does: two hops.
	err = callErr(p, f, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "ghost", SkipNodeUpdate: true, Service: &catalog.Service{Service: "web"},
	}}, nil)
	if err != nil {
		t.Errorf("service on an unknown node via %s: got %v, want the node created", f.ID, err)
	}

	catalogCall(t, p, f, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Address: "10.0.0.8"},
	}}, nil)
	for _, opts := range []rpc.QueryOptions{{}, {RequireConsistent: true}} {
		var got rpc.ReverseResponse
		catalogCall(t, p, f, rpc.MethodCatalogReverse, &rpc.ReverseRequest{QueryOptions: opts, Addr: "10.0.0.8"}, &got)
		if !slices.Equal(got.Services, []string{"web"}) || len(got.Nodes) != 0 || got.LastContact != 0 {
			t.Errorf("Reverse %+v on %s: got nodes %v services %v meta %+v, want web from the leader", opts, f.ID, got.Nodes, got.Services, got.QueryMeta)
		}
	}
	consensustest.WaitFor(t, within, func() error {
		var got rpc.ReverseResponse
		if err := callErr(p, f, rpc.MethodCatalogReverse, &rpc.ReverseRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}, Addr: "10.0.0.1"}, &got); err != nil {
			return err
		}
		if !slices.Equal(got.Nodes, []string{"client1"}) || !got.KnownLeader {
			return fmt.Errorf("stale Reverse on %s: got nodes %v meta %+v", f.ID, got.Nodes, got.QueryMeta)
		}
		return nil
	})
}

// refusingLeader stands in for the leader's Catalog endpoint, refusing
// everything as only a leader could, so that the test sees what a
// follower makes of the leader's errors.
type refusingLeader struct{}

func (refusingLeader) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Register": rpc.NeedToken("service,node", "write"), "Deregister": rpc.NeedToken("service,node", "write")}
}

func (refusingLeader) Register(_ context.Context, args *rpc.RegisterRequest, _ *struct{}) error {
	if !args.Forwarded {
		return errors.New("want a forwarded request")
	}
	return fmt.Errorf("register node %q: %w", args.Registration.Node,
		&catalog.FieldError{Field: `Service.Meta["only the leader"]`, Reason: "is refused: by the leader"})
}

func (refusingLeader) Deregister(_ context.Context, args *rpc.DeregisterRequest, _ *struct{}) error {
	return fmt.Errorf("deregister on node %q: %w", args.Deregistration.Node, catalog.ErrNotFound)
}

// TestCatalogEndpointLeaderErrorsSurviveForward: a field error or a
// sentinel the leader returns reaches the client of the follower that
// forwarded the request intact, with the leader's words.
func TestCatalogEndpointLeaderErrorsSurviveForward(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	leader := consensustest.WaitForLeader(t, nodes, within)
	for _, n := range nodes {
		var ep any = refusingLeader{}
		if n != leader {
			cfg := consensus.DefaultCatalogConfig()
			cfg.Datacenter = "dc1"
			cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cat.Close)
			ep = cat
		}
		if err := n.RPC.Register(rpc.CatalogEndpoint, ep); err != nil {
			t.Fatal(err)
		}
	}
	p := rpctest.NewPool(t)
	f := catalogFollowers(nodes)[0]

	err := callErr(p, f, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web"},
	}}, nil)
	want := &catalog.FieldError{Field: `Service.Meta["only the leader"]`, Reason: "is refused: by the leader"}
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || *fe != *want {
		t.Errorf("Register via %s: got %v, want FieldError %+v", f.ID, err, want)
	}
	remote, ok := errors.AsType[*rpc.RemoteError](err)
	if wantMsg := `register node "client1": ` + want.Error(); !ok || remote.Message != wantMsg {
		t.Errorf("Register via %s: got %v, want a RemoteError saying %q", f.ID, err, wantMsg)
	}

	err = callErr(p, f, rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{Deregistration: catalog.DeregisterRequest{Node: "client1"}}, nil)
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Deregister via %s: got %v, want catalog.ErrNotFound", f.ID, err)
	}
}
