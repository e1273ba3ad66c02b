package rpc

import "github.com/cairndns/cairn/catalog"

// This file holds the wire types of the Txn endpoint (transactions of
// key/value operations, Consul's Txn), which package consensus serves,
// beside the KVS endpoint's (kv.go). Fields are only ever added.

// TxnEndpoint is the name the Txn endpoint is registered under on the
// Server.
const TxnEndpoint = "Txn"

// The methods of the Txn endpoint, as Pool.Call names them.
const (
	// MethodTxnApply applies a transaction through Raft
	// (TxnApplyRequest → TxnResponse).
	MethodTxnApply = TxnEndpoint + ".Apply"
	// MethodTxnRead answers a transaction of reads and checks only,
	// without Raft (TxnReadRequest → TxnReadResponse).
	MethodTxnRead = TxnEndpoint + ".Read"
)

// TxnApplyRequest is a transaction to apply, all or nothing. Not
// idempotent: it must not be sent twice.
type TxnApplyRequest struct {
	WriteRequest
	Ops       []catalog.TxnOp
	Forwarded bool
}

// TxnResponse is a transaction's outcome (catalog.TxnResponse): Results
// when it was applied, else Errors, one per operation that failed (or
// that the token may not do), and nothing applied.
type TxnResponse struct {
	Results []catalog.TxnResult
	Errors  []catalog.TxnError
}

// TxnReadRequest is a transaction of reads and checks only
// (catalog.TxnRequest.ReadOnly). It never blocks: MinQueryIndex is
// ignored, as Consul ignores it.
type TxnReadRequest struct {
	QueryOptions
	Ops       []catalog.TxnOp
	Forwarded bool
}

// TxnReadResponse is a read-only transaction's outcome, with how current
// it is.
type TxnReadResponse struct {
	QueryMeta
	Results []catalog.TxnResult
	Errors  []catalog.TxnError
}
