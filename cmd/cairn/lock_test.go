package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// lockRun is one "cairn lock" run in the background.
type lockRun struct {
	done           chan struct{}
	code           int
	stdout, stderr bytes.Buffer
}

// startLock runs the CLI with args in the background, with ctx as the
// app's context (cancelling it stands in for SIGINT).
func startLock(ctx context.Context, args ...string) *lockRun {
	r := &lockRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.code = run(ctx, append([]string{"cairn", "lock"}, args...), &r.stdout, &r.stderr)
	}()
	return r
}

// wait waits for the run to end, failing the test after limit.
func (r *lockRun) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("cairn lock still running after %v", limit)
	}
}

// lockClient returns a client of the agent at addr.
func lockClient(t *testing.T, addr string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = addr
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fileHas waits until the file at path contains want.
func fileHas(t *testing.T, path, want string) {
	t.Helper()
	waittest.For(t, 20*time.Second, want+" in "+filepath.Base(path), func() error {
		b, _ := os.ReadFile(path)
		if !strings.Contains(string(b), want) {
			return fmt.Errorf("%s holds %q", path, b)
		}
		return nil
	})
}

func TestLockSecondWaitsForFirst(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "lock1")
	c := lockClient(t, addr)
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "gate")

	// A holds the lock until the gate file exists.
	a := startLock(t.Context(), "-http-addr", addr, "jobs/nightly",
		`echo "A start $CONSUL_LOCK_HELD $CAIRN_LOCK_HELD" >>`+log+`; while [ ! -e `+gate+` ]; do sleep 0.02; done; echo "A end" >>`+log)
	fileHas(t, log, "A start")
	b := startLock(t.Context(), "-http-addr", addr, "jobs/nightly", `echo B >>`+log)
	// B is waiting once it has a session of its own; it may not run while
	// A holds the lock.
	waittest.For(t, 20*time.Second, "two sessions", func() error {
		ss, _, err := c.Session().List(t.Context(), nil)
		if err == nil && len(ss) != 2 {
			return fmt.Errorf("%d sessions", len(ss))
		}
		return err
	})
	pair, _, err := c.KV().Get(t.Context(), "jobs/nightly/.lock", nil)
	if err != nil || pair == nil || pair.Session == "" || pair.Flags != api.LockFlagValue {
		t.Fatalf("lock key while A holds it: got %+v, %v", pair, err)
	}
	if got, _ := os.ReadFile(log); strings.Contains(string(got), "B") {
		t.Fatalf("B ran while A held the lock: %q", got)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 20*time.Second)
	b.wait(t, 20*time.Second)
	for _, r := range []*lockRun{a, b} {
		if r.code != 0 || r.stderr.Len() != 0 {
			t.Errorf("got exit code %d, stderr %q; want 0 and nothing", r.code, r.stderr.String())
		}
	}
	if got, _ := os.ReadFile(log); string(got) != "A start true true\nA end\nB\n" {
		t.Errorf("log: got %q, want A's section, then B's", got)
	}
	// Both released, destroyed their sessions and deleted the lock key.
	if ss, _, err := c.Session().List(t.Context(), nil); err != nil || len(ss) != 0 {
		t.Errorf("sessions after both: got %+v, %v; want none", ss, err)
	}
	if keys, _, err := c.KV().Keys(t.Context(), "jobs/", "", nil); err != nil || len(keys) != 0 {
		t.Errorf("keys after both: got %q, %v; want none", keys, err)
	}
}

func TestLockSemaphoreLetsNHold(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "lock2")
	dir := t.TempDir()
	// Each child marks itself in and waits for the other's mark: they
	// finish only if both hold a slot at once.
	child := func(me, other string) string {
		return `touch ` + filepath.Join(dir, me) + `; i=0; while [ ! -e ` + filepath.Join(dir, other) + ` ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done; [ -e ` + filepath.Join(dir, other) + ` ]`
	}
	a := startLock(t.Context(), "-http-addr", addr, "-n", "2", "-child-exit-code", "pool", child("a", "b"))
	b := startLock(t.Context(), "-http-addr", addr, "-n", "2", "-child-exit-code", "pool", child("b", "a"))
	a.wait(t, 30*time.Second)
	b.wait(t, 30*time.Second)
	for _, r := range []*lockRun{a, b} {
		if r.code != 0 || r.stderr.Len() != 0 {
			t.Errorf("got exit code %d, stderr %q; want 0 and nothing", r.code, r.stderr.String())
		}
	}
	// A third with another -n is refused while the lock key exists; so
	// none is left after both.
	if keys, _, err := lockClient(t, addr).KV().Keys(t.Context(), "pool/", "", nil); err != nil || len(keys) != 0 {
		t.Errorf("keys after both: got %q, %v; want none", keys, err)
	}
}

func TestLockInterruptStopsTheChild(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "lock3")
	c := lockClient(t, addr)
	dir := t.TempDir()
	started, after := filepath.Join(dir, "started"), filepath.Join(dir, "after")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := startLock(ctx, "-http-addr", addr, "svc", `touch `+started+`; sleep 30; touch `+after)
	waittest.For(t, 10*time.Second, "the started file", func() error { _, err := os.Stat(started); return err })
	cancel() // as SIGINT would
	r.wait(t, 20*time.Second)
	wantError(t, r.stderr.String(), r.code, "interrupted", "the child was stopped")
	if _, err := os.Stat(after); err == nil {
		t.Error("the child ran to its end")
	}
	if ss, _, err := c.Session().List(t.Context(), nil); err != nil || len(ss) != 0 {
		t.Errorf("sessions: got %+v, %v; want none", ss, err)
	}
	if pair, _, err := c.KV().Get(t.Context(), "svc/.lock", nil); err != nil || pair != nil {
		t.Errorf("lock key: got %+v, %v; want none", pair, err)
	}
}

func TestLockLostStopsTheChild(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "lock4")
	c := lockClient(t, addr)
	dir := t.TempDir()
	started, after := filepath.Join(dir, "started"), filepath.Join(dir, "after")
	r := startLock(t.Context(), "-http-addr", addr, "-lock-delay", "1ms", "svc", `touch `+started+`; sleep 30; touch `+after)
	waittest.For(t, 10*time.Second, "the started file", func() error { _, err := os.Stat(started); return err })
	pair, _, err := c.KV().Get(t.Context(), "svc/.lock", nil)
	if err != nil || pair == nil || pair.Session == "" {
		t.Fatalf("lock key: got %+v, %v", pair, err)
	}
	info, _, err := c.Session().Info(t.Context(), pair.Session, nil)
	if err != nil || info == nil || info.LockDelay != time.Millisecond || info.Name != "cairn lock for touch "+started+"; sleep 30; touch "+after+" at svc" {
		t.Errorf("session: got %+v, %v", info, err)
	}
	if err := c.Session().Destroy(t.Context(), pair.Session, nil); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 20*time.Second)
	wantError(t, r.stderr.String(), r.code, "lost the lock", "the child was stopped")
	if _, err := os.Stat(after); err == nil {
		t.Error("the child ran to its end")
	}
}

func TestLockExitCodes(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "lock5")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"p", "exit 3"}, 0},
		{[]string{"-child-exit-code", "p", "exit 3"}, 3},
		{[]string{"-child-exit-code", "-shell=false", "p", "/bin/sh", "-c", "exit $0", "4"}, 4},
		{[]string{"-child-exit-code", "-shell=false", "p", "true"}, 0},
	} {
		r := startLock(t.Context(), append([]string{"-http-addr", addr}, tc.args...)...)
		r.wait(t, 20*time.Second)
		if r.code != tc.want {
			t.Errorf("%q: got exit code %d (stderr %q), want %d", tc.args, r.code, r.stderr.String(), tc.want)
		}
	}
}

func TestLockTimeout(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "lock6")
	dir := t.TempDir()
	started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	a := startLock(t.Context(), "-http-addr", addr, "p", `touch `+started+`; while [ ! -e `+gate+` ]; do sleep 0.02; done`)
	waittest.For(t, 10*time.Second, "the started file", func() error { _, err := os.Stat(started); return err })
	b := startLock(t.Context(), "-http-addr", addr, "-timeout", "300ms", "p", "true")
	b.wait(t, 20*time.Second)
	wantError(t, b.stderr.String(), b.code, "-timeout 300ms", "the lock on p was not acquired in time")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 20*time.Second)
	if a.code != 0 {
		t.Errorf("a: got exit code %d, stderr %q", a.code, a.stderr.String())
	}
}

func TestLockUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want PREFIX and CHILD"},
		{[]string{"p"}, "want PREFIX and CHILD"},
		{[]string{"/", "true"}, "PREFIX"},
		{[]string{"p", " "}, "CHILD is empty"},
		{[]string{"-n", "0", "p", "true"}, "-n 0"},
		{[]string{"-timeout", "-1s", "p", "true"}, "-timeout -1s"},
		{[]string{"-monitor-retries", "-1", "p", "true"}, "-monitor-retries -1"},
		{[]string{"-lock-delay", "2m", "p", "true"}, "-lock-delay 2m0s"},
		{[]string{"-n", "2", "-lock-delay", "1s", "p", "true"}, "-lock-delay applies to a lock"},
	} {
		_, stderr, code := runCLI(t, append([]string{"lock"}, tc.args...)...)
		wantUsage(t, stderr, code, tc.want)
	}
}
