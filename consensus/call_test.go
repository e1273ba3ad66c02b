package consensus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// The endpoints through rpc.Server.Call, the in-process door a server
// agent uses: the caller's ctx reaches them, and they fail as they do over
// the port.

// TestEndpointsInProcess: a write and a read in process, and the errors a
// caller branches on, the same through both doors.
func TestEndpointsInProcess(t *testing.T) {
	h := startEndpoint(t, true, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Port: 80},
	}}
	if err := h.rpc.Call(ctx, rpc.MethodCatalogRegister, reg, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var got rpc.ServiceInstancesResponse
	if err := h.rpc.Call(ctx, rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{Service: "web"}, &got); err != nil {
		t.Fatalf("ServiceInstances: %v", err)
	}
	if len(got.Instances) != 1 || got.Instances[0].Node.Node != "n1" || !got.KnownLeader {
		t.Errorf("ServiceInstances: got %+v, want n1's web from a known leader", got)
	}

	for _, tc := range []struct {
		name   string
		method string
		args   func() any
		check  func(error) bool
	}{
		{"field error", rpc.MethodCatalogRegister, func() any {
			return &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "bad_name", Address: "10.0.0.1"}}
		}, func(err error) bool {
			fe, ok := errors.AsType[*catalog.FieldError](err)
			return ok && fe.Field == "Node"
		}},
		{"not found", rpc.MethodCatalogRegister, func() any { // from the FSM, through Raft
			return &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1",
				Checks: []*catalog.Check{{CheckID: "c1", Name: "c1", ServiceID: "nope", Status: catalog.HealthPassing}}}}
		},
			func(err error) bool { return errors.Is(err, catalog.ErrNotFound) }},
		{"no path to datacenter", rpc.MethodCatalogNodes, func() any {
			return &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}}
		}, func(err error) bool { return errors.Is(err, ErrNoPathToDatacenter) }},
		{"conflicting consistency", rpc.MethodCatalogNodes, func() any {
			return &rpc.NodesRequest{QueryOptions: rpc.QueryOptions{AllowStale: true, RequireConsistent: true}}
		}, func(err error) bool { return errors.Is(err, rpc.ErrConflictingConsistency) }},
	} {
		overPort := h.call(tc.method, tc.args(), nil)
		inProcess := h.rpc.Call(ctx, tc.method, tc.args(), nil)
		for door, err := range map[string]error{"Pool.Call": overPort, "Server.Call": inProcess} {
			if _, ok := errors.AsType[*rpc.RemoteError](err); !ok || !tc.check(err) || errors.Is(err, rpc.ErrTransport) {
				t.Errorf("%s through %s: got %v, want a RemoteError that passes the check", tc.name, door, err)
			}
		}
		a, _ := errors.AsType[*rpc.RemoteError](overPort)
		b, _ := errors.AsType[*rpc.RemoteError](inProcess)
		if a != nil && b != nil && a.Message != b.Message {
			t.Errorf("%s: Pool.Call says %q, Server.Call %q", tc.name, a.Message, b.Message)
		}
	}
}

// TestBlockingQueryEndsWithCallerInProcess: the caller's deadline ends a
// blocking query, long before its MaxQueryTime; a caller without one is
// still released by Close, with ErrServerStopping and no answer.
func TestBlockingQueryEndsWithCallerInProcess(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"})
	cur := h.instances(t, &rpc.ServiceInstancesRequest{Service: "web"})
	block := func() *rpc.ServiceInstancesRequest {
		return &rpc.ServiceInstancesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: time.Hour},
			Service:      "web",
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.rpc.Call(ctx, rpc.MethodCatalogServiceInstances, block(), &rpc.ServiceInstancesResponse{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("returned after %s, want about 100ms", elapsed)
	}

	errc := make(chan error, 1)
	var reply rpc.ServiceInstancesResponse
	go func() {
		errc <- h.rpc.Call(context.Background(), rpc.MethodCatalogServiceInstances, block(), &reply)
	}()
	h.cat.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, rpc.ErrServerStopping) {
			t.Errorf("after Close: got %v, want ErrServerStopping (no answer from a stopping server)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query still running 10s after Close")
	}
}

// TestLeaderWaitEndsWithCaller: a server without a leader waits for one
// for LeaderWait, or less when the caller's ctx ends first.
func TestLeaderWaitEndsWithCaller(t *testing.T) {
	h := startEndpoint(t, false, func(c *CatalogConfig) { c.LeaderWait = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	args := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1"}}
	errc := make(chan error, 1)
	go func() { errc <- h.rpc.Call(ctx, rpc.MethodCatalogRegister, args, nil) }()
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting for a leader 10s after the caller's deadline")
	}

	// What the endpoint itself says, without the door's rule that an
	// ended ctx is the answer: no leader, because the caller gave up.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := h.cat.Register(ctx, args, &struct{}{})
	if !errors.Is(err, ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Register: got %v, want ErrNoLeader and context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "waiting for one") {
		t.Errorf("Register: got %q, want it to say it was waiting for a leader", err)
	}
}
