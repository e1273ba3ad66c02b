package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKVCommands runs cairn kv put, get and delete against a dev agent.
func TestKVCommands(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "kv")
	run := func(args ...string) string {
		t.Helper()
		return mustRun(t, append([]string{"kv", args[0], "-http-addr", addr}, args[1:]...)...)
	}

	if out := run("put", "-flags", "42", "app/config", "hello"); out != "Wrote key \"app/config\"\n" {
		t.Errorf("put: got %q", out)
	}
	if out := run("get", "app/config"); out != "hello\n" {
		t.Errorf("get: got %q, want hello", out)
	}
	if out := run("get", "-base64", "app/config"); out != "aGVsbG8=\n" {
		t.Errorf("get -base64: got %q", out)
	}
	detailed := run("get", "-detailed", "app/config")
	for _, want := range []string{"Flags        42\n", "Key          app/config\n", "LockIndex    0\n", "Session      -\n", "Value        hello\n"} {
		if !strings.Contains(detailed, want) {
			t.Errorf("get -detailed: got %q, want it to hold %q", detailed, want)
		}
	}

	// Values from a file, from base64; an empty value.
	file := filepath.Join(t.TempDir(), "v")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("put", "app/b/file", "@"+file)
	run("put", "-base64", "app/b/bin", "AAEC")
	run("put", "other")
	if out := run("get", "-recurse", "app/"); out != "app/b/bin:\x00\x01\x02\napp/b/file:from a file\napp/config:hello\n" {
		t.Errorf("get -recurse: got %q", out)
	}
	if out := run("get", "-keys", "app/"); out != "app/b/\napp/config\n" {
		t.Errorf("get -keys: got %q", out)
	}
	if out := run("get", "-keys", "-separator", "", "app/"); out != "app/b/bin\napp/b/file\napp/config\n" {
		t.Errorf("get -keys -separator '': got %q", out)
	}
	if out := run("get", "-keys"); out != "app/\nother\n" {
		t.Errorf("get -keys of the root: got %q", out)
	}

	// CAS: the modify index from -detailed.
	var index string
	for line := range strings.Lines(detailed) {
		if v, ok := strings.CutPrefix(line, "ModifyIndex"); ok {
			index = strings.TrimSpace(v)
		}
	}
	_, stderr, code := runCLI(t, "kv", "put", "-http-addr", addr, "-cas", "-modify-index", "1", "app/config", "x")
	wantError(t, stderr, code, `did not write key "app/config"`, "-modify-index")
	run("put", "-cas", "-modify-index", index, "app/config", "bye")
	if out := run("get", "app/config"); out != "bye\n" {
		t.Errorf("get after cas: got %q, want bye", out)
	}
	_, stderr, code = runCLI(t, "kv", "delete", "-http-addr", addr, "-cas", "-modify-index", index, "app/config")
	wantError(t, stderr, code, `did not delete key "app/config"`)

	if out := run("delete", "-recurse", "app/b/"); out != "Deleted keys under \"app/b/\"\n" {
		t.Errorf("delete -recurse: got %q", out)
	}
	if out := run("delete", "other"); out != "Deleted key \"other\"\n" {
		t.Errorf("delete: got %q", out)
	}
	if out := run("get", "-recurse"); out != "app/config:bye\n" {
		t.Errorf("get -recurse after the deletes: got %q", out)
	}
	_, stderr, code = runCLI(t, "kv", "get", "-http-addr", addr, "other")
	wantError(t, stderr, code, `no key exists at "other"`)
}

func TestKVUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"kv", "nope"}, []string{`unknown command "cairn kv nope"`}},
		{[]string{"kv", "get"}, []string{"want a KEY", `"cairn kv get -h"`}},
		{[]string{"kv", "get", "a", "b"}, []string{`unexpected argument "b"`}},
		{[]string{"kv", "get", "-recurse", "-keys", "a"}, []string{"-recurse and -keys"}},
		{[]string{"kv", "put"}, []string{"want a KEY", `"cairn kv put -h"`}},
		{[]string{"kv", "put", "a", "b", "c"}, []string{`unexpected argument "c"`}},
		{[]string{"kv", "put", "-cas", "a", "b"}, []string{"-cas needs -modify-index"}},
		{[]string{"kv", "put", "-modify-index", "3", "a", "b"}, []string{"-modify-index is used only with -cas"}},
		{[]string{"kv", "put", "-flags", "x", "a"}, []string{"-flags", `"cairn kv put -h"`}},
		{[]string{"kv", "put", "-base64", "a", "!!"}, []string{"VALUE is not base64"}},
		{[]string{"kv", "delete"}, []string{"want a KEY"}},
		{[]string{"kv", "delete", "-recurse", "-cas", "-modify-index", "1", "a"}, []string{"-recurse and -cas"}},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}
	for _, args := range [][]string{{"kv", "-h"}, {"kv", "get", "-h"}, {"kv", "put", "-h"}, {"kv", "delete", "-h"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "USAGE:") {
			t.Errorf("%v: got exit code %d, stderr %q, stdout %q", args, code, stderr, stdout)
		}
	}
}

// TestKVExportImport: an export of a prefix, imported under another
// prefix, gives the same keys, flags and values (binary ones too); bad
// data writes nothing.
func TestKVExportImport(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "kvexport")
	run := func(args ...string) string {
		t.Helper()
		return mustRun(t, append([]string{"kv", args[0], "-http-addr", addr}, args[1:]...)...)
	}
	run("put", "-flags", "7", "src/a", "alpha")
	run("put", "-base64", "src/b/bin", "AAEC")
	run("put", "elsewhere", "x")

	export := run("export", "src/")
	file := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run("import", "-prefix", "copy/", "@"+file); out != "Imported 2 keys\n" {
		t.Errorf("import: got %q", out)
	}
	if out := run("get", "-recurse", "copy/"); out != "copy/src/a:alpha\ncopy/src/b/bin:\x00\x01\x02\n" {
		t.Errorf("the imported keys: got %q", out)
	}
	if out := run("get", "-detailed", "copy/src/a"); !strings.Contains(out, "Flags        7\n") {
		t.Errorf("the imported flags: got %q", out)
	}

	_, stderr, code := runCLI(t, "kv", "import", "-http-addr", addr, `[{"key": "bad/x", "value": "not base64!"}]`)
	wantError(t, stderr, code, "not a cairn kv export")
	if out := run("get", "-keys", "bad/"); out != "" {
		t.Errorf("keys after a bad import: got %q, want none", out)
	}
}
