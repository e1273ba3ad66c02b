package compat_test

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
	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientReload: `consul reload` (PUT /v1/agent/reload) makes
// the agent read its config file again: a new log_level applies at once;
// a bad file (a value of the wrong type too) is a 400 naming the key and
// changes nothing; a setting that
// needs a restart does not fail the reload. It needs agent:write.
func TestConsulClientReload(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	a := agenttest.Start(t, cfg)
	path := filepath.Join(t.TempDir(), "cairn.hcl")
	var level slog.LevelVar
	level.Set(slog.LevelWarn)
	a.SetReloading(agent.Reloading{Level: &level, Load: func() (config.Config, error) {
		c := cfg // as the CLI does: the start's settings, then the file
		return c, config.LoadFile(path, &c)
	}})

	anon, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := anon.ACL().Bootstrap()
	if err != nil {
		t.Fatalf("ACL.Bootstrap: %v", err)
	}
	mgmt, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String(), Token: boot.SecretID})
	if err != nil {
		t.Fatal(err)
	}

	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`log_level = "debug"`)
	var se consul.StatusError
	if err := anon.Agent().Reload(); !errors.As(err, &se) || se.Code != 403 {
		t.Fatalf("anonymous reload: got %v, want a 403", err)
	}
	if got := level.Level(); got != slog.LevelWarn {
		t.Errorf("after a refused reload: level %s, want WARN", got)
	}
	if err := mgmt.Agent().Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := level.Level(); got != slog.LevelDebug {
		t.Errorf("after reloading log_level debug: level %s, want DEBUG", got)
	}

	for _, tc := range []struct{ body, field string }{
		{`log_level = "loud"`, "log_level"},
		{`log_level = "info"` + "\nnosuch = 1", "nosuch"},
		{`node_id = "web-1"`, "node_id"},
		{"limits { rpc_max_burst = \"fifty\" }", "limits.rpc_max_burst"},
	} {
		write(tc.body)
		err := mgmt.Agent().Reload()
		if !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Body, tc.field) {
			t.Errorf("reload of %q: got %v, want a 400 naming %s", tc.body, err, tc.field)
		}
		if got := level.Level(); got != slog.LevelDebug {
			t.Errorf("after the bad reload of %q: level %s, want DEBUG kept", tc.body, got)
		}
	}

	// A setting only a restart applies is logged, not refused.
	write(`log_level = "info"` + "\n" + `node_name = "renamed"`)
	if err := mgmt.Agent().Reload(); err != nil {
		t.Fatalf("Reload with a new node_name: %v", err)
	}
	if got := level.Level(); got != slog.LevelInfo {
		t.Errorf("after reloading log_level info: level %s, want INFO", got)
	}
	if name, err := mgmt.Agent().NodeName(); err != nil || name != "test" {
		t.Errorf("node name after the reload: got %q, %v; want test until a restart", name, err)
	}
}
