package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
)

// readArchive returns the files of a debug archive by name, without the
// archive's top directory.
func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	top := strings.TrimSuffix(filepath.Base(path), ".tar.gz") + "/"
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		name, ok := strings.CutPrefix(hdr.Name, top)
		if !ok {
			t.Errorf("file %q is not under %q", hdr.Name, top)
		}
		if files[name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// savedArchive returns the path the CLI's stdout names.
func savedArchive(t *testing.T, stdout string) string {
	t.Helper()
	path, ok := strings.CutPrefix(strings.TrimSpace(stdout), "Saved debug archive: ")
	if !ok || !strings.HasSuffix(path, ".tar.gz") || !strings.HasPrefix(filepath.Base(path), "cairn-debug-") {
		t.Fatalf("got stdout %q, want the archive's path", stdout)
	}
	return path
}

func TestDebugArchive(t *testing.T) {
	t.Parallel()
	const (
		token = "8f0d2c36-5a8e-4f6b-9d39-1c2a7b3e4d51"
		key   = "ZWFzeS10by1zcG90LWtleS0zMi1ieXRlcy1sb25nISE="
	)
	cfg := agenttest.Config(t)
	cfg.EnableDebug = true
	cfg.EncryptKey = key
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	cfg.ACL.Tokens.InitialManagement = token
	a := agenttest.Start(t, cfg)
	dir := t.TempDir()

	stdout, stderr, code := runCLI(t, "debug", "-http-addr", a.HTTPAddr().String(), "-token", token,
		"-duration", "2s", "-interval", "1s", "-output", dir)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"==> config: agent.json", "==> members: members.json, members_wan.json", "==> logs: logs.txt",
		"==> metrics: ", "==> pprof: goroutine.prof, heap.prof, profile.prof (CPU for 2s)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("got stderr %q, want a line %q", stderr, want)
		}
	}
	if n := strings.Count(stderr, "\n"); n != 5 {
		t.Errorf("got %d progress lines, want 5: %q", n, stderr)
	}
	files := readArchive(t, savedArchive(t, stdout))
	var names []string
	for name, data := range files {
		names = append(names, name)
		for _, secret := range []string{token, key} {
			if strings.Contains(string(data), secret) {
				t.Errorf("%s holds the secret %q", name, secret)
			}
		}
	}
	for _, want := range []string{"index.json", "agent.json", "members.json", "members_wan.json", "logs.txt", "metrics/000.prom", "goroutine.prof", "heap.prof", "profile.prof"} {
		if !slices.Contains(names, want) {
			t.Errorf("archive holds %q, want %q among them", names, want)
		}
	}
	if !strings.Contains(string(files["metrics/000.prom"]), "# TYPE ") {
		t.Errorf("metrics/000.prom is not Prometheus text: %.200q", files["metrics/000.prom"])
	}
	var index debugIndex
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if index.Node != "test" || !index.Server || len(index.Notes) != 0 || len(index.Files) != len(files)-1 {
		t.Errorf("got index %+v", index)
	}
}

// Without enable_debug the profiles are left out, and the index says why.
func TestDebugWithoutEnableDebug(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	dir := t.TempDir()
	stdout, stderr, code := runCLI(t, "debug", "-http-addr", a.HTTPAddr().String(),
		"-duration", "1s", "-interval", "1s", "-output", dir, "-capture", "config,pprof")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stderr, "==> pprof: not captured: the agent runs without enable_debug") {
		t.Errorf("got stderr %q", stderr)
	}
	files := readArchive(t, savedArchive(t, stdout))
	if len(files) != 2 || files["agent.json"] == nil {
		t.Errorf("got files %v, want index.json and agent.json", slices.Collect(func(yield func(string) bool) {
			for n := range files {
				yield(n)
			}
		}))
	}
	var index debugIndex
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(index.Notes) != 1 || !strings.Contains(index.Notes[0], "enable_debug") {
		t.Errorf("got notes %q, want one about enable_debug", index.Notes)
	}
}

func TestDebugUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-capture", "config,cores"}, `-capture: "cores" is not one of metrics, members, config, logs, pprof`},
		{[]string{"-duration", "5s", "-interval", "10s"}, "-duration: must be at least -interval (10s), got 5s"},
		{[]string{"-interval", "10ms"}, "-interval: must be at least 1s"},
		{[]string{"-output", filepath.Join(dir, "nosuch")}, "-output: "},
		{[]string{"now"}, `unexpected argument "now"`},
	} {
		_, stderr, code := runCLI(t, append([]string{"debug", "-output", dir}, tc.args...)...)
		wantUsage(t, stderr, code, tc.want)
	}
}

func TestRedactJSON(t *testing.T) {
	in := `{"Config":{"NodeName":"n1","ACLToken":"s3cr3t","Tokens":{"Agent":"a1","Default":""}},` +
		`"Stats":{"serf_lan":{"encrypted":"true","members":"3"}},"EncryptKey":"k3y","Port":8500,"List":[{"secret_id":"x"}]}`
	out, err := redactJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cr3t", "a1", "k3y", `"x"`} {
		if strings.Contains(string(out), secret) {
			t.Errorf("got %s, want %s redacted", out, secret)
		}
	}
	for _, kept := range []string{`"NodeName": "n1"`, `"encrypted": "true"`, `"Port": 8500`, `"members": "3"`, `"Default": ""`} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("got %s, want %s kept", out, kept)
		}
	}
}
