package checks_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// waitTimeout bounds every wait for a notification; the checks in these
// tests run every 10–50ms, so anything near it is a failure.
const waitTimeout = 5 * time.Second

// event is one Notifier call.
type event struct {
	id     string
	status catalog.HealthStatus
	output string
}

func (e event) String() string { return fmt.Sprintf("%s %s %q", e.id, e.status, e.output) }

// recorder is a Notifier that keeps every call, and lets a test wait for
// one without sleeping: changed is closed (and replaced) on every call.
type recorder struct {
	mu      sync.Mutex
	events  []event
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) UpdateCheck(id string, status catalog.HealthStatus, output string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{id, status, output})
	close(r.changed)
	r.changed = make(chan struct{})
}

// snapshot returns the events of check id from index from on (indexes are
// into all events).
func (r *recorder) since(id string, from int) (evs []event, idx []int, next int, changed chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; i < len(r.events); i++ {
		if r.events[i].id == id {
			evs = append(evs, r.events[i])
			idx = append(idx, i)
		}
	}
	return evs, idx, len(r.events), r.changed
}

// waitFor waits for an event of check id, at index from or later, with
// status and output containing sub; it returns the index after it.
func (r *recorder) waitFor(t *testing.T, id string, from int, status catalog.HealthStatus, sub string) int {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		evs, idx, _, changed := r.since(id, from)
		for i, e := range evs {
			if e.status == status && strings.Contains(e.output, sub) {
				return idx[i] + 1
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("check %s: no %s event with output containing %q within %s; got %v", id, status, sub, waitTimeout, evs)
		}
	}
}

// mark returns the index the next event will get.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// newManager returns a Manager reporting to a new recorder, closed when
// the test ends.
func newManager(t *testing.T, cfg checks.Config, alias checks.AliasSource) (*checks.Manager, *recorder) {
	t.Helper()
	rec := newRecorder()
	m, err := checks.NewManager(cfg, rec, alias, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, rec
}

func mustAdd(t *testing.T, m *checks.Manager, def checks.Definition) {
	t.Helper()
	if err := m.Add(def); err != nil {
		t.Fatalf("Add(%+v): %v", def, err)
	}
}
