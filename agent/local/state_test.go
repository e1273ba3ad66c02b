package local_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*local.Config)
		want   []string // substrings of the error; none means valid
	}{
		{"valid", func(*local.Config) {}, nil},
		{"in memory", func(c *local.Config) { c.DataDir = "" }, nil},
		{"no node name", func(c *local.Config) { c.NodeName = "" }, []string{"NodeName"}},
		{"no address", func(c *local.Config) { c.Address = "" }, []string{"Address"}},
		{"no datacenter", func(c *local.Config) { c.Datacenter = "" }, []string{"Datacenter"}},
		{"sync interval too short", func(c *local.Config) { c.SyncInterval = 999 * time.Millisecond }, []string{"SyncInterval"}},
		{"retry interval too short", func(c *local.Config) { c.RetryInterval = time.Millisecond }, []string{"RetryInterval"}},
		{"every problem", func(c *local.Config) { *c = local.Config{} },
			[]string{"NodeName", "Address", "Datacenter", "SyncInterval", "RetryInterval"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			tt.change(&cfg)
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want an error naming %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to name %s", err, w)
				}
			}
			if _, err := local.New(cfg, newFakeCatalog(t), slogDiscard()); err == nil {
				t.Errorf("New with an invalid config: got nil error, want one")
			}
		})
	}
}

func TestDefaultConfigTiming(t *testing.T) {
	cfg := local.DefaultConfig()
	if cfg.SyncInterval != time.Minute || cfg.RetryInterval != 5*time.Second {
		t.Errorf("got SyncInterval %s RetryInterval %s, want 1m0s and 5s", cfg.SyncInterval, cfg.RetryInterval)
	}
	cfg.NodeName, cfg.Address, cfg.Datacenter = nodeName, nodeAddr, nodeDC
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults with the node fields set: got %v, want valid", err)
	}
}

func TestAddServiceRejectsInvalid(t *testing.T) {
	tests := []struct {
		name  string
		svc   *catalog.Service
		field string
	}{
		{"no name", &catalog.Service{ID: "x", Port: 80}, "Name"},
		{"name with underscore", svc("", "my_web", 80), "Name"},
		{"name too long", svc("", strings.Repeat("a", 64), 80), "Name"},
		{"id with slash", svc("a/b", "web", 80), "ID"},
		{"id with space", svc("a b", "web", 80), "ID"},
		{"tag with dot", svc("", "web", 80, "v1.2"), "Tags[0]"},
		{"second tag empty", svc("", "web", 80, "ok", ""), "Tags[1]"},
		{"port too high", svc("", "web", 70000), "Port"},
		{"port negative", svc("", "web", -1), "Port"},
		{"address not an IP", &catalog.Service{Service: "web", Address: "web.example.com"}, "Address"},
		{"bad meta key", &catalog.Service{Service: "web", Meta: map[string]string{"a.b": "x"}}, "Meta[a.b]"},
		{"passing weight zero", &catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 0, Warning: 1}}, "Weights.Passing"},
		{"warning weight negative", &catalog.Service{Service: "web", Weights: catalog.Weights{Passing: 1, Warning: -1}}, "Weights.Warning"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cat := newFakeCatalog(t)
			st := newState(t, testConfig(dir), cat)

			err := st.AddService(context.Background(), tt.svc, nil)
			var fe *catalog.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *catalog.FieldError", err)
			}
			if fe.Field != tt.field {
				t.Errorf("got field %q (%v), want %q", fe.Field, err, tt.field)
			}
			if errors.Is(err, local.ErrNotSynced) {
				t.Errorf("got %v, which wraps ErrNotSynced; a rejected service was not stored", err)
			}
			if got := st.Services(); len(got) != 0 {
				t.Errorf("got %d services stored, want none", len(got))
			}
			if got := persistedFiles(t, dir); len(got) != 0 {
				t.Errorf("got files %v, want none", got)
			}
			if _, writes := cat.counts(); writes != 0 {
				t.Errorf("got %d catalog writes, want none", writes)
			}
			if got := cat.store.Index(); got != 0 {
				t.Errorf("got store index %d, want 0", got)
			}
		})
	}
}

func TestAddServiceStoresPersistsAndPushes(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)

	in := &catalog.Service{
		Service: "web", Tags: []string{"primary", "v1"}, Address: "10.0.0.9", Port: 8080,
		Meta: map[string]string{"version": "1.2"},
	}
	mustAdd(t, st, in)
	want := &catalog.Service{
		ID: "web", Service: "web", Tags: []string{"primary", "v1"}, Address: "10.0.0.9", Port: 8080,
		Meta: map[string]string{"version": "1.2"}, Weights: catalog.DefaultWeights,
	}

	if got := st.Services(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("Services: got %+v, want [%+v]", got, *want)
	}
	if files := persistedFiles(t, dir); len(files) != 1 {
		t.Errorf("got persisted files %v, want one", files)
	}
	sameSet(t, cat, nodeName, []*catalog.Service{want})
	n := cat.node(t, nodeName)
	if n == nil {
		t.Fatalf("node %s not in the catalog after AddService", nodeName)
	}
	if n.Address != nodeAddr || n.Datacenter != nodeDC || n.ID != nodeID || n.Meta["rack"] != "r1" {
		t.Errorf("catalog node: got %+v, want address %s dc %s id %s meta rack=r1", *n, nodeAddr, nodeDC, nodeID)
	}

	// The state keeps its own copy: neither the caller's value nor what
	// Services returns is shared with it.
	in.Tags[0] = "changed"
	in.Meta["version"] = "changed"
	out := st.Services()
	out[0].Tags[1] = "changed"
	out[0].Port = 1
	if got := st.Services(); !reflect.DeepEqual(got[0], want) {
		t.Errorf("after changing the caller's and a returned copy: got %+v, want %+v", *got[0], *want)
	}
}

func TestAddServiceUpdatesByID(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)

	mustAdd(t, st, svc("web-1", "web", 80))
	mustAdd(t, st, svc("web-1", "web", 81, "new"))

	want := normalized(t, svc("web-1", "web", 81, "new"))
	if got := st.Services(); len(got) != 1 || !got[0].SameAs(want) {
		t.Errorf("Services: got %+v, want only %+v", got, *want)
	}
	if files := persistedFiles(t, dir); len(files) != 1 {
		t.Errorf("got persisted files %v, want one", files)
	}
	sameSet(t, cat, nodeName, []*catalog.Service{want})
}

func TestServicesSortedByID(t *testing.T) {
	st := newState(t, testConfig(""), newFakeCatalog(t))
	for _, id := range []string{"c", "a", "b"} {
		mustAdd(t, st, svc(id, "web", 80))
	}
	if got, want := localIDs(st), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestNewReloadsPersistedServices(t *testing.T) {
	dir := t.TempDir()
	before := newState(t, testConfig(dir), newFakeCatalog(t))
	added := []*catalog.Service{
		{ID: "web-1", Service: "web", Tags: []string{"a"}, Port: 80, Meta: map[string]string{"k": "v"},
			Weights: catalog.Weights{Passing: 5, Warning: 2}},
		{ID: "api:9000", Service: "api", Address: "fd00::1", Port: 9000,
			TaggedAddresses: map[string]catalog.ServiceAddress{"wan": {Address: "192.0.2.1", Port: 19000}}},
		{ID: "gone", Service: "gone"},
	}
	for _, s := range added {
		mustAdd(t, before, s)
	}
	if err := before.RemoveService(context.Background(), "gone"); err != nil {
		t.Fatalf("RemoveService: %v", err)
	}

	// A restart: a new State over the same directory and a catalog that
	// lost everything.
	cat := newFakeCatalog(t)
	after := newState(t, testConfig(dir), cat)
	if got, want := after.Services(), before.Services(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart: got %v, want %v", got, want)
	}
	if _, writes := cat.counts(); writes != 0 {
		t.Errorf("New made %d catalog writes, want none before SyncFull", writes)
	}
	if err := after.SyncFull(context.Background()); err != nil {
		t.Fatalf("SyncFull: %v", err)
	}
	sameSet(t, cat, nodeName, after.Services())
}

func TestNewRejectsCorruptServiceFile(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"not JSON", "{not json"},
		{"truncated", `{"ID":"web","Service":"we`},
		{"wrong type", `{"ID":"web","Service":"web","Port":"80"}`},
		{"invalid service", `{"ID":"web","Service":"bad_name"}`},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustAdd(t, newState(t, testConfig(dir), newFakeCatalog(t)), svc("ok", "ok", 80))
			bad := filepath.Join(dir, "services", "776562.json")
			writeFile(t, bad, tt.data)

			_, err := local.New(testConfig(dir), newFakeCatalog(t), slogDiscard())
			if err == nil {
				t.Fatalf("got nil error, want one naming %s", bad)
			}
			if !strings.Contains(err.Error(), bad) {
				t.Errorf("got %q, want it to name %s", err, bad)
			}
		})
	}
}

func TestNewIgnoresTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	mustAdd(t, newState(t, testConfig(dir), newFakeCatalog(t)), svc("web", "web", 80))
	// What a crash between creating and renaming a temporary file leaves.
	writeFile(t, filepath.Join(dir, "services", ".tmp-123456"), `{"ID":"half`)
	if err := os.Mkdir(filepath.Join(dir, "services", "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}

	st := newState(t, testConfig(dir), newFakeCatalog(t))
	if got, want := localIDs(st), []string{"web"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "services", ".tmp-123456")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file after load: got stat error %v, want it removed", err)
	}
}

func TestNewRejectsMisplacedServiceFile(t *testing.T) {
	dir := t.TempDir()
	mustAdd(t, newState(t, testConfig(dir), newFakeCatalog(t)), svc("web", "web", 80))
	// A copy under another name would register web twice.
	writeFile(t, filepath.Join(dir, "services", "copy.json"), `{"ID":"web","Service":"web","Port":80}`)
	_, err := local.New(testConfig(dir), newFakeCatalog(t), slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "copy.json") {
		t.Fatalf("got %v, want an error naming copy.json", err)
	}
}

func TestNewCreatesServicesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	st := newState(t, testConfig(dir), newFakeCatalog(t))
	mustAdd(t, st, svc("web", "web", 80))
	if files := persistedFiles(t, dir); len(files) != 1 {
		t.Errorf("got persisted files %v, want one", files)
	}
}

func TestInMemoryStateWritesNoFiles(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	st := newState(t, testConfig(""), newFakeCatalog(t))
	mustAdd(t, st, svc("web", "web", 80))
	if err := st.RemoveService(context.Background(), "web"); err != nil {
		t.Fatalf("RemoveService: %v", err)
	}
	mustAdd(t, st, svc("db", "db", 5432))
	entries, err := os.ReadDir(cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("got %d entries in the working directory, want none", len(entries))
	}
	if got, want := localIDs(st), []string{"db"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestRemoveService(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)
	mustAdd(t, st, svc("web", "web", 80))
	mustAdd(t, st, svc("db", "db", 5432))

	if err := st.RemoveService(context.Background(), "web"); err != nil {
		t.Fatalf("RemoveService: %v", err)
	}
	if got, want := localIDs(st), []string{"db"}; !slices.Equal(got, want) {
		t.Errorf("in memory: got %v, want %v", got, want)
	}
	if files := persistedFiles(t, dir); len(files) != 1 {
		t.Errorf("on disk: got %v, want one file", files)
	}
	sameSet(t, cat, nodeName, []*catalog.Service{normalized(t, svc("db", "db", 5432))})
	if got := localIDs(newState(t, testConfig(dir), newFakeCatalog(t))); !slices.Equal(got, []string{"db"}) {
		t.Errorf("after restart: got %v, want [db]", got)
	}
}

func TestRemoveUnknownService(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)
	mustAdd(t, st, svc("web", "web", 80))
	// The catalog holds a service the agent does not: RemoveService is about
	// the agent's own services and leaves it to anti-entropy.
	cat.seed(t, &catalog.RegisterRequest{Node: nodeName, SkipNodeUpdate: true, Service: svc("other", "other", 1)})
	_, writesBefore := cat.counts()

	for _, id := range []string{"nope", "WEB", "other", ""} {
		err := st.RemoveService(context.Background(), id)
		if !errors.Is(err, local.ErrUnknownService) {
			t.Errorf("RemoveService(%q): got %v, want ErrUnknownService", id, err)
		}
	}
	if got := localIDs(st); !slices.Equal(got, []string{"web"}) {
		t.Errorf("got %v, want [web]", got)
	}
	if _, writes := cat.counts(); writes != writesBefore {
		t.Errorf("got %d catalog writes, want %d", writes, writesBefore)
	}
}

func TestFailedPushIsRetriedByRun(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)
	web := svc("web", "web", 80)

	cat.setFailing(true)
	err := st.AddService(context.Background(), web, nil)
	if !errors.Is(err, local.ErrNotSynced) || !errors.Is(err, errDown) {
		t.Fatalf("AddService with the catalog down: got %v, want ErrNotSynced wrapping %v", err, errDown)
	}
	if got := localIDs(st); !slices.Equal(got, []string{"web"}) {
		t.Errorf("kept: got %v, want [web]", got)
	}
	if files := persistedFiles(t, dir); len(files) != 1 {
		t.Errorf("persisted: got %v, want one file", files)
	}
	if got := cat.services(t, nodeName); len(got) != 0 {
		t.Fatalf("catalog: got %v, want nothing yet", sortedKeys(got))
	}

	stop := runLoop(t, st)
	defer stop()

	// The loop retries on its own while the catalog is still down...
	failures, _ := cat.counts()
	eventually(t, "a retry against the failing catalog", func() bool {
		f, _ := cat.counts()
		return f > failures
	})
	// ...and pushes the service once it is back.
	cat.setFailing(false)
	eventually(t, "the service to reach the catalog", func() bool {
		return len(cat.services(t, nodeName)) == 1
	})
	sameSet(t, cat, nodeName, []*catalog.Service{normalized(t, web)})
}

func TestFailedRemoveIsRetriedByRun(t *testing.T) {
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(t.TempDir()), cat)
	mustAdd(t, st, svc("web", "web", 80))

	cat.setFailing(true)
	err := st.RemoveService(context.Background(), "web")
	if !errors.Is(err, local.ErrNotSynced) || !errors.Is(err, errDown) {
		t.Fatalf("RemoveService with the catalog down: got %v, want ErrNotSynced wrapping %v", err, errDown)
	}
	if got := st.Services(); len(got) != 0 {
		t.Errorf("got %d local services, want none: removal is kept", len(got))
	}

	stop := runLoop(t, st)
	defer stop()
	cat.setFailing(false)
	eventually(t, "the service to leave the catalog", func() bool {
		return len(cat.services(t, nodeName)) == 0
	})
}

func TestRunStopsWithContext(t *testing.T) {
	st := newState(t, testConfig(""), newFakeCatalog(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.Run(ctx)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatalf("Run did not return within %s of its context ending", waitFor)
	}
}

// runLoop runs st's anti-entropy loop until the returned stop is called,
// which waits for it to end.
func runLoop(t testing.TB, st *local.State) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.Run(ctx)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Errorf("Run did not return within %s of its context ending", waitFor)
		}
	}
}

// TestChangesToDifferentServicesPushConcurrently: registrations of
// different services do not wait for each other's push (Raft commits them
// together), which a gate holding every push until all have arrived shows.
func TestChangesToDifferentServicesPushConcurrently(t *testing.T) {
	const n = 8
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(t.TempDir()), cat)
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	cat.setGate(func(string) {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second): // serialised pushes never all arrive
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- st.AddService(context.Background(), svc(fmt.Sprintf("web-%d", i), "web", 8000+i), nil)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("AddService: %v", err)
		}
	}
	select {
	case <-all:
	default:
		t.Fatal("the pushes did not all run at once: changes to different services were serialised")
	}
}
