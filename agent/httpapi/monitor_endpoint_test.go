package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/logstream"
)

// tokenAuthorizer is an httpapi.Deps.Authorizer answering from the
// request's token: the policy of a known token, deny-all for any other.
func tokenAuthorizer(tokens map[string]*acl.Authorizer) func(context.Context) (*acl.Authorizer, error) {
	return func(ctx context.Context) (*acl.Authorizer, error) {
		if a, ok := tokens[acl.TokenFromContext(ctx)]; ok {
			return a, nil
		}
		return acl.New(false), nil
	}
}

// policy returns the authorizer of rules, in Consul's rule language.
func policy(t *testing.T, rules string) *acl.Authorizer {
	t.Helper()
	p, err := acl.Parse(rules)
	if err != nil {
		t.Fatalf("parse %q: %v", rules, err)
	}
	return acl.New(false, p)
}

// monitorServer returns a server streaming the logs of the returned
// logger (its own output at info, discarded), checking tokens with authz
// (nil: ACLs off).
func monitorServer(t *testing.T, authz func(context.Context) (*acl.Authorizer, error)) (*httpapi.Server, *logstream.Hub, *slog.Logger) {
	t.Helper()
	hub, err := logstream.New(logstream.DefaultConfig(), slog.DiscardHandler)
	if err != nil {
		t.Fatal(err)
	}
	s := newAPI(t, testConfig(), httpapi.Deps{Logs: hub.Subscribe, Authorizer: authz})
	return s, hub, slog.New(hub.Handler())
}

// openMonitor starts GET target on srv and returns the stream once its
// headers have come; the stream ends with ctx.
func openMonitor(ctx context.Context, t *testing.T, base, target, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Consul-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// subscribed waits until the hub has a subscriber at level (the handler
// has subscribed), or fails after a deadline.
func subscribed(t *testing.T, logger *slog.Logger, level slog.Level, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for logger.Enabled(context.Background(), level) != want {
		if time.Now().After(deadline) {
			t.Fatalf("subscriber at %v: got present=%v, want %v", level, !want, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAgentMonitorStreams(t *testing.T) {
	s, _, logger := monitorServer(t, nil)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the streams close (cleanups run last first)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	resp := openMonitor(ctx, t, srv.URL, "/v1/agent/monitor?loglevel=DEBUG", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got status %d", resp.StatusCode)
	}
	// The handler subscribed before writing the headers.
	logger.With("component", "test").Debug("hello", "n", 1)
	logger.Info("second")
	sc := bufio.NewScanner(resp.Body)
	for _, want := range []string{"level=DEBUG msg=hello component=test n=1", "level=INFO msg=second"} {
		if !sc.Scan() {
			t.Fatalf("stream ended: %v", sc.Err())
		}
		if !strings.HasSuffix(sc.Text(), want) {
			t.Errorf("got line %q, want it to end in %q", sc.Text(), want)
		}
	}
	// The client goes away: the handler unsubscribes.
	cancel()
	subscribed(t, logger, slog.LevelDebug, false)
}

func TestAgentMonitorJSONAndLevel(t *testing.T) {
	s, _, logger := monitorServer(t, nil)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the streams close (cleanups run last first)

	resp := openMonitor(t.Context(), t, srv.URL, "/v1/agent/monitor?loglevel=warn&logjson", "")
	logger.Info("not wanted")
	logger.Warn("wanted", "peer", "10.0.0.2")
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatalf("stream ended: %v", sc.Err())
	}
	var got map[string]any
	if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
		t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
	}
	if got["msg"] != "wanted" || got["level"] != "WARN" || got["peer"] != "10.0.0.2" {
		t.Errorf("got %v, want the warning only", got)
	}
}

// Shutdown ends the streams instead of waiting for their clients.
func TestAgentMonitorEndsOnShutdown(t *testing.T) {
	s, _, _ := monitorServer(t, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	resp := openMonitor(t.Context(), t, "http://"+s.Addr().String(), "/v1/agent/monitor", "")
	done := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(resp.Body).ReadString('\n')
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("read a line, want the stream's end")
		}
	case <-ctx.Done():
		t.Fatal("the stream did not end with the server")
	}
}

func TestAgentMonitorRefusals(t *testing.T) {
	s, _, _ := monitorServer(t, nil)
	rec := serve(s.Handler(), http.MethodGet, "/v1/agent/monitor?loglevel=loud", "")
	wantStatus(t, rec, http.StatusBadRequest)
	if body := errorBody(t, rec); body["field"] != "loglevel" {
		t.Errorf("got %v, want an error naming loglevel", body)
	}
	rec = serve(s.Handler(), http.MethodPost, "/v1/agent/monitor", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)

	plain := newAPI(t, testConfig(), httpapi.Deps{})
	wantStatus(t, serve(plain.Handler(), http.MethodGet, "/v1/agent/monitor", ""), http.StatusNotFound)
}

func TestAgentMonitorACL(t *testing.T) {
	s, _, _ := monitorServer(t, tokenAuthorizer(map[string]*acl.Authorizer{
		"reader": policy(t, `agent_prefix "" { policy = "read" }`),
		"other":  policy(t, `service_prefix "" { policy = "write" }`),
	}))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the streams close (cleanups run last first)
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusForbidden}, {"other", http.StatusForbidden}, {"reader", http.StatusOK}} {
		resp := openMonitor(t.Context(), t, srv.URL, "/v1/agent/monitor", tc.token)
		if resp.StatusCode != tc.want {
			t.Errorf("token %q: got status %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
		resp.Body.Close()
	}
}
