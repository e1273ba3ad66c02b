package catalog_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

func mustKVSet(t *testing.T, s *catalog.Store, idx uint64, key, value string) {
	t.Helper()
	if err := s.KVSet(idx, &catalog.KVEntry{Key: key, Value: []byte(value)}); err != nil {
		t.Fatalf("KVSet(%d, %q): %v", idx, key, err)
	}
}

func kvGet(t *testing.T, s *catalog.Store, ws catalog.WatchSet, key string) (uint64, *catalog.KVEntry) {
	t.Helper()
	idx, e, err := s.KVGet(ws, key)
	if err != nil {
		t.Fatalf("KVGet(%q): %v", key, err)
	}
	return idx, e
}

func kvKeys(t *testing.T, s *catalog.Store, ws catalog.WatchSet, prefix, sep string) (uint64, []string) {
	t.Helper()
	idx, keys, err := s.KVKeys(ws, prefix, sep)
	if err != nil {
		t.Fatalf("KVKeys(%q, %q): %v", prefix, sep, err)
	}
	return idx, keys
}

func TestKVSetGet(t *testing.T) {
	s := newStore(t)
	if idx, e := kvGet(t, s, nil, "a"); e != nil || idx != 0 {
		t.Fatalf("KVGet of an empty store: got %v at %d, want nil at 0", e, idx)
	}
	if err := s.KVSet(3, &catalog.KVEntry{Key: "app/x", Value: []byte("v1"), Flags: 7, LockIndex: 9, Session: "s"}); err != nil {
		t.Fatal(err)
	}
	mustKVSet(t, s, 4, "app/y", "other")
	idx, e := kvGet(t, s, nil, "app/x")
	want := &catalog.KVEntry{Key: "app/x", Value: []byte("v1"), Flags: 7, RaftIndex: catalog.RaftIndex{CreateIndex: 3, ModifyIndex: 3}}
	if idx != 3 || !reflect.DeepEqual(e, want) {
		t.Errorf("KVGet(app/x): got %+v at %d, want %+v at 3 (LockIndex and Session are not the writer's)", e, idx, want)
	}
	// Keys are case-sensitive.
	if _, e := kvGet(t, s, nil, "APP/x"); e != nil {
		t.Errorf("KVGet(APP/x): got %+v, want none", e)
	}
	// A second write keeps CreateIndex, moves ModifyIndex even for the
	// same value.
	if err := s.KVSet(5, &catalog.KVEntry{Key: "app/x", Value: []byte("v1"), Flags: 7}); err != nil {
		t.Fatal(err)
	}
	if idx, e := kvGet(t, s, nil, "app/x"); idx != 5 || e.CreateIndex != 3 || e.ModifyIndex != 5 {
		t.Errorf("after rewrite: got create %d, modify %d at %d; want 3, 5 at 5", e.CreateIndex, e.ModifyIndex, idx)
	}
	// A missing key answers the table's index.
	if idx, e := kvGet(t, s, nil, "nope"); e != nil || idx != 5 {
		t.Errorf("KVGet(nope): got %v at %d, want nil at 5", e, idx)
	}
}

func TestKVCAS(t *testing.T) {
	s := newStore(t)
	for _, tt := range []struct {
		name string
		idx  uint64
		cas  uint64
		want bool
	}{
		{"cas 0 on an absent key creates", 10, 0, true},
		{"cas 0 on an existing key fails", 11, 0, false},
		{"a stale index fails", 12, 9, false},
		{"the current index writes", 13, 10, true},
		{"the old index no longer does", 14, 10, false},
		{"the new one does", 15, 13, true},
	} {
		done, err := s.KVCAS(tt.idx, &catalog.KVEntry{Key: "k", Value: []byte(tt.name)}, tt.cas)
		if err != nil || done != tt.want {
			t.Errorf("%s: KVCAS(%d, cas %d): got %v, %v; want %v", tt.name, tt.idx, tt.cas, done, err, tt.want)
		}
	}
	_, e := kvGet(t, s, nil, "k")
	if e.ModifyIndex != 15 || e.CreateIndex != 10 || string(e.Value) != "the new one does" {
		t.Errorf("after the CAS writes: got %+v, want create 10, modify 15", e)
	}
	// A cas other than 0 on an absent key fails.
	if done, err := s.KVCAS(16, &catalog.KVEntry{Key: "absent"}, 3); err != nil || done {
		t.Errorf("KVCAS(absent, 3): got %v, %v; want false", done, err)
	}
	// The same through ApplyKV, as the FSM calls it.
	done, err := s.ApplyKV(17, time.Time{}, &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "k", RaftIndex: catalog.RaftIndex{ModifyIndex: 14}}})
	if err != nil || done {
		t.Errorf("ApplyKV(cas 14): got %v, %v; want false", done, err)
	}
}

func TestKVDeleteCAS(t *testing.T) {
	s := newStore(t)
	mustKVSet(t, s, 5, "k", "v")
	if done, err := s.KVDeleteCAS(6, "k", 4); err != nil || done {
		t.Errorf("KVDeleteCAS with a stale index: got %v, %v; want false", done, err)
	}
	if _, e := kvGet(t, s, nil, "k"); e == nil {
		t.Fatal("a failed delete-cas deleted the key")
	}
	if done, err := s.KVDeleteCAS(7, "k", 5); err != nil || !done {
		t.Errorf("KVDeleteCAS with the index: got %v, %v; want true", done, err)
	}
	if _, e := kvGet(t, s, nil, "k"); e != nil {
		t.Fatal("delete-cas left the key")
	}
	if done, err := s.KVDeleteCAS(8, "k", 5); err != nil || !done {
		t.Errorf("KVDeleteCAS of an absent key: got %v, %v; want true (Consul's answer)", done, err)
	}
}

func TestKVListKeysAndDeleteTree(t *testing.T) {
	s := newStore(t)
	for i, k := range []string{"app/a", "app/b/c", "app/b/d", "app/z", "apple", "other/x"} {
		mustKVSet(t, s, uint64(10+i), k, k)
	}
	idx, list, err := s.KVList(nil, "app/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Key)
	}
	if want := []string{"app/a", "app/b/c", "app/b/d", "app/z"}; !reflect.DeepEqual(got, want) || idx != 13 {
		t.Errorf("KVList(app/): got %v at %d, want %v at 13", got, idx, want)
	}
	for _, tt := range []struct {
		prefix, sep string
		want        []string
	}{
		{"app/", "", []string{"app/a", "app/b/c", "app/b/d", "app/z"}},
		{"app/", "/", []string{"app/a", "app/b/", "app/z"}},
		{"", "/", []string{"app/", "apple", "other/"}},
		{"app", "/", []string{"app/", "apple"}},
		{"nothing/", "/", nil},
	} {
		if _, keys := kvKeys(t, s, nil, tt.prefix, tt.sep); !reflect.DeepEqual(keys, tt.want) {
			t.Errorf("KVKeys(%q, %q): got %q, want %q", tt.prefix, tt.sep, keys, tt.want)
		}
	}

	if err := s.KVDeleteTree(20, "app/"); err != nil {
		t.Fatal(err)
	}
	if _, keys := kvKeys(t, s, nil, "", ""); !reflect.DeepEqual(keys, []string{"apple", "other/x"}) {
		t.Errorf("after KVDeleteTree(app/): got %q, want [apple other/x]", keys)
	}
	// An empty list answers the table's index, which the delete moved.
	if idx, list, _ := s.KVList(nil, "app/"); len(list) != 0 || idx != 20 {
		t.Errorf("KVList(app/) after the delete: got %d entries at %d, want 0 at 20", len(list), idx)
	}
	// Deleting nothing moves nothing.
	if err := s.KVDeleteTree(21, "none/"); err != nil {
		t.Fatal(err)
	}
	if idx, _, _ := s.KVList(nil, "none/"); idx != 20 {
		t.Errorf("index after deleting nothing: got %d, want 20", idx)
	}
	if err := s.KVDeleteTree(22, ""); err != nil {
		t.Fatal(err)
	}
	if _, keys := kvKeys(t, s, nil, "", ""); len(keys) != 0 {
		t.Errorf("after KVDeleteTree(\"\"): got %q, want none", keys)
	}
}

// TestKVBlockingIndexMovesOnDelete: a blocking read on a key or a prefix
// wakes on a delete and answers an index past the one it waited on, so
// that the client sees the delete rather than block again.
func TestKVBlockingIndexMovesOnDelete(t *testing.T) {
	s := newStore(t)
	mustKVSet(t, s, 5, "app/a", "1")
	mustKVSet(t, s, 6, "app/b", "2")
	mustKVSet(t, s, 7, "zzz", "3")

	wsKey := catalog.NewWatchSet()
	keyIdx, _ := kvGet(t, s, wsKey, "app/b")
	wsList := catalog.NewWatchSet()
	listIdx, _, err := s.KVList(wsList, "app/")
	if err != nil {
		t.Fatal(err)
	}
	wsOther := catalog.NewWatchSet()
	if _, _, err := s.KVList(wsOther, "zzz"); err != nil {
		t.Fatal(err)
	}
	if keyIdx != 6 || listIdx != 6 {
		t.Fatalf("indexes before: got key %d, list %d; want 6, 6", keyIdx, listIdx)
	}

	if err := s.KVDelete(8, "app/b"); err != nil {
		t.Fatal(err)
	}
	if !fired(t, wsKey, fireWait) || !fired(t, wsList, fireWait) {
		t.Fatal("the watches of the key and of its prefix did not fire on its delete")
	}
	if fired(t, wsOther, quietWait) {
		t.Error("a watch of another prefix fired")
	}
	if idx, e := kvGet(t, s, nil, "app/b"); e != nil || idx <= keyIdx {
		t.Errorf("KVGet after delete: got %v at %d, want nil at an index past %d", e, idx, keyIdx)
	}
	// app/a (ModifyIndex 5) remains: the list's index is still past 6.
	if idx, list, _ := s.KVList(nil, "app/"); len(list) != 1 || idx <= listIdx {
		t.Errorf("KVList after delete: got %d entries at %d, want 1 at an index past %d", len(list), idx, listIdx)
	}
	if idx, _ := kvKeys(t, s, nil, "app/", "/"); idx <= listIdx {
		t.Errorf("KVKeys after delete: got index %d, want one past %d", idx, listIdx)
	}
	// Deleting what is not there does not fire.
	ws := catalog.NewWatchSet()
	kvGet(t, s, ws, "app/a")
	if err := s.KVDelete(9, "app/nothing"); err != nil {
		t.Fatal(err)
	}
	if fired(t, ws, quietWait) {
		t.Error("deleting an absent key fired the watch of another")
	}
}

func TestValidateKV(t *testing.T) {
	big := make([]byte, catalog.DefaultKVMaxValueSize+1)
	for _, tt := range []struct {
		name  string
		req   catalog.KVRequest
		field string // "" for valid
	}{
		{"set", catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "a/b", Value: []byte("v")}}, ""},
		{"largest value", catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "a", Value: big[:catalog.DefaultKVMaxValueSize]}}, ""},
		{"delete-tree of everything", catalog.KVRequest{Op: catalog.KVDeleteTree}, ""},
		{"empty key", catalog.KVRequest{Op: catalog.KVSet}, "Key"},
		{"empty key delete", catalog.KVRequest{Op: catalog.KVDelete}, "Key"},
		{"leading slash", catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "/a"}}, "Key"},
		{"value too large", catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: "a", Value: big}}, "Value"},
		{"unknown op", catalog.KVRequest{Op: "steal", Entry: catalog.KVEntry{Key: "a"}}, "Op"},
		{"lock without a session", catalog.KVRequest{Op: catalog.KVLock, Entry: catalog.KVEntry{Key: "a"}}, "Session"},
		{"unlock without a key", catalog.KVRequest{Op: catalog.KVUnlock, Entry: catalog.KVEntry{Session: "s"}}, "Key"},
		{"lock", catalog.KVRequest{Op: catalog.KVLock, Entry: catalog.KVEntry{Key: "a", Session: "s"}}, ""},
	} {
		err := catalog.ValidateKV(&tt.req, catalog.DefaultKVMaxValueSize)
		fe, ok := errors.AsType[*catalog.FieldError](err)
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: got %v, want nil", tt.name, err)
		case tt.field != "" && (!ok || fe.Field != tt.field):
			t.Errorf("%s: got %v, want a FieldError on %s", tt.name, err, tt.field)
		}
	}
}

func TestKVDumpRestore(t *testing.T) {
	s := newStore(t)
	mustKVSet(t, s, 5, "a", "1")
	mustKVSet(t, s, 6, "b/c", strings.Repeat("x", 100))
	if err := s.KVDelete(7, "gone"); err != nil { // nothing: no index move
		t.Fatal(err)
	}
	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if d.Index != 6 || len(d.KVs) != 2 {
		t.Fatalf("Dump: got index %d with %d keys, want 6 with 2", d.Index, len(d.KVs))
	}
	r := newStore(t)
	if err := r.Restore(d); err != nil {
		t.Fatal(err)
	}
	_, list, err := r.KVList(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := s.KVList(nil, "")
	if !reflect.DeepEqual(list, want) {
		t.Errorf("restored entries: got %+v, want %+v", list, want)
	}
	if got := r.LastIndex(); got != 6 {
		t.Errorf("LastIndex after restore: got %d, want 6", got)
	}
}
