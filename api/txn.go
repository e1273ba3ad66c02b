package api

import (
	"context"
	"errors"
	"net/http"
)

// Txn is the /v1/txn endpoint: key/value operations applied all or
// nothing, with the shapes of Consul's api.Txn (each method taking a
// context first). Only KV operations exist: cairn does not support
// Consul's Node, Service and Check operations.
type Txn struct{ c *Client }

// Txn returns the /v1/txn endpoint.
func (c *Client) Txn() *Txn { return &Txn{c: c} }

// KVOp is the verb of a KVTxnOp, Consul's.
type KVOp string

// The verbs of a transaction's key/value operations.
const (
	// KVSet writes Key with Value and Flags.
	KVSet KVOp = "set"
	// KVCAS writes as KVSet only if the key's ModifyIndex is Index (0:
	// only if the key does not exist).
	KVCAS KVOp = "cas"
	// KVLock writes and locks Key for Session.
	KVLock KVOp = "lock"
	// KVUnlock writes and releases Key, if Session holds it.
	KVUnlock KVOp = "unlock"
	// KVGet reads Key; a missing key fails the transaction.
	KVGet KVOp = "get"
	// KVGetTree reads every key under the prefix Key.
	KVGetTree KVOp = "get-tree"
	// KVCheckIndex fails the transaction unless Key's ModifyIndex is
	// Index.
	KVCheckIndex KVOp = "check-index"
	// KVCheckSession fails the transaction unless Session holds Key.
	KVCheckSession KVOp = "check-session"
	// KVCheckNotExists fails the transaction if Key exists.
	KVCheckNotExists KVOp = "check-not-exists"
	// KVDelete deletes Key.
	KVDelete KVOp = "delete"
	// KVDeleteCAS deletes Key only if its ModifyIndex is Index.
	KVDeleteCAS KVOp = "delete-cas"
	// KVDeleteTree deletes every key under the prefix Key.
	KVDeleteTree KVOp = "delete-tree"
)

// KVTxnOp is one key/value operation of a transaction, Consul's.
type KVTxnOp struct {
	Verb KVOp
	Key  string
	// Value is the value to write, at most the agent's limit (512 KiB
	// by default); base64 in JSON.
	Value []byte
	Flags uint64
	// Index is the index cas, delete-cas and check-index compare.
	Index uint64
	// Session is the session of lock, unlock and check-session.
	Session string
}

// KVTxnOps is a list of key/value operations.
type KVTxnOps []*KVTxnOp

// TxnOp is one operation of a transaction; KV is the only kind.
type TxnOp struct {
	KV *KVTxnOp
}

// TxnOps is a transaction: at most 64 operations.
type TxnOps []*TxnOp

// TxnResult is what one operation answered: an entry, whose Value is nil
// but for get and get-tree. Deletes and check-not-exists answer nothing,
// and get-tree one result per entry.
type TxnResult struct {
	KV *KVPair
}

// TxnResults is a transaction's results.
type TxnResults []*TxnResult

// TxnError is why one operation failed: OpIndex is its position in the
// TxnOps, from 0.
type TxnError struct {
	OpIndex int
	What    string
}

// TxnErrors is the errors of a rolled-back transaction.
type TxnErrors []*TxnError

// TxnResponse is a transaction's outcome: Results when it was applied,
// Errors when it was rolled back.
type TxnResponse struct {
	Results TxnResults
	Errors  TxnErrors
}

// errConflict is what doOnce returns, after decoding the body, for a 409
// of a request that allows one.
var errConflict = errors.New("conflict")

// Txn sends ops as one transaction: PUT /v1/txn. It reports true when
// the transaction was applied, false when it was rolled back (the
// response's Errors say which operations failed); an error only when it
// could not be sent or was refused (a *StatusError naming the bad field
// for a 400 or 413). A transaction of only reads and checks is answered
// as a read: q's AllowStale and RequireConsistent apply, and the meta is
// set; for others only q's Datacenter is used and the meta is empty.
func (t *Txn) Txn(ctx context.Context, ops TxnOps, q *QueryOptions) (bool, *TxnResponse, *QueryMeta, error) {
	if ops == nil {
		ops = TxnOps{} // a JSON array, not null
	}
	var out TxnResponse
	meta, err := t.c.do(ctx, request{method: http.MethodPut, path: "/v1/txn", query: q.values(nil), body: ops, conflictOK: true}, &out)
	switch {
	case errors.Is(err, errConflict):
		return false, &out, meta, nil
	case err != nil:
		return false, nil, nil, err
	}
	return true, &out, meta, nil
}
