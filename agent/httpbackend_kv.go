package agent

import (
	"context"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// The key/value store as the HTTP API reads and writes it: through the
// door, as the catalog (httpbackend.go).

var _ httpapi.KV = httpBackend{}

func (h httpBackend) KVGet(ctx context.Context, opts httpapi.QueryOptions, key string) (*catalog.KVEntry, httpapi.QueryMeta, error) {
	var reply rpc.KVSEntriesResponse
	err := h.door.RPC(ctx, rpc.MethodKVSGet, &rpc.KVSGetRequest{QueryOptions: rpcOptions(opts), Key: key}, &reply)
	var e *catalog.KVEntry
	if len(reply.Entries) > 0 {
		e = reply.Entries[0]
	}
	return e, toMeta(reply.QueryMeta), err
}

func (h httpBackend) KVList(ctx context.Context, opts httpapi.QueryOptions, prefix string) ([]*catalog.KVEntry, httpapi.QueryMeta, error) {
	var reply rpc.KVSEntriesResponse
	err := h.door.RPC(ctx, rpc.MethodKVSList, &rpc.KVSListRequest{QueryOptions: rpcOptions(opts), Prefix: prefix}, &reply)
	return reply.Entries, toMeta(reply.QueryMeta), err
}

func (h httpBackend) KVKeys(ctx context.Context, opts httpapi.QueryOptions, prefix, separator string) ([]string, httpapi.QueryMeta, error) {
	var reply rpc.KVSKeysResponse
	args := &rpc.KVSListKeysRequest{QueryOptions: rpcOptions(opts), Prefix: prefix, Separator: separator}
	err := h.door.RPC(ctx, rpc.MethodKVSListKeys, args, &reply)
	return reply.Keys, toMeta(reply.QueryMeta), err
}

func (h httpBackend) KVApply(ctx context.Context, dc string, op catalog.KVOp, e *catalog.KVEntry) (bool, error) {
	var reply rpc.KVSApplyResponse
	args := &rpc.KVSApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Op: op, Entry: *e}
	if err := h.door.RPC(ctx, rpc.MethodKVSApply, args, &reply); err != nil {
		return false, err
	}
	return reply.Result, nil
}
