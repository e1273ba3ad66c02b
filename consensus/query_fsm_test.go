package consensus

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// TestQueriesSurviveRestart: query writes replay from a snapshot and from
// the log after it.
func TestQueriesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	ctx := context.Background()
	q1 := &catalog.PreparedQuery{ID: "11111111-1111-4111-8111-111111111111", Name: "one", Service: catalog.ServiceQuery{Service: "web"}}
	q2 := &catalog.PreparedQuery{ID: "22222222-2222-4222-8222-222222222222", Name: "two", Service: catalog.ServiceQuery{Service: "db"}}
	if err := s.ApplyQuery(ctx, &catalog.QueryRequest{Op: catalog.QueryCreate, Query: q1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyQuery(ctx, &catalog.QueryRequest{Op: catalog.QueryCreate, Query: q2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, dir)
	defer s.Shutdown()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, qs, err := s.Store().Queries(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) == 2 && qs[0].Name == "one" && qs[1].Name == "two" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart got %d queries, want one and two", len(qs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRestoreSnapshotWithoutQueries: a snapshot written before prepared
// queries existed (a Dump without the Queries field) restores.
func TestRestoreSnapshotWithoutQueries(t *testing.T) {
	type oldDump struct {
		Index    uint64
		Nodes    []*catalog.Node
		Services []catalog.DumpService
		Checks   []*catalog.Check
	}
	var buf bytes.Buffer
	old := oldDump{Index: 3, Nodes: []*catalog.Node{{Node: "n1", Address: "10.0.0.1"}}}
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(old); err != nil {
		t.Fatal(err)
	}
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	f := &fsm{store: store}
	if err := f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatalf("Restore of an old snapshot: %v", err)
	}
	if _, n, _ := store.Node(nil, "n1"); n == nil {
		t.Error("node n1 missing after restore")
	}
	if _, qs, err := store.Queries(nil); err != nil || len(qs) != 0 {
		t.Errorf("queries after restore: got %d (%v), want 0", len(qs), err)
	}
}
