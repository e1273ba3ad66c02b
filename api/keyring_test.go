package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/cairndns/cairn/api"
)

func TestKeyring(t *testing.T) {
	var mu sync.Mutex
	var seen []string // "METHOD query body"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RawQuery+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path != "/v1/operator/keyring":
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodGet, r.Method == http.MethodPost:
			io.WriteString(w, `[{"WAN": false, "Datacenter": "dc1", "Segment": "", "Keys": {"a2V5": 2}, "PrimaryKeys": {"a2V5": 2}, "NumNodes": 2}]`)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error": "Key: gossip key is a primary key of this member (s1)", "field": "Key", "reason": "gossip key is a primary key of this member (s1)"}`)
		}
	}))
	defer srv.Close()
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := c.Operator().KeyringList(ctx, true)
	if err != nil || len(got) != 1 || got[0].Datacenter != "dc1" || got[0].Keys["a2V5"] != 2 || got[0].NumNodes != 2 {
		t.Errorf("KeyringList: %+v, %v", got, err)
	}
	if pools, err := c.Operator().KeyringInstall(ctx, "a2V5"); err != nil || len(pools) != 1 || pools[0].Keys["a2V5"] != 2 {
		t.Errorf("KeyringInstall: %+v, %v; want the pool after the change", pools, err)
	}
	// An agent that answers a change without a body (as Consul's do).
	if pools, err := c.Operator().KeyringUse(ctx, "a2V5"); err != nil || len(pools) != 0 {
		t.Errorf("KeyringUse: %+v, %v; want no pools and no error", pools, err)
	}
	var se *api.StatusError
	if _, err := c.Operator().KeyringRemove(ctx, "a2V5"); !errors.As(err, &se) || se.Code != 400 || se.Field != "Key" {
		t.Errorf("KeyringRemove of the primary key: got %v, want a 400 naming Key", err)
	}
	key, _ := json.Marshal(map[string]string{"Key": "a2V5"})
	want := []string{"GET local-only=true ", "POST  " + string(key), "PUT  " + string(key), "DELETE  " + string(key)}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("agent saw %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d: got %q, want %q", i, seen[i], want[i])
		}
	}
}
