package local_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
)

// run runs st's anti-entropy and pusher until the test ends.
func run(t *testing.T, st *local.State) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); st.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// ttl is a TTL check definition for service id.
func ttl(id string, d time.Duration) *checks.Definition {
	return &checks.Definition{ID: id, TTL: d}
}

// catalogStatus returns the status of check id in the catalog, "" when it
// holds no such check.
func catalogStatus(t testing.TB, f *fakeCatalog, id string) catalog.HealthStatus {
	t.Helper()
	if c := f.checks(t, nodeName)[id]; c != nil {
		return c.Status
	}
	return ""
}

func TestServiceCheckStatusReachesTheCatalog(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(t.TempDir()), cat)
	run(t, st)
	ctx := context.Background()
	if err := st.AddService(ctx, svc("web", "web", 80), []*checks.Definition{ttl("web-ttl", time.Minute)}); err != nil {
		t.Fatalf("AddService: %v", err)
	}
	if got := catalogStatus(t, cat, "web-ttl"); got != catalog.HealthCritical {
		t.Fatalf("check after registration: got %q, want critical (the default start)", got)
	}
	c := cat.checks(t, nodeName)["web-ttl"]
	if c.ServiceID != "web" || c.ServiceName != "web" || c.Type != checks.TypeTTL {
		t.Errorf("check in the catalog: got %+v, want service web, type ttl", c)
	}
	for _, status := range []catalog.HealthStatus{catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical, catalog.HealthPassing} {
		if err := st.UpdateTTL("web-ttl", status, "app says "+string(status)); err != nil {
			t.Fatalf("UpdateTTL(%s): %v", status, err)
		}
		eventually(t, "status "+string(status)+" in the catalog", func() bool { return catalogStatus(t, cat, "web-ttl") == status })
	}
	if err := st.UpdateTTL("nosuch", catalog.HealthPassing, ""); !errors.Is(err, local.ErrUnknownCheck) {
		t.Errorf("UpdateTTL(nosuch): got %v, want ErrUnknownCheck", err)
	}
}

func TestOutputOnlyChangesAreRateLimited(t *testing.T) {
	cat := newFakeCatalog(t)
	cfg := testConfig(t.TempDir())
	cfg.CheckUpdateInterval = time.Hour
	st := newState(t, cfg, cat)
	run(t, st)
	ctx := context.Background()
	if err := st.AddService(ctx, svc("web", "web", 80), []*checks.Definition{ttl("web-ttl", time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateTTL("web-ttl", catalog.HealthPassing, "first"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "passing in the catalog", func() bool { return catalogStatus(t, cat, "web-ttl") == catalog.HealthPassing })
	_, writes := cat.counts()
	for i := range 5 {
		if err := st.UpdateTTL("web-ttl", catalog.HealthPassing, "chatter "+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	// A status change after the chatter goes out at once, and carries
	// the latest output with it: the pusher has not been idle, only
	// holding the output back.
	if err := st.UpdateTTL("web-ttl", catalog.HealthWarning, "slow"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "warning in the catalog", func() bool { return catalogStatus(t, cat, "web-ttl") == catalog.HealthWarning })
	if _, after := cat.counts(); after != writes+1 {
		t.Errorf("writes for 5 output changes and a status change: got %d, want 1", after-writes)
	}
	if got := cat.checks(t, nodeName)["web-ttl"].Output; got != "slow" {
		t.Errorf("output in the catalog: got %q, want slow", got)
	}
}

func TestMaintenanceMode(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(t.TempDir()), cat)
	ctx := context.Background()
	mustAdd(t, st, svc("web", "web", 80))
	if err := st.SetServiceMaintenance(ctx, "web", true, "deploying"); err != nil {
		t.Fatalf("enable service maintenance: %v", err)
	}
	c := cat.checks(t, nodeName)["_service_maintenance:web"]
	if c == nil || c.Status != catalog.HealthCritical || c.Type != catalog.CheckTypeMaintenance || c.Notes != "deploying" || c.ServiceID != "web" {
		t.Fatalf("maintenance check: got %+v, want critical of type maintenance on web noting the reason (Consul's)", c)
	}
	if err := st.SetNodeMaintenance(ctx, true, ""); err != nil {
		t.Fatalf("enable node maintenance: %v", err)
	}
	if got := catalogStatus(t, cat, "_node_maintenance"); got != catalog.HealthCritical {
		t.Errorf("node maintenance check: got %q", got)
	}
	if err := st.SetServiceMaintenance(ctx, "nosuch", true, ""); !errors.Is(err, local.ErrUnknownService) {
		t.Errorf("maintenance of an unknown service: got %v, want ErrUnknownService", err)
	}
	// The maintenance checks are the agent's: a full sync keeps them.
	if err := st.SyncFull(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"_service_maintenance:web", "_node_maintenance"} {
		if catalogStatus(t, cat, id) != catalog.HealthCritical {
			t.Errorf("%s gone after a full sync", id)
		}
	}
	if err := st.SetServiceMaintenance(ctx, "web", false, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetNodeMaintenance(ctx, false, ""); err != nil {
		t.Fatal(err)
	}
	if got := cat.checks(t, nodeName); len(got) != 0 {
		t.Errorf("checks after maintenance ends: got %v, want none", got)
	}
	if s := cat.services(t, nodeName)["web"]; s == nil {
		t.Error("web deregistered by maintenance mode")
	}
}

func TestSyncFullRestoresAndRemovesChecks(t *testing.T) {
	cat := newFakeCatalog(t)
	cfg := testConfig(t.TempDir())
	cfg.ServerChecks = []string{"serfHealth"}
	st := newState(t, cfg, cat)
	ctx := context.Background()
	if err := st.AddService(ctx, svc("web", "web", 80), []*checks.Definition{ttl("web-ttl", time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// Behind the agent's back: its check is deleted, a stranger check and
	// the servers' gossip check are added.
	if err := cat.Deregister(ctx, &catalog.DeregisterRequest{Node: nodeName, CheckID: "web-ttl"}); err != nil {
		t.Fatal(err)
	}
	cat.seed(t, &catalog.RegisterRequest{Node: nodeName, SkipNodeUpdate: true, Checks: []*catalog.Check{
		{CheckID: "stranger", Name: "x", Status: catalog.HealthPassing},
		{CheckID: "serfHealth", Name: "Serf Health Status", Status: catalog.HealthPassing, Type: "gossip"},
		// A leader of an older version named it "gossip": a stranger now.
		{CheckID: "gossip", Name: "Gossip health", Status: catalog.HealthPassing, Type: "gossip"},
	}})
	if err := st.SyncFull(ctx); err != nil {
		t.Fatalf("SyncFull: %v", err)
	}
	got := cat.checks(t, nodeName)
	if got["web-ttl"] == nil || got["serfHealth"] == nil || got["stranger"] != nil || got["gossip"] != nil {
		t.Errorf("checks after sync: got %v, want web-ttl restored, serfHealth kept, stranger and the old gossip check removed", sortedKeys(got))
	}
}

func TestChecksPersistAndTTLStatusResumes(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	before := newState(t, testConfig(dir), cat)
	ctx := context.Background()
	if err := before.AddService(ctx, svc("web", "web", 80), []*checks.Definition{ttl("web-ttl", time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := before.UpdateTTL("web-ttl", catalog.HealthPassing, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := before.SetNodeMaintenance(ctx, true, "rack move"); err != nil {
		t.Fatal(err)
	}
	before.Close()

	after := newState(t, testConfig(dir), cat)
	byID := map[string]*catalog.Check{}
	for _, c := range after.Checks() {
		byID[c.CheckID] = c
	}
	if c := byID["web-ttl"]; c == nil || c.Status != catalog.HealthPassing || c.ServiceID != "web" {
		t.Errorf("web-ttl after restart: got %+v, want passing (as it was) on web", c)
	}
	if c := byID["_node_maintenance"]; c == nil || c.Notes != "rack move" {
		t.Errorf("node maintenance after restart: got %+v", c)
	}
}

func TestAddCheckRefusesUnknownService(t *testing.T) {
	st := newState(t, testConfig(""), newFakeCatalog(t))
	err := st.AddCheck(context.Background(), &checks.Definition{ID: "c", ServiceID: "nosuch", TTL: time.Minute})
	var fe *catalog.FieldError
	if !errors.As(err, &fe) || fe.Field != "ServiceID" {
		t.Errorf("AddCheck on an unknown service: got %v, want a FieldError naming ServiceID", err)
	}
}

func TestDeregisterCriticalServiceAfter(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(""), cat)
	run(t, st)
	def := ttl("web-ttl", time.Minute)
	def.DeregisterCriticalServiceAfter = 100 * time.Millisecond
	if err := st.AddService(context.Background(), svc("web", "web", 80), []*checks.Definition{def}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web deregistered after being critical", func() bool {
		return len(st.Services()) == 0 && cat.services(t, nodeName)["web"] == nil
	})
}

// TestSyncFullLeavesTheServersServices: a service the servers keep on the
// node (the leader's cairn service) stays through a full sync that removes
// a stranger, and the agent refuses one of that ID for its own.
func TestSyncFullLeavesTheServersServices(t *testing.T) {
	cat := newFakeCatalog(t)
	cfg := testConfig(t.TempDir())
	cfg.ServerServices = []string{"cairn"}
	st := newState(t, cfg, cat)
	ctx := context.Background()
	cat.seed(t, &catalog.RegisterRequest{Node: nodeName, Address: nodeAddr, Service: svc("cairn", "cairn", 8300)})
	cat.seed(t, &catalog.RegisterRequest{Node: nodeName, SkipNodeUpdate: true, Service: svc("stranger", "stranger", 1)})
	if err := st.SyncFull(ctx); err != nil {
		t.Fatalf("SyncFull: %v", err)
	}
	if got := cat.services(t, nodeName); got["cairn"] == nil || got["stranger"] != nil {
		t.Errorf("services after sync: got %v, want cairn kept and stranger removed", sortedKeys(got))
	}
	var fe *catalog.FieldError
	if err := st.AddService(ctx, svc("cairn", "cairn", 1), nil); !errors.As(err, &fe) || fe.Field != "ID" {
		t.Errorf("AddService cairn: got %v, want a FieldError on ID", err)
	}
}
