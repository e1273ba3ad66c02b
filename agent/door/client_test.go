package door

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/internal/porttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

func startCatalogServer(t *testing.T) string {
	t.Helper()
	return consensustest.StartCatalogServer(t, nil)
}

// newTestDoor returns a client door calling servers in their order (the
// first, then the second), through a pool that logs its dials and is
// closed when the test ends.
func newTestDoor(t *testing.T, servers ...string) (*Client, *rpctest.DialLog) {
	t.Helper()
	log := &rpctest.DialLog{}
	pcfg := rpc.DefaultPoolConfig()
	pcfg.DialTimeout = 2 * time.Second
	pcfg.Dial = log.Dial
	pool, err := rpc.NewPool(pcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	cfg := DefaultConfig()
	cfg.HoldTimeout = 2 * time.Second
	cfg.ProbeAfter, cfg.ProbeTimeout = 200*time.Millisecond, 300*time.Millisecond
	d := NewClient(cfg, pool, func() []string { return servers }, slog.New(slog.DiscardHandler))
	d.randN = func(int) int { return 0 }
	return d, log
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nodes reads the catalog's nodes through d, as the HTTP API does.
func nodes(ctx context.Context, d Door) ([]*catalog.Node, error) {
	var reply rpc.NodesResponse
	err := d.RPC(ctx, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &reply)
	return reply.Nodes, err
}

func register(ctx context.Context, d Door, req *catalog.RegisterRequest) error {
	args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: "dc1"}, Registration: *req}
	return d.RPC(ctx, rpc.MethodCatalogRegister, args, nil)
}

func TestClientDoorNoServers(t *testing.T) {
	t.Parallel()
	d, _ := newTestDoor(t)
	ctx := testContext(t)
	if err := register(ctx, d, &catalog.RegisterRequest{Node: "n", Address: "10.0.0.1"}); !errors.Is(err, ErrNoServers) {
		t.Errorf("Register: got err %v, want ErrNoServers", err)
	}
	if _, err := nodes(ctx, d); !errors.Is(err, ErrNoServers) {
		t.Errorf("Nodes: got err %v, want ErrNoServers", err)
	}
}

// TestClientDoorWaitsForAServer: a call made before gossip has found any
// server (an agent still joining) waits for one within its hold instead
// of failing at once.
func TestClientDoorWaitsForAServer(t *testing.T) {
	t.Parallel()
	live := startCatalogServer(t)
	d, _ := newTestDoor(t)
	known := time.Now().Add(300 * time.Millisecond)
	d.servers = func() []string {
		if time.Now().Before(known) {
			return nil
		}
		return []string{live}
	}
	if err := register(testContext(t), d, &catalog.RegisterRequest{Node: "n", Address: "10.0.0.1"}); err != nil {
		t.Fatalf("Register while joining: %v", err)
	}
}

func TestClientDoorRetriesTransportError(t *testing.T) {
	t.Parallel()
	dead, live := porttest.Refused(t), startCatalogServer(t)
	b, log := newTestDoor(t, dead, live)
	ctx := testContext(t)

	if err := register(ctx, b, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got, want := log.Addrs(), []string{dead, live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
	if got, err := nodes(ctx, b); err != nil || len(got) != 1 {
		t.Errorf("Nodes: got %v, err %v, want client1", got, err)
	}
}

// TestClientDoorTransportErrorOnBoth: with no server reachable, a call
// tries each in turn, again and again, until its hold runs out.
func TestClientDoorTransportErrorOnBoth(t *testing.T) {
	t.Parallel()
	dead1, dead2 := porttest.Refused(t), porttest.Refused(t)
	b, log := newTestDoor(t, dead1, dead2)
	_, err := nodes(testContext(t), b)
	if !errors.Is(err, rpc.ErrTransport) {
		t.Errorf("Nodes: got err %v, want ErrTransport", err)
	}
	got := log.Addrs()
	if len(got) < 4 || got[0] != dead1 || got[1] != dead2 {
		t.Errorf("dialed %v, want both servers, in turn, more than once", got)
	}
}

func TestClientDoorDoesNotRetryRemoteError(t *testing.T) {
	t.Parallel()
	live, spare := startCatalogServer(t), porttest.Refused(t)
	b, log := newTestDoor(t, live, spare)
	ctx := testContext(t)

	err := register(ctx, b, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5", Service: &catalog.Service{Service: "bad_name"}})
	if _, ok := errors.AsType[*rpc.RemoteError](err); !ok {
		t.Errorf("Register(bad_name): got err %v, want a RemoteError", err)
	}
	// The field the server refused survives the wire, for the HTTP API's 400.
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Service.Name" {
		t.Errorf("Register(bad_name): got err %v, want a FieldError naming Service.Name", err)
	}
	var reply rpc.ServiceInstancesResponse
	if err := b.RPC(ctx, rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{Service: "bad_name"}, &reply); err == nil {
		t.Error("ServiceInstances(bad_name): got no error, want a RemoteError")
	} else if _, ok := errors.AsType[*rpc.RemoteError](err); !ok {
		t.Errorf("ServiceInstances(bad_name): got err %v, want a RemoteError", err)
	}
	if got, want := log.Addrs(), []string{live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v (no retry)", got, want)
	}
}

// TestClientDoorTriesAnotherServerOverBudget: a server that refuses a
// call because this agent's address has too many in flight there ran
// nothing, so the door takes even a write that is not idempotent to
// another server, and its outcome is known.
func TestClientDoorTriesAnotherServerOverBudget(t *testing.T) {
	t.Parallel()
	full := consensustest.StartCatalogServer(t, func(c *rpc.ServerConfig) { c.MaxCallsPerClient = 1 })
	other := startCatalogServer(t)
	ctx := testContext(t)

	// Another pool from this address holds full's one call.
	holder, err := rpc.NewPool(rpc.DefaultPoolConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })
	reg := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n0", Address: "10.0.0.1"}}
	if err := holder.Call(ctx, full, rpc.MethodCatalogRegister, reg, nil); err != nil {
		t.Fatal(err)
	}
	var index rpc.NodesResponse
	// The register's slot is freed a moment after its answer: until then
	// the server refuses the read.
	waittest.For(t, 10*time.Second, "the index read", func() error {
		return holder.Call(ctx, full, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &index)
	})
	held, release := context.WithCancel(ctx)
	var holding sync.WaitGroup
	t.Cleanup(func() { release(); holding.Wait() })
	holding.Go(func() {
		// Again while refused: the server frees a call's slot only a
		// moment after its answer.
		args := &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: index.Index, MaxQueryTime: time.Minute}}
		for errors.Is(holder.Call(held, full, rpc.MethodCatalogNodes, args, &rpc.NodesResponse{}), rpc.ErrTooManyCalls) {
			time.Sleep(10 * time.Millisecond)
		}
	})
	probe, err := rpc.NewPool(rpc.DefaultPoolConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = probe.Close() })
	// One refusal is not proof: the server frees the slot of the probe's
	// own answered read a moment after the answer, and a probe in that
	// moment is refused too. Two refusals 100 ms apart, with no answered
	// probe between them, are the holder's call.
	var refusedSince time.Time
	waittest.For(t, 10*time.Second, "full's budget taken", func() error {
		if err := probe.Call(ctx, full, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &rpc.NodesResponse{}); !errors.Is(err, rpc.ErrTooManyCalls) {
			refusedSince = time.Time{}
			return fmt.Errorf("a read: got %v, want ErrTooManyCalls", err)
		}
		if refusedSince.IsZero() {
			refusedSince = time.Now()
		}
		if held := time.Since(refusedSince); held < 100*time.Millisecond {
			return fmt.Errorf("refused for %v only", held)
		}
		return nil
	})

	b, log := newTestDoor(t, full, other)
	if err := register(ctx, b, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"}); err != nil {
		t.Fatalf("Register: got %v, want it done on the other server", err)
	}
	if got, want := log.Addrs(), []string{full, other}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// dropperAddr returns the address of a server that accepts connections,
// answers the pool's first ping on a session (so that the call is sent),
// reads what the call sends, and closes the connection without answering:
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
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				// The first byte and yamux's ping (a 12-byte header:
				// version, type, flags, stream, ping ID), answered with
				// the same header flagged ACK (2) instead of SYN.
				ping := make([]byte, 13)
				if _, err := io.ReadFull(conn, ping); err != nil {
					return
				}
				ack := ping[1:]
				ack[2], ack[3] = 0, 2
				if _, err := conn.Write(ack); err != nil {
					return
				}
				// yamux's stream opening and the request frame: enough
				// that the request was sent.
				buf := make([]byte, 64)
				_, _ = io.ReadAtLeast(conn, buf, 32)
			})
		}
	})
	return ln.Addr().String()
}

// TestClientDoorServerDiesMidCall: a read, or an idempotent write, whose
// server dies mid-call is retried on another server; a write that is not
// idempotent is not (the server may have applied it) and its error says
// its outcome is unknown.
func TestClientDoorServerDiesMidCall(t *testing.T) {
	t.Parallel()
	dropper, live := dropperAddr(t), startCatalogServer(t)

	b, log := newTestDoor(t, dropper, live)
	if _, err := nodes(testContext(t), b); err != nil {
		t.Errorf("Nodes: got err %v, want the answer of the other server", err)
	}
	if got, want := log.Addrs(), []string{dropper, live}; !slices.Equal(got, want) {
		t.Errorf("read dialed %v, want %v", got, want)
	}

	b, log = newTestDoor(t, dropper, live)
	if err := register(testContext(t), b, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"}); err != nil {
		t.Errorf("Register (idempotent): got err %v, want it applied by the other server", err)
	}
	if got, want := log.Addrs(), []string{dropper, live}; !slices.Equal(got, want) {
		t.Errorf("idempotent write dialed %v, want %v", got, want)
	}

	b, log = newTestDoor(t, dropper, live)
	args := &rpc.PreparedQueryApplyRequest{Op: catalog.QueryCreate, Query: catalog.PreparedQuery{Service: catalog.ServiceQuery{Service: "web"}}}
	err := b.RPC(testContext(t), rpc.MethodPreparedQueryApply, args, &rpc.PreparedQueryApplyResponse{})
	if !errors.Is(err, rpc.ErrUnknownOutcome) || !errors.Is(err, rpc.ErrTransport) {
		t.Errorf("query create: got err %v, want ErrUnknownOutcome wrapping ErrTransport", err)
	}
	if got, want := log.Addrs(), []string{dropper}; !slices.Equal(got, want) {
		t.Errorf("non-idempotent write dialed %v, want %v (no retry)", got, want)
	}
}

// hungAddr returns the address of a server that accepts connections and
// reads them but never answers anything, pings included: a stopped
// (SIGSTOP) or cut-off server, whose TCP connections stay open.
func hungAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				go func() { _, _ = io.Copy(io.Discard, conn) }()
				<-done
			})
		}
	})
	return ln.Addr().String()
}

// TestClientDoorLeavesAHungServer: a server that keeps its connection
// open and never answers is found out by a ping, not by waiting on TCP:
// the write moves to another server well within its hold (waiting on the
// hung server would spend it and fail), and the next calls go there
// without trying the hung one again.
func TestClientDoorLeavesAHungServer(t *testing.T) {
	t.Parallel()
	hung, live := hungAddr(t), startCatalogServer(t)
	b, log := newTestDoor(t, hung, live)
	ctx := testContext(t)
	if err := register(ctx, b, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if _, err := nodes(ctx, b); err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	if got, want := log.Addrs(), []string{hung, live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// plainWrite is a write that is not idempotent, served by a writes
// endpoint that counts the ones it runs.
type plainWrite struct{ rpc.WriteRequest }

type writes struct{ runs atomic.Int64 }

func (w *writes) Put(_ context.Context, _ *plainWrite, _ *plainWrite) error {
	w.runs.Add(1)
	return nil
}

func (*writes) RPCNeeds() rpc.Needs { return rpc.Needs{"Put": rpc.NeedPublic()} }

// TestClientDoorWriteLeavesANewHungServer: a server that hangs before it
// answers a new connection never gets a request on it, so a write that is
// not idempotent, whose first server is such, goes to another server and
// is done there (not a 503 "may or may not have been applied" at the end
// of the hold).
func TestClientDoorWriteLeavesANewHungServer(t *testing.T) {
	t.Parallel()
	w := &writes{}
	hung, live := hungAddr(t), rpctest.StartServer(t, map[string]any{"Writes": w}).Addr().String()
	d, log := newTestDoor(t, hung, live)
	if err := d.RPC(testContext(t), "Writes.Put", &plainWrite{}, &plainWrite{}); err != nil {
		t.Fatalf("write with a new hung server first: %v", err)
	}
	if got, want := log.Addrs(), []string{hung, live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
	if n := w.runs.Load(); n != 1 {
		t.Errorf("the live server ran the write %d times, want 1", n)
	}
}

// TestClientDoorPingsAfterAServerHangs: a server that answered a ping a
// moment ago and then hangs is pinged again by the next call that waits
// on it — an old ping says nothing about now — so the write moves to
// another server within its hold.
func TestClientDoorPingsAfterAServerHangs(t *testing.T) {
	t.Parallel()
	f, live := rpctest.NewFreezer(t, startCatalogServer(t)), startCatalogServer(t)
	b, log := newTestDoor(t, f.Addr(), live)
	ctx := testContext(t)
	// A blocking read that outlasts ProbeAfter: the server answers its ping.
	if err := register(ctx, b, &catalog.RegisterRequest{Node: "client0", Address: "10.0.0.4"}); err != nil {
		t.Fatal(err)
	}
	var reply rpc.NodesResponse
	if err := b.RPC(ctx, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &reply); err != nil {
		t.Fatal(err)
	}
	args := &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: reply.Index, MaxQueryTime: 500 * time.Millisecond}}
	if err := b.RPC(ctx, rpc.MethodCatalogNodes, args, &reply); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	pinged := !b.aliveAt[f.Addr()].IsZero()
	b.mu.Unlock()
	if !pinged {
		t.Fatal("the blocking read sent no ping; the test proves nothing")
	}
	f.Freeze()
	if err := register(ctx, b, &catalog.RegisterRequest{Node: "client1", Address: "10.0.0.5"}); err != nil {
		t.Fatalf("Register after the server hung: %v", err)
	}
	if got, want := log.Addrs(), []string{f.Addr(), live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// TestClientDoorBlockingReadKeepsItsEnd: a blocking read whose server
// hangs halfway through the wait goes to another server (here the same
// one behind another proxy, so the index holds) for what is left of the
// wait only: it ends about when its wait does, with the current index,
// not after a second full wait past the hold (a 503 on a client: issue
// 28). The caller's args are put back.
func TestClientDoorBlockingReadKeepsItsEnd(t *testing.T) {
	t.Parallel()
	backend := startCatalogServer(t)
	f1, f2 := rpctest.NewFreezer(t, backend), rpctest.NewFreezer(t, backend)
	d, _ := newTestDoor(t, f1.Addr(), f2.Addr())
	ctx := testContext(t)
	if err := register(ctx, d, &catalog.RegisterRequest{Node: "client0", Address: "10.0.0.4"}); err != nil {
		t.Fatal(err)
	}
	var cur rpc.NodesResponse
	if err := d.RPC(ctx, rpc.MethodCatalogNodes, &rpc.NodesRequest{}, &cur); err != nil {
		t.Fatal(err)
	}
	const wait = 4 * time.Second
	args := &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: wait}}
	want := args.QueryOptions
	errc := make(chan error, 1)
	var reply rpc.NodesResponse
	start := time.Now()
	go func() { errc <- d.RPC(ctx, rpc.MethodCatalogNodes, args, &reply) }()
	time.Sleep(wait / 4) // the hang comes once the read waits on f1
	f1.Freeze()
	var err error
	select {
	case err = <-errc:
	case <-time.After(wait + d.cfg.HoldTimeout + 10*time.Second):
		t.Fatal("the blocking read did not return")
	}
	elapsed := time.Since(start)
	// Its wait, the server's jitter, and the ping that finds f1 hung.
	bound := wait + wait/16 + d.cfg.ProbeAfter + d.cfg.ProbeTimeout + time.Second
	switch {
	case err != nil:
		t.Errorf("blocking read across the hang failed after %s: %v", elapsed.Round(time.Millisecond), err)
	case elapsed > bound:
		t.Errorf("blocking read of %s took %s, want at most %s (a second full wait on the next server?)", wait, elapsed.Round(time.Millisecond), bound)
	case reply.Index != cur.Index:
		t.Errorf("got index %d, want the current %d", reply.Index, cur.Index)
	}
	if args.QueryOptions != want {
		t.Errorf("args after the call: %+v, want them as they were, %+v", args.QueryOptions, want)
	}
}
