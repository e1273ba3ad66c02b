package httpapi

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cairndns/cairn/rpc"
)

// TestEveryRouteDeclaresItsNeeds: each method of each route of the table
// carries a Need the wrapper can check, and only the routes whose point is
// to be public are.
func TestEveryRouteDeclaresItsNeeds(t *testing.T) {
	publicOnes := map[string]bool{
		"GET /v1/catalog/datacenters": true, "GET /v1/coordinate/datacenters": true,
		"GET /v1/status/leader": true, "GET /v1/status/peers": true, "PUT /v1/acl/bootstrap": true,
		"GET /ui/": true, "HEAD /ui/": true, "GET /{$}": true, "HEAD /{$}": true,
		"GET /v1/internal/ui/dns": true, "GET /v1/acl/replication": true, "GET /dns-query": true, "POST /dns-query": true,
	}
	routes := Routes()
	if len(routes) < 80 {
		t.Fatalf("Routes: %d, want the whole table", len(routes))
	}
	for _, rt := range routes {
		what := rt.Method + " " + rt.Pattern
		if err := rt.Need.valid(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if (rt.Need.Level == rpc.LevelPublic) != publicOnes[what] {
			t.Errorf("%s: public %v, want %v", what, rt.Need.Level == rpc.LevelPublic, publicOnes[what])
		}
		if rt.Need.BodyFirst {
			t.Errorf("%s: reads its body before authorizing", what)
		}
	}
}

// TestRouteWithoutNeedIsRefused: a route whose method has no valid Need
// does not get registered.
func TestRouteWithoutNeedIsRefused(t *testing.T) {
	for name, needs := range map[string]Needs{
		"no level":         {get: {}},
		"unknown resource": {get: top("catalog", "read")},
		"path without one": {put: {Level: rpc.LevelToken, Resource: "key", Access: "write", From: FromPath}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", name)
				}
			}()
			(&Server{httpMetrics: newHTTPMetrics()}).endpoint(route{pattern: "/x", needs: needs})
		}()
	}
}

// TestBodyIsClosedUntilAdmitted: a handler cannot read what the wrapper
// has not opened.
func TestBodyIsClosedUntilAdmitted(t *testing.T) {
	g := &gatedBody{rc: io.NopCloser(strings.NewReader("secret"))}
	if _, err := io.ReadAll(g); !errors.Is(err, errBodyClosed) {
		t.Fatalf("closed body: got %v, want errBodyClosed", err)
	}
	g.open = true
	if b, err := io.ReadAll(g); err != nil || string(b) != "secret" {
		t.Fatalf("opened body: got %q, %v", b, err)
	}
}
