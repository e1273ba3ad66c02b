package compat_test

import (
	"strings"
	"testing"

	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientTxn drives /v1/txn with Consul's client against a
// three-server cluster, through a client agent: a mixed transaction is
// applied, one with a failing check-index changes nothing (an earlier set
// in it included), a get of a missing key is rolled back with the error at
// its index, and a read-only transaction is answered as a read.
func TestConsulClientTxn(t *testing.T) {
	t.Parallel()
	c := newConsulClusterClient(t)
	kv, txn := c.KV(), c.Txn()
	if _, err := kv.Put(&consul.KVPair{Key: "txn/old", Value: []byte("o")}, nil); err != nil {
		t.Fatal(err)
	}

	ok, resp, _, err := txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVSet, Key: "txn/a", Value: []byte("1"), Flags: 3}},
		{KV: &consul.KVTxnOp{Verb: consul.KVCAS, Key: "txn/b", Value: []byte("2"), Index: 0}},
		{KV: &consul.KVTxnOp{Verb: consul.KVDelete, Key: "txn/old"}},
		{KV: &consul.KVTxnOp{Verb: consul.KVCheckNotExists, Key: "txn/old"}},
		{KV: &consul.KVTxnOp{Verb: consul.KVGet, Key: "txn/a"}},
	}, nil)
	if err != nil || !ok || len(resp.Errors) != 0 {
		t.Fatalf("mixed Txn: got %v, %+v, %v; want applied", ok, resp, err)
	}
	if len(resp.Results) != 3 {
		t.Fatalf("mixed Txn: got %d results, want 3 (set, cas, get)", len(resp.Results))
	}
	set, get := resp.Results[0].KV, resp.Results[2].KV
	if set.Key != "txn/a" || set.Value != nil || set.Flags != 3 || set.ModifyIndex == 0 {
		t.Errorf("set result: got %+v, want txn/a without its value", set)
	}
	if get.Key != "txn/a" || string(get.Value) != "1" || get.ModifyIndex != set.ModifyIndex || resp.Results[1].KV.ModifyIndex != set.ModifyIndex {
		t.Errorf("get result: got %+v; want value 1, every write at index %d", get, set.ModifyIndex)
	}
	if p, _, err := kv.Get("txn/old", nil); err != nil || p != nil {
		t.Errorf("txn/old after the txn: got %+v, %v; want deleted", p, err)
	}
	applied := set.ModifyIndex

	// A failing check-index: the set before it is not applied.
	ok, resp, _, err = txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVSet, Key: "txn/a", Value: []byte("changed")}},
		{KV: &consul.KVTxnOp{Verb: consul.KVSet, Key: "txn/c", Value: []byte("new")}},
		{KV: &consul.KVTxnOp{Verb: consul.KVCheckIndex, Key: "txn/b", Index: applied + 1000}},
	}, nil)
	if err != nil || ok || len(resp.Errors) != 1 || resp.Errors[0].OpIndex != 2 || len(resp.Results) != 0 {
		t.Fatalf("Txn with a stale check-index: got %v, %+v, %v; want rolled back at op 2", ok, resp, err)
	}
	for key, want := range map[string]string{"txn/a": "1", "txn/c": ""} {
		p, _, err := kv.Get(key, &consul.QueryOptions{RequireConsistent: true})
		switch {
		case err != nil:
			t.Errorf("Get(%s): %v", key, err)
		case want == "" && p != nil:
			t.Errorf("%s after the rolled-back txn: got %+v, want none", key, p)
		case want != "" && (p == nil || string(p.Value) != want || p.ModifyIndex != applied):
			t.Errorf("%s after the rolled-back txn: got %+v, want %q at %d", key, p, want, applied)
		}
	}

	// A get of a missing key: rolled back with the error at its index.
	ok, resp, _, err = txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVSet, Key: "txn/d", Value: []byte("d")}},
		{KV: &consul.KVTxnOp{Verb: consul.KVGet, Key: "txn/missing"}},
	}, nil)
	if err != nil || ok || len(resp.Errors) != 1 || resp.Errors[0].OpIndex != 1 || !strings.Contains(resp.Errors[0].What, `"txn/missing" doesn't exist`) {
		t.Fatalf("Txn with a get of a missing key: got %v, %+v, %v; want rolled back at op 1", ok, resp, err)
	}
	if p, _, err := kv.Get("txn/d", nil); err != nil || p != nil {
		t.Errorf("txn/d after the rolled-back txn: got %+v, %v; want none", p, err)
	}

	// Only reads: answered as a read, with its meta.
	ok, resp, meta, err := txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVGetTree, Key: "txn/"}},
		{KV: &consul.KVTxnOp{Verb: consul.KVCheckIndex, Key: "txn/a", Index: applied}},
	}, &consul.QueryOptions{AllowStale: true})
	if err != nil || !ok || len(resp.Results) != 3 || meta.LastIndex < applied {
		t.Fatalf("read-only Txn: got %v, %+v, %+v, %v; want txn/a, txn/b and the check's entry", ok, resp, meta, err)
	}

	// A malformed operation is refused.
	if _, _, _, err := txn.Txn(consul.TxnOps{{KV: &consul.KVTxnOp{Verb: consul.KVSet}}}, nil); err == nil || !strings.Contains(err.Error(), "Ops[0].KV.Key") {
		t.Errorf("Txn of a set without a key: got %v, want an error naming Ops[0].KV.Key", err)
	}
}

// TestConsulClientTxnLock takes and releases a lock through transactions
// with a session, as Consul's client does it.
func TestConsulClientTxnLock(t *testing.T) {
	t.Parallel()
	c := newConsulClusterClient(t)
	sess := createSession(t, c, nil)
	txn := c.Txn()

	ok, resp, _, err := txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVLock, Key: "txn/lock", Value: []byte("me"), Session: sess}},
		{KV: &consul.KVTxnOp{Verb: consul.KVCheckSession, Key: "txn/lock", Session: sess}},
	}, nil)
	if err != nil || !ok || len(resp.Results) != 2 {
		t.Fatalf("lock Txn: got %v, %+v, %v; want applied with two results", ok, resp, err)
	}
	if r := resp.Results[0].KV; r.Session != sess || r.LockIndex != 1 {
		t.Errorf("lock result: got %+v, want held by %s, LockIndex 1", r, sess)
	}
	p, _, err := c.KV().Get("txn/lock", nil)
	if err != nil || p == nil || p.Session != sess || string(p.Value) != "me" {
		t.Fatalf("txn/lock after the lock: got %+v, %v; want held by %s", p, err, sess)
	}

	// Unlock then check the lock again: rolled back, still held.
	ok, resp, _, err = txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVUnlock, Key: "txn/lock", Session: sess}},
		{KV: &consul.KVTxnOp{Verb: consul.KVCheckSession, Key: "txn/lock", Session: sess}},
	}, nil)
	if err != nil || ok || len(resp.Errors) != 1 || resp.Errors[0].OpIndex != 1 {
		t.Fatalf("unlock and check-session: got %v, %+v, %v; want rolled back at op 1", ok, resp, err)
	}
	if p, _, err := c.KV().Get("txn/lock", nil); err != nil || p == nil || p.Session != sess {
		t.Errorf("txn/lock after the rolled-back unlock: got %+v, %v; want still held", p, err)
	}

	ok, resp, _, err = txn.Txn(consul.TxnOps{
		{KV: &consul.KVTxnOp{Verb: consul.KVUnlock, Key: "txn/lock", Value: []byte("free"), Session: sess}},
	}, nil)
	if err != nil || !ok || len(resp.Results) != 1 || resp.Results[0].KV.Session != "" {
		t.Fatalf("unlock Txn: got %v, %+v, %v; want applied and released", ok, resp, err)
	}
	if p, _, err := c.KV().Get("txn/lock", nil); err != nil || p == nil || p.Session != "" || p.LockIndex != 1 {
		t.Errorf("txn/lock after the unlock: got %+v, %v; want released, LockIndex 1", p, err)
	}
}
