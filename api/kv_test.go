package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/cairndns/cairn/api"
)

// kvRequest is what the fake agent saw of one request.
type kvRequest struct {
	Method, Path, Query, ContentType string
	Body                             string
}

// kvAgent answers every request with status and body, and records them.
func kvAgent(t *testing.T, status int, body string) (*api.Client, func() []kvRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []kvRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, kvRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		w.Header().Set("X-Consul-Index", "17")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	cfg := api.DefaultConfig()
	cfg.Address = srv.URL
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []kvRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]kvRequest(nil), seen...)
	}
}

func TestKVPutSendsTheRawValue(t *testing.T) {
	c, seen := kvAgent(t, http.StatusOK, "true")
	ok, err := c.KV().CAS(t.Context(), &api.KVPair{Key: "a b/c", Value: []byte(`{"not":"json-encoded"}`), Flags: 3, ModifyIndex: 9}, &api.WriteOptions{Datacenter: "dc2"})
	if err != nil || !ok {
		t.Fatalf("CAS: got %v, %v; want true", ok, err)
	}
	want := kvRequest{Method: http.MethodPut, Path: "/v1/kv/a%20b/c", Query: "cas=9&dc=dc2&flags=3", Body: `{"not":"json-encoded"}`}
	if got := seen(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("request: got %+v, want %+v", got, want)
	}
}

func TestKVGetMissingKey(t *testing.T) {
	c, _ := kvAgent(t, http.StatusNotFound, "")
	p, meta, err := c.KV().Get(t.Context(), "nope", nil)
	if err != nil || p != nil || meta == nil || meta.LastIndex != 17 {
		t.Errorf("Get of a missing key: got %+v, %+v, %v; want nil with index 17", p, meta, err)
	}
	keys, meta, err := c.KV().Keys(t.Context(), "none/", "/", nil)
	if err != nil || keys != nil || meta.LastIndex != 17 {
		t.Errorf("Keys of a missing prefix: got %v, %+v, %v; want none with index 17", keys, meta, err)
	}
}

func TestKVGetDecodesConsulShape(t *testing.T) {
	c, seen := kvAgent(t, http.StatusOK, `[{"LockIndex":0,"Key":"k","Flags":4,"Value":"aGk=","CreateIndex":5,"ModifyIndex":6}]`)
	p, _, err := c.KV().Get(t.Context(), "k", &api.QueryOptions{WaitIndex: 5, AllowStale: true})
	want := &api.KVPair{Key: "k", Flags: 4, Value: []byte("hi"), CreateIndex: 5, ModifyIndex: 6}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("Get: got %+v, %v; want %+v", p, err, want)
	}
	if got := seen(); len(got) != 1 || got[0].Query != "index=5&stale=" {
		t.Errorf("request: got %+v, want ?index=5&stale", got)
	}
}

func TestKVRefusal(t *testing.T) {
	c, _ := kvAgent(t, http.StatusForbidden, `{"error":"Permission denied: token lacks key:write on \"x\""}`)
	err := c.KV().Put(t.Context(), &api.KVPair{Key: "x"}, nil)
	if se, ok := err.(*api.StatusError); !ok || se.Code != http.StatusForbidden {
		t.Errorf("Put refused: got %v, want a 403 StatusError", err)
	}
}
