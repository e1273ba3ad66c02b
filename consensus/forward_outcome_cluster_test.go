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
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// stallingKVS stands in for the leader's KVS endpoint: Apply holds every
// write until its ctx ends (the leader hung with the write taken), or
// until told on giveUp, when it answers that it stopped before
// answering.
type stallingKVS struct{ started, giveUp chan struct{} }

func (stallingKVS) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Apply": rpc.NeedToken("key", "write")}
}

func (s stallingKVS) Apply(ctx context.Context, _ *rpc.KVSApplyRequest, _ *rpc.KVSApplyResponse) error {
	s.started <- struct{}{}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.giveUp:
		return fmt.Errorf("apply: %w", rpc.ErrServerStopping)
	}
}

// TestBrokenForwardIsAnUnknownOutcome: a follower forwards a KV write (not
// idempotent) to a leader that took it and then answers that it stopped
// before answering, or stops (the connection breaks). The write's fate
// is unknown, and the follower's answer says so in a way its caller (a
// client agent, over the port) can tell: errors.Is finds
// rpc.ErrUnknownOutcome, which the HTTP API answers with a 503 "may or may
// not have been applied" (TestEveryRPCErrorHasItsHTTPStatus). Without a
// wire code it arrived as an error nothing tells from a bug: a 500
// (issue 28).
func TestBrokenForwardIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	nodes := consensustest.StartCluster(t, 3)
	leader := consensustest.WaitForLeader(t, nodes, within)
	stall := stallingKVS{started: make(chan struct{}, 1), giveUp: make(chan struct{})}
	var follower *consensustest.Node
	for _, n := range nodes {
		var ep any = stall
		if n != leader {
			cfg := consensus.DefaultCatalogConfig()
			cfg.Datacenter = "dc1"
			cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cat.Close)
			ep, follower = consensus.NewKVS(cat), n
		}
		if err := n.RPC.Register(rpc.KVSEndpoint, ep); err != nil {
			t.Fatal(err)
		}
	}
	p := rpctest.NewPool(t)
	for _, fault := range []struct {
		name  string
		apply func()
	}{
		{"leader gives up", func() { stall.giveUp <- struct{}{} }},
		{"leader stops", leader.Stop},
	} {
		t.Run(fault.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				errc <- p.Call(ctx, follower.Addr, rpc.MethodKVSApply, &rpc.KVSApplyRequest{
					Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "k", Value: []byte("v1")},
				}, &rpc.KVSApplyResponse{})
			}()
			select {
			case <-stall.started:
			case err := <-errc:
				t.Fatalf("the write returned %v before reaching the leader", err)
			case <-time.After(within):
				t.Fatalf("the forward did not reach the leader within %s", within)
			}
			fault.apply()
			select {
			case err := <-errc:
				if !errors.Is(err, rpc.ErrUnknownOutcome) {
					t.Errorf("got %v, want an error wrapping rpc.ErrUnknownOutcome", err)
				}
			case <-time.After(within):
				t.Fatalf("the write did not return within %s of the fault", within)
			}
		})
	}
}
