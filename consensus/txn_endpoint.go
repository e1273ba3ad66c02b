package consensus

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Txn is the RPC endpoint of transactions (Consul's Txn): a list of
// key/value operations applied all or none, at one Raft index. Apply
// goes through Raft like a KVS write; Read answers a transaction of reads
// and checks only from this server's store, as a KVS read, never
// blocking.
//
// It rides on a Catalog endpoint of the same server, as KVS does.
// Register it on an rpc.Server under rpc.TxnEndpoint.
//
// With ACLs on, every operation is checked before anything is applied:
// a write needs key:write on its key (a delete-tree write on every key
// under its prefix: acl.Authorizer.KeyWritePrefix), a get and the checks
// key:read; a get-tree's entries are filtered to those the token may
// read, as a KVS List is, and so are all results. Each operation the
// token may not do is an error of the transaction at that operation's
// index (as Consul reports it), and none is applied.
type Txn struct {
	cat *Catalog
}

// NewTxn returns the Txn endpoint riding on cat.
func NewTxn(cat *Catalog) *Txn { return &Txn{cat: cat} }

// Apply applies a transaction once committed. reply.Errors is set when an
// operation failed or was not allowed: then nothing was applied and
// reply.Results is empty. An invalid transaction (catalog.ValidateTxn) is
// a *catalog.FieldError, and nothing enters the log.
func (t *Txn) Apply(ctx context.Context, args *rpc.TxnApplyRequest, reply *rpc.TxnResponse) error {
	ctx, release := t.cat.requestContext(ctx)
	defer release()
	if done, err := t.cat.forwardDC(ctx, rpc.MethodTxnApply, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	req := &catalog.TxnRequest{Ops: args.Ops}
	if err := catalog.ValidateTxn(req, t.cat.cfg.KVMaxValueSize); err != nil {
		return err
	}
	if done, err := t.cat.forward(ctx, rpc.MethodTxnApply, &args.Forwarded, args, reply, 0); done {
		return err
	}
	authz, err := t.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	if errs := txnDenied(authz, req.Ops); len(errs) > 0 {
		reply.Results, reply.Errors = nil, errs
		return nil
	}
	resp, err := t.cat.srv.ApplyTxn(ctx, req)
	if err != nil {
		return err
	}
	reply.Results, reply.Errors = txnReadable(authz, resp.Results), resp.Errors
	return nil
}

// Read answers a transaction of reads and checks only
// (catalog.TxnRequest.CheckReadOnly: a write in it is a
// *catalog.FieldError on its Verb) as other reads are answered: by the leader, by this
// server with AllowStale, after the leader confirms it leads with
// RequireConsistent. It never blocks: MinQueryIndex is ignored.
func (t *Txn) Read(ctx context.Context, args *rpc.TxnReadRequest, reply *rpc.TxnReadResponse) error {
	ctx, release := t.cat.requestContext(ctx)
	defer release()
	args.MinQueryIndex = 0
	req := &catalog.TxnRequest{Ops: args.Ops}
	if err := catalog.ValidateTxn(req, t.cat.cfg.KVMaxValueSize); err != nil {
		return err
	}
	if err := req.CheckReadOnly(); err != nil {
		return err
	}
	if done, err := t.cat.forwardRead(ctx, rpc.MethodTxnRead, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := t.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	store := t.cat.srv.Store()
	return t.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(catalog.WatchSet) (uint64, error) {
		reply.Results, reply.Errors = nil, txnDenied(authz, req.Ops)
		if len(reply.Errors) > 0 {
			return store.LastIndex(), nil
		}
		idx, resp, err := store.ReadTxn(req)
		if err != nil {
			return 0, err
		}
		reply.Results, reply.Errors = txnReadable(authz, resp.Results), resp.Errors
		return idx, nil
	})
}

// txnDenied returns an error for each operation of ops the token may not
// do (see Txn); none with ACLs off (authz nil).
func txnDenied(authz authorizer, ops []catalog.TxnOp) []catalog.TxnError {
	if authz == nil {
		return nil
	}
	var out []catalog.TxnError
	for i, op := range ops {
		if op.KV == nil {
			continue // ValidateTxn refused it already.
		}
		key := op.KV.Entry.Key
		var err error
		switch op.KV.Op {
		case catalog.KVGetTree:
			// Filtered on the way out (txnReadable).
		case catalog.KVGet, catalog.KVCheckIndex, catalog.KVCheckSession, catalog.KVCheckNotExists:
			if !authz.KeyRead(key) {
				err = denied("key", "read", key)
			}
		case catalog.KVDeleteTree:
			if !authz.KeyWritePrefix(key) {
				err = denied("key", "write", key)
			}
		default:
			if !authz.KeyWrite(key) {
				err = denied("key", "write", key)
			}
		}
		if err != nil {
			out = append(out, catalog.TxnError{OpIndex: i, What: err.Error()})
		}
	}
	return out
}

// txnReadable returns the results whose keys the token may read: all of
// them with ACLs off (authz nil).
func txnReadable(authz authorizer, results []catalog.TxnResult) []catalog.TxnResult {
	if authz == nil {
		return results
	}
	out := make([]catalog.TxnResult, 0, len(results))
	for _, r := range results {
		if r.KV != nil && authz.KeyRead(r.KV.Key) {
			out = append(out, r)
		}
	}
	return out
}

// errTxnOutcome is the error of a transaction the log answered something
// other than its outcome for.
var errTxnOutcome = errors.New("the log did not answer the transaction's outcome")

// ApplyTxn applies req through Raft and returns its outcome: Errors set
// when an operation failed and nothing was applied. It does not validate
// req: the Txn endpoint does (catalog.ValidateTxn).
func (s *Server) ApplyTxn(ctx context.Context, req *catalog.TxnRequest) (*catalog.TxnResponse, error) {
	resp, err := s.applyResponse(ctx, cmdTxn, req)
	if err != nil {
		return nil, fmt.Errorf("transaction of %d operations: %w", len(req.Ops), err)
	}
	out, ok := resp.(*catalog.TxnResponse)
	if !ok || out == nil {
		return nil, fmt.Errorf("transaction of %d operations: got %T: %w: %w", len(req.Ops), resp, errTxnOutcome, rpc.ErrUnknownOutcome)
	}
	return out, nil
}
