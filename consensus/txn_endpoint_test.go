package consensus

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// startTxn starts a KVS harness (startKVS: one server, real Raft) with
// the Txn and Session endpoints registered too.
func startTxn(t *testing.T, tune func(*CatalogConfig)) *endpointHarness {
	t.Helper()
	h := startKVS(t, tune)
	if err := h.rpc.Register(rpc.TxnEndpoint, NewTxn(h.cat)); err != nil {
		t.Fatal(err)
	}
	if err := h.rpc.Register(rpc.SessionEndpoint, NewSession(h.cat)); err != nil {
		t.Fatal(err)
	}
	return h
}

func txnKV(op catalog.KVOp, key, value string, index uint64) catalog.TxnOp {
	return catalog.TxnOp{KV: &catalog.KVRequest{Op: op, Entry: catalog.KVEntry{
		Key: key, Value: []byte(value), RaftIndex: catalog.RaftIndex{ModifyIndex: index},
	}}}
}

func (h *endpointHarness) txnApply(t *testing.T, token string, ops ...catalog.TxnOp) *rpc.TxnResponse {
	t.Helper()
	var reply rpc.TxnResponse
	h.mustCall(t, rpc.MethodTxnApply, &rpc.TxnApplyRequest{WriteRequest: rpc.WriteRequest{Token: token}, Ops: ops}, &reply)
	return &reply
}

func txnResultKeys(rs []catalog.TxnResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.KV.Key)
	}
	return out
}

// TestTxnEndpointApplyAndRead: a transaction goes through Raft at one
// index; one with a failing check applies nothing; a read-only one is
// answered by Read with its meta; Read refuses a write.
func TestTxnEndpointApplyAndRead(t *testing.T) {
	t.Parallel()
	h := startTxn(t, nil)
	h.mustKVApply(t, catalog.KVSet, "app/old", "o", 0, true)

	got := h.txnApply(t, "",
		txnKV(catalog.KVSet, "app/a", "1", 0),
		txnKV(catalog.KVSet, "app/b", "2", 0),
		txnKV(catalog.KVDelete, "app/old", "", 0),
		txnKV(catalog.KVGet, "app/a", "", 0),
	)
	if len(got.Errors) != 0 || !reflect.DeepEqual(txnResultKeys(got.Results), []string{"app/a", "app/b", "app/a"}) {
		t.Fatalf("Apply: got results %v, errors %+v; want app/a, app/b, app/a", txnResultKeys(got.Results), got.Errors)
	}
	if got.Results[0].KV.Value != nil || string(got.Results[2].KV.Value) != "1" {
		t.Errorf("Apply values: set got %q, get got %q; want none and 1", got.Results[0].KV.Value, got.Results[2].KV.Value)
	}
	at := got.Results[0].KV.ModifyIndex
	if got.Results[1].KV.ModifyIndex != at {
		t.Errorf("Apply indexes: app/a at %d, app/b at %d; want one index", at, got.Results[1].KV.ModifyIndex)
	}

	// A failing check-index: the set before it is not applied.
	got = h.txnApply(t, "",
		txnKV(catalog.KVSet, "app/c", "3", 0),
		txnKV(catalog.KVCheckIndex, "app/a", "", at+100),
	)
	if len(got.Errors) != 1 || got.Errors[0].OpIndex != 1 || got.Results != nil {
		t.Fatalf("Apply with a stale check-index: got %+v; want one error at op 1, no results", got)
	}
	if r := h.kvGet(t, &rpc.KVSGetRequest{Key: "app/c"}); len(r.Entries) != 0 {
		t.Errorf("app/c after a rolled-back txn: got %+v, want none", r.Entries)
	}

	var read rpc.TxnReadResponse
	h.mustCall(t, rpc.MethodTxnRead, &rpc.TxnReadRequest{Ops: []catalog.TxnOp{
		txnKV(catalog.KVGetTree, "app/", "", 0),
		txnKV(catalog.KVCheckNotExists, "app/old", "", 0),
	}}, &read)
	if len(read.Errors) != 0 || !reflect.DeepEqual(txnResultKeys(read.Results), []string{"app/a", "app/b"}) {
		t.Errorf("Read: got results %v, errors %+v; want app/a, app/b", txnResultKeys(read.Results), read.Errors)
	}
	if read.Index < at || !read.KnownLeader {
		t.Errorf("Read meta: got %+v, want an index of at least %d and a known leader", read.QueryMeta, at)
	}
	h.mustCall(t, rpc.MethodTxnRead, &rpc.TxnReadRequest{Ops: []catalog.TxnOp{txnKV(catalog.KVGet, "app/nope", "", 0)}}, &read)
	if want := []catalog.TxnError{{OpIndex: 0, What: `key "app/nope" doesn't exist`}}; !reflect.DeepEqual(read.Errors, want) || read.Results != nil {
		t.Errorf("Read of a missing key: got %+v, %+v; want %+v", read.Results, read.Errors, want)
	}

	err := h.call(rpc.MethodTxnRead, &rpc.TxnReadRequest{Ops: []catalog.TxnOp{txnKV(catalog.KVGet, "a", "", 0), txnKV(catalog.KVSet, "a", "", 0)}}, &read)
	expectWireError(t, err, "Read with a set", "Ops[1].KV.Verb", nil)
	err = h.call(rpc.MethodTxnApply, &rpc.TxnApplyRequest{Ops: []catalog.TxnOp{txnKV(catalog.KVSet, "a", "", 0), txnKV(catalog.KVGet, "", "", 0)}}, &rpc.TxnResponse{})
	expectWireError(t, err, "Apply with a get of no key", "Ops[1].KV.Key", nil)
	err = h.call(rpc.MethodTxnApply, &rpc.TxnApplyRequest{Ops: []catalog.TxnOp{txnKV(catalog.KVSet, "a", strings.Repeat("x", catalog.DefaultKVMaxValueSize+1), 0)}}, &rpc.TxnResponse{})
	expectWireError(t, err, "Apply with a large value", "Ops[0].KV.Value", nil)
	if r := h.kvGet(t, &rpc.KVSGetRequest{Key: "a"}); len(r.Entries) != 0 {
		t.Errorf("a after refused transactions: got %+v, want none", r.Entries)
	}
}

// TestTxnEndpointLockThroughSession: a transaction locks a key for a
// session, checks the lock, and unlocks it.
func TestTxnEndpointLockThroughSession(t *testing.T) {
	t.Parallel()
	h := startTxn(t, nil)
	h.registerNode(t, "n1", catalog.HealthPassing)
	var sess rpc.SessionApplyResponse
	h.mustCall(t, rpc.MethodSessionApply, &rpc.SessionApplyRequest{Op: catalog.SessionCreate, Session: catalog.Session{Node: "n1", NodeChecks: []string{GossipCheckID}}}, &sess)

	lock := txnKV(catalog.KVLock, "lk", "held", 0)
	lock.KV.Entry.Session = sess.ID
	check := txnKV(catalog.KVCheckSession, "lk", "", 0)
	check.KV.Entry.Session = sess.ID
	got := h.txnApply(t, "", lock, check)
	if len(got.Errors) != 0 || len(got.Results) != 2 || got.Results[0].KV.Session != sess.ID || got.Results[0].KV.LockIndex != 1 {
		t.Fatalf("lock and check-session: got %+v; want the key held by %s, lock index 1", got, sess.ID)
	}
	unlock := txnKV(catalog.KVUnlock, "lk", "free", 0)
	unlock.KV.Entry.Session = sess.ID
	got = h.txnApply(t, "", unlock, check)
	if len(got.Errors) != 1 || got.Errors[0].OpIndex != 1 {
		t.Fatalf("unlock then check-session: got %+v; want the check at op 1 to fail", got)
	}
	if r := h.kvGet(t, &rpc.KVSGetRequest{Key: "lk"}); len(r.Entries) != 1 || r.Entries[0].Session != sess.ID {
		t.Errorf("lk after the rolled-back unlock: got %+v, want still held by %s", r.Entries, sess.ID)
	}
}

// TestTxnEndpointACL: a token with write on "app/" may apply a
// transaction there; one operation outside fails the whole transaction
// with permission denied at that operation, and nothing is applied; a
// get-tree answers only what the token may read.
func TestTxnEndpointACL(t *testing.T) {
	t.Parallel()
	h := startTxn(t, func(c *CatalogConfig) { c.ACL = ACLConfig{Enabled: true} })
	mgmt, app := h.aclTokens(t, "app", `key_prefix "app/" { policy = "write" }`)

	if got := h.txnApply(t, mgmt, txnKV(catalog.KVSet, "other/x", "o", 0)); len(got.Errors) != 0 {
		t.Fatalf("set other/x with the management token: %+v", got.Errors)
	}
	if got := h.txnApply(t, app, txnKV(catalog.KVSet, "app/x", "a", 0)); len(got.Errors) != 0 || len(got.Results) != 1 {
		t.Fatalf("set app/x with the app token: got %+v, want one result", got)
	}

	got := h.txnApply(t, app,
		txnKV(catalog.KVSet, "app/y", "a", 0),
		txnKV(catalog.KVSet, "other/y", "o", 0),
		txnKV(catalog.KVGet, "other/x", "", 0),
		txnKV(catalog.KVDeleteTree, "", "", 0),
	)
	if got.Results != nil || !reflect.DeepEqual(txnErrorIndexes(got.Errors), []int{1, 2, 3}) {
		t.Fatalf("mixed txn with the app token: got %+v; want errors at ops 1, 2, 3 and no results", got)
	}
	for _, e := range got.Errors {
		if !strings.Contains(e.What, rpc.ErrPermissionDenied.Error()) {
			t.Errorf("error at op %d: got %q, want permission denied", e.OpIndex, e.What)
		}
	}
	for _, key := range []string{"app/y", "other/y"} {
		if r := h.kvGet(t, &rpc.KVSGetRequest{QueryOptions: rpc.QueryOptions{Token: mgmt}, Key: key}); len(r.Entries) != 0 {
			t.Errorf("%s after the denied txn: got %+v, want none", key, r.Entries)
		}
	}
	if r := h.kvGet(t, &rpc.KVSGetRequest{QueryOptions: rpc.QueryOptions{Token: mgmt}, Key: "other/x"}); len(r.Entries) != 1 {
		t.Errorf("other/x after the denied delete-tree: got %+v, want it kept", r.Entries)
	}

	var read rpc.TxnReadResponse
	h.mustCall(t, rpc.MethodTxnRead, &rpc.TxnReadRequest{QueryOptions: rpc.QueryOptions{Token: app}, Ops: []catalog.TxnOp{txnKV(catalog.KVGetTree, "", "", 0)}}, &read)
	if len(read.Errors) != 0 || !reflect.DeepEqual(txnResultKeys(read.Results), []string{"app/x"}) {
		t.Errorf("get-tree of everything with the app token: got %v, %+v; want app/x only", txnResultKeys(read.Results), read.Errors)
	}
	h.mustCall(t, rpc.MethodTxnRead, &rpc.TxnReadRequest{QueryOptions: rpc.QueryOptions{Token: app}, Ops: []catalog.TxnOp{txnKV(catalog.KVCheckNotExists, "other/z", "", 0)}}, &read)
	if len(read.Errors) != 1 || !strings.Contains(read.Errors[0].What, rpc.ErrPermissionDenied.Error()) {
		t.Errorf("check-not-exists of other/z with the app token: got %+v, want permission denied", read.Errors)
	}
}

func txnErrorIndexes(es []catalog.TxnError) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.OpIndex)
	}
	return out
}
