package agent

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// TestFeedFollowerKeepsOneStream: the follower tells each change from one
// stream, and starts another only when asked from another index.
func TestFeedFollowerKeepsOneStream(t *testing.T) {
	t.Parallel()
	live := startCatalogServer(t)
	d, log := newTestDoor(t, live)
	ctx := testContext(t)
	f := (&dnsSource{door: d}).follow("dc1").(*feedFollower)
	defer f.Stop()

	idx, _, reset, err := f.Next(ctx, 0, time.Minute)
	if err != nil || !reset {
		t.Fatalf("first Next: index %d, reset %v, %v; want a reset", idx, reset, err)
	}
	idx = max(idx, 1) // as the hub asks next
	first := f.st
	for i, name := range []string{"web", "api"} {
		if err := register(ctx, d, &catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: name}}); err != nil {
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
	if got := log.get(); !slices.Equal(got, []string{live}) {
		t.Errorf("dialed %v, want one connection to %s", got, live)
	}
}

// TestClientDoorStreamLeavesAHungServer: a stream on a server that never
// answers is given up when its Recv's deadline passes, the server counts
// as failed (its session is closed), and the next stream starts on
// another server.
func TestClientDoorStreamLeavesAHungServer(t *testing.T) {
	t.Parallel()
	hung, live := hungAddr(t), startCatalogServer(t)
	d, log := newTestDoor(t, hung, live)
	ctx := testContext(t)
	args := func() *rpc.ChangesRequest {
		return &rpc.ChangesRequest{QueryOptions: readOptions("dc1", 0, feedHeartbeat)}
	}

	st, err := d.Stream(ctx, rpc.MethodCatalogFeed, args())
	if err != nil {
		t.Fatalf("Stream on the hung server: %v (its TCP takes the request)", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = st.Recv(rctx, &rpc.ChangesResponse{})
	cancel()
	_ = st.Close()
	if !errors.Is(err, rpc.ErrTransport) || !errors.Is(err, errServerHung) {
		t.Fatalf("Recv on the hung server: got %v, want a transport error saying it hung", err)
	}

	st, err = d.Stream(ctx, rpc.MethodCatalogFeed, args())
	if err != nil {
		t.Fatalf("Stream after the hung server: %v", err)
	}
	defer st.Close()
	var reply rpc.ChangesResponse
	if err := st.Recv(ctx, &reply); err != nil || !reply.Changes.Reset {
		t.Fatalf("first reply of the live server: %+v, %v", reply, err)
	}
	if got, want := log.get(), []string{hung, live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// scriptedDoor is a door whose streams answer replies from a script.
type scriptedDoor struct {
	door    // RPC is not used
	replies chan rpc.ChangesResponse
	started int
}

func (d *scriptedDoor) Stream(context.Context, string, any) (rpc.Stream, error) {
	d.started++
	return scriptedStream{d.replies}, nil
}

type scriptedStream struct{ replies chan rpc.ChangesResponse }

func (s scriptedStream) Recv(ctx context.Context, reply any) error {
	select {
	case r := <-s.replies:
		*reply.(*rpc.ChangesResponse) = r
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (scriptedStream) Close() error { return nil }

// TestFeedFollowerPassesOverHeartbeats: replies with no news do not end a
// Next until its wait has passed; news does at once.
func TestFeedFollowerPassesOverHeartbeats(t *testing.T) {
	t.Parallel()
	reply := func(index uint64, reset bool, services ...string) rpc.ChangesResponse {
		var r rpc.ChangesResponse
		r.Index, r.Changes.Index, r.Changes.Reset, r.Changes.Services = index, index, reset, services
		return r
	}
	d := &scriptedDoor{replies: make(chan rpc.ChangesResponse, 8)}
	for _, r := range []rpc.ChangesResponse{reply(5, true), reply(5, false), reply(5, false), reply(7, false, "web"), reply(7, false)} {
		d.replies <- r
	}
	f := (&dnsSource{door: d}).follow("dc1")
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
	if len(d.replies) != 0 || d.started != 1 {
		t.Errorf("%d replies left, %d streams started; want none left, one stream", len(d.replies), d.started)
	}
}
