package consensus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// endpointHarness is one server with its Catalog and Status endpoints on a
// real loopback RPC server, and a client pool to call it with.
type endpointHarness struct {
	srv    *Server
	cat    *Catalog
	rpc    *rpc.Server
	addr   string
	client *rpc.Pool
}

// startEndpoint starts a server (a bootstrapped cluster of one when
// bootstrap is set, else a server that never learns of a leader), its
// Catalog and Status endpoints and an RPC server for them. Everything is
// stopped in order when the test ends: the endpoint, then RPC, then Raft.
func startEndpoint(t *testing.T, bootstrap bool, tune func(*CatalogConfig)) *endpointHarness {
	t.Helper()
	return startEndpointWith(t, bootstrap, nil, tune)
}

// startEndpointWith is startEndpoint with tuneServer applied to the
// server's configuration.
func startEndpointWith(t *testing.T, bootstrap bool, tuneServer func(*Config), tune func(*CatalogConfig)) *endpointHarness {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rcfg := rpc.DefaultServerConfig()
	rcfg.Addr = "127.0.0.1:0"
	rsrv, err := rpc.NewServer(rcfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := rsrv.Start(); err != nil {
		t.Fatal(err)
	}
	addr := rsrv.Addr().String()

	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Address, cfg.Bootstrap = "s1", addr, bootstrap
	cfg.SingleServerTiming()
	if tuneServer != nil {
		tuneServer(&cfg)
	}
	srv, err := New(cfg, store, logger)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ccfg := DefaultCatalogConfig()
	ccfg.Datacenter = "dc1"
	if tune != nil {
		tune(&ccfg)
	}
	cat, err := NewCatalog(srv, rpctest.NewPool(t), ccfg)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(func() {
		cat.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rsrv.Shutdown(ctx); err != nil {
			t.Errorf("rpc Shutdown: %v", err)
		}
		if err := srv.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if err := cat.Publish(rsrv); err != nil {
		t.Fatal(err)
	}
	st, err := NewStatus(srv, ccfg.Datacenter, cat)
	if err != nil {
		t.Fatalf("NewStatus: %v", err)
	}
	if err := rsrv.Register(rpc.StatusEndpoint, st); err != nil {
		t.Fatal(err)
	}
	if bootstrap {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.WaitForLeader(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return &endpointHarness{srv: srv, cat: cat, rpc: rsrv, addr: addr, client: rpctest.NewPool(t)}
}

func (h *endpointHarness) call(method string, args, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.client.Call(ctx, h.addr, method, args, reply)
}

func (h *endpointHarness) mustCall(t *testing.T, method string, args, reply any) {
	t.Helper()
	if err := h.call(method, args, reply); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// aclTokens bootstraps ACLs on h's server and makes a policy of rules and
// a token with it; it returns the management secret and the token's.
func (h *endpointHarness) aclTokens(t *testing.T, name, rules string) (mgmt, token string) {
	t.Helper()
	var boot rpc.ACLTokenResponse
	h.mustCall(t, rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{}, &boot)
	mgmt = boot.Token.SecretID
	var pol rpc.ACLPolicyResponse
	h.mustCall(t, rpc.MethodACLPolicySet, &rpc.ACLPolicySetRequest{
		WriteRequest: rpc.WriteRequest{Token: mgmt},
		Policy:       catalog.ACLPolicy{Name: name, Rules: rules},
	}, &pol)
	var tok rpc.ACLTokenResponse
	h.mustCall(t, rpc.MethodACLTokenSet, &rpc.ACLTokenSetRequest{
		WriteRequest: rpc.WriteRequest{Token: mgmt},
		Spec:         rpc.ACLTokenSpec{Policies: []catalog.ACLPolicyLink{{ID: pol.Policy.ID}}},
	}, &tok)
	return mgmt, tok.Token.SecretID
}

func (h *endpointHarness) register(t *testing.T, node, addr string, svc *catalog.Service, checks ...*catalog.Check) {
	t.Helper()
	h.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: node, Address: addr, Service: svc, Checks: checks,
	}}, nil)
}

func (h *endpointHarness) instances(t *testing.T, args *rpc.ServiceInstancesRequest) *rpc.ServiceInstancesResponse {
	t.Helper()
	var reply rpc.ServiceInstancesResponse
	h.mustCall(t, rpc.MethodCatalogServiceInstances, args, &reply)
	return &reply
}

func TestCatalogEndpointRegisterAndRead(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "n1", Address: "10.0.0.1", NodeMeta: map[string]string{"rack": "a"},
		Service: &catalog.Service{Service: "web", Port: 80, Tags: []string{"v1", "primary"}, Meta: map[string]string{"ver": "1"}},
		Checks:  []*catalog.Check{{CheckID: "web-alive", Name: "alive", Status: catalog.HealthPassing, ServiceID: "web"}},
	}}, nil)

	got := h.instances(t, &rpc.ServiceInstancesRequest{Service: "WEB"})
	idx, want, err := h.srv.Store().ServiceInstances(nil, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	// Everything, Raft indexes included, survives the trip through the
	// RPC codec.
	if !reflect.DeepEqual(got.Instances, want) {
		t.Fatalf("got instances %s, want %s", dump(got.Instances), dump(want))
	}
	inst := got.Instances[0]
	if inst.Node.Datacenter != "dc1" || inst.Service.ModifyIndex == 0 || inst.Checks[0].CreateIndex == 0 {
		t.Errorf("got node %+v, service %+v, check %+v; want dc1 filled in and Raft indexes set", inst.Node, inst.Service, inst.Checks[0])
	}
	if got.Index != idx || !got.KnownLeader || got.LastContact != 0 {
		t.Errorf("got meta %+v, want index %d, a known leader, no contact delay", got.QueryMeta, idx)
	}

	for tag, n := range map[string]int{"v1": 1, "PRIMARY": 1, "v2": 0} {
		if got := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web", Tag: tag}); len(got.Instances) != n {
			t.Errorf("tag %q: got %d instances, want %d", tag, len(got.Instances), n)
		}
	}

	var nodes rpc.NodesResponse
	h.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &nodes)
	if len(nodes.Nodes) != 1 || nodes.Nodes[0].Node != "n1" || nodes.Nodes[0].Meta["rack"] != "a" || nodes.Index == 0 {
		t.Errorf("Nodes: got %s (index %d), want n1 with rack=a", dump(nodes.Nodes), nodes.Index)
	}

	var services rpc.ServicesResponse
	h.mustCall(t, rpc.MethodCatalogServices, &rpc.ServicesRequest{}, &services)
	if want := map[string][]string{"web": {"primary", "v1"}}; !reflect.DeepEqual(services.Services, want) {
		t.Errorf("Services: got %v, want %v", services.Services, want)
	}
	var withInstances rpc.ServicesResponse
	h.mustCall(t, rpc.MethodCatalogServices, &rpc.ServicesRequest{Instances: true}, &withInstances)
	if is := withInstances.Instances; len(is) != 1 || is[0].Node.Node != "n1" || is[0].Service.ID != "web" ||
		is[0].Checks != nil || withInstances.Services != nil || withInstances.Index == 0 {
		t.Errorf("Services with Instances: got %s, services %v (index %d); want web on n1 without checks, no services map",
			dump(is), withInstances.Services, withInstances.Index)
	}

	var ns rpc.NodeServicesResponse
	h.mustCall(t, rpc.MethodCatalogNodeServices, &rpc.NodeServicesRequest{Node: "n1"}, &ns)
	if ns.Node == nil || ns.Node.Address != "10.0.0.1" || len(ns.Services) != 1 || ns.Services[0].ID != "web" || ns.Services[0].Port != 80 {
		t.Errorf("NodeServices(n1): got node %s, services %s; want n1 with web:80", dump(ns.Node), dump(ns.Services))
	}
	var none rpc.NodeServicesResponse
	h.mustCall(t, rpc.MethodCatalogNodeServices, &rpc.NodeServicesRequest{Node: "ghost"}, &none)
	if none.Node != nil || len(none.Services) != 0 || none.Index == 0 {
		t.Errorf("NodeServices(ghost): got node %s, services %s, index %d; want nothing at a non-zero index", dump(none.Node), dump(none.Services), none.Index)
	}

	h.mustCall(t, rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{Deregistration: catalog.DeregisterRequest{Node: "n1", ServiceID: "web"}}, nil)
	after := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web"})
	if len(after.Instances) != 0 || after.Index <= got.Index {
		t.Errorf("after Deregister: got %d instances at index %d, want none at an index past %d", len(after.Instances), after.Index, got.Index)
	}
	// A fresh reply: msgpack decodes a map into an existing one by merging.
	var servicesAfter rpc.ServicesResponse
	h.mustCall(t, rpc.MethodCatalogServices, &rpc.ServicesRequest{}, &servicesAfter)
	if len(servicesAfter.Services) != 0 {
		t.Errorf("Services after Deregister: got %v, want none", servicesAfter.Services)
	}
}

func TestCatalogEndpointConsistencyModes(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"})
	for _, opts := range []rpc.QueryOptions{{}, {AllowStale: true}, {RequireConsistent: true}, {Datacenter: "DC1"}} {
		got := h.instances(t, &rpc.ServiceInstancesRequest{QueryOptions: opts, Service: "web"})
		if len(got.Instances) != 1 || !got.KnownLeader {
			t.Errorf("%+v: got %d instances, known leader %v; want 1 from the leader", opts, len(got.Instances), got.KnownLeader)
		}
	}
}

func TestCatalogEndpointHealthFilter(t *testing.T) {
	h := startEndpoint(t, true, nil)
	for _, n := range []struct {
		node, addr string
		status     catalog.HealthStatus
	}{
		{"n1", "10.0.0.1", catalog.HealthPassing},
		{"n2", "10.0.0.2", catalog.HealthWarning},
		{"n3", "10.0.0.3", catalog.HealthCritical},
	} {
		h.register(t, n.node, n.addr, &catalog.Service{Service: "web"},
			&catalog.Check{CheckID: "web-check", Status: n.status, ServiceID: "web"})
	}
	for _, tc := range []struct {
		healthy, passing bool
		want             []string
	}{
		{false, false, []string{"n1", "n2", "n3"}},
		{true, false, []string{"n1", "n2"}},
		{true, true, []string{"n1"}},
		{false, true, []string{"n1"}},
	} {
		got := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web", OnlyHealthy: tc.healthy, OnlyPassing: tc.passing})
		var nodes []string
		for _, inst := range got.Instances {
			nodes = append(nodes, inst.Node.Node)
		}
		if !reflect.DeepEqual(nodes, tc.want) {
			t.Errorf("OnlyHealthy=%v OnlyPassing=%v: got %v, want %v", tc.healthy, tc.passing, nodes, tc.want)
		}
	}
}

type instancesResult struct {
	reply rpc.ServiceInstancesResponse
	err   error
}

// startInstancesCall runs a ServiceInstances call on its own goroutine; the
// caller must receive from the channel before the test ends.
func (h *endpointHarness) startInstancesCall(args *rpc.ServiceInstancesRequest) <-chan instancesResult {
	out := make(chan instancesResult, 1)
	go func() {
		var r instancesResult
		r.err = h.call(rpc.MethodCatalogServiceInstances, args, &r.reply)
		out <- r
	}()
	return out
}

func awaitResult(t *testing.T, ch <-chan instancesResult, within time.Duration) instancesResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("blocking ServiceInstances: %v", r.err)
		}
		return r
	case <-time.After(within):
		t.Fatalf("blocking ServiceInstances did not return within %s", within)
	}
	panic("unreachable")
}

func TestCatalogEndpointBlockingQuery(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"})
	first := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web"})

	t.Run("returns on change", func(t *testing.T) {
		ch := h.startInstancesCall(&rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: time.Minute},
			Service:      "web",
		})
		h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "web"})
		r := awaitResult(t, ch, 10*time.Second)
		if r.reply.Index <= first.Index || len(r.reply.Instances) != 2 {
			t.Errorf("got %d instances at index %d, want 2 at an index past %d", len(r.reply.Instances), r.reply.Index, first.Index)
		}
	})

	t.Run("returns unchanged when the wait ends", func(t *testing.T) {
		cur := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web"})
		got := h.instances(t, &rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: 100 * time.Millisecond},
			Service:      "web",
		})
		if got.Index != cur.Index || len(got.Instances) != len(cur.Instances) {
			t.Errorf("got %d instances at index %d, want the unchanged %d at %d", len(got.Instances), got.Index, len(cur.Instances), cur.Index)
		}
	})

	t.Run("past index answers at once", func(t *testing.T) {
		// MaxQueryTime of an hour: the test would time out if it waited.
		got := h.instances(t, &rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: first.Index - 1, MaxQueryTime: time.Hour},
			Service:      "web",
		})
		if got.Index < first.Index {
			t.Errorf("got index %d, want at least %d", got.Index, first.Index)
		}
	})

	t.Run("Close ends the wait", func(t *testing.T) {
		// Without an answer: the server is stopping, and what it read
		// before the wait is no answer to a caller waiting for newer
		// data; the caller asks another server.
		cur := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web"})
		ch := h.startInstancesCall(&rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: time.Hour},
			Service:      "web",
		})
		h.cat.Close()
		select {
		case r := <-ch:
			if !errors.Is(r.err, rpc.ErrServerStopping) {
				t.Errorf("got %v, want ErrServerStopping", r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("blocking ServiceInstances did not return within 10s of Close")
		}
	})
}

func TestCatalogEndpointOtherDatacenter(t *testing.T) {
	h := startEndpoint(t, true, nil)
	q := rpc.QueryOptions{Datacenter: "dc2"}
	for _, tc := range []struct {
		method     string
		args       any
		wantSubstr string
	}{
		{rpc.MethodCatalogRegister, &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: "dc2"},
			Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1"}}, ErrNoPathToDatacenter.Error()},
		{rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: "dc2"},
			Deregistration: catalog.DeregisterRequest{Node: "n1"}}, ErrNoPathToDatacenter.Error()},
		{rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{QueryOptions: q, Service: "web"}, ErrNoPathToDatacenter.Error()},
		{rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: q}, ErrNoPathToDatacenter.Error()},
		{rpc.MethodCatalogServices, &rpc.ServicesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2", AllowStale: true}}, ErrNoPathToDatacenter.Error()},
		{rpc.MethodCatalogNodeServices, &rpc.NodeServicesRequest{QueryOptions: q, Node: "n1"}, ErrNoPathToDatacenter.Error()},
		// A node of another datacenter registered in this one.
		{rpc.MethodCatalogRegister, &rpc.RegisterRequest{
			Registration: catalog.RegisterRequest{Datacenter: "dc2", Node: "n1", Address: "10.0.0.1"}}, "Datacenter:"},
	} {
		expectRemoteError(t, h.call(tc.method, tc.args, nil), tc.method, tc.wantSubstr)
	}
	var nodes rpc.NodesResponse
	h.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &nodes)
	if len(nodes.Nodes) != 0 {
		t.Errorf("got nodes %s after refused writes, want none", dump(nodes.Nodes))
	}
}

func expectRemoteError(t *testing.T, err error, what, wantSubstr string) {
	t.Helper()
	remote, ok := errors.AsType[*rpc.RemoteError](err)
	if !ok {
		t.Errorf("%s: got %v, want a RemoteError mentioning %q", what, err, wantSubstr)
		return
	}
	if !strings.Contains(remote.Message, wantSubstr) {
		t.Errorf("%s: got %q, want it to mention %q", what, remote.Message, wantSubstr)
	}
}

// TestCatalogEndpointValidation checks that every method refuses what it
// must, and that the refusal reaches the caller as a *catalog.FieldError
// naming the field (or as the sentinel), for the HTTP API to answer 400.
func TestCatalogEndpointValidation(t *testing.T) {
	h := startEndpoint(t, true, nil)
	reg := func(r catalog.RegisterRequest) *rpc.RegisterRequest { return &rpc.RegisterRequest{Registration: r} }
	for _, tc := range []struct {
		name, method string
		args         any
		wantField    string // the FieldError's Field; "" when wantErr is set
		wantErr      error  // the sentinel, when not a field error
	}{
		{"bad service name", rpc.MethodCatalogRegister,
			reg(catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: "bad_name"}}), "Service.Name", nil},
		{"bad port", rpc.MethodCatalogRegister,
			reg(catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Port: 70000}}), "Service.Port", nil},
		{"no address", rpc.MethodCatalogRegister, reg(catalog.RegisterRequest{Node: "n1"}), "Address", nil},
		{"bad node", rpc.MethodCatalogRegister, reg(catalog.RegisterRequest{Node: "n 1", Address: "10.0.0.1"}), "Node", nil},
		{"bad meta key", rpc.MethodCatalogRegister,
			reg(catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1", NodeMeta: map[string]string{`a "b": c`: "x"}}), `NodeMeta[a "b": c]`, nil},
		{"bad check status", rpc.MethodCatalogRegister, reg(catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1",
			Checks: []*catalog.Check{{CheckID: "c", Status: "sleepy"}}}), "Checks[0].Status", nil},
		{"node of another datacenter", rpc.MethodCatalogRegister,
			reg(catalog.RegisterRequest{Datacenter: "dc2", Node: "n1", Address: "10.0.0.1"}), "Datacenter", nil},
		{"deregister without node", rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{}, "Node", nil},
		{"deregister bad service ID", rpc.MethodCatalogDeregister,
			&rpc.DeregisterRequest{Deregistration: catalog.DeregisterRequest{Node: "n1", ServiceID: "a/b"}}, "ServiceID", nil},
		{"no service", rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{}, "Service", nil},
		{"bad tag", rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{Service: "web", Tag: "a.b"}, "Tag", nil},
		{"no node", rpc.MethodCatalogNodeServices, &rpc.NodeServicesRequest{}, "Node", nil},
		{"no address to reverse", rpc.MethodCatalogReverse, &rpc.ReverseRequest{}, "Addr", nil},
		{"bad address to reverse", rpc.MethodCatalogReverse, &rpc.ReverseRequest{Addr: "10.0.0"}, "Addr", nil},
		{"address with a zone", rpc.MethodCatalogReverse, &rpc.ReverseRequest{Addr: "fe80::1%eth0"}, "Addr", nil},
		{"stale and consistent", rpc.MethodCatalogNodes,
			&rpc.NodesRequest{QueryOptions: rpc.QueryOptions{AllowStale: true, RequireConsistent: true}}, "", rpc.ErrConflictingConsistency},
		{"negative wait", rpc.MethodCatalogServices,
			&rpc.ServicesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: 1, MaxQueryTime: -time.Second}}, "MaxQueryTime", nil},
	} {
		expectWireError(t, h.call(tc.method, tc.args, nil), tc.name, tc.wantField, tc.wantErr)
	}
	if idx := h.srv.Store().Index(); idx != 0 {
		t.Errorf("store index %d after rejected writes, want 0", idx)
	}
}

// expectWireError checks that err is a RemoteError that errors.As finds a
// FieldError for field in or, when field is "", that errors.Is finds
// sentinel in; and that its text, for people, does not show the encoding.
func expectWireError(t *testing.T, err error, what, field string, sentinel error) {
	t.Helper()
	remote, ok := errors.AsType[*rpc.RemoteError](err)
	if !ok {
		t.Errorf("%s: got %v, want a RemoteError", what, err)
		return
	}
	if strings.Contains(remote.Message, "cairn-error/") {
		t.Errorf("%s: message %q shows the wire encoding", what, remote.Message)
	}
	if field == "" {
		if !errors.Is(err, sentinel) {
			t.Errorf("%s: got %v, want it to wrap %v", what, err, sentinel)
		}
		return
	}
	fe, ok := errors.AsType[*catalog.FieldError](err)
	if !ok || fe.Field != field || fe.Reason == "" {
		t.Errorf("%s: got %v (field error %+v), want a FieldError for %q", what, err, fe, field)
	} else if !strings.Contains(remote.Message, fe.Error()) {
		t.Errorf("%s: message %q, want it to say %q", what, remote.Message, fe.Error())
	}
}

// TestCatalogEndpointWithoutLeader uses a server that never learns of a
// leader: what needs the leader fails with ErrNoLeader after LeaderWait,
// and a stale read is answered from the local store, saying so.
func TestCatalogEndpointWithoutLeader(t *testing.T) {
	h := startEndpoint(t, false, func(c *CatalogConfig) { c.LeaderWait = 50 * time.Millisecond })
	for _, tc := range []struct {
		method string
		args   any
	}{
		{rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1"}}},
		{rpc.MethodCatalogNodes, &rpc.NodesRequest{}},
		{rpc.MethodCatalogServices, &rpc.ServicesRequest{QueryOptions: rpc.QueryOptions{RequireConsistent: true}}},
	} {
		expectRemoteError(t, h.call(tc.method, tc.args, nil), tc.method, ErrNoLeader.Error())
	}
	var nodes rpc.NodesResponse
	h.mustCall(t, rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}}, &nodes)
	if nodes.KnownLeader || nodes.LastContact <= 0 || nodes.Index != 1 || len(nodes.Nodes) != 0 {
		t.Errorf("stale Nodes: got %+v with %d nodes, want no leader, a contact delay, index 1, no nodes", nodes.QueryMeta, len(nodes.Nodes))
	}
}

// TestCatalogEndpointForwardedTwice: a server that is not the leader
// refuses a request another server already forwarded, rather than send it
// on a second hop.
func TestCatalogEndpointForwardedTwice(t *testing.T) {
	h := startEndpoint(t, false, nil)
	err := h.call(rpc.MethodCatalogRegister, &rpc.RegisterRequest{
		Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1"},
		Forwarded:    true,
	}, nil)
	expectRemoteError(t, err, "forwarded Register", ErrNotLeader.Error())
}

func TestCatalogConfigValidate(t *testing.T) {
	cfg := DefaultCatalogConfig()
	cfg.Datacenter = "dc1"
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults with a datacenter: %v", err)
	}
	err := CatalogConfig{LeaderWait: -1}.Validate()
	for _, field := range []string{"Datacenter:", "Blocking:", "LeaderWait:", "ForwardTimeout:"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("got %v, want it to name %s", err, field)
		}
	}
}

func TestMaxBlockingWait(t *testing.T) {
	l := rpc.BlockingLimits{Default: 160 * time.Millisecond, Max: 320 * time.Millisecond, JitterFraction: 16}
	for _, tc := range []struct {
		maxQueryTime, want time.Duration
	}{
		{0, 170 * time.Millisecond},
		{16 * time.Millisecond, 17 * time.Millisecond},
		{time.Hour, 340 * time.Millisecond},
	} {
		opts := rpc.QueryOptions{MinQueryIndex: 1, MaxQueryTime: tc.maxQueryTime}
		if got := maxBlockingWait(opts, l); got != tc.want {
			t.Errorf("MaxQueryTime %s: got %s, want %s", tc.maxQueryTime, got, tc.want)
		}
		for range 20 {
			if w := opts.BlockingTimeout(l); w > tc.want {
				t.Errorf("MaxQueryTime %s: BlockingTimeout %s exceeds the maximum %s", tc.maxQueryTime, w, tc.want)
			}
		}
	}
}

// dump renders v, following pointers, for failure messages.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
