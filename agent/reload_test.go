package agent_test

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
)

// TestReloadConfigDir: a reload reads a -config-dir again (a file added to
// it counts), applies log_level, and logs what it applied (INFO) and which
// changed keys need a restart (WARN), by their config names. A file that
// does not parse, or a value of the wrong type, is a 400 naming the file
// or the key, and changes nothing.
func TestReloadConfigDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("10-base.hcl", `log_level = "info"`)
	cfg := agenttest.Config(t)
	cfg.LogLevel = "info"
	var level slog.LevelVar
	a, logs := agenttest.StartLogging(t, cfg, &level)
	a.SetReloading(agent.Reloading{Level: &level, Load: func() (config.Config, error) {
		c := cfg // as the CLI does: the start's settings, then the directory
		return c, config.LoadPath(dir, &c)
	}})
	reload := func() (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, "http://"+a.HTTPAddr().String()+"/v1/agent/reload", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	write("20-more.hcl", "log_level = \"debug\"\nnode_meta { rack = \"r2\" }\nports { dns = 1 }\n")
	if code, body := reload(); code != http.StatusOK {
		t.Fatalf("reload: got %d %s, want 200", code, body)
	}
	if got := level.Level(); got != slog.LevelDebug {
		t.Errorf("level after the reload: got %s, want DEBUG from the added file", got)
	}
	if got := logs.Lines("level=INFO", "configuration reloaded", "log_level", "TLS certificates"); len(got) != 1 {
		t.Errorf("INFO lines saying what was reloaded: got %q, want one", got)
	}
	if got := logs.Lines("level=WARN", "only a restart applies", `keys="node_meta, ports"`); len(got) != 1 {
		t.Errorf("WARN lines naming the restart-only keys: got %q, want one", got)
	}

	for _, tc := range []struct{ file, content, want string }{
		{"30-broken.hcl", "ports {", "30-broken.hcl"},
		{"30-broken.hcl", `log_level = ["info"]`, `log_level: got a list, want a string`},
		{"30-broken.hcl", `server = { on = true }`, `server: got a block, want true or false`},
	} {
		write(tc.file, tc.content)
		code, body := reload()
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("reload with %q: got %d %s, want a 400 containing %q", tc.content, code, body, tc.want)
		}
		if got := level.Level(); got != slog.LevelDebug {
			t.Errorf("after the refused reload of %q: level %s, want DEBUG kept", tc.content, got)
		}
	}
}
