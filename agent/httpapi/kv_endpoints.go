package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// kvEntry is an entry as GET /v1/kv gives it: Consul's DirEntry, the value
// in base64 (encoding/json's []byte).
type kvEntry struct {
	LockIndex   uint64
	Key         string
	Flags       uint64
	Value       []byte
	Session     string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

func toKVEntry(e *catalog.KVEntry) *kvEntry {
	return &kvEntry{
		LockIndex: e.LockIndex, Key: e.Key, Flags: e.Flags, Value: e.Value, Session: e.Session,
		CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex,
	}
}

// kv answers GET, PUT and DELETE /v1/kv/<key>.
// A bad key or value is a *catalog.FieldError from the servers (a 400
// naming the field).
func (s *Server) kv(w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	switch r.Method {
	case http.MethodPut:
		return s.kvPut(w, r, key)
	case http.MethodDelete:
		return s.kvDelete(w, r, key)
	}
	return s.kvGet(w, r, key)
}

// kvGet answers GET /v1/kv/<key>: the entry in a list of one, with
// ?recurse every entry under the key, with ?keys the keys under it (cut
// at ?separator), with ?raw the value alone. What does not exist is a 404
// with an empty body and the index to block on, as Consul answers; a
// ?keys list of the root is an empty list instead.
func (s *Server) kvGet(w http.ResponseWriter, r *http.Request, key string) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	switch {
	case boolParam(r, "keys"):
		// The keys under key, cut after the first separator past it.
		var reply rpc.KVSKeysResponse
		args := &rpc.KVSListKeysRequest{QueryOptions: opts, Prefix: key, Separator: r.URL.Query().Get("separator")}
		if err := s.door.RPC(r.Context(), rpc.MethodKVSListKeys, args, &reply); err != nil {
			return err
		}
		if len(reply.Keys) == 0 && key != "" {
			return kvNotFound(w, reply.QueryMeta)
		}
		writeRead(w, r, reply.QueryMeta, nonNil(reply.Keys))
		return nil
	case boolParam(r, "recurse"):
		var reply rpc.KVSEntriesResponse
		if err := s.door.RPC(r.Context(), rpc.MethodKVSList, &rpc.KVSListRequest{QueryOptions: opts, Prefix: key}, &reply); err != nil {
			return err
		}
		if len(reply.Entries) == 0 {
			return kvNotFound(w, reply.QueryMeta)
		}
		out := make([]*kvEntry, 0, len(reply.Entries))
		for _, e := range reply.Entries {
			out = append(out, toKVEntry(e))
		}
		writeRead(w, r, reply.QueryMeta, out)
		return nil
	}
	if key == "" {
		return badRequest("key", "is required (the path /v1/kv/<key>); use ?recurse or ?keys to list from the root")
	}
	var reply rpc.KVSEntriesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodKVSGet, &rpc.KVSGetRequest{QueryOptions: opts, Key: key}, &reply); err != nil {
		return err
	}
	meta := reply.QueryMeta
	if len(reply.Entries) == 0 { // the meta still says what to block on
		return kvNotFound(w, meta)
	}
	e := reply.Entries[0]
	if boolParam(r, "raw") {
		setMetaHeaders(w, meta)
		h := w.Header()
		h.Set("Content-Type", "text/plain")
		h.Set("X-Content-Type-Options", "nosniff") // never rendered as HTML
		h.Set("Content-Length", strconv.Itoa(len(e.Value)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(e.Value)
		return nil
	}
	writeRead(w, r, meta, []*kvEntry{toKVEntry(e)})
	return nil
}

func kvNotFound(w http.ResponseWriter, meta rpc.QueryMeta) error {
	setMetaHeaders(w, meta)
	w.WriteHeader(http.StatusNotFound)
	return nil
}

// kvPut answers PUT /v1/kv/<key>: the body is the value; ?flags sets the
// flags, ?cas makes it a check-and-set (0: only if absent), ?acquire=<id>
// also locks the key for session id, ?release=<id> also releases its lock.
// The answer is true, or false for a CAS that did not match or a lock or
// release refused. A value over
// the configured limit (Config.KVMaxValueSize) is a 413.
func (s *Server) kvPut(w http.ResponseWriter, r *http.Request, key string) error {
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	if key == "" {
		return badRequest("key", "is required (the path /v1/kv/<key>)")
	}
	e := catalog.KVEntry{Key: key}
	if e.Flags, err = uintParam(r, "flags"); err != nil {
		return err
	}
	op := catalog.KVSet
	q := r.URL.Query()
	_, acquire := q["acquire"]
	_, release := q["release"]
	_, cas := q["cas"]
	switch {
	case acquire && release, (acquire || release) && cas:
		return badRequest("acquire", "only one of acquire, release and cas may be given")
	case acquire:
		op, e.Session = catalog.KVLock, q.Get("acquire")
	case release:
		op, e.Session = catalog.KVUnlock, q.Get("release")
	}
	if (acquire || release) && e.Session == "" {
		name := "release"
		if acquire {
			name = "acquire"
		}
		return badRequest(name, "must name a session")
	}
	if cas {
		op = catalog.KVCAS
		if e.ModifyIndex, err = uintParam(r, "cas"); err != nil {
			return err
		}
	}
	if e.Value, err = readValue(w, r, s.cfg.KVMaxValueSize); err != nil {
		return err
	}
	return s.kvApply(w, r, dc, op, e)
}

// kvDelete answers DELETE /v1/kv/<key>: ?recurse deletes every key under
// it (from the root when the key is empty), ?cas only if the key's
// ModifyIndex matches. The answer is true, or false for a CAS that did not
// match.
func (s *Server) kvDelete(w http.ResponseWriter, r *http.Request, key string) error {
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	e := catalog.KVEntry{Key: key}
	op := catalog.KVDelete
	switch _, cas := r.URL.Query()["cas"]; {
	case cas && boolParam(r, "recurse"):
		return badRequest("cas", "cannot be combined with recurse: a check-and-set deletes one key")
	case boolParam(r, "recurse"):
		op = catalog.KVDeleteTree
	case cas:
		op = catalog.KVDeleteCAS
		if e.ModifyIndex, err = uintParam(r, "cas"); err != nil {
			return err
		}
	}
	if key == "" && op != catalog.KVDeleteTree {
		return badRequest("key", "is required (the path /v1/kv/<key>); use ?recurse to delete every key")
	}
	return s.kvApply(w, r, dc, op, e)
}

// kvApply writes e to the store of datacenter dc ("" for the agent's)
// once committed and answers whether it was done: false for a CAS that
// did not match (for the CAS operations e.ModifyIndex is the index
// compared) or a lock or release refused.
func (s *Server) kvApply(w http.ResponseWriter, r *http.Request, dc string, op catalog.KVOp, e catalog.KVEntry) error {
	var reply rpc.KVSApplyResponse
	args := &rpc.KVSApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Op: op, Entry: e}
	if err := s.door.RPC(r.Context(), rpc.MethodKVSApply, args, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reply.Result)
	return nil
}

// kvDatacenter reads a write's ?dc.
func kvDatacenter(r *http.Request) (string, error) {
	dc := r.URL.Query().Get("dc")
	if dc != "" {
		if reason := catalog.ValidLabel(dc); reason != "" {
			return "", badRequest("dc", "%s", reason)
		}
	}
	return strings.ToLower(dc), nil
}

// uintParam reads an unsigned integer query parameter, 0 when absent.
func uintParam(r *http.Request, name string) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest(name, "must be a non-negative integer, got %q", v)
	}
	return n, nil
}

// readValue reads a PUT's body, the value, refusing one over limit bytes
// with a 413.
func readValue(w http.ResponseWriter, r *http.Request, limit int) ([]byte, error) {
	tooLarge := &httpError{code: http.StatusRequestEntityTooLarge, body: errorBody{
		Error: "Value: must be at most " + strconv.Itoa(limit) + " bytes", Field: "Value",
		Reason: "must be at most " + strconv.Itoa(limit) + " bytes",
	}}
	if r.ContentLength > int64(limit) {
		return nil, tooLarge
	}
	v, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, badRequest("body", "could not be read: %v", err)
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}
