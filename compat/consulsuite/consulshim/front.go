package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// holdLimit bounds how long the front holds a request while cairn's HTTP
// API does not accept connections yet.
const holdLimit = time.Minute

// front listens where testutil expects the HTTP API and passes every
// request to cairn's, unchanged but for two things: it answers testutil's
// wait for Connect's CA once (fakeCA), and it puts the UUID cairn knows a
// configured token by in place of the token's Consul string (tokens).
type front struct {
	tokens map[string]string
	fakeCA atomic.Bool
	proxy  *httputil.ReverseProxy
}

// newFront passes requests to cairn's HTTP API at target on network
// ("tcp", or "unix" with target a socket's path). exited is closed when
// cairn exits: requests held for it then fail at once.
func newFront(network, target string, p *plan, exited <-chan struct{}, logger *slog.Logger) *front {
	f := &front{tokens: p.tokens}
	f.fakeCA.Store(p.fakeCARoots)
	u := &url.URL{Scheme: "http", Host: target}
	if network == "unix" {
		u.Host = "localhost"
	}
	// A connection is retried until cairn listens, so that testutil's
	// first requests wait for the agent instead of failing.
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		deadline := time.Now().Add(holdLimit)
		for {
			c, err := d.DialContext(ctx, network, target)
			if err == nil {
				return c, nil
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("cairn's HTTP API at %s: %w", target, err)
			}
			select {
			case <-exited:
				return nil, fmt.Errorf("cairn exited: %w", err)
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{
			DialContext: dial,
			// The client's Accept-Encoding goes through as it is.
			DisableCompression:  true,
			MaxIdleConnsPerHost: 64,
		},
		// Streams (monitor) reach the client as cairn writes them.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "consul shim: "+err.Error(), http.StatusBadGateway)
		},
		ErrorLog: log.New(&slogWriter{logger}, "", 0),
	}
	return f
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/agent/connect/ca/roots" && f.fakeCA.CompareAndSwap(true, false) {
		// testutil's WaitForActiveCARoot needs a 200 with one root
		// before it hands the server to a test; cairn has no Connect.
		// Asked again, the front passes the request on.
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"ActiveRootID": "consul-shim-fake-root",
			"TrustDomain":  "11111111-2222-3333-4444-555555555555.consul",
			"Roots":        []map[string]any{{"ID": "consul-shim-fake-root", "Name": "not a CA: cairn has no Connect", "Active": true}},
		})
		return
	}
	f.mapTokens(r)
	f.proxy.ServeHTTP(w, r)
}

// mapTokens puts the UUID of a mapped token in its place, wherever a
// request carries a token.
func (f *front) mapTokens(r *http.Request) {
	if len(f.tokens) == 0 {
		return
	}
	if u, ok := f.tokens[r.Header.Get("X-Consul-Token")]; ok {
		r.Header.Set("X-Consul-Token", u)
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if u, ok := f.tokens[strings.TrimSpace(a)]; ok {
			r.Header.Set("Authorization", "Bearer "+u)
		}
	}
	if q := r.URL.Query(); q.Has("token") {
		if u, ok := f.tokens[q.Get("token")]; ok {
			q.Set("token", u)
			r.URL.RawQuery = q.Encode()
		}
	}
}

// slogWriter carries the proxy's own log lines into the shim's logger.
type slogWriter struct{ l *slog.Logger }

func (s *slogWriter) Write(p []byte) (int, error) {
	s.l.Warn(strings.TrimSpace(string(p)))
	return len(p), nil
}
