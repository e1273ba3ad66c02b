package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/httpapi"
)

// debugServer returns a server with EnableDebug as enable, checking
// tokens with authz (none: ACLs off).
func debugServer(t *testing.T, enable bool, authz ...func(context.Context) (*acl.Authorizer, error)) *httpapi.Server {
	t.Helper()
	cfg := testConfig()
	cfg.EnableDebug = enable
	deps := httpapi.Deps{}
	if len(authz) > 0 {
		deps.Authorizer = authz[0]
	}
	return newAPI(t, cfg, deps)
}

func TestPprofOff(t *testing.T) {
	h := debugServer(t, false).Handler()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine", "/debug/pprof/cmdline", "/debug/pprof/profile?seconds=1"} {
		rec := serve(h, http.MethodGet, path, "")
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: got status %d, want 404", path, rec.Code)
		}
	}
}

func TestPprofOn(t *testing.T) {
	h := debugServer(t, true).Handler()
	for _, tc := range []struct{ path, want string }{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile:"},
		{"/debug/pprof/heap?debug=1", "heap profile:"},
		{"/debug/pprof/cmdline", ""},
	} {
		rec := serve(h, http.MethodGet, tc.path, "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: got status %d, body %.200q; want 200 with %q", tc.path, rec.Code, rec.Body, tc.want)
		}
	}
	if rec := serve(h, http.MethodGet, "/debug/pprof/nosuch", ""); rec.Code != http.StatusNotFound {
		t.Errorf("unknown profile: got status %d, want 404", rec.Code)
	}
}

func TestPprofACL(t *testing.T) {
	s := debugServer(t, true, tokenAuthorizer(map[string]*acl.Authorizer{
		"op":    policy(t, `operator = "read"`),
		"agent": policy(t, `agent_prefix "" { policy = "write" }`),
	}))
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusForbidden}, {"agent", http.StatusForbidden}, {"op", http.StatusOK}} {
		req := newRequest(http.MethodGet, "/debug/pprof/goroutine?debug=1")
		if tc.token != "" {
			req.Header.Set("X-Consul-Token", tc.token)
		}
		rec := serveRequest(s.Handler(), req)
		if rec.Code != tc.want {
			t.Errorf("token %q: got status %d, want %d", tc.token, rec.Code, tc.want)
		}
	}
}
