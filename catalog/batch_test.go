package catalog_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// TestApplyBatchResults: each write of a batch comes to what it would have
// come to alone, after the ones before it; a refused or failed write
// changes nothing and the others still apply, all at the batch's index.
func TestApplyBatchResults(t *testing.T) {
	s := newStore(t)
	mustKVSet(t, s, 5, "held", "old")
	at := time.Unix(1000, 0)
	const idx = 9
	writes := []catalog.Write{
		{KV: &catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "a", Value: []byte("1")}}},
		// Refused: held's ModifyIndex is 5.
		{KV: &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "held", Value: []byte("lost"), RaftIndex: catalog.RaftIndex{ModifyIndex: 4}}}},
		// Fails after writing its node: the check names no service.
		{Register: &catalog.RegisterRequest{Node: "bad", Address: "10.0.0.9",
			Checks: []*catalog.Check{{CheckID: "c", Name: "c", Status: catalog.HealthPassing, ServiceID: "nope"}}}},
		{Register: &catalog.RegisterRequest{Node: "n1", Address: "10.0.0.1",
			Service: &catalog.Service{ID: "web1", Service: "web", Port: 80}}},
		// The first CAS of a new key wins, the second is refused.
		{KV: &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "new", Value: []byte("first")}}},
		{KV: &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "new", Value: []byte("second")}}},
		// Sees the key the first write of the batch set, at the batch's index.
		{KV: &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "a", Value: []byte("2"), RaftIndex: catalog.RaftIndex{ModifyIndex: idx}}}},
		{Txn: &catalog.TxnRequest{Ops: []catalog.TxnOp{
			{KV: &catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "txn/x", Value: []byte("x")}}},
			{KV: &catalog.KVRequest{Op: catalog.KVCheckNotExists, Entry: catalog.KVEntry{Key: "held"}}},
		}}},
		{KV: &catalog.KVRequest{Op: catalog.KVOp("bogus"), Entry: catalog.KVEntry{Key: "z"}}},
	}
	res := s.ApplyBatch(idx, at, writes)
	if len(res) != len(writes) {
		t.Fatalf("got %d results, want %d", len(res), len(writes))
	}
	for i, want := range []any{true, false, nil, nil, true, false, true} {
		if res[i].Value != want || (i != 2 && res[i].Err != nil) {
			t.Errorf("write %d: got %v, %v; want %v, no error", i, res[i].Value, res[i].Err, want)
		}
	}
	if !errors.Is(res[2].Err, catalog.ErrNotFound) {
		t.Errorf("write 2: got error %v, want ErrNotFound", res[2].Err)
	}
	if r, ok := res[7].Value.(*catalog.TxnResponse); !ok || len(r.Errors) == 0 || res[7].Err != nil {
		t.Errorf("write 7: got %#v, %v; want a failed transaction", res[7].Value, res[7].Err)
	}
	if res[8].Err == nil {
		t.Errorf("write 8: got no error for an unknown operation")
	}

	for key, want := range map[string]string{"a": "2", "held": "old", "new": "first"} {
		_, e := kvGet(t, s, nil, key)
		if e == nil || string(e.Value) != want {
			t.Errorf("key %q: got %+v, want value %q", key, e, want)
		}
	}
	for _, key := range []string{"txn/x", "z"} {
		if _, e := kvGet(t, s, nil, key); e != nil {
			t.Errorf("key %q: got %+v, want none (its write failed)", key, e)
		}
	}
	if _, n, _ := s.Node(nil, "bad"); n != nil {
		t.Errorf("node bad: got %+v, want none (its registration failed)", n)
	}
	_, n, err := s.Node(nil, "n1")
	if err != nil || n == nil || n.ModifyIndex != idx {
		t.Errorf("node n1: got %+v, %v; want it at index %d", n, err, idx)
	}
	// One change, at the batch's index, naming what the batch touched.
	ch := s.ChangesSince(nil, 5)
	if ch.Reset || ch.Index != idx || !slices.Contains(ch.Services, "web") || !slices.Contains(ch.Nodes, "n1") {
		t.Errorf("changes since 5: got %+v, want index %d naming web and n1", ch, idx)
	}
	if got := s.LastIndex(); got != idx {
		t.Errorf("LastIndex: got %d, want %d", got, idx)
	}
}

// TestApplyBatchAllFail: a batch in which nothing applies leaves the
// store as it was: no index moves, no change is logged.
func TestApplyBatchAllFail(t *testing.T) {
	s := newStore(t)
	mustKVSet(t, s, 4, "k", "v")
	if err := s.RegisterAt(5, time.Time{}, &catalog.RegisterRequest{Node: "n0", Address: "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	res := s.ApplyBatch(6, time.Time{}, []catalog.Write{
		{KV: &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "k", Value: []byte("x"), RaftIndex: catalog.RaftIndex{ModifyIndex: 1}}}},
		{Register: &catalog.RegisterRequest{Node: "missing", SkipNodeUpdate: true}},
	})
	if res[0].Value != false || res[0].Err != nil || !errors.Is(res[1].Err, catalog.ErrNotFound) {
		t.Errorf("got %+v, want a refusal and ErrNotFound", res)
	}
	if got := s.LastIndex(); got != 5 {
		t.Errorf("LastIndex: got %d, want 5", got)
	}
	if ch := s.ChangesSince(nil, 5); ch.Index != 5 || len(ch.Nodes) > 0 {
		t.Errorf("changes since 5: got %+v, want none", ch)
	}
}
