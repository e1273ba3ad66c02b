package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
)

// kvCatalog is a fakeCatalog with a key/value store: a real catalog.Store
// written at increasing indexes, reads answered at once (blocking is the
// servers' job, tested there).
type kvCatalog struct {
	fakeCatalog
	store *catalog.Store

	kvMu    sync.Mutex
	idx     uint64
	opts    []queryOpts
	applied []catalog.KVRequest
	dcs     []string
}

var _ kvBackend = (*kvCatalog)(nil)

func newKVCatalog(t *testing.T) *kvCatalog {
	t.Helper()
	s, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	return &kvCatalog{store: s, idx: 10}
}

func (k *kvCatalog) record(opts queryOpts) {
	k.kvMu.Lock()
	defer k.kvMu.Unlock()
	k.opts = append(k.opts, opts)
}

func (k *kvCatalog) KVGet(_ context.Context, opts queryOpts, key string) (*catalog.KVEntry, queryMeta, error) {
	k.record(opts)
	idx, e, err := k.store.KVGet(nil, key)
	return e, queryMeta{Index: idx, KnownLeader: true}, err
}

func (k *kvCatalog) KVList(_ context.Context, opts queryOpts, prefix string) ([]*catalog.KVEntry, queryMeta, error) {
	k.record(opts)
	idx, es, err := k.store.KVList(nil, prefix)
	return es, queryMeta{Index: idx, KnownLeader: true}, err
}

func (k *kvCatalog) KVKeys(_ context.Context, opts queryOpts, prefix, sep string) ([]string, queryMeta, error) {
	k.record(opts)
	idx, keys, err := k.store.KVKeys(nil, prefix, sep)
	return keys, queryMeta{Index: idx, KnownLeader: true}, err
}

func (k *kvCatalog) KVApply(_ context.Context, dc string, op catalog.KVOp, e *catalog.KVEntry) (bool, error) {
	k.kvMu.Lock()
	defer k.kvMu.Unlock()
	req := catalog.KVRequest{Op: op, Entry: *e}
	k.applied = append(k.applied, req)
	k.dcs = append(k.dcs, dc)
	if err := catalog.ValidateKV(&req, catalog.DefaultKVMaxValueSize); err != nil {
		return false, err
	}
	k.idx++
	return k.store.ApplyKV(k.idx, time.Now(), &req)
}

// kvJSON is an entry as the endpoint writes it, decoded.
type kvJSON struct {
	LockIndex   uint64
	Key         string
	Flags       uint64
	Value       []byte
	CreateIndex uint64
	ModifyIndex uint64
}

func decodeKV(t *testing.T, rec *httptest.ResponseRecorder) []kvJSON {
	t.Helper()
	var out []kvJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return out
}

func wantBody(t *testing.T, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	if got := strings.TrimSpace(rec.Body.String()); got != want {
		t.Errorf("got body %q, want %q", got, want)
	}
}

func TestKVPutGetDelete(t *testing.T) {
	kv := newKVCatalog(t)
	h := newServer(t, nil, kv)

	rec := serve(h, http.MethodPut, "/v1/kv/app/config?flags=42", "hello")
	wantStatus(t, rec, http.StatusOK)
	wantBody(t, rec, "true")

	rec = serve(h, http.MethodGet, "/v1/kv/app/config", "")
	wantStatus(t, rec, http.StatusOK)
	got := decodeKV(t, rec)
	want := []kvJSON{{Key: "app/config", Flags: 42, Value: []byte("hello"), CreateIndex: 11, ModifyIndex: 11}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GET: got %+v, want %+v", got, want)
	}
	if idx := rec.Header().Get("X-Consul-Index"); idx != "11" {
		t.Errorf("X-Consul-Index: got %q, want 11", idx)
	}
	// The JSON field names and base64 value are Consul's.
	for _, s := range []string{`"LockIndex":0`, `"Key":"app/config"`, `"Value":"aGVsbG8="`, `"CreateIndex":11`} {
		if !strings.Contains(rec.Body.String(), s) {
			t.Errorf("GET body %s lacks %s", rec.Body, s)
		}
	}

	rec = serve(h, http.MethodGet, "/v1/kv/app/config?raw", "")
	wantStatus(t, rec, http.StatusOK)
	if rec.Body.String() != "hello" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET ?raw: got %q with headers %v, want hello, nosniff", rec.Body, rec.Header())
	}

	// A missing key: 404, empty body, the index to block on.
	rec = serve(h, http.MethodGet, "/v1/kv/nope", "")
	wantStatus(t, rec, http.StatusNotFound)
	if rec.Body.Len() != 0 || rec.Header().Get("X-Consul-Index") == "" {
		t.Errorf("GET of a missing key: got body %q, index %q; want empty with an index", rec.Body, rec.Header().Get("X-Consul-Index"))
	}

	rec = serve(h, http.MethodDelete, "/v1/kv/app/config", "")
	wantStatus(t, rec, http.StatusOK)
	wantBody(t, rec, "true")
	wantStatus(t, serve(h, http.MethodGet, "/v1/kv/app/config", ""), http.StatusNotFound)
}

func TestKVCASOverHTTP(t *testing.T) {
	kv := newKVCatalog(t)
	h := newServer(t, nil, kv)
	for _, tt := range []struct {
		method, target, want string
	}{
		// Every write takes an index, as in Raft, done or not.
		{http.MethodPut, "/v1/kv/k?cas=0", "true"}, // created at 11
		{http.MethodPut, "/v1/kv/k?cas=0", "false"},
		{http.MethodPut, "/v1/kv/k?cas=5", "false"},
		{http.MethodPut, "/v1/kv/k?cas=11", "true"}, // modified at 14
		{http.MethodDelete, "/v1/kv/k?cas=11", "false"},
		{http.MethodDelete, "/v1/kv/k?cas=14", "true"},
	} {
		rec := serve(h, tt.method, tt.target, "v")
		wantStatus(t, rec, http.StatusOK)
		if got := strings.TrimSpace(rec.Body.String()); got != tt.want {
			t.Errorf("%s %s: got %s, want %s", tt.method, tt.target, got, tt.want)
		}
	}
}

func TestKVRecurseKeysAndDeleteTree(t *testing.T) {
	kv := newKVCatalog(t)
	h := newServer(t, nil, kv)
	for _, k := range []string{"app/a", "app/b/c", "app/b/d", "other"} {
		wantStatus(t, serve(h, http.MethodPut, "/v1/kv/"+k, k), http.StatusOK)
	}
	rec := serve(h, http.MethodGet, "/v1/kv/app/?recurse", "")
	wantStatus(t, rec, http.StatusOK)
	var keys []string
	for _, e := range decodeKV(t, rec) {
		keys = append(keys, e.Key)
	}
	if want := []string{"app/a", "app/b/c", "app/b/d"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("?recurse: got %v, want %v", keys, want)
	}
	for _, tt := range []struct {
		target string
		code   int
		want   string
	}{
		{"/v1/kv/app/?keys&separator=/", http.StatusOK, `["app/a","app/b/"]`},
		{"/v1/kv/?keys", http.StatusOK, `["app/a","app/b/c","app/b/d","other"]`},
		{"/v1/kv/?keys&separator=/", http.StatusOK, `["app/","other"]`},
		{"/v1/kv/none/?keys", http.StatusNotFound, ""},
		{"/v1/kv/none/?recurse", http.StatusNotFound, ""},
	} {
		rec := serve(h, http.MethodGet, tt.target, "")
		wantStatus(t, rec, tt.code)
		wantBody(t, rec, tt.want)
	}

	rec = serve(h, http.MethodDelete, "/v1/kv/app/?recurse", "")
	wantStatus(t, rec, http.StatusOK)
	rec = serve(h, http.MethodGet, "/v1/kv/?keys", "")
	wantBody(t, rec, `["other"]`)
	// Deleting everything: an empty key with ?recurse.
	wantStatus(t, serve(h, http.MethodDelete, "/v1/kv/?recurse", ""), http.StatusOK)
	wantBody(t, serve(h, http.MethodGet, "/v1/kv/?keys", ""), `[]`)
}

func TestKVOptionsReachTheBackend(t *testing.T) {
	kv := newKVCatalog(t)
	h := newServer(t, nil, kv)
	wantStatus(t, serve(h, http.MethodGet, "/v1/kv/k?index=7&wait=2s&stale&dc=DC2", ""), http.StatusNotFound)
	got := kv.opts[len(kv.opts)-1]
	if got.MinIndex != 7 || got.MaxWait.String() != "2s" || !got.AllowStale || got.Datacenter != "dc2" {
		t.Errorf("options: got %+v, want index 7, wait 2s, stale, dc2", got)
	}
	wantStatus(t, serve(h, http.MethodPut, "/v1/kv/k?dc=dc2", "v"), http.StatusOK)
	if dc := kv.dcs[len(kv.dcs)-1]; dc != "dc2" {
		t.Errorf("write dc: got %q, want dc2", dc)
	}
}

func TestKVErrors(t *testing.T) {
	kv := newKVCatalog(t)
	h := newServer(t, nil, kv)
	big := strings.Repeat("x", catalog.DefaultKVMaxValueSize+1)
	for _, tt := range []struct {
		method, target, body string
		code                 int
		field                string
	}{
		{http.MethodPut, "/v1/kv/k", big, http.StatusRequestEntityTooLarge, "Value"},
		{http.MethodPut, "/v1/kv/", "v", http.StatusBadRequest, "key"},
		{http.MethodPut, "/v1/kv/k?flags=x", "v", http.StatusBadRequest, "flags"},
		{http.MethodPut, "/v1/kv/k?cas=-1", "v", http.StatusBadRequest, "cas"},
		{http.MethodPut, "/v1/kv/k?acquire=abc", "v", http.StatusBadRequest, "Session"}, // no such session
		{http.MethodPut, "/v1/kv/k?acquire=", "v", http.StatusBadRequest, "acquire"},
		{http.MethodPut, "/v1/kv/k?release", "v", http.StatusBadRequest, "release"},
		{http.MethodPut, "/v1/kv/k?acquire=a&cas=1", "v", http.StatusBadRequest, "acquire"},
		{http.MethodGet, "/v1/kv/", "", http.StatusBadRequest, "key"},
		{http.MethodGet, "/v1/kv/k?index=x", "", http.StatusBadRequest, "index"},
		{http.MethodDelete, "/v1/kv/", "", http.StatusBadRequest, "key"},
		{http.MethodDelete, "/v1/kv/k?cas=x", "", http.StatusBadRequest, "cas"},
		{http.MethodDelete, "/v1/kv/k?cas=1&recurse", "", http.StatusBadRequest, "cas"},
	} {
		rec := serve(h, tt.method, tt.target, tt.body)
		if rec.Code != tt.code {
			t.Errorf("%s %s: got %d, want %d; body %s", tt.method, tt.target, rec.Code, tt.code, rec.Body)
			continue
		}
		if body := errorBody(t, rec); body["field"] != tt.field {
			t.Errorf("%s %s: got field %v, want %s", tt.method, tt.target, body["field"], tt.field)
		}
	}
}

// TestKVKeysAreNotCleaned: a key is whatever follows /v1/kv/. Keys with
// "//", "." or ".." segments are stored and read as written, not answered
// with the mux's redirect to a cleaned path (which clients follow as a GET,
// losing a PUT's value, or to another key).
func TestKVKeysAreNotCleaned(t *testing.T) {
	kv := newKVCatalog(t)
	h := newServer(t, nil, kv)
	keys := []string{"a//b", "a/./b", "a/../b", "a/b/", "a/b"}
	for i, key := range keys {
		rec := serve(h, http.MethodPut, "/v1/kv/"+key, fmt.Sprintf("v%d", i))
		wantStatus(t, rec, http.StatusOK)
		wantBody(t, rec, "true")
	}
	for i, key := range keys {
		rec := serve(h, http.MethodGet, "/v1/kv/"+key+"?raw", "")
		wantStatus(t, rec, http.StatusOK)
		if got, want := rec.Body.String(), fmt.Sprintf("v%d", i); got != want {
			t.Errorf("GET %s: got %q, want %q", key, got, want)
		}
	}
	rec := serve(h, http.MethodGet, "/v1/kv/a?keys", "")
	wantStatus(t, rec, http.StatusOK)
	wantBody(t, rec, `["a/../b","a/./b","a//b","a/b","a/b/"]`)
	rec = serve(h, http.MethodDelete, "/v1/kv/a//b", "")
	wantStatus(t, rec, http.StatusOK)
	wantStatus(t, serve(h, http.MethodGet, "/v1/kv/a//b", ""), http.StatusNotFound)
	wantStatus(t, serve(h, http.MethodGet, "/v1/kv/a/b", ""), http.StatusOK)
	// Every other endpoint is still behind the mux.
	wantStatus(t, serve(h, http.MethodGet, "/v1/kvx", ""), http.StatusNotFound)
}

// blockingKV is a key/value backend whose reads wait for their request to
// end, as a blocking query does, and fail with its context's error.
type blockingKV struct{ *kvCatalog }

func (b blockingKV) KVGet(ctx context.Context, _ queryOpts, _ string) (*catalog.KVEntry, queryMeta, error) {
	<-ctx.Done()
	return nil, queryMeta{}, fmt.Errorf("rpc KVS.Get: %w", ctx.Err())
}

// TestClientGoneIsNotAFailure: a request its client abandoned (a page
// closed during a blocking query) is not logged as a failed request nor
// answered as the server's fault.
func TestClientGoneIsNotAFailure(t *testing.T) {
	var logs bytes.Buffer
	s := newAPI(t, httpapi.DefaultConfig(), httpapi.Deps{Door: fakeDoor{backends: []any{blockingKV{newKVCatalog(t)}}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8500/v1/kv/app?index=5&wait=1m", http.NoBody).WithContext(ctx)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Handler().ServeHTTP(rec, req)
	}()
	cancel()
	<-done
	if rec.Code != 499 {
		t.Errorf("got status %d, want 499", rec.Code)
	}
	if strings.Contains(logs.String(), "request failed") {
		t.Errorf("logged as a failure: %s", logs.String())
	}
}
