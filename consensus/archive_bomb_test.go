package consensus_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus/consensustest"
)

// TestArchiveBombIsReadWithBoundedMemory restores an 80 KB archive whose
// state.bin inflates to 64 MiB of zeros: it is refused, and reading it
// allocated a few buffers, not the member (state.bin is decoded as it is
// inflated, never held whole). Not parallel: it counts the process's
// allocations, which no other test adds to while it runs (a one-server
// cluster has no follower to send to).
func TestArchiveBombIsReadWithBoundedMemory(t *testing.T) {
	nodes := consensustest.StartCluster(t, 1)
	leader := consensustest.WaitForLeader(t, nodes, within)
	bomb := consensustest.ArchiveBomb(t, 64<<20)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := leader.Server.RestoreSnapshot(ctx, bytes.NewReader(bomb))
	runtime.ReadMemStats(&after)
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "snapshot" {
		t.Fatalf("got error %v, want a FieldError naming snapshot", err)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte archive of 64 MiB allocated %d bytes to refuse: %v", len(bomb), grew, err)
	if grew > 8<<20 {
		t.Errorf("reading the archive allocated %d bytes, want at most 8 MiB", grew)
	}
}
