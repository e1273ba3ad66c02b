package consensus

import (
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

func (h *endpointHarness) reverse(t *testing.T, args *rpc.ReverseRequest) *rpc.ReverseResponse {
	t.Helper()
	var reply rpc.ReverseResponse
	h.mustCall(t, rpc.MethodCatalogReverse, args, &reply)
	return &reply
}

func TestCatalogEndpointReverse(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"})
	h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "db", ID: "db-1", Address: "10.0.0.9"})
	h.register(t, "n3", "10.0.0.3", &catalog.Service{Service: "db", ID: "db-2", Address: "10.0.0.9"})
	h.register(t, "n4", "10.0.0.9", nil)
	h.register(t, "n6", "2001:db8::1", &catalog.Service{Service: "v6", Address: "2001:db8::2"})

	for _, tc := range []struct {
		addr        string
		nodes, svcs []string
	}{
		{"10.0.0.1", []string{"n1"}, nil}, // web uses its node's address
		{"10.0.0.9", []string{"n4"}, []string{"db"}},
		{"2001:DB8:0:0::1", []string{"n6"}, nil}, // any spelling
		{"2001:db8::2", nil, []string{"v6"}},
		{"10.9.9.9", nil, nil},
	} {
		for _, opts := range []rpc.QueryOptions{{}, {AllowStale: true}, {RequireConsistent: true}} {
			got := h.reverse(t, &rpc.ReverseRequest{QueryOptions: opts, Addr: tc.addr})
			if !slices.Equal(got.Nodes, tc.nodes) || !slices.Equal(got.Services, tc.svcs) {
				t.Errorf("Reverse(%s) %+v: got nodes %v services %v, want %v %v", tc.addr, opts, got.Nodes, got.Services, tc.nodes, tc.svcs)
			}
			if got.Index == 0 || !got.KnownLeader {
				t.Errorf("Reverse(%s) %+v: got meta %+v, want an index and a known leader", tc.addr, opts, got.QueryMeta)
			}
		}
	}
}

func TestCatalogEndpointReverseBlocking(t *testing.T) {
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", nil)
	cur := h.reverse(t, &rpc.ReverseRequest{Addr: "10.0.0.7"})
	if len(cur.Nodes)+len(cur.Services) != 0 {
		t.Fatalf("got %v %v, want nothing at 10.0.0.7", cur.Nodes, cur.Services)
	}

	type result struct {
		reply rpc.ReverseResponse
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = h.call(rpc.MethodCatalogReverse, &rpc.ReverseRequest{
			QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: time.Minute},
			Addr:         "10.0.0.7",
		}, &r.reply)
		done <- r
	}()
	h.register(t, "n7", "10.0.0.7", &catalog.Service{Service: "web", Address: "10.0.0.7"})
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("blocking Reverse: %v", r.err)
		}
		if !slices.Equal(r.reply.Nodes, []string{"n7"}) || !slices.Equal(r.reply.Services, []string{"web"}) || r.reply.Index <= cur.Index {
			t.Errorf("blocking Reverse: got nodes %v services %v at index %d, want n7 and web past %d",
				r.reply.Nodes, r.reply.Services, r.reply.Index, cur.Index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking Reverse did not return after the address was registered")
	}

	// A query at the current index waits its whole (short) time and
	// answers unchanged.
	now := h.reverse(t, &rpc.ReverseRequest{Addr: "10.0.0.7"})
	got := h.reverse(t, &rpc.ReverseRequest{
		QueryOptions: rpc.QueryOptions{MinQueryIndex: now.Index, MaxQueryTime: 50 * time.Millisecond},
		Addr:         "10.0.0.7",
	})
	if got.Index != now.Index || !slices.Equal(got.Nodes, now.Nodes) {
		t.Errorf("timed-out Reverse: got %v at %d, want the unchanged %v at %d", got.Nodes, got.Index, now.Nodes, now.Index)
	}
}

func TestCatalogEndpointReverseOtherDatacenter(t *testing.T) {
	h := startEndpoint(t, true, nil)
	err := h.call(rpc.MethodCatalogReverse, &rpc.ReverseRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Addr: "10.0.0.1"}, nil)
	expectRemoteError(t, err, "Reverse in dc2", ErrNoPathToDatacenter.Error())
}
