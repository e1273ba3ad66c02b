package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// KV is the /v1/kv endpoints: the key/value store, with the shapes of
// Consul's api.KV (each method taking a context first).
type KV struct{ c *Client }

// KV returns the /v1/kv endpoints.
func (c *Client) KV() *KV { return &KV{c: c} }

// KVPair is one key and its value (Consul's DirEntry).
type KVPair struct {
	// Key is the entry's name: case-sensitive, not starting with "/".
	Key string
	// CreateIndex and ModifyIndex are the Raft indexes of the key's
	// creation and last write; ModifyIndex is what CAS compares.
	CreateIndex uint64
	ModifyIndex uint64
	// LockIndex counts the locks taken on the key.
	LockIndex uint64
	// Flags is an opaque number for the application.
	Flags uint64
	// Value is the value, at most 512 KiB; base64 in JSON.
	Value []byte
	// Session is the session holding the key's lock ("" for none).
	Session string `json:",omitempty"`
}

// KVPairs is a list of entries, sorted by key.
type KVPairs []*KVPair

// WriteOptions are the options of a write.
type WriteOptions struct {
	// Datacenter to write to; "" means the agent's own (?dc).
	Datacenter string
}

func (w *WriteOptions) values(v url.Values) url.Values {
	if w != nil && w.Datacenter != "" {
		if v == nil {
			v = url.Values{}
		}
		v.Set("dc", w.Datacenter)
	}
	return v
}

// errNotFound is what doOnce returns, with the answer's meta, for a 404 of
// a request that allows one.
var errNotFound = errors.New("not found")

// kvPath is the path of key, each of its segments escaped.
func kvPath(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/v1/kv/" + strings.Join(segs, "/")
}

// Get returns the entry of key, or nil when there is none (the meta still
// says what to block on): GET /v1/kv/<key>.
func (k *KV) Get(ctx context.Context, key string, q *QueryOptions) (*KVPair, *QueryMeta, error) {
	if key == "" {
		return nil, nil, errors.New("kv get: key is empty")
	}
	var out KVPairs
	meta, err := k.c.do(ctx, request{method: http.MethodGet, path: kvPath(key), query: q.values(nil), notFoundOK: true}, &out)
	if errors.Is(err, errNotFound) || err == nil && len(out) == 0 {
		return nil, meta, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return out[0], meta, nil
}

// List returns the entries whose keys start with prefix ("" for all):
// GET /v1/kv/<prefix>?recurse.
func (k *KV) List(ctx context.Context, prefix string, q *QueryOptions) (KVPairs, *QueryMeta, error) {
	v := q.values(url.Values{})
	v.Set("recurse", "")
	var out KVPairs
	meta, err := k.c.do(ctx, request{method: http.MethodGet, path: kvPath(prefix), query: v, notFoundOK: true}, &out)
	if errors.Is(err, errNotFound) {
		return nil, meta, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Keys returns the keys starting with prefix, each cut after the first
// separator past the prefix when separator is not "" (so "a/" with "/"
// lists a directory): GET /v1/kv/<prefix>?keys&separator=<separator>.
func (k *KV) Keys(ctx context.Context, prefix, separator string, q *QueryOptions) ([]string, *QueryMeta, error) {
	v := q.values(url.Values{})
	v.Set("keys", "")
	if separator != "" {
		v.Set("separator", separator)
	}
	var out []string
	meta, err := k.c.do(ctx, request{method: http.MethodGet, path: kvPath(prefix), query: v, notFoundOK: true}, &out)
	if errors.Is(err, errNotFound) {
		return nil, meta, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Put writes p's value and flags: PUT /v1/kv/<key>?flags=<flags>.
func (k *KV) Put(ctx context.Context, p *KVPair, w *WriteOptions) error {
	_, err := k.put(ctx, p, nil, w)
	return err
}

// CAS writes p only if the key's ModifyIndex is p.ModifyIndex, or, with
// p.ModifyIndex 0, only if the key does not exist, and reports whether it
// wrote: PUT /v1/kv/<key>?cas=<index>.
func (k *KV) CAS(ctx context.Context, p *KVPair, w *WriteOptions) (bool, error) {
	return k.put(ctx, p, url.Values{"cas": {strconv.FormatUint(p.ModifyIndex, 10)}}, w)
}

func (k *KV) put(ctx context.Context, p *KVPair, v url.Values, w *WriteOptions) (bool, error) {
	if p.Key == "" {
		return false, errors.New("kv put: key is empty")
	}
	v = w.values(v)
	if p.Flags != 0 {
		if v == nil {
			v = url.Values{}
		}
		v.Set("flags", strconv.FormatUint(p.Flags, 10))
	}
	raw := p.Value
	if raw == nil {
		raw = []byte{}
	}
	var done bool
	_, err := k.c.do(ctx, request{method: http.MethodPut, path: kvPath(p.Key), query: v, raw: raw}, &done)
	return done, err
}

// Acquire writes p's value and flags and locks p.Key for session
// p.Session, and reports whether it did: the key was free or already held
// by that session, and not within a lock-delay. PUT
// /v1/kv/<key>?acquire=<session>.
func (k *KV) Acquire(ctx context.Context, p *KVPair, w *WriteOptions) (bool, error) {
	if p.Session == "" {
		return false, errors.New("kv acquire: session is empty")
	}
	return k.put(ctx, p, url.Values{"acquire": {p.Session}}, w)
}

// Release writes p's value and flags and releases the lock on p.Key if
// session p.Session holds it, and reports whether it did: PUT
// /v1/kv/<key>?release=<session>.
func (k *KV) Release(ctx context.Context, p *KVPair, w *WriteOptions) (bool, error) {
	if p.Session == "" {
		return false, errors.New("kv release: session is empty")
	}
	return k.put(ctx, p, url.Values{"release": {p.Session}}, w)
}

// Delete deletes key; deleting a key that does not exist is not an error:
// DELETE /v1/kv/<key>.
func (k *KV) Delete(ctx context.Context, key string, w *WriteOptions) error {
	if key == "" {
		return errors.New("kv delete: key is empty; DeleteTree(\"\") deletes every key")
	}
	_, err := k.delete(ctx, key, w.values(nil))
	return err
}

// DeleteCAS deletes p.Key only if its ModifyIndex is p.ModifyIndex, and
// reports whether the key is gone: DELETE /v1/kv/<key>?cas=<index>.
func (k *KV) DeleteCAS(ctx context.Context, p *KVPair, w *WriteOptions) (bool, error) {
	if p.Key == "" {
		return false, errors.New("kv delete: key is empty")
	}
	return k.delete(ctx, p.Key, w.values(url.Values{"cas": {strconv.FormatUint(p.ModifyIndex, 10)}}))
}

// DeleteTree deletes every key starting with prefix ("" deletes all):
// DELETE /v1/kv/<prefix>?recurse.
func (k *KV) DeleteTree(ctx context.Context, prefix string, w *WriteOptions) error {
	_, err := k.delete(ctx, prefix, w.values(url.Values{"recurse": {""}}))
	return err
}

func (k *KV) delete(ctx context.Context, key string, v url.Values) (bool, error) {
	var done bool
	_, err := k.c.do(ctx, request{method: http.MethodDelete, path: kvPath(key), query: v}, &done)
	return done, err
}
