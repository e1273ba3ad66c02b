package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// txnOpJSON is one operation of PUT /v1/txn's body, Consul's TxnOp.
// Node, Service and Check are Consul's catalog operations, which cairn
// does not support: one of them is a 400 saying only KV operations are.
type txnOpJSON struct {
	KV      *txnKVOpJSON
	Node    json.RawMessage
	Service json.RawMessage
	Check   json.RawMessage
}

// txnKVOpJSON is Consul's KVTxnOp: Value in base64, Index the index a
// cas, delete-cas or check-index compares. Namespace and Partition
// (Consul Enterprise) are taken only empty or "default".
type txnKVOpJSON struct {
	Verb      catalog.KVOp
	Key       string
	Value     []byte
	Flags     uint64
	Index     uint64
	Session   string
	Namespace string
	Partition string
}

// txnResponseJSON is the answer, Consul's TxnResponse: Results and a null
// Errors when the transaction was applied, a null Results and Errors
// when it was rolled back.
type txnResponseJSON struct {
	Results []txnResultJSON
	Errors  []catalog.TxnError
}

// txnResultJSON is one result: KV an entry as GET /v1/kv gives it, its
// Value null but for get and get-tree.
type txnResultJSON struct {
	KV *kvEntry
}

// txn answers PUT /v1/txn: the body is a JSON array of operations, as
// Consul's. A transaction of only reads and checks is answered as a read
// (?stale, ?consistent, and the X-Consul-Index, -KnownLeader and
// -LastContact headers); any other goes through the log (?dc only). The
// answer is 200 when it was applied, 409 with the errors of the
// operations that failed when it was rolled back, 400 for a malformed
// body or an invalid operation (naming "Ops[i].KV.<field>"), 413 for a
// value over the configured limit (Config.KVMaxValueSize), more than
// catalog.MaxTxnOps operations, or a body too large for them.
//
// A transaction that was rolled back is not an error of the servers: its
// response holds Errors.
func (s *Server) txn(w http.ResponseWriter, r *http.Request) error {
	req, err := s.readTxn(w, r)
	if err != nil {
		return err
	}
	if req.ReadOnly() {
		opts, err := parseQueryOptions(r)
		if err != nil {
			return err
		}
		opts.MinQueryIndex = 0 // read transactions do not block, as in Consul
		var reply rpc.TxnReadResponse
		if err := s.door.RPC(r.Context(), rpc.MethodTxnRead, &rpc.TxnReadRequest{QueryOptions: opts, Ops: req.Ops}, &reply); err != nil {
			return err
		}
		setMetaHeaders(w, reply.QueryMeta)
		writeTxnResponse(w, &catalog.TxnResponse{Results: reply.Results, Errors: reply.Errors})
		return nil
	}
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	// Applied all or nothing, once committed.
	var reply rpc.TxnResponse
	if err := s.door.RPC(r.Context(), rpc.MethodTxnApply, &rpc.TxnApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Ops: req.Ops}, &reply); err != nil {
		return err
	}
	writeTxnResponse(w, &catalog.TxnResponse{Results: reply.Results, Errors: reply.Errors})
	return nil
}

// writeTxnResponse writes resp: 200, or 409 when it holds errors.
func writeTxnResponse(w http.ResponseWriter, resp *catalog.TxnResponse) {
	out := txnResponseJSON{Errors: resp.Errors}
	code := http.StatusOK
	if len(resp.Errors) > 0 {
		code = http.StatusConflict
	} else {
		out.Errors = nil
		out.Results = make([]txnResultJSON, 0, len(resp.Results))
		for _, res := range resp.Results {
			out.Results = append(out.Results, txnResultJSON{KV: toKVEntry(res.KV)})
		}
	}
	writeJSON(w, code, out)
}

// txnBodyLimit is the largest body PUT /v1/txn reads: room for
// catalog.MaxTxnOps values of the configured largest size, in base64,
// within catalog.MaxTxnSize, beside the configured body limit for the
// rest.
func (s *Server) txnBodyLimit() int64 {
	values := min(int64(catalog.MaxTxnOps)*int64(s.cfg.KVMaxValueSize), catalog.MaxTxnSize)
	return s.cfg.MaxBodyBytes + int64(base64.StdEncoding.EncodedLen(int(values)))
}

// readTxn reads and checks PUT /v1/txn's body: what the servers would
// refuse anyway is answered here without asking them, with the status
// Consul answers it with.
func (s *Server) readTxn(w http.ResponseWriter, r *http.Request) (*catalog.TxnRequest, error) {
	limit := s.txnBodyLimit()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge("body", "must be at most %d bytes", limit)
		}
		return nil, badRequest("body", "could not be read: %v", err)
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, badRequest("body", "must be a JSON array of operations, such as [{\"KV\": {\"Verb\": \"get\", \"Key\": \"k\"}}]")
	}
	var ops []txnOpJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ops); err != nil {
		return nil, jsonError(err, limit)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequest("body", "must hold exactly one JSON array")
	}
	if n := len(ops); n > catalog.MaxTxnOps {
		return nil, tooLarge("Ops", "must hold at most %d operations, got %d", catalog.MaxTxnOps, n)
	}
	req := &catalog.TxnRequest{Ops: make([]catalog.TxnOp, 0, len(ops))}
	for i, op := range ops {
		at := "Ops[" + strconv.Itoa(i) + "]"
		switch {
		case given(op.Node), given(op.Service), given(op.Check):
			return nil, badRequest(at, "only KV operations are supported; Node, Service and Check operations are not")
		case op.KV == nil:
			return nil, badRequest(at+".KV", "is required")
		}
		kv := op.KV
		for _, f := range [...]struct{ name, v string }{{"Namespace", kv.Namespace}, {"Partition", kv.Partition}} {
			if f.v != "" && f.v != "default" {
				return nil, badRequest(at+".KV."+f.name, "must be empty or \"default\", got %q", f.v)
			}
		}
		if n := len(kv.Value); n > s.cfg.KVMaxValueSize {
			return nil, tooLarge(at+".KV.Value", "must be at most %d bytes, got %d", s.cfg.KVMaxValueSize, n)
		}
		e := catalog.KVEntry{Key: kv.Key, Value: kv.Value, Flags: kv.Flags, Session: kv.Session}
		e.ModifyIndex = kv.Index
		req.Ops = append(req.Ops, catalog.TxnOp{KV: &catalog.KVRequest{Op: kv.Verb, Entry: e}})
	}
	if err := catalog.ValidateTxn(req, s.cfg.KVMaxValueSize); err != nil {
		return nil, err
	}
	return req, nil
}

// given reports whether a field of an operation was given: present and
// not null (Consul's client sends the kinds it does not use as null).
func given(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// tooLarge is a 413 naming the field that is too large.
func tooLarge(field, format string, args ...any) *httpError {
	he := badRequest(field, format, args...)
	he.code = http.StatusRequestEntityTooLarge
	return he
}
