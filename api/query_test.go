package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueryOptionsAndMeta: the options become Consul's query parameters
// and Consul's headers become the QueryMeta.
func TestQueryOptionsAndMeta(t *testing.T) {
	var got url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()
		w.Header().Set("X-Consul-Index", "17")
		w.Header().Set("X-Consul-KnownLeader", "true")
		w.Header().Set("X-Consul-LastContact", "250")
		_, _ = w.Write([]byte(`[]`))
	}))
	defer srv.Close()
	c, err := NewClient(Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	q := &QueryOptions{Datacenter: "dc2", AllowStale: true, WaitIndex: 16, WaitTime: 90 * time.Second, Filter: `Service.Tags contains "v1"`}
	_, meta, err := c.Health().Service(context.Background(), "web", "v1", true, q)
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"dc": {"dc2"}, "stale": {""}, "index": {"16"}, "wait": {"90000ms"},
		"filter": {`Service.Tags contains "v1"`}, "tag": {"v1"}, "passing": {"1"}}
	if got.Encode() != want.Encode() {
		t.Errorf("query: got %s, want %s", got.Encode(), want.Encode())
	}
	if *meta != (QueryMeta{LastIndex: 17, KnownLeader: true, LastContact: 250 * time.Millisecond}) {
		t.Errorf("meta: got %+v", *meta)
	}
	if _, _, err := c.Catalog().Nodes(context.Background()); err != nil || got.Encode() != "" {
		t.Errorf("Nodes without options: query %q, %v; want none", got.Encode(), err)
	}
}

// TestReadRetriesTransportErrors: a GET that gets no answer is sent again;
// a PUT is not.
func TestReadRetriesTransportErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			// Drop the connection without an answer.
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, err := NewClient(Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Catalog().Services(context.Background()); err != nil {
		t.Fatalf("GET after a dropped connection: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("GET: %d requests, want 2", n)
	}
	calls.Store(0)
	err = c.Catalog().Register(context.Background(), &CatalogRegistration{Node: "n", Address: "10.0.0.1"})
	if _, ok := err.(*UnreachableError); !ok {
		t.Errorf("PUT after a dropped connection: got %v, want an UnreachableError", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("PUT: %d requests, want 1 (a write is not retried)", n)
	}
}

// TestBlockingReadCancels: cancelling the context ends a blocking read.
func TestBlockingReadCancels(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := NewClient(Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.Catalog().Services(ctx, &QueryOptions{WaitIndex: 5, WaitTime: time.Minute})
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if err == nil || ctx.Err() == nil {
			t.Errorf("got %v, want the cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled blocking read did not return")
	}
}
