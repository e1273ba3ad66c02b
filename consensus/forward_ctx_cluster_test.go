package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// stallingLeader stands in for the leader's Catalog endpoint: Register
// holds every request until its ctx ends, and reports that it did.
type stallingLeader struct {
	started chan struct{}
	ended   chan struct{}
}

func (stallingLeader) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Register": rpc.NeedToken("service,node", "write")}
}

func (l stallingLeader) Register(ctx context.Context, _ *rpc.RegisterRequest, _ *struct{}) error {
	l.started <- struct{}{}
	<-ctx.Done()
	l.ended <- struct{}{}
	return ctx.Err()
}

// TestForwardEndsWithCaller: a follower forwards a write to the leader with
// a ForwardTimeout of an hour; the caller's deadline, not that, bounds the
// forward, through either door, and the leader's method sees its ctx end.
// The forwarded mark on the in-process caller's args is put back.
func TestForwardEndsWithCaller(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	leader := consensustest.WaitForLeader(t, nodes, within)
	stall := stallingLeader{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	var follower *consensustest.Node
	for _, n := range nodes {
		var ep any = stall
		if n != leader {
			cfg := consensus.DefaultCatalogConfig()
			cfg.Datacenter = "dc1"
			cfg.ForwardTimeout = time.Hour
			cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cat.Close)
			ep, follower = cat, n
		}
		if err := n.RPC.Register(rpc.CatalogEndpoint, ep); err != nil {
			t.Fatal(err)
		}
	}
	p := rpctest.NewPool(t)

	for _, door := range []struct {
		name string
		call func(ctx context.Context, args *rpc.RegisterRequest) error
	}{
		{"in process", func(ctx context.Context, args *rpc.RegisterRequest) error {
			return follower.RPC.Call(ctx, rpc.MethodCatalogRegister, args, nil)
		}},
		{"over the port", func(ctx context.Context, args *rpc.RegisterRequest) error {
			return p.Call(ctx, follower.Addr, rpc.MethodCatalogRegister, args, nil)
		}},
	} {
		t.Run(door.name, func(t *testing.T) {
			args := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1"}}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- door.call(ctx, args) }()
			for _, step := range []struct {
				what string
				c    <-chan struct{}
			}{{"the forward to reach the leader", stall.started}, {"the leader's ctx to end", stall.ended}} {
				select {
				case <-step.c:
				case <-time.After(within):
					t.Fatalf("timed out after %s waiting for %s", within, step.what)
				}
			}
			select {
			case err := <-errc:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("got %v, want context.DeadlineExceeded", err)
				}
			case <-time.After(within):
				t.Fatalf("the call did not return within %s", within)
			}
			if args.Forwarded || args.FromDatacenter != "" {
				t.Errorf("args after the call: Forwarded %v, FromDatacenter %q; want them as they were", args.Forwarded, args.FromDatacenter)
			}
		})
	}
}

// TestForwardFollowsTheLeader: a follower forwards a write to a leader
// that holds it without answering (hung, or cut off after it took the
// request); when leadership moves, the follower sees it, abandons the
// forward (the old leader's method sees its ctx end) and sends the write
// to the new leader, which applies it, long before the hour-long
// ForwardTimeout.
func TestForwardFollowsTheLeader(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	leader := consensustest.WaitForLeader(t, nodes, within)
	stall := stallingLeader{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	var follower *consensustest.Node
	for _, n := range nodes {
		var ep any = stall
		if n != leader {
			cfg := consensus.DefaultCatalogConfig()
			cfg.Datacenter = "dc1"
			cfg.ForwardTimeout = time.Hour
			cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cat.Close)
			ep, follower = cat, n
		}
		if err := n.RPC.Register(rpc.CatalogEndpoint, ep); err != nil {
			t.Fatal(err)
		}
	}
	args := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- follower.RPC.Call(ctx, rpc.MethodCatalogRegister, args, nil) }()
	select {
	case <-stall.started:
	case <-time.After(within):
		t.Fatalf("timed out after %s waiting for the forward to reach the leader", within)
	}
	if err := leader.Server.TransferLeadership(context.Background(), ""); err != nil {
		t.Fatalf("transfer leadership: %v", err)
	}
	select {
	case <-stall.ended:
	case <-time.After(within):
		t.Fatalf("the old leader's method still waits %s after leadership moved", within)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("the forwarded write: %v", err)
		}
	case <-time.After(within):
		t.Fatalf("the write did not finish within %s of leadership moving", within)
	}
	waittest.For(t, within, "the write applied on the follower", func() error {
		if _, node, err := follower.Server.Store().Node(nil, "n1"); err != nil || node == nil {
			return fmt.Errorf("n1: %v, %v", node, err)
		}
		return nil
	})
}
