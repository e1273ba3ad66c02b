package local_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// waitFor bounds every wait on a condition; it returns as soon as the
// condition holds, so it only matters when a test fails.
const waitFor = 5 * time.Second

// The node every test's agent is.
const (
	nodeName = "node1"
	nodeAddr = "10.0.0.1"
	nodeDC   = "dc1"
	nodeID   = "11111111-2222-3333-4444-555555555555"
)

// errDown is what a failing fakeCatalog returns.
var errDown = errors.New("catalog unreachable")

// fakeCatalog is a local.Catalog over a real catalog.Store: writes are
// validated as the server validates them and applied at an incrementing
// index. It can be told to fail every call.
type fakeCatalog struct {
	store *catalog.Store

	mu       sync.Mutex
	index    uint64
	failing  bool
	denying  bool // every call answered as a token without the permission
	failures int  // calls refused while failing or denying
	writes   int  // Register and Deregister calls applied to the store
	// registers holds every Register request applied, in order.
	registers []*catalog.RegisterRequest
	// gate, when set, is called before each write is applied, outside the
	// lock, with the ID of the service written ("" for a node alone). A
	// test blocks in it to hold a caller in the middle of a write.
	gate func(serviceID string)
}

var _ local.Catalog = (*fakeCatalog)(nil)

func newFakeCatalog(t testing.TB) *fakeCatalog {
	t.Helper()
	s, err := catalog.NewStore()
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	return &fakeCatalog{store: s}
}

// setFailing makes every call fail with errDown (true) or succeed (false).
func (f *fakeCatalog) setFailing(failing bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = failing
}

// counts returns how many calls were refused and how many writes applied.
func (f *fakeCatalog) counts() (failures, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures, f.writes
}

// lastRegister returns the last Register request applied, nil for none.
func (f *fakeCatalog) lastRegister() *catalog.RegisterRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.registers) == 0 {
		return nil
	}
	return f.registers[len(f.registers)-1]
}

// setGate installs gate (see fakeCatalog.gate).
func (f *fakeCatalog) setGate(gate func(serviceID string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = gate
}

func (f *fakeCatalog) passGate(serviceID string) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		gate(serviceID)
	}
}

// setDenying makes every call fail as the servers refuse a token
// (true), or not (false).
func (f *fakeCatalog) setDenying(denying bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.denying = denying
}

// refuse returns the error of a call failing or denied, nil for none.
func (f *fakeCatalog) refuse() error {
	switch {
	case f.denying:
		f.failures++
		return fmt.Errorf("%w: token lacks node:write", rpc.ErrPermissionDenied)
	case f.failing:
		f.failures++
		return errDown
	}
	return nil
}

func (f *fakeCatalog) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	if req.Service != nil {
		f.passGate(req.Service.ID)
	} else {
		f.passGate("")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse(); err != nil {
		return err
	}
	if err := catalog.ValidateRegister(req); err != nil {
		return err
	}
	f.index++
	f.writes++
	f.registers = append(f.registers, req)
	return f.store.Register(f.index, req)
}

func (f *fakeCatalog) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	f.passGate(req.ServiceID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse(); err != nil {
		return err
	}
	f.index++
	f.writes++
	return f.store.Deregister(f.index, req)
}

func (f *fakeCatalog) NodeServices(ctx context.Context, node string) (*catalog.Node, []*catalog.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse(); err != nil {
		return nil, nil, err
	}
	_, n, err := f.store.Node(nil, node)
	if err != nil {
		return nil, nil, err
	}
	_, svcs, err := f.store.NodeServices(nil, node)
	return n, svcs, err
}

func (f *fakeCatalog) NodeChecks(ctx context.Context, node string) (uint64, []*catalog.Check, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse(); err != nil {
		return 0, nil, err
	}
	return f.store.NodeChecks(nil, node)
}

// checks returns what the catalog holds for node's checks, by ID.
func (f *fakeCatalog) checks(t testing.TB, node string) map[string]*catalog.Check {
	t.Helper()
	_, cs, err := f.store.NodeChecks(nil, node)
	if err != nil {
		t.Fatalf("NodeChecks(%q): %v", node, err)
	}
	out := make(map[string]*catalog.Check, len(cs))
	for _, c := range cs {
		out[c.CheckID] = c
	}
	return out
}

// seed writes req straight to the catalog, as another agent or an operator
// would, bypassing the state under test.
func (f *fakeCatalog) seed(t testing.TB, req *catalog.RegisterRequest) {
	t.Helper()
	if err := f.Register(context.Background(), req); err != nil {
		t.Fatalf("seed node %q: %v", req.Node, err)
	}
}

// services returns what the catalog holds for node, by ID.
func (f *fakeCatalog) services(t testing.TB, node string) map[string]*catalog.Service {
	t.Helper()
	_, svcs, err := f.store.NodeServices(nil, node)
	if err != nil {
		t.Fatalf("NodeServices(%q): %v", node, err)
	}
	out := make(map[string]*catalog.Service, len(svcs))
	for _, s := range svcs {
		out[s.ID] = s
	}
	return out
}

func (f *fakeCatalog) node(t testing.TB, name string) *catalog.Node {
	t.Helper()
	_, n, err := f.store.Node(nil, name)
	if err != nil {
		t.Fatalf("Node(%q): %v", name, err)
	}
	return n
}

func testConfig(dataDir string) local.Config {
	cfg := local.DefaultConfig()
	cfg.NodeName, cfg.NodeID, cfg.Address, cfg.Datacenter = nodeName, nodeID, nodeAddr, nodeDC
	cfg.NodeMeta = map[string]string{"rack": "r1"}
	cfg.TaggedAddresses = map[string]string{"lan": nodeAddr, "wan": "192.0.2.1"}
	cfg.DataDir = dataDir
	cfg.SyncInterval = time.Second // the shortest Validate allows
	cfg.RetryInterval = 20 * time.Millisecond
	return cfg
}

func newState(t testing.TB, cfg local.Config, cat local.Catalog) *local.State {
	t.Helper()
	st, err := local.New(cfg, cat, slogDiscard())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// svc is a valid service as a client registers it: no defaults filled in.
func svc(id, name string, port int, tags ...string) *catalog.Service {
	return &catalog.Service{ID: id, Service: name, Port: port, Tags: tags}
}

// normalized is s with the defaults AddService fills in.
func normalized(t testing.TB, s *catalog.Service) *catalog.Service {
	t.Helper()
	cp := *s
	cp.Tags = slices.Clone(s.Tags)
	if err := catalog.NormalizeService(&cp); err != nil {
		t.Fatalf("NormalizeService(%+v): %v", *s, err)
	}
	return &cp
}

func mustAdd(t testing.TB, st *local.State, s *catalog.Service) {
	t.Helper()
	if err := st.AddService(context.Background(), s, nil); err != nil {
		t.Fatalf("AddService(%q): %v", s.ID, err)
	}
}

// addUnsynced adds services to st while the catalog is down, so the agent
// holds them and the catalog does not.
func addUnsynced(t testing.TB, st *local.State, f *fakeCatalog, svcs ...*catalog.Service) {
	t.Helper()
	f.setFailing(true)
	defer f.setFailing(false)
	for _, s := range svcs {
		if err := st.AddService(context.Background(), s, nil); !errors.Is(err, local.ErrNotSynced) {
			t.Fatalf("AddService(%q) with the catalog down: got %v, want ErrNotSynced", s.ID, err)
		}
	}
}

// localIDs returns the IDs of st's services in the order Services gives them.
func localIDs(st *local.State) []string {
	var ids []string
	for _, s := range st.Services() {
		ids = append(ids, s.ID)
	}
	return ids
}

// sameSet fails the test unless the catalog holds exactly want for node,
// field for field (indexes aside).
func sameSet(t testing.TB, f *fakeCatalog, node string, want []*catalog.Service) {
	t.Helper()
	got := f.services(t, node)
	if len(got) != len(want) {
		t.Errorf("catalog holds %d services for %s (%s), want %d", len(got), node, strings.Join(sortedKeys(got), ","), len(want))
	}
	for _, w := range want {
		g, ok := got[w.ID]
		if !ok {
			t.Errorf("catalog lacks service %q on %s", w.ID, node)
			continue
		}
		if !g.SameAs(w) {
			t.Errorf("catalog service %q: got %+v, want %+v", w.ID, *g, *w)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// persistedFiles lists the service files under dataDir.
func persistedFiles(t testing.TB, dataDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "services", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or waitFor passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waittest.For(t, waitFor, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}
