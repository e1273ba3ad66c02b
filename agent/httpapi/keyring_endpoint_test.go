package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// keyringCluster is a Cluster with a Keyring: it lists
// pools and records the operations asked of it.
type keyringCluster struct {
	fakeCluster
	pools []httpapi.KeyringResponse
	err   error

	mu    sync.Mutex
	asked []string // "op key", and " local-only" when asked so
}

func (c *keyringCluster) Keyring(_ context.Context, op rpc.KeyringOp, key string, localOnly bool) ([]httpapi.KeyringResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	asked := string(op) + " " + key
	if localOnly {
		asked += " local-only"
	}
	c.asked = append(c.asked, asked)
	if c.err != nil {
		return nil, c.err
	}
	return c.pools, nil
}

// lastAsked is the last operation asked of c.
func (c *keyringCluster) lastAsked() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[len(c.asked)-1]
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
	if last := cl.lastAsked(); last != "list " {
		t.Errorf("GET: asked %q, want a list of every pool", last)
	}
	rec = serve(h, http.MethodGet, "/v1/operator/keyring?local-only=true", "")
	wantStatus(t, rec, http.StatusOK)
	if last := cl.lastAsked(); last != "list  local-only" {
		t.Errorf("GET ?local-only: asked %q, want a local-only list", last)
	}

	for _, tc := range []struct{ method, op string }{
		{http.MethodPost, "install"}, {http.MethodPut, "use"}, {http.MethodDelete, "remove"},
	} {
		rec := serve(h, tc.method, "/v1/operator/keyring", `{"Key": "a2V5"}`)
		wantStatus(t, rec, http.StatusOK)
		var pools []map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &pools); err != nil || len(pools) != 2 {
			t.Errorf("%s: body %s, want the two pools after the change", tc.method, rec.Body)
		}
		if last := cl.lastAsked(); last != tc.op+" a2V5" {
			t.Errorf("%s: asked %q, want %q", tc.method, last, tc.op+" a2V5")
		}
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
	cl.err = fmt.Errorf("%w: keyring install failed in 1 of 3 pools: dc2 (LAN): not confirmed by web-1", httpapi.ErrKeyringIncomplete)
	rec = serve(h, http.MethodPost, "/v1/operator/keyring", `{"Key": "a2V5"}`)
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if body := errorBody(t, rec); !strings.Contains(fmt.Sprint(body["error"]), "dc2 (LAN): not confirmed by web-1") {
		t.Errorf("incomplete: got %v, want the pool and member named", body)
	}

	rec = serve(h, http.MethodPatch, "/v1/operator/keyring", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)
}
