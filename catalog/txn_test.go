package catalog_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// kvOp is a transaction's key/value operation.
func kvOp(op catalog.KVOp, key, value string, index uint64, session string) catalog.TxnOp {
	return catalog.TxnOp{KV: &catalog.KVRequest{Op: op, Entry: catalog.KVEntry{
		Key: key, Value: []byte(value), Session: session, RaftIndex: catalog.RaftIndex{ModifyIndex: index},
	}}}
}

func applyTxn(t *testing.T, s *catalog.Store, idx uint64, at time.Time, ops ...catalog.TxnOp) *catalog.TxnResponse {
	t.Helper()
	resp, err := s.ApplyTxn(idx, at, &catalog.TxnRequest{Ops: ops})
	if err != nil {
		t.Fatalf("ApplyTxn at %d: %v", idx, err)
	}
	return resp
}

func resultKeys(rs []catalog.TxnResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.KV.Key)
	}
	return out
}

func errorIndexes(es []catalog.TxnError) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.OpIndex)
	}
	return out
}

// TestTxnAllOrNothing: a transaction whose last operation fails applies
// none of the ones before it, moves no index, and reports only the
// failed operation; the same writes without it are applied at one index.
func TestTxnAllOrNothing(t *testing.T) {
	s := newStore(t)
	if err := s.KVSet(5, &catalog.KVEntry{Key: "keep", Value: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	before := s.LastIndex()

	resp := applyTxn(t, s, 6, t0,
		kvOp(catalog.KVSet, "a", "1", 0, ""),
		kvOp(catalog.KVDelete, "keep", "", 0, ""),
		kvOp(catalog.KVCheckIndex, "a", "", 99, ""),
	)
	if resp.Results != nil || !reflect.DeepEqual(errorIndexes(resp.Errors), []int{2}) {
		t.Fatalf("failed txn: got results %v, errors %+v; want no results, an error at op 2", resultKeys(resp.Results), resp.Errors)
	}
	if want := "current modify index 6 != 99"; resp.Errors[0].What != want {
		t.Errorf("check-index error: got %q, want %q", resp.Errors[0].What, want)
	}
	if e := getKey(t, s, "a"); e != nil {
		t.Errorf("a after a rolled-back txn: got %+v, want none", e)
	}
	if e := getKey(t, s, "keep"); e == nil || string(e.Value) != "old" {
		t.Errorf("keep after a rolled-back txn: got %+v, want old", e)
	}
	if got := s.LastIndex(); got != before {
		t.Errorf("index after a rolled-back txn: got %d, want %d", got, before)
	}

	resp = applyTxn(t, s, 7, t0,
		kvOp(catalog.KVSet, "a", "1", 0, ""),
		kvOp(catalog.KVSet, "b", "2", 0, ""),
		kvOp(catalog.KVDelete, "keep", "", 0, ""),
		kvOp(catalog.KVCheckIndex, "a", "", 7, ""),
	)
	if len(resp.Errors) != 0 || !reflect.DeepEqual(resultKeys(resp.Results), []string{"a", "b", "a"}) {
		t.Fatalf("txn: got results %v, errors %+v; want a, b, a", resultKeys(resp.Results), resp.Errors)
	}
	for _, k := range []string{"a", "b"} {
		if e := getKey(t, s, k); e == nil || e.ModifyIndex != 7 {
			t.Errorf("%s after the txn: got %+v, want written at 7", k, e)
		}
	}
	if e := getKey(t, s, "keep"); e != nil {
		t.Errorf("keep after the txn: got %+v, want deleted", e)
	}
}

// TestTxnReportsEveryFailure: every failing operation is reported, in
// order, with Consul's wording.
func TestTxnReportsEveryFailure(t *testing.T) {
	s := newStore(t)
	if err := s.KVSet(5, &catalog.KVEntry{Key: "x", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	resp := applyTxn(t, s, 6, t0,
		kvOp(catalog.KVGet, "missing", "", 0, ""),
		kvOp(catalog.KVSet, "ok", "v", 0, ""),
		kvOp(catalog.KVCheckNotExists, "x", "", 0, ""),
		kvOp(catalog.KVCAS, "x", "v2", 4, ""),
		kvOp(catalog.KVCAS, "x", "v2", 0, ""),
		kvOp(catalog.KVDeleteCAS, "x", "", 4, ""),
		kvOp(catalog.KVUnlock, "x", "", 0, "nosuch"),
		kvOp(catalog.KVLock, "x", "", 0, "nosuch"),
		kvOp(catalog.KVCheckSession, "x", "", 0, "nosuch"),
		kvOp("steal", "x", "", 0, ""),
		kvOp(catalog.KVLock, "y", "v", 0, ""),
		kvOp(catalog.KVGet, "y", "", 0, ""),
	)
	want := []catalog.TxnError{
		{OpIndex: 0, What: `key "missing" doesn't exist`},
		{OpIndex: 2, What: `key "x" exists`},
		{OpIndex: 3, What: `failed to set key "x", index is stale`},
		{OpIndex: 4, What: `failed to set key "x", index is stale`},
		{OpIndex: 5, What: `failed to delete key "x", index is stale`},
		{OpIndex: 6, What: `failed to unlock key "x", lock isn't held, or is held by another session`},
		{OpIndex: 7, What: `Session: no session "nosuch"`},
		{OpIndex: 8, What: `key "x" is not locked by session "nosuch"`},
		{OpIndex: 9, What: `unknown KV verb "steal"`},
		// Consul's words for a lock without a session, and the get that
		// then finds nothing (consul/api's TestAPI_KVClientTxn).
		{OpIndex: 10, What: `missing session`},
		{OpIndex: 11, What: `key "y" doesn't exist`},
	}
	if !reflect.DeepEqual(resp.Errors, want) || resp.Results != nil {
		t.Errorf("errors: got %+v, want %+v (and no results, got %v)", resp.Errors, want, resultKeys(resp.Results))
	}
	if e := getKey(t, s, "ok"); e != nil {
		t.Errorf("ok after a failed txn: got %+v, want none", e)
	}
}

// TestTxnVerbs runs each verb and checks its result: writes and checks
// answer the entry without its value, get and get-tree with it, deletes
// and check-not-exists nothing; later operations see earlier ones.
func TestTxnVerbs(t *testing.T) {
	s := sessionStore(t)
	mustCreateSession(t, s, 3, &catalog.Session{ID: "s1", Node: "n1"})
	for i, k := range []string{"t/a", "t/b", "t/c", "other"} {
		if err := s.KVSet(uint64(10+i), &catalog.KVEntry{Key: k, Value: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	resp := applyTxn(t, s, 20, t0,
		kvOp(catalog.KVSet, "new", "n", 0, ""),                 // 0: result without value
		kvOp(catalog.KVCAS, "t/a", "a2", 10, ""),               // 1
		kvOp(catalog.KVCAS, "fresh", "f", 0, ""),               // 2: cas 0 creates
		kvOp(catalog.KVGet, "new", "", 0, ""),                  // 3: sees op 0, with value
		kvOp(catalog.KVLock, "t/b", "locked", 0, "s1"),         // 4
		kvOp(catalog.KVCheckSession, "t/b", "", 0, "s1"),       // 5
		kvOp(catalog.KVUnlock, "t/b", "unlocked", 0, "s1"),     // 6
		kvOp(catalog.KVDelete, "t/c", "", 0, ""),               // 7: no result
		kvOp(catalog.KVDeleteCAS, "other", "", 13, ""),         // 8: no result
		kvOp(catalog.KVCheckNotExists, "t/c", "", 0, ""),       // 9: no result
		kvOp(catalog.KVCheckIndex, "t/a", "", 20, ""),          // 10: sees op 1
		kvOp(catalog.KVGetTree, "t/", "", 0, ""),               // 11: t/a, t/b
		kvOp(catalog.KVDeleteTree, "nothing/here/", "", 0, ""), // 12: no result
	)
	if len(resp.Errors) != 0 {
		t.Fatalf("errors: %+v", resp.Errors)
	}
	type res struct {
		key, value string
		lockIndex  uint64
		session    string
	}
	var got []res
	for _, r := range resp.Results {
		got = append(got, res{r.KV.Key, string(r.KV.Value), r.KV.LockIndex, r.KV.Session})
	}
	want := []res{
		{"new", "", 0, ""},
		{"t/a", "", 0, ""},
		{"fresh", "", 0, ""},
		{"new", "n", 0, ""},
		{"t/b", "", 1, "s1"},
		{"t/b", "", 1, "s1"},
		{"t/b", "", 1, ""},
		{"t/a", "", 0, ""},
		{"t/a", "a2", 0, ""},
		{"t/b", "unlocked", 1, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results:\n got %+v\nwant %+v", got, want)
	}
	for _, r := range resp.Results {
		if r.KV.ModifyIndex == 0 || r.KV.CreateIndex == 0 {
			t.Errorf("result %s: got indexes %+v, want both set", r.KV.Key, r.KV.RaftIndex)
		}
	}
	if e := getKey(t, s, "new"); e == nil || string(e.Value) != "n" {
		t.Errorf("new after the txn: got %+v, want its value stored (results leave it out, the store keeps it)", e)
	}
	for _, k := range []string{"t/c", "other"} {
		if e := getKey(t, s, k); e != nil {
			t.Errorf("%s after the txn: got %+v, want deleted", k, e)
		}
	}
}

// TestTxnLockDelay: a lock in a transaction honours a lock-delay as a
// single lock does: refused while it runs (failing the transaction),
// taken once it is over.
func TestTxnLockDelay(t *testing.T) {
	s := sessionStore(t)
	mustCreateSession(t, s, 3, &catalog.Session{ID: "a", Node: "n1", LockDelay: 10 * time.Second})
	mustCreateSession(t, s, 4, &catalog.Session{ID: "b", Node: "n1"})
	if !lock(t, s, 5, t0, catalog.KVLock, "k", "a") {
		t.Fatal("lock k for a: refused")
	}
	if err := s.ApplySession(6, t0, &catalog.SessionRequest{Op: catalog.SessionDestroy, Session: catalog.Session{ID: "a"}}); err != nil {
		t.Fatal(err)
	}

	resp := applyTxn(t, s, 7, t0.Add(5*time.Second),
		kvOp(catalog.KVSet, "side", "x", 0, ""),
		kvOp(catalog.KVLock, "k", "b", 0, "b"),
	)
	want := []catalog.TxnError{{OpIndex: 1, What: `failed to lock key "k" due to lock delay`}}
	if !reflect.DeepEqual(resp.Errors, want) {
		t.Errorf("lock within the delay: got %+v, want %+v", resp.Errors, want)
	}
	if e := getKey(t, s, "side"); e != nil {
		t.Errorf("side after the refused lock: got %+v, want none", e)
	}
	// The single lock agrees.
	if lock(t, s, 8, t0.Add(5*time.Second), catalog.KVLock, "k", "b") {
		t.Error("single lock within the delay: done, want refused")
	}

	resp = applyTxn(t, s, 9, t0.Add(11*time.Second), kvOp(catalog.KVLock, "k", "b", 0, "b"))
	if len(resp.Errors) != 0 || len(resp.Results) != 1 || resp.Results[0].KV.Session != "b" || resp.Results[0].KV.LockIndex != 2 {
		t.Fatalf("lock after the delay: got %+v, errors %+v; want held by b, lock index 2", resp.Results, resp.Errors)
	}
	if e := getKey(t, s, "k"); e == nil || e.Session != "b" {
		t.Errorf("k after the lock: got %+v, want held by b", e)
	}
}

// TestReadTxn: a read-only transaction answers as ApplyTxn would, and a
// write in it is refused before anything runs.
func TestReadTxn(t *testing.T) {
	s := newStore(t)
	for i, k := range []string{"r/a", "r/b"} {
		if err := s.KVSet(uint64(5+i), &catalog.KVEntry{Key: k, Value: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	idx, resp, err := s.ReadTxn(&catalog.TxnRequest{Ops: []catalog.TxnOp{
		kvOp(catalog.KVGetTree, "r/", "", 0, ""),
		kvOp(catalog.KVCheckIndex, "r/a", "", 5, ""),
	}})
	if err != nil || len(resp.Errors) != 0 || idx != 6 {
		t.Fatalf("ReadTxn: got index %d, %+v, %v; want index 6, no errors", idx, resp, err)
	}
	if got, want := resultKeys(resp.Results), []string{"r/a", "r/b", "r/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ReadTxn results: got %v, want %v", got, want)
	}
	if string(resp.Results[1].KV.Value) != "r/b" || resp.Results[2].KV.Value != nil {
		t.Errorf("ReadTxn values: get-tree got %q, check-index got %q; want r/b and none", resp.Results[1].KV.Value, resp.Results[2].KV.Value)
	}
	_, resp, err = s.ReadTxn(&catalog.TxnRequest{Ops: []catalog.TxnOp{kvOp(catalog.KVGet, "nope", "", 0, "")}})
	if err != nil || len(resp.Errors) != 1 || resp.Results != nil {
		t.Errorf("ReadTxn of a missing key: got %+v, %v; want one error", resp, err)
	}
	_, _, err = s.ReadTxn(&catalog.TxnRequest{Ops: []catalog.TxnOp{kvOp(catalog.KVSet, "w", "", 0, "")}})
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Ops[0].KV.Verb" {
		t.Errorf("ReadTxn with a set: got %v, want a field error on Ops[0].KV.Verb", err)
	}
	if e := getKey(t, s, "w"); e != nil {
		t.Errorf("w after a refused read txn: got %+v, want none", e)
	}
}

func TestTxnReadOnly(t *testing.T) {
	for _, tt := range []struct {
		ops  []catalog.TxnOp
		want bool
	}{
		{nil, true},
		{[]catalog.TxnOp{kvOp(catalog.KVGet, "a", "", 0, ""), kvOp(catalog.KVCheckNotExists, "b", "", 0, "")}, true},
		{[]catalog.TxnOp{kvOp(catalog.KVGet, "a", "", 0, ""), kvOp(catalog.KVDelete, "b", "", 0, "")}, false},
		{[]catalog.TxnOp{{}}, false},
	} {
		if got := (&catalog.TxnRequest{Ops: tt.ops}).ReadOnly(); got != tt.want {
			t.Errorf("ReadOnly(%d ops): got %v, want %v", len(tt.ops), got, tt.want)
		}
	}
}

func TestValidateTxn(t *testing.T) {
	many := make([]catalog.TxnOp, catalog.MaxTxnOps+1)
	for i := range many {
		many[i] = kvOp(catalog.KVSet, "k", "", 0, "")
	}
	for _, tt := range []struct {
		name  string
		ops   []catalog.TxnOp
		field string
	}{
		{"fine", []catalog.TxnOp{kvOp(catalog.KVSet, "a", "v", 0, ""), kvOp(catalog.KVGetTree, "", "", 0, ""), kvOp(catalog.KVDeleteTree, "", "", 0, "")}, ""},
		{"max ops", many[:catalog.MaxTxnOps], ""},
		{"too many ops", many, "Ops"},
		{"no KV", []catalog.TxnOp{kvOp(catalog.KVSet, "a", "", 0, ""), {}}, "Ops[1].KV"},
		{"unknown verb", []catalog.TxnOp{kvOp("steal", "a", "", 0, "")}, "Ops[0].KV.Verb"},
		{"no key", []catalog.TxnOp{kvOp(catalog.KVSet, "a", "", 0, ""), kvOp(catalog.KVSet, "b", "", 0, ""), kvOp(catalog.KVSet, "c", "", 0, ""), kvOp(catalog.KVGet, "", "", 0, "")}, "Ops[3].KV.Key"},
		{"leading slash", []catalog.TxnOp{kvOp(catalog.KVCheckNotExists, "/a", "", 0, "")}, "Ops[0].KV.Key"},
		// The operation fails when applied instead ("missing session").
		{"lock without session", []catalog.TxnOp{kvOp(catalog.KVLock, "a", "", 0, "")}, ""},
		{"check-session without session", []catalog.TxnOp{kvOp(catalog.KVCheckSession, "a", "", 0, "")}, ""},
		{"lock without session, bad key", []catalog.TxnOp{kvOp(catalog.KVLock, "/a", "", 0, "")}, "Ops[0].KV.Key"},
		{"value too large", []catalog.TxnOp{kvOp(catalog.KVSet, "a", string(make([]byte, 11)), 0, "")}, "Ops[0].KV.Value"},
	} {
		err := catalog.ValidateTxn(&catalog.TxnRequest{Ops: tt.ops}, 10)
		var got string
		if fe, ok := errors.AsType[*catalog.FieldError](err); ok {
			got = fe.Field
		} else if err != nil {
			t.Errorf("%s: got %v, want a *FieldError", tt.name, err)
			continue
		}
		if got != tt.field {
			t.Errorf("%s: got field %q (%v), want %q", tt.name, got, err, tt.field)
		}
	}
	half := string(make([]byte, catalog.MaxTxnSize/2+1))
	err := catalog.ValidateTxn(&catalog.TxnRequest{Ops: []catalog.TxnOp{kvOp(catalog.KVSet, "a", half, 0, ""), kvOp(catalog.KVSet, "b", half, 0, "")}}, catalog.MaxKVValueSize)
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Ops" {
		t.Errorf("two values over MaxTxnSize in all: got %v, want a field error on Ops", err)
	}
}
