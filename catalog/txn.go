package catalog

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-memdb"
)

// This file holds transactions (Consul's /v1/txn): a list of key/value
// operations applied in one write transaction of the state store, at one
// Raft index, all or none. Each operation is the same code a single
// write runs (kvs.go); the reads and checks below exist only here.

// The key/value operations valid only in a transaction: reads and checks
// of the state the transaction's earlier operations left.
const (
	// KVGet returns the entry of Entry.Key, with its value; a missing
	// key fails the transaction.
	KVGet KVOp = "get"
	// KVGetTree returns every entry under the prefix Entry.Key, with
	// their values.
	KVGetTree KVOp = "get-tree"
	// KVCheckIndex fails the transaction unless Entry.Key exists with
	// ModifyIndex Entry.ModifyIndex.
	KVCheckIndex KVOp = "check-index"
	// KVCheckSession fails the transaction unless Entry.Key is locked by
	// Entry.Session.
	KVCheckSession KVOp = "check-session"
	// KVCheckNotExists fails the transaction if Entry.Key exists.
	KVCheckNotExists KVOp = "check-not-exists"
)

// MaxTxnOps is the most operations a transaction may hold (Consul's
// limit of 64), and MaxTxnSize the most bytes its keys, values and
// session IDs may total, so that the command always fits one RPC message
// (8 MiB) with room to spare.
const (
	MaxTxnOps  = 64
	MaxTxnSize = MaxKVValueSize
)

// TxnOp is one operation of a transaction. Exactly one field is set; KV
// is the only kind so far (Consul's Node, Service and Check operations
// are not supported), and more kinds are added as fields.
type TxnOp struct {
	// KV is a key/value operation: any KVOp, including the reads and
	// checks above. For cas, delete-cas and check-index,
	// Entry.ModifyIndex is the index compared (Consul's "Index").
	KV *KVRequest
}

// TxnRequest is a transaction: the command the Raft log carries for it.
type TxnRequest struct {
	Ops []TxnOp
}

// ReadOnly reports whether every operation only reads (get, get-tree and
// the checks): such a transaction is answered from a server's store
// without going through the log.
func (r *TxnRequest) ReadOnly() bool {
	for _, op := range r.Ops {
		if op.KV == nil || kvWriteOp(op.KV.Op) {
			return false
		}
	}
	return true
}

// TxnResult is what one operation answers; operations that answer
// nothing (the deletes, check-not-exists) have none, and get-tree has one
// per entry, so results do not line up with operations.
type TxnResult struct {
	// KV is an entry. Only get and get-tree give its Value; for the
	// writes and checks it is nil (Consul's rule, to keep answers
	// small).
	KV *KVEntry
}

// TxnError is why one operation failed, and with it the transaction.
type TxnError struct {
	// OpIndex is the operation's position in TxnRequest.Ops, from 0.
	OpIndex int
	// What is the reason, worded as Consul words it, e.g. `key "a"
	// doesn't exist`.
	What string
}

// TxnResponse is a transaction's outcome: Results when every operation
// succeeded and the transaction was committed, else Errors (one per failed
// operation, in order) and no Results, nothing having been applied.
type TxnResponse struct {
	Results []TxnResult
	Errors  []TxnError
}

// CheckReadOnly returns nil for a transaction ReadOnly reports true for,
// else a *FieldError on the first operation that is not a read
// ("Ops[2].KV.Verb").
func (r *TxnRequest) CheckReadOnly() error {
	for i, op := range r.Ops {
		at := "Ops[" + strconv.Itoa(i) + "].KV"
		switch {
		case op.KV == nil:
			return fieldErr(at, "is required: only KV operations are supported")
		case kvWriteOp(op.KV.Op):
			return fieldErr(at+".Verb", "must be a read (get, get-tree or a check) in a read-only transaction, got %q", op.KV.Op)
		}
	}
	return nil
}

// ValidateTxn checks a transaction before it enters the log, and returns
// a *FieldError naming the first bad field with the operation's index
// ("Ops[3].KV.Key"): each operation as ValidateKV checks a write (the
// verb is "Verb", as Consul's JSON names it; reads and checks are
// allowed, a get-tree with an empty prefix too; a check-session needs its
// session), at most maxValue bytes of value per operation, at most
// MaxTxnOps operations ("Ops") and MaxTxnSize bytes in all ("Ops").
func ValidateTxn(req *TxnRequest, maxValue int) error {
	if n := len(req.Ops); n > MaxTxnOps {
		return fieldErr("Ops", "must hold at most %d operations, got %d", MaxTxnOps, n)
	}
	total := 0
	for i, op := range req.Ops {
		at := "Ops[" + strconv.Itoa(i) + "]"
		if op.KV == nil {
			return fieldErr(at+".KV", "is required: only KV operations are supported")
		}
		if !kvTxnOp(op.KV.Op) {
			return fieldErr(at+".KV.Verb", "must be set, cas, lock, unlock, get, get-tree, check-index, check-session, check-not-exists, delete, delete-tree or delete-cas, got %q", op.KV.Op)
		}
		kv := op.KV
		if missingSession(kv) {
			// Not refused here: the operation fails ("missing session")
			// and the transaction answers 409 with every operation's
			// error, as Consul's.
			cp := *kv
			cp.Entry.Session = "-"
			kv = &cp
		}
		if err := validateKVEntry(kv, maxValue); err != nil {
			fe := err.(*FieldError)
			return fieldErr(at+".KV."+fe.Field, "%s", fe.Reason)
		}
		total += len(op.KV.Entry.Key) + len(op.KV.Entry.Value) + len(op.KV.Entry.Session)
	}
	if total > MaxTxnSize {
		return fieldErr("Ops", "keys, values and sessions must total at most %d bytes, got %d", MaxTxnSize, total)
	}
	return nil
}

// missingSession reports whether req needs a session it does not name.
func missingSession(req *KVRequest) bool {
	switch req.Op {
	case KVLock, KVUnlock, KVCheckSession:
		return req.Entry.Session == ""
	}
	return false
}

// kvTxnOp reports whether op may be a transaction's operation.
func kvTxnOp(op KVOp) bool {
	switch op {
	case KVGet, KVGetTree, KVCheckIndex, KVCheckSession, KVCheckNotExists:
		return true
	}
	return kvWriteOp(op)
}

// ApplyTxn applies a transaction at Raft index idx, at time at (the log
// entry's time stamp; lock-delays are compared against it as ApplyKV
// does), in one write transaction of the store. Each operation sees what
// the ones before it did. If every operation succeeds the transaction is
// committed and the response holds the results; otherwise nothing is
// applied and the response holds an error for each operation that failed
// (all of them are tried, as Consul does). The request is not validated
// here (ValidateTxn, before the log); an invalid operation just fails.
// The error is for a failure of the store itself, never of an operation.
func (s *Store) ApplyTxn(idx uint64, at time.Time, req *TxnRequest) (*TxnResponse, error) {
	r := s.applyOne(idx, at, Write{Txn: req})
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Value.(*TxnResponse), nil
}

// ReadTxn answers a read-only transaction (TxnRequest.ReadOnly) from the
// store as it is now, with the index of the key/value store to report
// (never 0 once anything was written). A write operation fails as an
// operation error and nothing is written; see ApplyTxn for the rest.
func (s *Store) ReadTxn(req *TxnRequest) (uint64, *TxnResponse, error) {
	// runTxn would write into a read transaction: refuse first.
	if err := req.CheckReadOnly(); err != nil {
		return 0, nil, err
	}
	tx := s.read(nil)
	resp, err := runTxn(tx, 0, time.Time{}, req)
	if err != nil {
		return 0, nil, fmt.Errorf("read transaction: %w", err)
	}
	return maxIndex(tx, tableKVS, kvsDeletedRow), resp, nil
}

// runTxn runs every operation of req in tx and returns the results, or
// the operations' errors (and no results) if any failed. The error is a
// failure of the store itself.
func runTxn(tx *memdb.Txn, idx uint64, at time.Time, req *TxnRequest) (*TxnResponse, error) {
	resp := &TxnResponse{}
	for i, op := range req.Ops {
		if op.KV == nil {
			resp.Errors = append(resp.Errors, TxnError{OpIndex: i, What: "only KV operations are supported"})
			continue
		}
		results, err := kvsTxnOp(tx, idx, at, op.KV)
		var fe *FieldError
		_, isRefused := errors.AsType[*kvRefused](err)
		switch {
		case err == nil:
			resp.Results = append(resp.Results, results...)
		case isRefused, errors.As(err, &fe):
			resp.Errors = append(resp.Errors, TxnError{OpIndex: i, What: err.Error()})
		default:
			return nil, fmt.Errorf("operation %d (%s %q): %w", i, op.KV.Op, op.KV.Entry.Key, err)
		}
	}
	if len(resp.Errors) > 0 {
		resp.Results = nil
	}
	return resp, nil
}

// kvsTxnOp runs one key/value operation of a transaction: the writes as
// a single write runs them (kvsWriteTxn), the reads and checks here.
// Written entries are answered without their value.
func kvsTxnOp(tx *memdb.Txn, idx uint64, at time.Time, req *KVRequest) ([]TxnResult, error) {
	e := &req.Entry
	if missingSession(req) {
		return nil, refused("missing session")
	}
	switch req.Op {
	case KVGet:
		cur, err := kvsExisting(tx, e.Key)
		if err != nil {
			return nil, err
		}
		return []TxnResult{{KV: cur}}, nil
	case KVGetTree:
		var out []TxnResult
		_, err := kvsEach(tx, nil, e.Key, func(cur *KVEntry) { out = append(out, TxnResult{KV: cur}) })
		return out, err
	case KVCheckIndex:
		cur, err := kvsExisting(tx, e.Key)
		if err != nil {
			return nil, err
		}
		if cur.ModifyIndex != e.ModifyIndex {
			return nil, refused("current modify index %d != %d", cur.ModifyIndex, e.ModifyIndex)
		}
		return []TxnResult{{KV: withoutValue(cur)}}, nil
	case KVCheckSession:
		cur, err := kvsExisting(tx, e.Key)
		if err != nil {
			return nil, err
		}
		if cur.Session != e.Session {
			return nil, refused("key %q is not locked by session %q", e.Key, e.Session)
		}
		return []TxnResult{{KV: withoutValue(cur)}}, nil
	case KVCheckNotExists:
		cur, err := kvsFirst(tx, e.Key)
		if err != nil {
			return nil, err
		}
		if cur != nil {
			return nil, refused("key %q exists", e.Key)
		}
		return nil, nil
	}
	if !kvWriteOp(req.Op) {
		return nil, refused("unknown KV verb %q", req.Op)
	}
	written, err := kvsWriteTxn(tx, idx, at, req)
	if err != nil || written == nil {
		return nil, err
	}
	return []TxnResult{{KV: withoutValue(written)}}, nil
}

// kvsExisting returns the entry of key, or a refusal when there is none.
func kvsExisting(tx *memdb.Txn, key string) (*KVEntry, error) {
	cur, err := kvsFirst(tx, key)
	if err == nil && cur == nil {
		err = refused("key %q doesn't exist", key)
	}
	return cur, err
}

// withoutValue returns a copy of e without its value.
func withoutValue(e *KVEntry) *KVEntry {
	cp := *e
	cp.Value = nil
	return &cp
}
