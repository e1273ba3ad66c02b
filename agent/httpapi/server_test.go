package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*httpapi.Config)
		want   []string // substrings of the error; none means valid
	}{
		{"defaults", func(*httpapi.Config) {}, nil},
		{"port zero", func(c *httpapi.Config) { c.Addr = "127.0.0.1:0" }, nil},
		{"no port", func(c *httpapi.Config) { c.Addr = "127.0.0.1" }, []string{"Addr"}},
		{"no plain HTTP", func(c *httpapi.Config) { c.Addr = "" }, nil},
		{"body limit too small", func(c *httpapi.Config) { c.MaxBodyBytes = 1023 }, []string{"MaxBodyBytes"}},
		{"no header timeout", func(c *httpapi.Config) { c.ReadHeaderTimeout = 0 }, []string{"ReadHeaderTimeout"}},
		{"everything wrong", func(c *httpapi.Config) { *c = httpapi.Config{Addr: "x"} }, []string{"Addr", "MaxBodyBytes", "ReadHeaderTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := httpapi.DefaultConfig()
			tt.change(&cfg)
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want an error naming %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to name %s", err, w)
				}
			}
			deps := httpapi.Deps{Door: fakeDoor{}, Local: &fakeLocal{}, Cluster: &fakeCluster{}, Logger: discard()}
			if _, err := httpapi.New(cfg, deps); err == nil {
				t.Errorf("New with an invalid config: got nil error, want one")
			}
		})
	}
}

// TestNewNamesMissingDeps: New refuses a Deps without a required part,
// naming each missing one, so that a wiring mistake fails at start rather
// than as an error on some request later.
func TestNewNamesMissingDeps(t *testing.T) {
	full := httpapi.Deps{Door: fakeDoor{}, Local: &fakeLocal{}, Cluster: &fakeCluster{}, Logger: discard()}
	if _, err := httpapi.New(testConfig(), full); err != nil {
		t.Fatalf("New with every required part: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*httpapi.Deps)
		want   []string
	}{
		{"no door", func(d *httpapi.Deps) { d.Door = nil }, []string{"Deps.Door"}},
		{"no local", func(d *httpapi.Deps) { d.Local = nil }, []string{"Deps.Local"}},
		{"no cluster", func(d *httpapi.Deps) { d.Cluster = nil }, []string{"Deps.Cluster"}},
		{"nothing", func(d *httpapi.Deps) { *d = httpapi.Deps{} }, []string{"Deps.Door", "Deps.Local", "Deps.Cluster", "Deps.Logger"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps := full
			tc.change(&deps)
			_, err := httpapi.New(testConfig(), deps)
			if err == nil {
				t.Fatalf("got nil, want an error naming %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to name %s", err, w)
				}
			}
		})
	}
}

func TestWrongMethod(t *testing.T) {
	tests := []struct {
		method, target, allow string
	}{
		{http.MethodGet, "/v1/agent/service/register", "PUT"},
		{http.MethodPost, "/v1/agent/service/register", "PUT"},
		{http.MethodDelete, "/v1/agent/service/deregister/web", "PUT"},
		{http.MethodPut, "/v1/agent/services", "GET"},
		{http.MethodPost, "/v1/catalog/services", "GET"},
		{http.MethodDelete, "/v1/catalog/service/web", "GET"},
		{http.MethodPut, "/v1/catalog/nodes", "GET"},
		{http.MethodPost, "/v1/health/service/web", "GET"},
		{http.MethodPut, "/v1/status/leader", "GET"},
		{http.MethodPut, "/v1/agent/members", "GET"},
		{http.MethodGet, "/v1/agent/join/10.0.0.2", "PUT"},
		{http.MethodPost, "/v1/agent/join/10.0.0.2", "PUT"},
		{http.MethodGet, "/v1/agent/leave", "PUT"},
		{http.MethodDelete, "/v1/agent/leave", "PUT"},
		{http.MethodPut, "/v1/operator/raft/configuration", "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			l := &fakeLocal{}
			rec := serve(newServer(t, l, testCatalog()), tt.method, tt.target, `{"Name":"web"}`)
			wantStatus(t, rec, http.StatusMethodNotAllowed)
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("got Allow %q, want %q", got, tt.allow)
			}
			if got := keys(t, errorBody(t, rec)); !slices.Equal(got, []string{"error"}) {
				t.Errorf("got keys %v, want [error]", got)
			}
			if len(l.added) != 0 || len(l.removed) != 0 {
				t.Errorf("Local was called: added %v removed %v", l.added, l.removed)
			}
		})
	}
}

func TestUnknownPath(t *testing.T) {
	h := newServer(t, nil, testCatalog())
	for _, target := range []string{
		"/v1", "/v1/", "/v2/agent/services", "/v1/agent/services/web", "/v1/agent/service/register/x",
		"/v1/catalog/service/", "/v1/catalog/service/web/extra", "/uix", "/ui.js",
	} { // "/" and "/ui/": ui_endpoint_test.go
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			rec := serve(h, method, target, "")
			if rec.Code != http.StatusNotFound {
				t.Errorf("%s %s: got status %d, want 404; body %s", method, target, rec.Code, rec.Body)
				continue
			}
			body := errorBody(t, rec)
			if msg := body["error"].(string); !strings.Contains(msg, target) {
				t.Errorf("%s %s: got error %q, want it to name the path", method, target, msg)
			}
		}
	}
}

// TestServeOverTCP starts the server on a free port, makes a request over
// the network, and shuts it down.
func TestServeOverTCP(t *testing.T) {
	s := newAPI(t, testConfig(), httpapi.Deps{Door: fakeDoor{backends: []any{testCatalog(), fakeStatus("10.0.0.1:8300")}}})
	if s.Addr() != nil {
		t.Errorf("got Addr %v before Start, want nil", s.Addr())
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = s.Shutdown(context.Background())
		}
	}()
	url := "http://" + s.Addr().String() + "/v1/status/leader"
	client := &http.Client{Timeout: waitTimeout}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `"10.0.0.1:8300"` {
		t.Errorf("got %d %q (%v), want 200 \"10.0.0.1:8300\"", resp.StatusCode, body, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stopped = true
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	client.CloseIdleConnections()
	if _, err := client.Get(url); err == nil {
		t.Errorf("GET after Shutdown: got a response, want an error")
	}
}

func TestStartOnBusyPort(t *testing.T) {
	a := newAPI(t, testConfig(), httpapi.Deps{Door: fakeDoor{backends: []any{&fakeCatalog{}, fakeStatus("")}}})
	if err := a.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer a.Shutdown(context.Background())
	cfg := testConfig()
	cfg.Addr = a.Addr().String()
	b := newAPI(t, cfg, httpapi.Deps{Door: fakeDoor{backends: []any{&fakeCatalog{}, fakeStatus("")}}})
	if err := b.Start(); err == nil {
		_ = b.Shutdown(context.Background())
		t.Fatalf("Start on %s, which is in use: got nil error, want one", cfg.Addr)
	}
}

func TestShutdownBeforeStart(t *testing.T) {
	s := newAPI(t, testConfig(), httpapi.Deps{Door: fakeDoor{backends: []any{&fakeCatalog{}, fakeStatus("")}}})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

// waitTimeout bounds network calls; they finish at once unless the test fails.
const waitTimeout = 5 * time.Second
