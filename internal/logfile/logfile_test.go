package logfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, f *File, line string) {
	t.Helper()
	if _, err := f.Write([]byte(line)); err != nil {
		t.Fatalf("Write(%q): %v", line, err)
	}
}

// TestRotateBySize: a line that would take the file past log_rotate_bytes
// starts a new file; the full one is kept under a rotated name, whole lines
// only, and log_rotate_max_files bounds how many are kept.
func TestRotateBySize(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Path, cfg.RotateBytes, cfg.RotateMaxFiles = filepath.Join(dir, "agent.log"), 20, 2
	f, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := "0123456789abcdef\n" // 17 bytes: one per file
	for range 5 {
		write(t, f, line)
	}
	if got := readFile(t, f.Name()); got != line {
		t.Errorf("current file: got %q, want one line", got)
	}
	rotated, err := f.Rotated()
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) != 2 {
		t.Fatalf("rotated files: got %q, want 2 (log_rotate_max_files)", rotated)
	}
	for _, r := range rotated {
		if !strings.HasPrefix(filepath.Base(r), "agent-") || filepath.Ext(r) != ".log" {
			t.Errorf("rotated file %q: want agent-<timestamp>.log", r)
		}
		if got := readFile(t, r); got != line {
			t.Errorf("rotated file %q: got %q, want one whole line", r, got)
		}
	}
}

// TestRotateByAge: a write after log_rotate_duration has passed since the
// file was opened goes to a new file.
func TestRotateByAge(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig() // 24h
		cfg.Path = dir + string(filepath.Separator)
		f, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if got, want := f.Name(), filepath.Join(dir, "cairn.log"); got != want {
			t.Errorf("log_file of a directory: got %q, want %q", got, want)
		}
		write(t, f, "first\n")
		time.Sleep(23 * time.Hour)
		write(t, f, "second\n")
		if rotated, _ := f.Rotated(); len(rotated) != 0 {
			t.Fatalf("after 23h: got rotated files %q, want none", rotated)
		}
		time.Sleep(time.Hour)
		write(t, f, "third\n")
		rotated, err := f.Rotated()
		if err != nil || len(rotated) != 1 {
			t.Fatalf("after 24h: got rotated files %q (%v), want one", rotated, err)
		}
		if got := readFile(t, rotated[0]); got != "first\nsecond\n" {
			t.Errorf("rotated file: got %q, want the first two lines", got)
		}
		if got := readFile(t, f.Name()); got != "third\n" {
			t.Errorf("current file: got %q, want the third line", got)
		}
	})
}

// TestOpenNames: Consul's naming: a name without an extension gets .log,
// and an existing file is appended to.
func TestOpenNames(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Path = filepath.Join(dir, "sub", "agent")
	f, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "a\n")
	f.Close()
	if got, want := f.Name(), filepath.Join(dir, "sub", "agent.log"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	f, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "b\n")
	f.Close()
	if got := readFile(t, f.Name()); got != "a\nb\n" {
		t.Errorf("reopened: got %q, want both lines", got)
	}
}

// TestRotateKeepNone: log_rotate_max_files -1 removes each rotated file.
func TestRotateKeepNone(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Path, cfg.RotateBytes, cfg.RotateMaxFiles = filepath.Join(t.TempDir(), "a.log"), 4, -1
	f, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 3 {
		write(t, f, "abc\n")
	}
	if rotated, err := f.Rotated(); err != nil || len(rotated) != 0 {
		t.Errorf("got rotated files %q (%v), want none", rotated, err)
	}
	if got := readFile(t, f.Name()); got != "abc\n" {
		t.Errorf("current file: got %q, want the last line", got)
	}
}
