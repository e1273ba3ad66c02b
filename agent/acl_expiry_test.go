package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// A token made with ExpirationTTL works until its ExpirationTime and from
// then on is unknown everywhere at once: on the servers, at the agent
// that cached what it may do, in token reads and lists; the leader then
// deletes it. The bounds of the
// TTL are the servers' knobs, lowered here so the test need not wait a
// minute.
func TestTokenExpiresAtItsExpirationTime(t *testing.T) {
	t.Parallel()
	cfg := aclServerConfig(t, "expiry")
	cfg.ACL.TokenMinExpirationTTL = time.Second
	cfg.ACL.TokenMaxExpirationTTL = time.Hour
	a := agenttest.Start(t, cfg)
	waitManagement(t, a)

	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{"Name": "agent-read", "Rules": `agent_prefix "" { policy = "read" }`}, nil)
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"ExpirationTTL": "100ms"}, "ExpirationTTL"},
		{map[string]any{"ExpirationTTL": "2h"}, "ExpirationTTL"},
		{map[string]any{"ExpirationTTL": "-1m"}, "ExpirationTTL"},
		{map[string]any{"ExpirationTime": time.Now().Add(-time.Minute).Format(time.RFC3339)}, "ExpirationTime"},
		{map[string]any{"ExpirationTTL": "1m", "ExpirationTime": time.Now().Add(time.Minute).Format(time.RFC3339)}, "ExpirationTTL"},
	} {
		code, b := call(t, a, mgmtSecret, "PUT", "/v1/acl/token", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(string(b), tc.field) {
			t.Errorf("create with %v: got %d %s, want 400 naming %s", tc.body, code, b, tc.field)
		}
	}

	var tok struct {
		AccessorID, SecretID string
		ExpirationTime       *time.Time
	}
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{
		"Policies": []map[string]string{{"Name": "agent-read"}}, "ExpirationTTL": "3s",
	}, &tok)
	if tok.ExpirationTime == nil || time.Until(*tok.ExpirationTime) > 3*time.Second || time.Until(*tok.ExpirationTime) < time.Second {
		t.Fatalf("create answered ExpirationTime %v, want about 3s from now", tok.ExpirationTime)
	}
	var read struct{ ExpirationTime *time.Time }
	mustCall(t, a, mgmtSecret, "GET", "/v1/acl/token/"+tok.AccessorID, nil, &read)
	if read.ExpirationTime == nil || !read.ExpirationTime.Equal(*tok.ExpirationTime) {
		t.Errorf("read answered ExpirationTime %v, want %v", read.ExpirationTime, tok.ExpirationTime)
	}
	// Used once before it expires: the servers answer it, and the agent
	// keeps what it may do for its own endpoints.
	mustCall(t, a, tok.SecretID, "GET", "/v1/acl/token/self", nil, nil)
	mustCall(t, a, tok.SecretID, "GET", "/v1/agent/self", nil, nil)

	// Refused within a moment of its ExpirationTime, long before the
	// agent's 30s cache of it would run out.
	time.Sleep(time.Until(*tok.ExpirationTime))
	waittest.For(t, 2*time.Second, "the expired token refused", func() error {
		for _, path := range []string{"/v1/acl/token/self", "/v1/agent/self", "/v1/catalog/services"} {
			code, b := call(t, a, tok.SecretID, "GET", path, nil)
			if code != http.StatusForbidden || !strings.Contains(string(b), "ACL not found") {
				return fmt.Errorf("GET %s with the expired token: got %d %s, want 403 ACL not found", path, code, b)
			}
		}
		return nil
	})
	if code, b := call(t, a, mgmtSecret, "GET", "/v1/acl/token/"+tok.AccessorID, nil); code != http.StatusNotFound {
		t.Errorf("read of the expired token: got %d %s, want 404", code, b)
	}
	_, b := call(t, a, mgmtSecret, "GET", "/v1/acl/tokens", nil)
	if strings.Contains(string(b), tok.AccessorID) {
		t.Errorf("token list shows the expired token: %s", b)
	}

	// The leader's reconcile deletes it, which frees its secret.
	ctx, cancel := context.WithTimeout(context.Background(), aclTestWait)
	defer cancel()
	if err := agent.Reconcile(ctx, a); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{"SecretID": tok.SecretID}, nil)
}
