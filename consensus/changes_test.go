package consensus

import (
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

func TestCatalogEndpointChanges(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"})

	var first rpc.ChangesResponse
	h.mustCall(t, rpc.MethodCatalogChanges, &rpc.ChangesRequest{}, &first)
	if !first.Changes.Reset || first.Index == 0 || first.Index != first.Changes.Index {
		t.Fatalf("first call: %+v, want a Reset with the store's index", first)
	}

	type result struct {
		reply rpc.ChangesResponse
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = h.call(rpc.MethodCatalogChanges, &rpc.ChangesRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: time.Minute, AllowStale: true},
		}, &r.reply)
		done <- r
	}()
	h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "API"})
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("blocking Changes: %v", r.err)
		}
		c := r.reply.Changes
		if c.Reset || !slices.Equal(c.Services, []string{"api"}) || !slices.Equal(c.Nodes, []string{"n2"}) || r.reply.Index <= first.Index {
			t.Fatalf("blocking Changes: %+v, want api on n2 past index %d", r.reply, first.Index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking Changes did not return on a registration")
	}

	// An index the store has not reached (another server's, or one from
	// before a restore) is a Reset, answered at once.
	var ahead rpc.ChangesResponse
	h.mustCall(t, rpc.MethodCatalogChanges, &rpc.ChangesRequest{
		QueryOptions: rpc.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: time.Minute, AllowStale: true},
	}, &ahead)
	if !ahead.Changes.Reset || ahead.Index >= 1<<40 {
		t.Fatalf("an index ahead: %+v, want a Reset at the store's index", ahead)
	}
}
