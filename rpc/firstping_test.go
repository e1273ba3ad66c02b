package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// tally counts the calls it runs.
type tally struct{ runs atomic.Int64 }

type tallyArgs struct{ N int }

func (t *tally) Bump(_ context.Context, _ *tallyArgs, _ *tallyArgs) error {
	t.runs.Add(1)
	return nil
}

func (*tally) RPCNeeds() rpc.Needs { return rpc.Needs{"Bump": rpc.NeedPublic()} }

// TestNewSessionToAHungServerCarriesNoRequest: a server that hangs before
// it reads a new connection's first bytes (stopped, or cut off) reads the
// session's handshake and a request sent behind it together when it
// resumes, so neither tells it that the request waited. A pool sends no
// request on a new session until the server has answered it: the caller
// that gave up meanwhile gets ErrNotSent (its write was not, and will not
// be, applied), and nothing runs when the server resumes.
func TestNewSessionToAHungServerCarriesNoRequest(t *testing.T) {
	t.Parallel()
	counter := &tally{}
	s := rpctest.StartServer(t, map[string]any{"Tally": counter})
	f := rpctest.NewFreezer(t, s.Addr().String())
	p := rpctest.NewPool(t)

	f.Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := p.Call(ctx, f.Addr(), "Tally.Bump", &tallyArgs{}, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call to a hung server: got %v, want the caller's deadline", err)
	}
	if !errors.Is(err, rpc.ErrNotSent) {
		t.Errorf("call to a hung server on a new session: got %v, want ErrNotSent (the request was never written)", err)
	}
	f.Thaw()

	// The server is live again: a call goes through, and once the server
	// has nothing in flight, it has done all it will do with what it
	// was sent.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Call(ctx, f.Addr(), "Tally.Bump", &tallyArgs{}, nil); err != nil {
		t.Fatalf("call after the server resumed: %v", err)
	}
	inFlight := collector(t, s, "cairn_rpc_calls_in_flight")
	waittest.For(t, 10*time.Second, "the server done with its calls", func() error {
		if n := testutil.ToFloat64(inFlight); n != 0 {
			return fmt.Errorf("%v calls in flight", n)
		}
		return nil
	})
	if n := counter.runs.Load(); n != 1 {
		t.Errorf("ran %d times, want 1: the call given up on before the server resumed must never run", n)
	}
}

// collector returns s's collector of the metric named name.
func collector(t *testing.T, s *rpc.Server, name string) prometheus.Collector {
	t.Helper()
	for _, c := range s.Collectors() {
		if testutil.CollectAndCount(c, name) > 0 {
			return c
		}
	}
	t.Fatalf("no collector of %s", name)
	return nil
}
