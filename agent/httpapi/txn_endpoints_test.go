package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
)

// txnCatalog is a kvCatalog with transactions: applied to its real store
// at the next index, read from it at once.
type txnCatalog struct {
	*kvCatalog
	applyDCs []string
	reads    []queryOpts
	tokens   []string
}

var _ txnBackend = (*txnCatalog)(nil)

func newTxnCatalog(t *testing.T) *txnCatalog { return &txnCatalog{kvCatalog: newKVCatalog(t)} }

func (c *txnCatalog) TxnApply(ctx context.Context, dc string, req *catalog.TxnRequest) (*catalog.TxnResponse, error) {
	c.kvMu.Lock()
	defer c.kvMu.Unlock()
	c.applyDCs = append(c.applyDCs, dc)
	c.tokens = append(c.tokens, acl.TokenFromContext(ctx))
	if err := catalog.ValidateTxn(req, catalog.DefaultKVMaxValueSize); err != nil {
		return nil, err
	}
	c.idx++
	return c.store.ApplyTxn(c.idx, time.Now(), req)
}

func (c *txnCatalog) TxnRead(ctx context.Context, opts queryOpts, req *catalog.TxnRequest) (*catalog.TxnResponse, queryMeta, error) {
	c.kvMu.Lock()
	defer c.kvMu.Unlock()
	c.reads = append(c.reads, opts)
	c.tokens = append(c.tokens, acl.TokenFromContext(ctx))
	idx, resp, err := c.store.ReadTxn(req)
	return resp, queryMeta{Index: idx, KnownLeader: true, LastContact: 3 * time.Millisecond}, err
}

// txnBody is PUT /v1/txn's answer, decoded.
type txnBody struct {
	Results []struct{ KV *kvJSON }
	Errors  []struct {
		OpIndex int
		What    string
	}
}

func putTxn(h http.Handler, target, body string) *httptest.ResponseRecorder {
	return serve(h, http.MethodPut, target, body)
}

// TestTxnEndpointApplied: a write transaction is 200 with Consul's shape:
// Results with each entry (Value null but for get), Errors null; ?dc and
// the X-Consul-Token reach the backend; no read meta headers.
func TestTxnEndpointApplied(t *testing.T) {
	c := newTxnCatalog(t)
	h := newServer(t, nil, c)
	req := httptest.NewRequest(http.MethodPut, "/v1/txn?dc=DC2", strings.NewReader(`[
		{"KV": {"Verb": "set", "Key": "app/a", "Value": "aGVsbG8=", "Flags": 7}},
		{"KV": {"Verb": "cas", "Key": "app/b", "Value": "Yg==", "Index": 0}},
		{"KV": {"Verb": "get", "Key": "app/a"}},
		{"KV": {"Verb": "delete", "Key": "nothing"}}
	]`))
	req.Header.Set("X-Consul-Token", "secret")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusOK)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if got := string(raw["Errors"]); got != "null" {
		t.Errorf("Errors: got %s, want null", got)
	}
	got := decode[txnBody](t, rec)
	want := []kvJSON{
		{Key: "app/a", Flags: 7, CreateIndex: 11, ModifyIndex: 11},
		{Key: "app/b", CreateIndex: 11, ModifyIndex: 11},
		{Key: "app/a", Flags: 7, Value: []byte("hello"), CreateIndex: 11, ModifyIndex: 11},
	}
	var gotKV []kvJSON
	for _, r := range got.Results {
		gotKV = append(gotKV, *r.KV)
	}
	if !reflect.DeepEqual(gotKV, want) {
		t.Errorf("Results:\n got %+v\nwant %+v", gotKV, want)
	}
	if !strings.Contains(rec.Body.String(), `"Value":null`) || !strings.Contains(rec.Body.String(), `"Value":"aGVsbG8="`) {
		t.Errorf("body %s: want a null Value for the set and base64 for the get", rec.Body)
	}
	if !reflect.DeepEqual(c.applyDCs, []string{"dc2"}) || !reflect.DeepEqual(c.tokens, []string{"secret"}) {
		t.Errorf("backend got dcs %v, tokens %v; want [dc2], [secret]", c.applyDCs, c.tokens)
	}
	if v := rec.Header().Get("X-Consul-KnownLeader"); v != "" {
		t.Errorf("a write txn has X-Consul-KnownLeader %q, want none", v)
	}
}

// TestTxnEndpointRolledBack: a transaction with a failing operation is a
// 409 with Results null and the error at its index; nothing is applied.
func TestTxnEndpointRolledBack(t *testing.T) {
	c := newTxnCatalog(t)
	h := newServer(t, nil, c)
	rec := putTxn(h, "/v1/txn", `[
		{"KV": {"Verb": "set", "Key": "app/a", "Value": "YQ=="}},
		{"KV": {"Verb": "check-index", "Key": "app/a", "Index": 99}}
	]`)
	wantStatus(t, rec, http.StatusConflict)
	want := `{"Results":null,"Errors":[{"OpIndex":1,"What":"current modify index 11 != 99"}]}`
	if got := strings.TrimSpace(rec.Body.String()); got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
	if _, e, _ := c.store.KVGet(nil, "app/a"); e != nil {
		t.Errorf("app/a after a rolled-back txn: got %+v, want none", e)
	}
}

// TestTxnEndpointReadOnly: a transaction of reads is answered as a read:
// ?stale reaches the backend, the meta headers are set, a missing key is
// a 409.
func TestTxnEndpointReadOnly(t *testing.T) {
	c := newTxnCatalog(t)
	h := newServer(t, nil, c)
	wantStatus(t, putTxn(h, "/v1/txn", `[{"KV": {"Verb": "set", "Key": "r/a", "Value": "YQ=="}}]`), http.StatusOK)

	rec := putTxn(h, "/v1/txn?stale", `[{"KV": {"Verb": "get-tree", "Key": "r/"}}, {"KV": {"Verb": "check-not-exists", "Key": "r/b"}}]`)
	wantStatus(t, rec, http.StatusOK)
	got := decode[txnBody](t, rec)
	if len(got.Results) != 1 || got.Results[0].KV.Key != "r/a" || string(got.Results[0].KV.Value) != "a" {
		t.Errorf("read txn results: got %+v, want r/a with its value", got.Results)
	}
	for name, want := range map[string]string{"X-Consul-Index": "11", "X-Consul-KnownLeader": "true", "X-Consul-LastContact": "3"} {
		if v := rec.Header().Get(name); v != want {
			t.Errorf("%s: got %q, want %q", name, v, want)
		}
	}
	if len(c.reads) != 1 || !c.reads[0].AllowStale || len(c.applyDCs) != 1 {
		t.Errorf("backend reads %+v, applies %d; want one stale read, the one earlier apply", c.reads, len(c.applyDCs))
	}

	rec = putTxn(h, "/v1/txn?consistent", `[{"KV": {"Verb": "get", "Key": "r/missing"}}]`)
	wantStatus(t, rec, http.StatusConflict)
	if want := `{"Results":null,"Errors":[{"OpIndex":0,"What":"key \"r/missing\" doesn't exist"}]}`; strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("get of a missing key: got %s, want %s", rec.Body, want)
	}
	if !c.reads[1].RequireConsistent || rec.Header().Get("X-Consul-Index") == "" {
		t.Errorf("consistent read txn: backend got %+v, index header %q", c.reads[1], rec.Header().Get("X-Consul-Index"))
	}
	wantStatus(t, putTxn(h, "/v1/txn?stale&consistent", `[{"KV": {"Verb": "get", "Key": "r/a"}}]`), http.StatusBadRequest)
}

// TestTxnEndpointRefused: malformed bodies and invalid operations are a
// 400 naming the field, too large ones a 413; none reaches the backend.
func TestTxnEndpointRefused(t *testing.T) {
	c := newTxnCatalog(t)
	cfg := testConfig()
	cfg.KVMaxValueSize = 4
	cfg.MaxBodyBytes = 64 << 10 // room for too many operations
	s := newAPI(t, cfg, httpapi.Deps{Door: fakeDoor{backends: []any{c, fakeStatus("10.0.0.1:8300")}}})
	h := s.Handler()
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"KV": {"Verb": "get", "Key": "k"}},`, catalog.MaxTxnOps+1), ",") + "]"
	for _, tt := range []struct {
		name, body string
		code       int
		field      string
	}{
		{"not JSON", `{`, http.StatusBadRequest, "body"},
		{"an object", `{"KV": {}}`, http.StatusBadRequest, "body"},
		{"empty body", ``, http.StatusBadRequest, "body"},
		{"trailing data", `[] []`, http.StatusBadRequest, "body"},
		{"unknown field", `[{"KV": {"Verb": "get", "Key": "k", "Colour": 1}}]`, http.StatusBadRequest, "Colour"},
		{"wrong type", `[{"KV": {"Verb": "get", "Key": "k", "Flags": "x"}}]`, http.StatusBadRequest, "KV.Flags"},
		{"a Node op", `[{"KV": {"Verb": "get", "Key": "k"}}, {"Node": {"Verb": "get", "Node": {"Node": "n"}}}]`, http.StatusBadRequest, "Ops[1]"},
		{"a Service op", `[{"Service": {"Verb": "delete", "Node": "n", "Service": {"ID": "s"}}}]`, http.StatusBadRequest, "Ops[0]"},
		{"no KV", `[{}]`, http.StatusBadRequest, "Ops[0].KV"},
		{"unknown verb", `[{"KV": {"Verb": "steal", "Key": "k"}}]`, http.StatusBadRequest, "Ops[0].KV.Verb"},
		{"no key", `[{"KV": {"Verb": "get", "Key": "a"}}, {"KV": {"Verb": "set", "Key": ""}}]`, http.StatusBadRequest, "Ops[1].KV.Key"},
		{"a namespace", `[{"KV": {"Verb": "get", "Key": "k", "Namespace": "team"}}]`, http.StatusBadRequest, "Ops[0].KV.Namespace"},
		{"value too large", `[{"KV": {"Verb": "set", "Key": "k", "Value": "MTIzNDU="}}]`, http.StatusRequestEntityTooLarge, "Ops[0].KV.Value"},
		{"too many ops", many, http.StatusRequestEntityTooLarge, "Ops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := putTxn(h, "/v1/txn", tt.body)
			if rec.Code != tt.code {
				t.Fatalf("got status %d, want %d; body %s", rec.Code, tt.code, rec.Body)
			}
			if got := errorBody(t, rec)["field"]; got != tt.field {
				t.Errorf("field: got %v, want %q (body %s)", got, tt.field, rec.Body)
			}
		})
	}
	if len(c.applyDCs)+len(c.reads) != 0 {
		t.Errorf("refused bodies reached the backend: %d applies, %d reads", len(c.applyDCs), len(c.reads))
	}
	// The body limit leaves room for the values; past it is a 413.
	huge := `[{"KV": {"Verb": "get", "Key": "` + strings.Repeat("k", int(cfg.MaxBodyBytes)+catalog.MaxTxnOps*8) + `"}}]`
	rec := putTxn(h, "/v1/txn", huge)
	if rec.Code != http.StatusRequestEntityTooLarge || errorBody(t, rec)["field"] != "body" {
		t.Errorf("a body over the limit: got %d %s, want 413 on body", rec.Code, rec.Body)
	}
}

// TestTxnEndpointMethods: other methods than PUT are a 405.
func TestTxnEndpointMethods(t *testing.T) {
	rec := serve(newServer(t, nil, newTxnCatalog(t)), http.MethodGet, "/v1/txn", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)
	if got := rec.Header().Get("Allow"); got != http.MethodPut {
		t.Errorf("Allow: got %q, want PUT", got)
	}
}
