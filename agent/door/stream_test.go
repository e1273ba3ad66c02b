package door

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// TestClientDoorStreamLeavesAHungServer: a stream on a server that hangs
// once the session is up is given up when its Recv's deadline passes,
// the server counts as failed (its session is closed), and the next
// stream starts on another server.
func TestClientDoorStreamLeavesAHungServer(t *testing.T) {
	t.Parallel()
	f, live := rpctest.NewFreezer(t, startCatalogServer(t)), startCatalogServer(t)
	d, log := newTestDoor(t, f.Addr(), live)
	ctx := testContext(t)
	args := func() *rpc.ChangesRequest {
		return &rpc.ChangesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc1", AllowStale: true, MaxQueryTime: 3 * time.Second}}
	}
	if _, err := nodes(ctx, d); err != nil { // the session to f, up
		t.Fatal(err)
	}
	f.Freeze()

	st, err := d.Stream(ctx, rpc.MethodCatalogFeed, args())
	if err != nil {
		t.Fatalf("Stream on the hung server: %v (its session takes the request)", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = st.Recv(rctx, &rpc.ChangesResponse{})
	cancel()
	_ = st.Close()
	if !errors.Is(err, rpc.ErrTransport) || !errors.Is(err, rpc.ErrServerHung) {
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
	if got, want := log.Addrs(), []string{f.Addr(), live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// TestClientDoorStreamSkipsANewHungServer: a server that never answers a
// new session gets no stream (the pool sends nothing before the answer);
// the stream starts on another server once a ping's time has passed, well
// within the hold.
func TestClientDoorStreamSkipsANewHungServer(t *testing.T) {
	t.Parallel()
	hung, live := hungAddr(t), startCatalogServer(t)
	d, log := newTestDoor(t, hung, live)
	d.cfg.HoldTimeout = time.Minute
	ctx := testContext(t)
	start := time.Now()
	st, err := d.Stream(ctx, rpc.MethodCatalogFeed, &rpc.ChangesRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc1", AllowStale: true, MaxQueryTime: 3 * time.Second}})
	if err != nil {
		t.Fatalf("Stream with a hung server first: %v", err)
	}
	defer st.Close()
	if took, most := time.Since(start), d.cfg.ProbeAfter+d.cfg.ProbeTimeout+3*time.Second; took > most {
		t.Errorf("the stream started after %s, want at most %s", took.Round(time.Millisecond), most)
	}
	var reply rpc.ChangesResponse
	if err := st.Recv(ctx, &reply); err != nil || !reply.Changes.Reset {
		t.Fatalf("first reply of the live server: %+v, %v", reply, err)
	}
	if got, want := log.Addrs(), []string{hung, live}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}
