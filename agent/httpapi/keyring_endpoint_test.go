package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
)

// keyringCluster is a Cluster that also provides a Keyring: it lists
// pools and records the operations asked of it.
type keyringCluster struct {
	fakeCluster
	pools []httpapi.KeyringResponse
	err   error

	mu    sync.Mutex
	asked []string // "op key"
}

func (c *keyringCluster) Keyring(_ context.Context, op httpapi.KeyringOp, key string) ([]httpapi.KeyringResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, string(op)+" "+key)
	return c.pools, c.err
}

func TestKeyringEndpoint(t *testing.T) {
	cl := &keyringCluster{pools: []httpapi.KeyringResponse{
		{WAN: true, Datacenter: "dc1", Keys: map[string]int{"k1": 3}, PrimaryKeys: map[string]int{"k1": 3}, NumNodes: 3},
		{Datacenter: "dc1", Keys: map[string]int{"k1": 5}, PrimaryKeys: map[string]int{"k1": 5}, NumNodes: 5,
			Messages: map[string]string{"web-1": "did not confirm"}},
	}}
	h := newClusterServer(t, cl)

	rec := serve(h, http.MethodGet, "/v1/operator/keyring", "")
	wantStatus(t, rec, http.StatusOK)
	var got []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("GET: body %s, %v; want two pools", rec.Body, err)
	}
	// Consul's field names, Messages left out when empty.
	if _, ok := got[0]["Messages"]; ok || got[0]["WAN"] != true || got[0]["Segment"] != "" || got[1]["NumNodes"] != 5.0 {
		t.Errorf("GET: got %v; want Consul's KeyringResponse shape", got)
	}
	rec = serve(h, http.MethodGet, "/v1/operator/keyring?local-only=true", "")
	wantStatus(t, rec, http.StatusOK)
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got) != 1 || got[0]["WAN"] != false {
		t.Errorf("GET ?local-only: body %s; want the LAN pool only", rec.Body)
	}

	for _, tc := range []struct{ method, op string }{
		{http.MethodPost, "install"}, {http.MethodPut, "use"}, {http.MethodDelete, "remove"},
	} {
		rec := serve(h, tc.method, "/v1/operator/keyring", `{"Key": "a2V5"}`)
		wantStatus(t, rec, http.StatusOK)
		if rec.Body.Len() != 0 {
			t.Errorf("%s: body %s, want none", tc.method, rec.Body)
		}
		cl.mu.Lock()
		if last := cl.asked[len(cl.asked)-1]; last != tc.op+" a2V5" {
			t.Errorf("%s: asked %q, want %q", tc.method, last, tc.op+" a2V5")
		}
		cl.mu.Unlock()
	}

	rec = serve(h, http.MethodPost, "/v1/operator/keyring", `{}`)
	wantStatus(t, rec, http.StatusBadRequest)
	if body := errorBody(t, rec); body["field"] != "Key" {
		t.Errorf("no key: got %v, want a 400 naming Key", body)
	}
	rec = serve(h, http.MethodPost, "/v1/operator/keyring", `{"Key": "a2V5", "Extra": 1}`)
	wantStatus(t, rec, http.StatusBadRequest)

	cl.err = &catalog.FieldError{Field: "Key", Reason: "gossip key is not installed on web-1"}
	rec = serve(h, http.MethodPut, "/v1/operator/keyring", `{"Key": "a2V5"}`)
	wantStatus(t, rec, http.StatusBadRequest)
	if body := errorBody(t, rec); body["field"] != "Key" || body["reason"] != "gossip key is not installed on web-1" {
		t.Errorf("refused: got %v", body)
	}
	cl.err = errors.New("keyring install: dc1 (LAN): not confirmed by web-1")
	rec = serve(h, http.MethodPost, "/v1/operator/keyring", `{"Key": "a2V5"}`)
	wantStatus(t, rec, http.StatusInternalServerError)

	rec = serve(h, http.MethodPatch, "/v1/operator/keyring", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)
}

func TestKeyringEndpointWithoutKeyring(t *testing.T) {
	rec := serve(newClusterServer(t, &fakeCluster{}), http.MethodGet, "/v1/operator/keyring", "")
	wantStatus(t, rec, http.StatusNotFound)
}
