package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// startCatalogServer starts a bootstrapped single-server cluster with its
// Catalog endpoint on an RPC server on 127.0.0.1:0, waits for it to lead
// and returns its RPC address. Everything stops when the test ends: the
// endpoint, its forwarding pool, Raft, then RPC.
func startCatalogServer(t *testing.T) string {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	rcfg := rpc.DefaultServerConfig()
	rcfg.Addr = "127.0.0.1:0"
	rs, err := rpc.NewServer(rcfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rs.Shutdown(ctx); err != nil {
			t.Errorf("rpc Shutdown: %v", err)
		}
	})
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	cfg := consensus.DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.Layer, cfg.Bootstrap = "s1", t.TempDir(), rs.RaftLayer(), true
	cfg.SingleServerTiming()
	srv, err := consensus.New(cfg, store, logger)
	if err != nil {
		t.Fatalf("consensus.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("consensus Shutdown: %v", err)
		}
	})
	forward, err := rpc.NewPool(rpc.DefaultPoolConfig(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = forward.Close() })
	ccfg := consensus.DefaultCatalogConfig()
	ccfg.Datacenter = "dc1"
	cat, err := consensus.NewCatalog(srv, forward, ccfg)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(cat.Close)
	if err := rs.Register(rpc.CatalogEndpoint, cat); err != nil {
		t.Fatal(err)
	}
	status, err := consensus.NewStatus(srv, "dc1")
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register(rpc.StatusEndpoint, status); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return rs.Addr().String()
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// dialLog records the addresses a pool dials, in order.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

func (d *dialLog) get() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

// newTestRPCBackend returns a backend for dc1 calling servers in their
// order (the first, then the second), through a pool that logs its dials
// and is closed when the test ends.
func newTestRPCBackend(t *testing.T, servers ...string) (*rpcBackend, *dialLog) {
	t.Helper()
	log := &dialLog{}
	pcfg := rpc.DefaultPoolConfig()
	pcfg.DialTimeout = 2 * time.Second
	pcfg.Dial = log.dial
	pool, err := rpc.NewPool(pcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	b := newRPCBackend(pool, func() []string { return servers }, "dc1", false, nil)
	b.randN = func(int) int { return 0 }
	return b, log
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRPCBackendRoundTrip(t *testing.T) {
	b, _ := newTestRPCBackend(t, startCatalogServer(t))
	ctx := testContext(t)

	reg := &catalog.RegisterRequest{
		Node:    "client1",
		Address: "10.0.0.5",
		Service: &catalog.Service{ID: "web-1", Service: "web", Tags: []string{"v1"}, Port: 8080},
		Checks:  []*catalog.Check{{CheckID: "web-alive", Name: "web alive", Status: catalog.HealthPassing, ServiceID: "web-1"}},
	}
	if err := b.Register(ctx, reg); err != nil {
		t.Fatalf("Register: %v", err)
	}

	set, err := b.Instances(ctx, "dc1", "web", "v1")
	healthy, unhealthy := setHalves(set)
	if err != nil {
		t.Fatalf("Instances: %v", err)
	}
	if len(healthy) != 1 || len(unhealthy) != 0 || healthy[0].Service.ID != "web-1" || healthy[0].Node.Node != "client1" {
		t.Fatalf("Instances: got %d healthy %v, %d unhealthy, want web-1 on client1 healthy", len(healthy), healthy, len(unhealthy))
	}
	if set, err := b.Instances(ctx, "dc1", "web", "v2"); err != nil || setSize(set) != 0 {
		t.Errorf("Instances with tag v2: got %d instances, err %v, want none", setSize(set), err)
	}

	idx, insts, err := b.ServiceInstances(ctx, "web", "")
	if err != nil || idx == 0 || len(insts) != 1 || insts[0].Service.ID != "web-1" {
		t.Errorf("ServiceInstances: got index %d, %v, err %v, want web-1 at a nonzero index", idx, insts, err)
	}
	idx, nodes, err := b.Nodes(ctx)
	if err != nil || idx == 0 || len(nodes) != 1 || nodes[0].Node != "client1" || nodes[0].Address != "10.0.0.5" || nodes[0].Datacenter != "dc1" {
		t.Errorf("Nodes: got index %d, %+v, err %v, want client1 10.0.0.5 in dc1", idx, nodes, err)
	}
	idx, services, err := b.Services(ctx)
	if want := map[string][]string{"web": {"v1"}}; err != nil || idx == 0 || !reflect.DeepEqual(services, want) {
		t.Errorf("Services: got index %d, %v, err %v, want %v", idx, services, err, want)
	}
	node, svcs, err := b.NodeServices(ctx, "client1")
	if err != nil || node == nil || node.Node != "client1" || len(svcs) != 1 || svcs[0].ID != "web-1" {
		t.Errorf("NodeServices(client1): got %+v, %v, err %v, want client1 with web-1", node, svcs, err)
	}
	if node, svcs, err := b.NodeServices(ctx, "nosuch"); err != nil || node != nil || len(svcs) != 0 {
		t.Errorf("NodeServices(nosuch): got %+v, %v, err %v, want nothing", node, svcs, err)
	}
	if n, err := b.Node(ctx, "dc1", "client1"); err != nil || n == nil || n.Address != "10.0.0.5" {
		t.Errorf("Node(client1): got %+v, err %v, want client1 at 10.0.0.5", n, err)
	}
	if n, err := b.Node(ctx, "dc1", "nosuch"); err != nil || n != nil {
		t.Errorf("Node(nosuch): got %+v, err %v, want nil, nil", n, err)
	}
	if nodes, svcs, err := b.Reverse(ctx, netip.MustParseAddr("10.0.0.5")); err != nil || !slices.Equal(nodes, []string{"client1"}) || len(svcs) != 0 {
		t.Errorf("Reverse(10.0.0.5): got nodes %v, services %v, err %v, want client1 only", nodes, svcs, err)
	}
	if nodes, svcs, err := b.Reverse(ctx, netip.MustParseAddr("10.9.9.9")); err != nil || len(nodes)+len(svcs) != 0 {
		t.Errorf("Reverse(10.9.9.9): got nodes %v, services %v, err %v, want none", nodes, svcs, err)
	}

	// The status calls: the one server leads and is the one peer.
	server := b.servers()[0]
	if got := b.Leader(); got != server {
		t.Errorf("Leader: got %q, want %q", got, server)
	}
	if peers, err := b.Peers(); err != nil || !slices.Equal(peers, []string{server}) {
		t.Errorf("Peers: got %v, err %v, want [%s]", peers, err, server)
	}

	// A critical check moves the instance to the unhealthy side.
	reg.Checks[0].Status = catalog.HealthCritical
	if err := b.Register(ctx, reg); err != nil {
		t.Fatalf("Register critical: %v", err)
	}
	set, err = b.Instances(ctx, "dc1", "web", "")
	healthy, unhealthy = setHalves(set)
	if err != nil || len(healthy) != 0 || len(unhealthy) != 1 || unhealthy[0].Service.ID != "web-1" {
		t.Fatalf("Instances after critical check: got %d healthy, %d unhealthy, err %v, want web-1 unhealthy", len(healthy), len(unhealthy), err)
	}

	if err := b.Deregister(ctx, &catalog.DeregisterRequest{Node: "client1", ServiceID: "web-1"}); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	if _, svcs, err := b.NodeServices(ctx, "client1"); err != nil || len(svcs) != 0 {
		t.Errorf("NodeServices after Deregister: got %v, err %v, want no services", svcs, err)
	}
	if set, err := b.Instances(ctx, "dc1", "web", ""); err != nil || setSize(set) != 0 {
		t.Errorf("Instances after Deregister: got %d, err %v, want none", setSize(set), err)
	}
}

func TestRPCBackendResolverWithoutCall(t *testing.T) {
	calls := 0
	b := newRPCBackend(nil, func() []string { calls++; return nil }, "dc1", false, nil)
	ctx := testContext(t)

	if _, err := b.Instances(ctx, "dc2", "web", ""); !errors.Is(err, resolver.ErrUnknownDatacenter) {
		t.Errorf("Instances in dc2: got err %v, want ErrUnknownDatacenter", err)
	}
	if _, err := b.Node(ctx, "dc2", "client1"); !errors.Is(err, resolver.ErrUnknownDatacenter) {
		t.Errorf("Node in dc2: got err %v, want ErrUnknownDatacenter", err)
	}
	if set, err := b.Instances(ctx, "dc1", "bad_name", ""); err != nil || setSize(set) != 0 {
		t.Errorf("Instances(bad_name): got %v, %v, want no such service", set, err)
	}
	if n, err := b.Node(ctx, "dc1", "bad_name"); err != nil || n != nil {
		t.Errorf("Node(bad_name): got %v, %v, want no such node", n, err)
	}
	if calls != 0 {
		t.Errorf("servers() called %d times, want 0", calls)
	}
}

func TestRPCBackendNoServers(t *testing.T) {
	b := newRPCBackend(nil, func() []string { return nil }, "dc1", false, nil)
	ctx := testContext(t)
	for name, call := range map[string]func() error{
		"Register": func() error { return b.Register(ctx, &catalog.RegisterRequest{Node: "n", Address: "10.0.0.1"}) },
		"Nodes":    func() error { _, _, err := b.Nodes(ctx); return err },
		"Instances": func() error {
			_, err := b.Instances(ctx, "dc1", "web", "")
			return err
		},
	} {
		if err := call(); !errors.Is(err, errNoServers) {
			t.Errorf("%s: got err %v, want errNoServers", name, err)
		}
	}
}

func TestRPCBackendRetriesTransportError(t *testing.T) {
	dead, live := deadAddr(t), startCatalogServer(t)
	b, log := newTestRPCBackend(t, dead, live)
	ctx := testContext(t)

	if err := b.Register(ctx, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got, want := log.get(), []string{dead, live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
	if _, nodes, err := b.Nodes(ctx); err != nil || len(nodes) != 1 {
		t.Errorf("Nodes: got %v, err %v, want client1", nodes, err)
	}
}

func TestRPCBackendTransportErrorOnBoth(t *testing.T) {
	dead1, dead2 := deadAddr(t), deadAddr(t)
	b, log := newTestRPCBackend(t, dead1, dead2)
	_, _, err := b.Nodes(testContext(t))
	if !errors.Is(err, rpc.ErrTransport) {
		t.Errorf("Nodes: got err %v, want ErrTransport", err)
	}
	if got, want := log.get(), []string{dead1, dead2}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v (one retry, on the other server)", got, want)
	}
}

func TestRPCBackendDoesNotRetryRemoteError(t *testing.T) {
	live, spare := startCatalogServer(t), deadAddr(t)
	b, log := newTestRPCBackend(t, live, spare)
	ctx := testContext(t)

	err := b.Register(ctx, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5", Service: &catalog.Service{Service: "bad_name"}})
	if _, ok := errors.AsType[*rpc.RemoteError](err); !ok {
		t.Errorf("Register(bad_name): got err %v, want a RemoteError", err)
	}
	// The field the server refused survives the wire, for the HTTP API's 400.
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Service.Name" {
		t.Errorf("Register(bad_name): got err %v, want a FieldError naming Service.Name", err)
	}
	if _, _, err := b.ServiceInstances(ctx, "bad_name", ""); err == nil {
		t.Error("ServiceInstances(bad_name): got no error, want a RemoteError")
	} else if _, ok := errors.AsType[*rpc.RemoteError](err); !ok {
		t.Errorf("ServiceInstances(bad_name): got err %v, want a RemoteError", err)
	}
	if got, want := log.get(), []string{live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v (no retry)", got, want)
	}
}

// dropperAddr returns the address of a server that accepts connections,
// reads what a call sends, and closes the connection without answering:
// a server dying mid-call.
func dropperAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				// The first byte, yamux's stream opening and the request
				// frame: enough that the request was sent.
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 64)
				_, _ = io.ReadAtLeast(conn, buf, 32)
			})
		}
	})
	return ln.Addr().String()
}

// TestRPCBackendServerDiesMidCall: a read whose server dies mid-call is
// retried on another server; a write is not (the server may have applied
// it) and its error says its fate is unknown.
func TestRPCBackendServerDiesMidCall(t *testing.T) {
	dropper, live := dropperAddr(t), startCatalogServer(t)

	b, log := newTestRPCBackend(t, dropper, live)
	if _, _, err := b.Nodes(testContext(t)); err != nil {
		t.Errorf("Nodes: got err %v, want the answer of the other server", err)
	}
	if got, want := log.get(), []string{dropper, live}; !slices.Equal(got, want) {
		t.Errorf("read dialed %v, want %v", got, want)
	}

	b, log = newTestRPCBackend(t, dropper, live)
	err := b.Register(testContext(t), &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"})
	if !errors.Is(err, errFateUnknown) || !errors.Is(err, rpc.ErrTransport) {
		t.Errorf("Register: got err %v, want errFateUnknown wrapping ErrTransport", err)
	}
	if got, want := log.get(), []string{dropper}; !slices.Equal(got, want) {
		t.Errorf("write dialed %v, want %v (no retry)", got, want)
	}
}

// TestRPCBackendSticksToOneServer: calls keep going to the server picked
// first while it answers, so a client's reads come from one state.
func TestRPCBackendSticksToOneServer(t *testing.T) {
	a, b2 := startCatalogServer(t), startCatalogServer(t)
	b, log := newTestRPCBackend(t, a, b2)
	b.randN = func(n int) int { return n - 1 } // the last server first
	ctx := testContext(t)
	for range 5 {
		if _, _, err := b.Nodes(ctx); err != nil {
			t.Fatalf("Nodes: %v", err)
		}
	}
	if got, want := log.get(), []string{b2}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v (one server for every call)", got, want)
	}
}

// setHalves returns the healthy and unhealthy halves of set (nil: none).
func setHalves(set *resolver.Instances) (healthy, unhealthy []catalog.ServiceInstance) {
	if set == nil {
		return nil, nil
	}
	return set.Healthy, set.Unhealthy
}

// setSize counts the instances of set.
func setSize(set *resolver.Instances) int {
	h, u := setHalves(set)
	return len(h) + len(u)
}
