package checks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

func TestTTL(t *testing.T) {
	t.Parallel()
	m, rec := newManager(t, checks.Config{}, nil)
	const ttl = 300 * time.Millisecond
	mustAdd(t, m, checks.Definition{ID: "app", TTL: ttl, OutputMaxSize: 10})

	if err := m.UpdateTTL("app", catalog.HealthPassing, "all good, truncated here"); err != nil {
		t.Fatal(err)
	}
	// The report is applied before UpdateTTL returns.
	if st, out, _ := m.Status("app"); st != catalog.HealthPassing || out != "all good, " {
		t.Fatalf("after pass: got %s %q, want passing %q", st, out, "all good, ")
	}
	// Reports within the TTL keep it alive, well past one TTL.
	from := rec.mark()
	tick := time.NewTicker(20 * time.Millisecond)
	for end := time.Now().Add(2 * ttl); time.Now().Before(end); <-tick.C {
		if err := m.UpdateTTL("app", catalog.HealthPassing, "all good"); err != nil {
			t.Fatal(err)
		}
	}
	tick.Stop()
	if evs, _, _, _ := rec.since("app", from); len(evs) != 1 || evs[0].status != catalog.HealthPassing {
		t.Fatalf("while refreshed: got %v, want just the output change", evs)
	}
	// Silence: expiry, keeping the last output.
	i := rec.waitFor(t, "app", from, catalog.HealthCritical, "TTL expired (last output before timeout follows): all good")
	if err := m.UpdateTTL("app", catalog.HealthWarning, "slow"); err != nil {
		t.Fatal(err)
	}
	i = rec.waitFor(t, "app", i, catalog.HealthWarning, "slow")
	rec.waitFor(t, "app", i, catalog.HealthCritical, "TTL expired (last output before timeout follows): slow")
}

func TestTTLStartsInStatus(t *testing.T) {
	t.Parallel()
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "app", TTL: 20 * time.Millisecond, Status: catalog.HealthPassing})
	if st, _, _ := m.Status("app"); st != catalog.HealthPassing {
		t.Fatalf("status at start: got %s, want passing", st)
	}
	rec.waitFor(t, "app", 0, catalog.HealthCritical, "TTL expired")
}

func TestUpdateTTLErrors(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "app", TTL: time.Minute})
	mustAdd(t, m, checks.Definition{ID: "tcp", TCP: "127.0.0.1:1", Interval: time.Minute})
	if err := m.UpdateTTL("nope", catalog.HealthPassing, ""); !errors.Is(err, checks.ErrUnknownCheck) {
		t.Errorf("unknown check: got %v, want ErrUnknownCheck", err)
	}
	if err := m.UpdateTTL("tcp", catalog.HealthPassing, ""); !errors.Is(err, checks.ErrNotTTL) {
		t.Errorf("TCP check: got %v, want ErrNotTTL", err)
	}
	var fe *catalog.FieldError
	if err := m.UpdateTTL("app", catalog.HealthMaintenance, ""); !errors.As(err, &fe) || fe.Field != "Status" {
		t.Errorf("maintenance: got %v, want a FieldError on Status", err)
	}
}

// aliasSource is an AliasSource whose answer a test sets.
type aliasSource struct {
	mu     sync.Mutex
	status catalog.HealthStatus
	found  bool
	err    error
	asked  [2]string // node, service of the last call
}

func (a *aliasSource) set(status catalog.HealthStatus, found bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.found, a.err = status, found, err
}

func (a *aliasSource) AliasHealth(ctx context.Context, node, serviceID string) (catalog.HealthStatus, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = [2]string{node, serviceID}
	return a.status, a.found, a.err
}

func (a *aliasSource) lastAsked() [2]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked
}

func TestAlias(t *testing.T) {
	t.Parallel()
	src := &aliasSource{status: catalog.HealthPassing, found: true}
	m, rec := newManager(t, checks.Config{AliasInterval: 10 * time.Millisecond}, src)
	mustAdd(t, m, checks.Definition{ID: "sidecar", ServiceID: "sidecar", AliasService: "web-1"})

	i := rec.waitFor(t, "sidecar", 0, catalog.HealthPassing, "alias service web-1: passing")
	if got := src.lastAsked(); got != [2]string{"", "web-1"} {
		t.Errorf("asked for: got %q, want [\"\" web-1]", got)
	}
	src.set(catalog.HealthCritical, true, nil)
	i = rec.waitFor(t, "sidecar", i, catalog.HealthCritical, "alias service web-1: critical")
	src.set(catalog.HealthWarning, true, nil)
	i = rec.waitFor(t, "sidecar", i, catalog.HealthWarning, "alias service web-1: warning")
	src.set("", false, nil)
	i = rec.waitFor(t, "sidecar", i, catalog.HealthCritical, "no such service")
	src.set(catalog.HealthPassing, true, nil)
	i = rec.waitFor(t, "sidecar", i, catalog.HealthPassing, "passing")
	src.set("", false, errors.New("servers unreachable"))
	i = rec.waitFor(t, "sidecar", i, catalog.HealthCritical, "servers unreachable")
	src.set(catalog.HealthMaintenance, true, nil)
	rec.waitFor(t, "sidecar", i, catalog.HealthCritical, "in maintenance")
}

func TestAliasNode(t *testing.T) {
	t.Parallel()
	src := &aliasSource{found: false}
	m, rec := newManager(t, checks.Config{}, src)
	mustAdd(t, m, checks.Definition{ID: "n2-alive", AliasNode: "n2", Interval: 10 * time.Millisecond, Status: catalog.HealthPassing})
	rec.waitFor(t, "n2-alive", 0, catalog.HealthCritical, "alias node n2: no such node")
	if got := src.lastAsked(); got != [2]string{"n2", ""} {
		t.Errorf("asked for: got %q, want [n2 \"\"]", got)
	}
}

func TestAliasWithoutSource(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, checks.Config{}, nil)
	if err := m.Add(checks.Definition{ID: "a", AliasService: "web"}); !errors.Is(err, checks.ErrNoAliasSource) {
		t.Errorf("Add: got %v, want ErrNoAliasSource", err)
	}
}
