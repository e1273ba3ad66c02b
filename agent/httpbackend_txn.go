package agent

import (
	"context"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Transactions as the HTTP API applies and reads them: through the door,
// as the catalog (httpbackend.go).

var _ httpapi.Txn = httpBackend{}

func (h httpBackend) TxnApply(ctx context.Context, dc string, req *catalog.TxnRequest) (*catalog.TxnResponse, error) {
	var reply rpc.TxnResponse
	args := &rpc.TxnApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Ops: req.Ops}
	if err := h.door.RPC(ctx, rpc.MethodTxnApply, args, &reply); err != nil {
		return nil, err
	}
	return &catalog.TxnResponse{Results: reply.Results, Errors: reply.Errors}, nil
}

func (h httpBackend) TxnRead(ctx context.Context, opts httpapi.QueryOptions, req *catalog.TxnRequest) (*catalog.TxnResponse, httpapi.QueryMeta, error) {
	var reply rpc.TxnReadResponse
	err := h.door.RPC(ctx, rpc.MethodTxnRead, &rpc.TxnReadRequest{QueryOptions: rpcOptions(opts), Ops: req.Ops}, &reply)
	if err != nil {
		return nil, toMeta(reply.QueryMeta), err
	}
	return &catalog.TxnResponse{Results: reply.Results, Errors: reply.Errors}, toMeta(reply.QueryMeta), nil
}
