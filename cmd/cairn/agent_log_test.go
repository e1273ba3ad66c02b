package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/config"
)

// TestAgentLoggerJSONFile: with log_json and log_file, each line is one
// JSON object, on stderr and in the file alike, with the record's fields.
func TestAgentLoggerJSONFile(t *testing.T) {
	cfg := config.Default()
	cfg.LogJSON = true
	cfg.LogFile.Path = t.TempDir() + string(filepath.Separator)
	var stderr bytes.Buffer
	var lvl slog.LevelVar
	logger, closeLog, err := agentLogger(cfg, &stderr, &lvl)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("configuration reloaded", "reloaded", "log_level")
	logger.Debug("not at info")
	logger.Warn("restart needed", "keys", "ports", "retry_in", 1500*time.Millisecond)
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(cfg.LogFile.Path, "cairn.log"))
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"stderr": stderr.String(), "log file": string(file)} {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: got %d lines %q, want 2", name, len(lines), out)
		}
		var first map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
			t.Fatalf("%s: line %q is not JSON: %v", name, lines[0], err)
		}
		if first["level"] != "INFO" || first["msg"] != "configuration reloaded" || first["reloaded"] != "log_level" {
			t.Errorf("%s: got %v, want level INFO, the message and its field", name, first)
		}
		var second map[string]any
		if err := json.Unmarshal([]byte(lines[1]), &second); err != nil || second["keys"] != "ports" || second["retry_in"] != "1.5s" {
			t.Errorf("%s: second line %q: got %v (%v), want JSON with keys=ports and retry_in 1.5s", name, lines[1], second, err)
		}
	}
}

// TestAgentConfigDir: -config-dir reads a directory's .hcl and .json files
// in name order, and -config-file and -config-dir are read in the order
// given, later ones winning.
func TestAgentConfigDir(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"10-a.hcl":  "datacenter = \"dca\"\ndata_dir = \"/d\"\n",
		"20-b.json": `{"datacenter": "dcb"}`,
		"30-c.txt":  `datacenter = "txt"`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, "f.hcl", `datacenter = "dcf"`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config-dir", dir}, "dcb"},
		{[]string{"-config-dir", dir, "-config-file", file}, "dcf"},
		{[]string{"-config-file", file, "-config-dir", dir}, "dcb"},
		{[]string{"-config-file", file, "-config-dir", dir, "-datacenter", "dcx"}, "dcx"},
	} {
		got, err := configFromArgs(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got.Datacenter != tc.want || got.DataDir != "/d" {
			t.Errorf("%v: got datacenter %q, data_dir %q; want %q, /d", tc.args, got.Datacenter, got.DataDir, tc.want)
		}
	}
}
