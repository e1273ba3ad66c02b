package checks_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// checkScript exits with the code written in its first argument's file,
// after a line on stdout and one on stderr; for "sleep" it starts a
// sleeping child, writes the child's pid to its second argument's file,
// and waits for it.
const checkScript = `#!/bin/sh
code=$(cat "$1")
if [ "$code" = sleep ]; then
	echo "going to sleep"
	sleep 30 &
	echo $! > "$2"
	wait
	exit 0
fi
echo "stdout $code"
echo "stderr $code" >&2
exit "$code"
`

type scriptTarget struct {
	script, codeFile, pidFile string
}

func newScriptTarget(t *testing.T, code string) *scriptTarget {
	dir := t.TempDir()
	s := &scriptTarget{
		script:   filepath.Join(dir, "check.sh"),
		codeFile: filepath.Join(dir, "code"),
		pidFile:  filepath.Join(dir, "pid"),
	}
	if err := os.WriteFile(s.script, []byte(checkScript), 0o644); err != nil {
		t.Fatal(err)
	}
	s.set(t, code)
	return s
}

// set makes the next runs exit with code; the rename makes the change
// atomic for a script reading the file.
func (s *scriptTarget) set(t *testing.T, code string) {
	tmp := s.codeFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.codeFile); err != nil {
		t.Fatal(err)
	}
}

func (s *scriptTarget) args() []string { return []string{"/bin/sh", s.script, s.codeFile, s.pidFile} }

// childPid waits for the sleeping child to write its pid.
func (s *scriptTarget) childPid(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		b, err := os.ReadFile(s.pidFile)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never wrote its child's pid")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGone waits until process pid has exited (gone, or a zombie nobody
// has reaped yet, as happens in containers whose init does not reap).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || bytes.Contains(stat, []byte(") Z ")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running: %s", pid, stat)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestScript(t *testing.T) {
	t.Parallel()
	s := newScriptTarget(t, "0")
	m, rec := newManager(t, checks.Config{EnableScriptChecks: true}, nil)
	mustAdd(t, m, checks.Definition{ID: "job", Args: s.args(), Interval: 100 * time.Millisecond})
	i := rec.waitFor(t, "job", 0, catalog.HealthPassing, "stdout 0\nstderr 0\n")
	s.set(t, "2")
	i = rec.waitFor(t, "job", i, catalog.HealthCritical, "stderr 2")
	s.set(t, "1")
	i = rec.waitFor(t, "job", i, catalog.HealthWarning, "stdout 1")
	s.set(t, "0")
	i = rec.waitFor(t, "job", i, catalog.HealthPassing, "stdout 0")
	s.set(t, "sleep")
	i = rec.waitFor(t, "job", i, catalog.HealthCritical, "timed out after 100ms running /bin/sh\ngoing to sleep")
	waitGone(t, s.childPid(t)) // the whole process group was killed
	s.set(t, "0")
	rec.waitFor(t, "job", i, catalog.HealthPassing, "stdout 0")
}

func TestScriptOutput(t *testing.T) {
	t.Parallel()
	m, rec := newManager(t, checks.Config{EnableScriptChecks: true}, nil)
	mustAdd(t, m, checks.Definition{
		ID: "chatty", Args: []string{"/bin/sh", "-c", "yes x | head -n 5000; echo last"},
		Interval: 50 * time.Millisecond, OutputMaxSize: 100,
	})
	mustAdd(t, m, checks.Definition{ID: "missing", Args: []string{"/nonexistent/check"}, Interval: 50 * time.Millisecond})
	mustAdd(t, m, checks.Definition{ID: "silent", Args: []string{"/bin/sh", "-c", "exit 3"}, Interval: 50 * time.Millisecond})
	// The tail is kept: the end of the output says why.
	rec.waitFor(t, "chatty", 0, catalog.HealthPassing, "Captured 100 of 10005 bytes\n...\n\nx\nx\n")
	rec.waitFor(t, "chatty", 0, catalog.HealthPassing, "x\nlast\n")
	rec.waitFor(t, "missing", 0, catalog.HealthCritical, "no such file or directory")
	rec.waitFor(t, "silent", 0, catalog.HealthCritical, "exit status 3")
}

// A script that hangs is killed by Remove, not waited out.
func TestRemoveKillsScript(t *testing.T) {
	t.Parallel()
	s := newScriptTarget(t, "sleep")
	m, _ := newManager(t, checks.Config{EnableScriptChecks: true}, nil)
	mustAdd(t, m, checks.Definition{ID: "stuck", Args: s.args(), Interval: time.Second, Timeout: time.Second})
	pid := s.childPid(t)
	start := time.Now()
	m.Remove("stuck")
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Remove took %s with a script hanging; want it killed at once", d)
	}
	waitGone(t, pid)
}

func TestScriptChecksDisabled(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, checks.Config{}, nil)
	err := m.Add(checks.Definition{ID: "job", Args: []string{"/bin/true"}, Interval: time.Second})
	var fe *catalog.FieldError
	if !errors.As(err, &fe) || fe.Field != "Args" || fe.Reason != "script checks are disabled; start the agent with -enable-script-checks" {
		t.Fatalf("Add with script checks disabled: got %v, want a FieldError on Args", err)
	}
}
