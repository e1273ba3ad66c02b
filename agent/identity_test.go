package agent_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
)

// TestNodeID: a configured node_id is used as given (lowercase); without
// one the agent generates one and keeps it in <data_dir>/node-id, so a
// restart keeps it; a dev agent without a data dir gets a new one each
// run; a bad node-id file is an error naming node_id.
func TestNodeID(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	newID := func(cfg config.Config) (string, error) {
		a, err := agent.New(cfg, logger)
		if err != nil {
			return "", err
		}
		return a.NodeID(), nil
	}
	const given = "ADF4238A-882B-9DDC-4A9D-5B6758E4159E"
	cfg := agenttest.ServerConfig(t, "s1", 1)
	cfg.NodeID = given
	if got, err := newID(cfg); err != nil || got != strings.ToLower(given) {
		t.Errorf("node_id %s: got %q, %v; want it lowercase", given, got, err)
	}

	cfg = agenttest.ServerConfig(t, "s1", 1)
	first, err := newID(cfg)
	if err != nil || len(first) != 36 {
		t.Fatalf("generated: got %q, %v; want a UUID", first, err)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "node-id")); err != nil || string(b) != first {
		t.Errorf("node-id file: got %q, %v; want %q", b, err, first)
	}
	if again, err := newID(cfg); err != nil || again != first {
		t.Errorf("restart: got %q, %v; want the kept %q", again, err, first)
	}

	dev := agenttest.Config(t)
	a, _ := newID(dev)
	b, _ := newID(dev)
	if a == "" || a == b {
		t.Errorf("dev without data dir: got %q then %q; want two random IDs", a, b)
	}

	if err := os.WriteFile(filepath.Join(cfg.DataDir, "node-id"), []byte("not-a-uuid"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = newID(cfg)
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Field != "node_id" {
		t.Errorf("bad node-id file: got %v; want a FieldError naming node_id", err)
	}

	cfg.NodeID = "web-1"
	_, err = newID(cfg)
	if !errors.As(err, &fe) || fe.Field != "node_id" || !strings.Contains(err.Error(), "UUID") {
		t.Errorf("node_id web-1: got %v; want a FieldError naming node_id", err)
	}
}

// TestRegistrationOfALiveMembersNodeIDIsRefused: a registration that gives
// another node name the node ID of a live member is refused with the
// reason, as Consul refuses it; the member's own keeps working.
func TestRegistrationOfALiveMembersNodeIDIsRefused(t *testing.T) {
	t.Parallel()
	s := agenttest.Start(t, agenttest.Config(t))
	reg := map[string]any{"Node": "other", "ID": s.NodeID(), "Address": "10.9.9.9"}
	code, body := call(t, s, "", "PUT", "/v1/catalog/register", reg)
	if code != 400 || !strings.Contains(string(body), "node ID") || !strings.Contains(string(body), `member \"test\"`) {
		t.Fatalf("register node other with test's node ID: got %d %s, want 400 naming the live member", code, body)
	}
	reg = map[string]any{"Node": "test", "ID": s.NodeID(), "Address": "127.0.0.1", "Service": map[string]any{"Service": "web", "Port": 80}}
	if code, body := call(t, s, "", "PUT", "/v1/catalog/register", reg); code != 200 {
		t.Fatalf("register a service on test with its node ID: got %d %s, want 200", code, body)
	}
}
