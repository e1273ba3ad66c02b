package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// consulTemplateVersion is the consul-template release CI installs (see
// .ci/run); the test runs whatever consul-template is on PATH.
const consulTemplateVersion = "v0.41.1"

// TestConsulTemplateKV runs consul-template, unchanged, against a dev
// agent: a template reading a key, a tree and a service renders from
// cairn, and renders again when the key changes, a key under the tree is
// deleted and an instance is registered, as it does against Consul.
func TestConsulTemplateKV(t *testing.T) {
	t.Parallel()
	ct := requireGoTool(t, "consul-template", "github.com/hashicorp/consul-template@"+consulTemplateVersion)
	a := startAgent(t, "-dev")
	addr := a.httpAddr()
	mustCLI(t, addr, "kv", "put", "app/config/greeting", "hello")
	mustCLI(t, addr, "kv", "put", "app/config/color", "blue")
	mustCLI(t, addr, "kv", "put", "app/config/size", "large")

	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.tpl"), filepath.Join(dir, "out.txt")
	tpl := `greeting={{ key "app/config/greeting" }}
{{ range tree "app/config" }}{{ .Key }}:{{ .Value }};{{ end }}
{{ range service "web" }}{{ .ID }}@{{ .Port }};{{ end }}
`
	if err := os.WriteFile(in, []byte(tpl), 0o644); err != nil {
		t.Fatalf("write the template: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ct, "-consul-addr", addr, "-template", in+":"+out, "-log-level", "warn")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start consul-template: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("consul-template's output:\n%s", logs.String())
		}
	})

	waitRendered(t, out, "first render", "greeting=hello\ncolor:blue;greeting:hello;size:large;\n\n")

	mustCLI(t, addr, "kv", "put", "app/config/greeting", "bonjour")
	waitRendered(t, out, "after the key changed", "greeting=bonjour\ncolor:blue;greeting:bonjour;size:large;\n\n")

	mustCLI(t, addr, "kv", "delete", "app/config/color")
	waitRendered(t, out, "after a key of the tree was deleted", "greeting=bonjour\ngreeting:bonjour;size:large;\n\n")

	mustCLI(t, addr, "services", "register", "-id", "web1", "-name", "web", "-port", "8080")
	waitRendered(t, out, "after a registration", "greeting=bonjour\ngreeting:bonjour;size:large;\nweb1@8080;\n")
}

// waitRendered polls path until its content is want, failing the test
// with what it last held after a deadline.
func waitRendered(t *testing.T, path, when, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if got = string(b); err == nil && got == want {
			return
		}
		time.Sleep(pollInterval)
	}
	t.Fatalf("%s: rendered file holds %q, want %q", when, got, want)
}

// requireGoTool returns the path of the program name, which "go install
// module" builds. Without it the test is skipped, or fails when CAIRN_E2E=1
// says the end-to-end tests must run.
func requireGoTool(t *testing.T, name, module string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if gobin := goBinDir(); gobin != "" {
		if p := filepath.Join(gobin, name); fileExists(p) {
			return p
		}
	}
	if os.Getenv("CAIRN_E2E") == "1" {
		t.Fatalf("%s is required when CAIRN_E2E=1; go install %s", name, module)
	}
	t.Skipf("%s is not on PATH (go install %s); set CAIRN_E2E=1 to fail instead", name, module)
	return ""
}

// goBinDir is where "go install" puts programs: GOBIN, else GOPATH/bin.
func goBinDir() string {
	if d := os.Getenv("GOBIN"); d != "" {
		return d
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	gopath, _, _ := strings.Cut(strings.TrimSpace(string(out)), string(os.PathListSeparator))
	if gopath == "" {
		return ""
	}
	return filepath.Join(gopath, "bin")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
