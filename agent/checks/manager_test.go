package checks_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

func TestNewManagerConfig(t *testing.T) {
	t.Parallel()
	if _, err := checks.NewManager(checks.Config{AliasInterval: -time.Second}, nil, nil, nil); err == nil {
		t.Error("negative AliasInterval: got no error")
	}
	m, err := checks.NewManager(checks.Config{}, nil, nil, nil) // nil Notifier and logger are fine
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m, checks.Definition{ID: "x", TTL: 10 * time.Millisecond})
	m.Close()
}

func TestAddReplaces(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "x", TTL: time.Minute, Status: catalog.HealthWarning})
	mustAdd(t, m, checks.Definition{ID: "x", TCP: ln.Addr().String(), Interval: 10 * time.Millisecond})
	if st, _, _ := m.Status("x"); st != catalog.HealthCritical {
		t.Errorf("status of the replacement: got %s, want critical (its own start)", st)
	}
	if err := m.UpdateTTL("x", catalog.HealthPassing, ""); !errors.Is(err, checks.ErrNotTTL) {
		t.Errorf("UpdateTTL on the replaced check: got %v, want ErrNotTTL", err)
	}
	rec.waitFor(t, "x", 0, catalog.HealthPassing, "TCP connect")
}

// After Remove returns, the Notifier hears nothing more of the check.
func TestRemoveSilences(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "gone", TCP: addr, Interval: 10 * time.Millisecond})
	rec.waitFor(t, "gone", 0, catalog.HealthPassing, "Success")
	m.Remove("gone")
	from := rec.mark()
	ln.Close() // would turn "gone" critical if it still ran
	mustAdd(t, m, checks.Definition{ID: "witness", TCP: addr, Interval: 10 * time.Millisecond, Status: catalog.HealthPassing})
	rec.waitFor(t, "witness", from, catalog.HealthCritical, "refused")
	if evs, _, _, _ := rec.since("gone", from); len(evs) != 0 {
		t.Errorf("events after Remove: got %v, want none", evs)
	}
	if _, _, ok := m.Status("gone"); ok {
		t.Error("Status after Remove: got ok, want not found")
	}
}

// Close cancels every probe in flight and waits for the goroutines; the
// leak check in TestMain sees that nothing is left.
func TestCloseWithHungProbes(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, 0)
	s := newScriptTarget(t, "sleep")
	m, err := checks.NewManager(checks.Config{EnableScriptChecks: true}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m, checks.Definition{ID: "http", HTTP: tg.URL, Interval: time.Second})
	mustAdd(t, m, checks.Definition{ID: "script", Args: s.args(), Interval: time.Second})
	mustAdd(t, m, checks.Definition{ID: "ttl", TTL: time.Hour})
	pid := s.childPid(t)
	<-tg.started
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Close took %s with probes hanging; want them cancelled at once", d)
	}
	waitGone(t, pid)
	m.Close() // again: a no-op
	if err := m.Add(checks.Definition{ID: "late", TTL: time.Minute}); !errors.Is(err, checks.ErrClosed) {
		t.Errorf("Add after Close: got %v, want ErrClosed", err)
	}
}
