package rpc

import "github.com/cairndns/cairn/catalog"

// This file holds the wire types of the KVS endpoint (the key/value
// store), which package consensus serves, beside the Catalog endpoint's
// (catalog.go) and for the same reason. Fields are only ever added.

// KVSEndpoint is the name the KVS endpoint is registered under on the
// Server.
const KVSEndpoint = "KVS"

// The methods of the KVS endpoint, as Pool.Call names them.
const (
	// MethodKVSApply writes or deletes (KVSApplyRequest → KVSApplyResponse).
	MethodKVSApply = KVSEndpoint + ".Apply"
	// MethodKVSGet reads one key (KVSGetRequest → KVSEntriesResponse).
	MethodKVSGet = KVSEndpoint + ".Get"
	// MethodKVSList reads the entries under a prefix
	// (KVSListRequest → KVSEntriesResponse).
	MethodKVSList = KVSEndpoint + ".List"
	// MethodKVSListKeys reads the keys under a prefix
	// (KVSListKeysRequest → KVSKeysResponse).
	MethodKVSListKeys = KVSEndpoint + ".ListKeys"
)

// KVSApplyRequest is one write: Op says which, Entry what (for the CAS
// operations Entry.ModifyIndex is the index compared; for the deletes only
// Entry.Key is read, a prefix for KVDeleteTree). Not idempotent: a CAS or
// a write after another's must not be sent twice.
type KVSApplyRequest struct {
	WriteRequest
	Op        catalog.KVOp
	Entry     catalog.KVEntry
	Forwarded bool
}

// KVSApplyResponse says whether the write was done: false only for a CAS
// operation whose index did not match.
type KVSApplyResponse struct {
	Result bool
}

// KVSGetRequest asks for one key.
type KVSGetRequest struct {
	QueryOptions
	Key       string
	Forwarded bool
}

// KVSListRequest asks for every entry whose key starts with Prefix.
type KVSListRequest struct {
	QueryOptions
	Prefix    string
	Forwarded bool
}

// KVSListKeysRequest asks for the keys starting with Prefix, cut after
// the first Separator past the prefix when one is given
// (catalog.Store.KVKeys).
type KVSListKeysRequest struct {
	QueryOptions
	Prefix    string
	Separator string
	Forwarded bool
}

// KVSEntriesResponse holds entries sorted by key: none when Get's key does
// not exist (QueryMeta.Index still says what to block on).
type KVSEntriesResponse struct {
	QueryMeta
	Entries []*catalog.KVEntry
}

// KVSKeysResponse holds keys, sorted.
type KVSKeysResponse struct {
	QueryMeta
	Keys []string
}
