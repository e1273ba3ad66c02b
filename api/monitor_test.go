package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairndns/cairn/api"
)

// monitorAgent streams n lines, then holds the stream open until the
// client goes away; it records the query it was sent.
func monitorAgent(t *testing.T, n int, queries chan<- string) *api.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/agent/monitor" {
			http.NotFound(w, r)
			return
		}
		queries <- r.URL.RawQuery
		if r.URL.Query().Get("loglevel") == "loud" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error": "loglevel: bad", "field": "loglevel"}`)
			return
		}
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
			http.NewResponseController(w).Flush()
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMonitor(t *testing.T) {
	queries := make(chan string, 4)
	c := monitorAgent(t, 3, queries)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines, err := c.Agent().Monitor(ctx, "debug")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := <-queries, "loglevel=debug"; got != want {
		t.Errorf("got query %q, want %q", got, want)
	}
	for i := range 3 {
		if got, want := <-lines, fmt.Sprintf("line %d", i); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	cancel()
	for l := range lines { // closed once the reader has stopped
		t.Errorf("got %q after cancel", l)
	}

	json, err := c.Agent().MonitorJSON(t.Context(), "info")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := <-queries, "logjson=&loglevel=info"; got != want {
		t.Errorf("got query %q, want %q", got, want)
	}
	<-json
}

func TestMonitorRefused(t *testing.T) {
	c := monitorAgent(t, 0, make(chan string, 1))
	_, err := c.Agent().Monitor(t.Context(), "loud")
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Field != "loglevel" {
		t.Errorf("got %v, want a 400 naming loglevel", err)
	}
}
