package consensus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

func TestBlockingQueryIndexNeverZero(t *testing.T) {
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	run := func(ws catalog.WatchSet) (uint64, error) {
		idx, _, err := store.Nodes(ws)
		return idx, err
	}
	for _, opts := range []rpc.QueryOptions{{}, {MinQueryIndex: 1, MaxQueryTime: 20 * time.Millisecond}} {
		var meta rpc.QueryMeta
		if err := blockingQuery(context.Background(), rpc.DefaultBlockingLimits(), opts, &meta, run); err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		if meta.Index != 1 {
			t.Errorf("%+v on an empty store: got index %d, want 1", opts, meta.Index)
		}
	}
}

// TestBlockingQueryRerunsUntilPast: a change that leaves the index at or
// below MinQueryIndex wakes the query but does not end it.
func TestBlockingQueryRerunsUntilPast(t *testing.T) {
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	write := func(idx uint64, node string) {
		t.Helper()
		if err := store.Register(idx, &catalog.RegisterRequest{Node: node, Address: "10.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	write(5, "a")

	runs := make(chan uint64, 10)
	done := make(chan rpc.QueryMeta, 1)
	errc := make(chan error, 1)
	opts := rpc.QueryOptions{MinQueryIndex: 7, MaxQueryTime: time.Minute}
	go func() {
		var meta rpc.QueryMeta
		errc <- blockingQuery(context.Background(), rpc.DefaultBlockingLimits(), opts, &meta, func(ws catalog.WatchSet) (uint64, error) {
			idx, _, err := store.Nodes(ws)
			runs <- idx
			return idx, err
		})
		done <- meta
	}()
	await := func(want uint64) {
		t.Helper()
		select {
		case got := <-runs:
			if got != want {
				t.Fatalf("run saw index %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no run saw index %d", want)
		}
	}
	await(5)
	write(7, "b") // at MinQueryIndex: not past it
	await(7)
	write(8, "c")
	await(8)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if meta := <-done; meta.Index != 8 {
		t.Errorf("got index %d, want 8", meta.Index)
	}
}

// TestBlockingQueryEndedByItsRequestIsNoAnswer: a wait cut short by the
// request's ctx (the server stopping, the caller gone) returns its error,
// not the result read before the wait, which may be older than what the
// caller waits for; a wait that runs out answers with the result.
func TestBlockingQueryEndedByItsRequestIsNoAnswer(t *testing.T) {
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	run := func(ws catalog.WatchSet) (uint64, error) {
		idx, _, err := store.Nodes(ws)
		return idx, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		var meta rpc.QueryMeta
		errc <- blockingQuery(ctx, rpc.DefaultBlockingLimits(), rpc.QueryOptions{MinQueryIndex: 1, MaxQueryTime: time.Minute}, &meta, run)
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("wait ended by the request: got %v, want context.Canceled", err)
	}
	var meta rpc.QueryMeta
	if err := blockingQuery(context.Background(), rpc.DefaultBlockingLimits(), rpc.QueryOptions{MinQueryIndex: 1, MaxQueryTime: 20 * time.Millisecond}, &meta, run); err != nil {
		t.Errorf("wait that ran out: got %v, want the result", err)
	}
}
