package catalog

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"
)

// Write is one write of a batch (Store.ApplyBatch): exactly one field is
// set.
type Write struct {
	Register   *RegisterRequest
	Deregister *DeregisterRequest
	KV         *KVRequest
	Session    *SessionRequest
	Txn        *TxnRequest
}

// WriteResult is what one write of a batch came to: Err, or Value as the
// write's own method answers it (KV: whether it was done, a bool; Txn:
// its *TxnResponse; the others nil).
type WriteResult struct {
	Value any
	Err   error
}

// ApplyBatch applies writes, in order, at Raft index idx and time at (the
// log entry's), as Raft's group commit asks: each write comes to what it
// would have come to alone, applied after the ones before it, and a write
// that fails or is refused changes nothing while the others still apply.
// Readers see all of the batch or none of it, at one index, with one entry
// in the change log: a blocking query or feed reader that saw idx has seen
// every write at idx.
//
// The batch runs in one write transaction. A write that fails part way
// (after changing something) spoils the transaction, so it is aborted and
// the batch run again without that write; every server does the same, as
// each sees the same state. Refusals (a CAS that does not match, a lock
// held) change nothing and cost no rerun.
func (s *Store) ApplyBatch(idx uint64, at time.Time, writes []Write) []WriteResult {
	res := make([]WriteResult, len(writes))
	left := make([]bool, len(writes)) // failed or refused: left out of the batch
	st := s.state.Load()
	for {
		tx := st.db.Txn(true)
		tx.TrackChanges()
		rerun, done := false, false
		for i := range writes {
			if left[i] {
				continue
			}
			var clean bool
			res[i], clean = writes[i].apply(tx, idx, at)
			if res[i].Err == nil && res[i].Value != false && !txnFailed(res[i].Value) {
				done = true
				continue
			}
			left[i] = true
			if !clean {
				rerun = true
				break
			}
		}
		if rerun {
			tx.Abort()
			continue
		}
		if done {
			st.commit(tx, idx)
		} else {
			tx.Abort()
		}
		return res
	}
}

// txnFailed reports whether v is the response of a transaction that
// failed (nothing of it applies).
func txnFailed(v any) bool {
	r, ok := v.(*TxnResponse)
	return ok && len(r.Errors) > 0
}

// apply runs w in tx. clean reports that a failure or refusal changed
// nothing in tx.
func (w *Write) apply(tx *memdb.Txn, idx uint64, at time.Time) (res WriteResult, clean bool) {
	switch {
	case w.Register != nil:
		return WriteResult{Err: registerTxn(tx, idx, at, w.Register)}, false
	case w.Deregister != nil:
		return WriteResult{Err: deregisterTxn(tx, idx, at, w.Deregister)}, false
	case w.KV != nil:
		if !kvWriteOp(w.KV.Op) {
			return WriteResult{Value: false, Err: errKVOp(w.KV.Op)}, true
		}
		_, err := kvsWriteTxn(tx, idx, at, w.KV)
		if _, refused := errors.AsType[*kvRefused](err); refused {
			// Every refusal is decided before its write changes anything.
			return WriteResult{Value: false}, true
		}
		return WriteResult{Value: err == nil, Err: err}, false
	case w.Session != nil:
		return WriteResult{Err: sessionTxn(tx, idx, at, w.Session)}, false
	case w.Txn != nil:
		resp, err := runTxn(tx, idx, at, w.Txn)
		if err != nil {
			return WriteResult{Err: fmt.Errorf("transaction at index %d: %w", idx, err)}, false
		}
		return WriteResult{Value: resp}, false
	}
	return WriteResult{Err: fieldErr("Write", "names no write")}, true
}

// applyOne applies one write alone (a batch of one) and returns its
// result.
func (s *Store) applyOne(idx uint64, at time.Time, w Write) WriteResult {
	return s.ApplyBatch(idx, at, []Write{w})[0]
}
