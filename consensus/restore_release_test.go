package consensus_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
)

// TestSnapshotRestoreReleasesFollowersCatalog restores an archive while a
// follower serves a blocking read of the change feed (what each agent's
// cache keeps open), and checks that the follower's replaced catalog can
// be collected: a row read from it before the restore is freed. A server
// must hold two catalogs only while it builds the new one.
func TestSnapshotRestoreReleasesFollowersCatalog(t *testing.T) {
	nodes, leader, p := startSnapshotCluster(t)
	registerFixture(t, p, leader, "old")
	var saved rpc.SnapshotSaveResponse
	catalogCall(t, p, leader, rpc.MethodSnapshotSave, &rpc.SnapshotSaveRequest{}, &saved)
	follower := catalogFollowers(nodes)[0]
	index := leader.Store.Index()
	consensustest.WaitFor(t, within, func() error {
		if got := follower.Store.Index(); got < index {
			return fmt.Errorf("follower at index %d, want %d", got, index)
		}
		return nil
	})

	freed := make(chan struct{})
	func() { // the row must not stay on this test's stack
		_, row, err := follower.Store.Node(nil, "old-a")
		if err != nil || row == nil {
			t.Fatalf("Node(old-a) on the follower: got %v, %v", row, err)
		}
		runtime.AddCleanup(row, func(ch chan struct{}) { close(ch) }, freed)
	}()

	feed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		args := &rpc.ChangesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: index, AllowStale: true}}
		st, err := p.Stream(ctx, follower.Addr, rpc.MethodCatalogFeed, args)
		if err != nil {
			feed <- err
			return
		}
		defer st.Close()
		var reply rpc.ChangesResponse
		feed <- st.Recv(ctx, &reply)
	}()

	var restored rpc.SnapshotRestoreResponse
	catalogCall(t, p, leader, rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{Archive: saved.Archive}, &restored)
	consensustest.WaitFor(t, within, func() error {
		if got := follower.Store.Index(); got < restored.Index {
			return fmt.Errorf("follower at index %d, want %d", got, restored.Index)
		}
		return nil
	})
	if err := <-feed; err != nil {
		t.Fatalf("change feed on the follower: %v", err)
	}
	deadline := time.Now().Add(within)
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower's catalog from before the restore is still reachable")
		}
	}
}
