package rpctest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cairndns/cairn/internal/leaktest"
	"github.com/cairndns/cairn/rpc"
)

func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/rpc", "hashicorp/yamux"))
}

type Args struct{ N int }
type Reply struct{ N int }

type Double struct{}

func (Double) Do(_ context.Context, a *Args, r *Reply) error {
	r.N = 2 * a.N
	return nil
}

func TestStartServerAndPool(t *testing.T) {
	s := StartServer(t, map[string]any{"Double": Double{}})
	p := NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r Reply
	if err := p.Call(ctx, s.Addr().String(), "Double.Do", &Args{N: 21}, &r); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if r.N != 42 {
		t.Errorf("got %d, want 42", r.N)
	}
}

func (Double) RPCNeeds() rpc.Needs { return rpc.Needs{"Do": rpc.NeedPublic()} }
