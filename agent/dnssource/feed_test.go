package dnssource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// TestFeedFollowerKeepsOneStream: the follower tells each change from one
// stream, and starts another only when asked from another index.
func TestFeedFollowerKeepsOneStream(t *testing.T) {
	t.Parallel()
	live := consensustest.StartCatalogServer(t, nil)
	var dials rpctest.DialLog
	pcfg := rpc.DefaultPoolConfig()
	pcfg.Dial = dials.Dial
	pool, err := rpc.NewPool(pcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	d := door.NewClient(door.DefaultConfig(), pool, func() []string { return []string{live} }, slog.New(slog.DiscardHandler))
	ctx := testContext(t)
	f := (&Source{door: d}).follow("dc1").(*feedFollower)
	defer f.Stop()

	idx, _, reset, err := f.Next(ctx, 0, time.Minute)
	if err != nil || !reset {
		t.Fatalf("first Next: index %d, reset %v, %v; want a reset", idx, reset, err)
	}
	idx = max(idx, 1) // as the hub asks next
	first := f.st
	for i, name := range []string{"web", "api"} {
		args := &rpc.RegisterRequest{Registration: catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: name}}}
		if err := d.RPC(ctx, rpc.MethodCatalogRegister, args, nil); err != nil {
			t.Fatalf("Register: %v", err)
		}
		next, changed, reset, err := f.Next(ctx, idx, time.Minute)
		if err != nil || reset || next <= idx {
			t.Fatalf("Next after registering %s: index %d (after %d), reset %v, %v", name, next, idx, reset, err)
		}
		if !changed(cache.Key{Kind: kindService, Datacenter: "dc1", Name: name}) || changed(cache.Key{Kind: kindService, Datacenter: "dc1", Name: "other"}) {
			t.Errorf("change %d: does not name %s alone", i, name)
		}
		if f.st != first {
			t.Fatalf("change %d came on a new stream", i)
		}
		idx = max(next, 1)
	}

	// Asked from another index (the hub after a failure asks from 0),
	// it starts over.
	if _, _, reset, err := f.Next(ctx, 0, time.Minute); err != nil || !reset || f.st == first {
		t.Fatalf("Next from 0: reset %v, %v, same stream %v; want a reset on a new stream", reset, err, f.st == first)
	}
	if got := dials.Addrs(); !slices.Equal(got, []string{live}) {
		t.Errorf("dialed %v, want one connection to %s", got, live)
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// scriptedDoor is a door whose streams answer from scripts, one per
// stream started, in order; it keeps the requests.
type scriptedDoor struct {
	door.Door // RPC is not used
	scripts   [][]step
	asked     []*rpc.ChangesRequest
}

// step is a reply, or an error a Recv returns.
type step struct {
	reply rpc.ChangesResponse
	err   error
}

func (d *scriptedDoor) Stream(_ context.Context, _ string, args any) (rpc.Stream, error) {
	d.asked = append(d.asked, args.(*rpc.ChangesRequest))
	if len(d.asked) > len(d.scripts) {
		return nil, errors.New("no script left")
	}
	return &scriptedStream{steps: d.scripts[len(d.asked)-1]}, nil
}

type scriptedStream struct{ steps []step }

func (s *scriptedStream) Recv(ctx context.Context, reply any) error {
	if len(s.steps) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	*reply.(*rpc.ChangesResponse) = st.reply
	return st.err
}

func (*scriptedStream) Close() error { return nil }

func changes(index uint64, reset bool, services ...string) step {
	var r rpc.ChangesResponse
	r.Index, r.Changes.Index, r.Changes.Reset, r.Changes.Services = index, index, reset, services
	return step{reply: r}
}

// TestFeedFollowerPassesOverHeartbeats: replies with no news do not end a
// Next until its wait has passed; news does at once.
func TestFeedFollowerPassesOverHeartbeats(t *testing.T) {
	t.Parallel()
	d := &scriptedDoor{scripts: [][]step{{changes(5, true), changes(5, false), changes(5, false), changes(7, false, "web"), changes(7, false)}}}
	f := (&Source{door: d}).follow("dc1")
	defer f.Stop()
	ctx := testContext(t)
	if idx, _, reset, err := f.Next(ctx, 0, time.Minute); idx != 5 || !reset || err != nil {
		t.Fatalf("first Next: %d, reset %v, %v; want the reset at 5", idx, reset, err)
	}
	idx, changed, reset, err := f.Next(ctx, 5, time.Minute)
	if idx != 7 || reset || err != nil || !changed(cache.Key{Kind: kindService, Datacenter: "dc1", Name: "web"}) {
		t.Fatalf("second Next: %d, reset %v, %v; want web's change at 7, past two heartbeats", idx, reset, err)
	}
	if idx, _, _, err := f.Next(ctx, 7, 0); idx != 7 || err != nil {
		t.Fatalf("Next whose wait has passed: %d, %v; want the heartbeat at 7", idx, err)
	}
	if len(d.asked) != 1 {
		t.Errorf("%d streams started, want one", len(d.asked))
	}
}

// TestFeedFollowerResumesABrokenStream: a stream its server breaks is
// started again from where it stood, within the same Next, which returns
// the change the new stream tells; a refusal is returned as it is.
func TestFeedFollowerResumesABrokenStream(t *testing.T) {
	t.Parallel()
	broken := fmt.Errorf("rpc Catalog.Feed to s1: %w: connection reset", rpc.ErrTransport)
	stopping := fmt.Errorf("rpc Catalog.Feed to s2: %w", rpc.ErrServerStopping)
	d := &scriptedDoor{scripts: [][]step{
		{changes(5, true), changes(6, false, "api"), {err: broken}},
		{{err: stopping}},
		{changes(6, false), changes(9, false, "web")},
		{{err: rpc.ErrPermissionDenied}},
	}}
	f := (&Source{door: d}).follow("dc1")
	defer f.Stop()
	ctx := testContext(t)
	if _, _, _, err := f.Next(ctx, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if idx, _, _, err := f.Next(ctx, 5, time.Minute); idx != 6 || err != nil {
		t.Fatalf("second Next: %d, %v; want api's change at 6", idx, err)
	}
	idx, changed, reset, err := f.Next(ctx, 6, time.Minute)
	if idx != 9 || reset || err != nil || !changed(cache.Key{Kind: kindService, Datacenter: "dc1", Name: "web"}) {
		t.Fatalf("Next across two broken streams: %d, reset %v, %v; want web's change at 9", idx, reset, err)
	}
	if got := []uint64{d.asked[0].MinQueryIndex, d.asked[1].MinQueryIndex, d.asked[2].MinQueryIndex}; !slices.Equal(got, []uint64{0, 6, 6}) {
		t.Errorf("streams started from %v, want 0, then 6 twice (where the broken one stood)", got)
	}
	if _, _, _, err := f.Next(ctx, 3, time.Minute); !errors.Is(err, rpc.ErrPermissionDenied) {
		t.Errorf("Next refused: got %v, want the refusal", err)
	}
}
