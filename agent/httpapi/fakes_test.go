package httpapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// testMaxBody is the body limit of every test server: the smallest allowed,
// so an oversized body stays small.
const testMaxBody = 1024

// fakeLocal is an httpapi.Local that records what it is given.
type fakeLocal struct {
	mu       sync.Mutex
	added    []*catalog.Service
	addedDef [][]*checks.Definition // the checks of each added service
	removed  []string
	services []*catalog.Service
	err      error // returned by every write when set

	// checks is what Checks returns; ttl names the TTL checks among them.
	checks       []*catalog.Check
	ttl          map[string]bool
	addedChecks  []*checks.Definition
	removedCheck []string
	ttlUpdates   []ttlUpdate
	maintenance  []maintCall
}

// ttlUpdate is one call of UpdateTTL.
type ttlUpdate struct {
	ID     string
	Status catalog.HealthStatus
	Output string
}

// maintCall is one call of SetServiceMaintenance (ServiceID set) or
// SetNodeMaintenance.
type maintCall struct {
	ServiceID string
	Enable    bool
	Reason    string
}

var _ httpapi.Local = (*fakeLocal)(nil)

func (f *fakeLocal) AddService(_ context.Context, svc *catalog.Service, defs []*checks.Definition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := *svc
	f.added = append(f.added, &cp)
	f.addedDef = append(f.addedDef, defs)
	return f.err
}

func (f *fakeLocal) RemoveService(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, id)
	if f.err != nil {
		return f.err
	}
	if !f.hasService(id) {
		return fmt.Errorf("service %q: %w", id, local.ErrUnknownService)
	}
	return nil
}

func (f *fakeLocal) hasService(id string) bool {
	return slices.ContainsFunc(f.services, func(s *catalog.Service) bool { return s.ID == id })
}

func (f *fakeLocal) Services() []*catalog.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.services
}

// ServicesChanged never fires: the fake's tests do not wait on a hash.
func (f *fakeLocal) ServicesChanged() <-chan struct{} { return nil }

func (f *fakeLocal) AddCheck(_ context.Context, def *checks.Definition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addedChecks = append(f.addedChecks, def)
	if f.err != nil {
		return f.err
	}
	if def.ServiceID != "" && !f.hasService(def.ServiceID) {
		return &catalog.FieldError{Field: "ServiceID", Reason: fmt.Sprintf("no service %q is registered with this agent", def.ServiceID)}
	}
	return nil
}

func (f *fakeLocal) hasCheck(id string) bool {
	return slices.ContainsFunc(f.checks, func(c *catalog.Check) bool { return c.CheckID == id })
}

func (f *fakeLocal) RemoveCheck(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removedCheck = append(f.removedCheck, id)
	if f.err != nil {
		return f.err
	}
	if !f.hasCheck(id) {
		return fmt.Errorf("check %q: %w", id, local.ErrUnknownCheck)
	}
	return nil
}

func (f *fakeLocal) UpdateTTL(id string, status catalog.HealthStatus, output string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ttlUpdates = append(f.ttlUpdates, ttlUpdate{id, status, output})
	switch {
	case f.err != nil:
		return f.err
	case !f.hasCheck(id):
		return fmt.Errorf("check %q: %w", id, local.ErrUnknownCheck)
	case !f.ttl[id]:
		return fmt.Errorf("check %q: %w", id, local.ErrNotTTL)
	}
	return nil
}

func (f *fakeLocal) Checks() []*catalog.Check {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

func (f *fakeLocal) SetServiceMaintenance(_ context.Context, serviceID string, enable bool, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maintenance = append(f.maintenance, maintCall{serviceID, enable, reason})
	if f.err != nil {
		return f.err
	}
	if !f.hasService(serviceID) {
		return fmt.Errorf("service %q: %w", serviceID, local.ErrUnknownService)
	}
	return nil
}

func (f *fakeLocal) SetNodeMaintenance(_ context.Context, enable bool, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maintenance = append(f.maintenance, maintCall{"", enable, reason})
	return f.err
}

// calls returns copies of what the check and maintenance methods were given.
func (f *fakeLocal) calls() (added []*checks.Definition, removed []string, ttl []ttlUpdate, maint []maintCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.addedChecks), slices.Clone(f.removedCheck), slices.Clone(f.ttlUpdates), slices.Clone(f.maintenance)
}

// fakeCatalog answers the catalog methods (through fakeDoor) with fixed
// data at a fixed index, recording what it was asked.
type fakeCatalog struct {
	index     uint64
	nodes     []*catalog.Node
	services  map[string][]string
	instances []catalog.ServiceInstance
	checks    []*catalog.Check
	err       error // returned by every read and write when set

	mu              sync.Mutex
	gotName, gotTag string
	gotOpts         queryOpts
	registered      []*catalog.RegisterRequest
	deregistered    []*catalog.DeregisterRequest
	writeDCs        []string
}

var _ catalogBackend = (*fakeCatalog)(nil)

// meta records opts and returns the fixed index with a known leader.
func (f *fakeCatalog) meta(opts queryOpts) queryMeta {
	f.mu.Lock()
	f.gotOpts = opts
	f.mu.Unlock()
	return queryMeta{Index: f.index, KnownLeader: true, LastContact: 3 * time.Millisecond}
}

func (f *fakeCatalog) Nodes(_ context.Context, opts queryOpts) ([]*catalog.Node, queryMeta, error) {
	meta := f.meta(opts)
	if f.err != nil {
		return nil, queryMeta{}, f.err
	}
	return f.nodes, meta, nil
}

func (f *fakeCatalog) Services(_ context.Context, opts queryOpts) (map[string][]string, queryMeta, error) {
	meta := f.meta(opts)
	if f.err != nil {
		return nil, queryMeta{}, f.err
	}
	return f.services, meta, nil
}

// ServiceNodes returns every instance, without checks, in the store's order.
func (f *fakeCatalog) ServiceNodes(_ context.Context, opts queryOpts) ([]catalog.ServiceInstance, queryMeta, error) {
	meta := f.meta(opts)
	if f.err != nil {
		return nil, queryMeta{}, f.err
	}
	out := make([]catalog.ServiceInstance, 0, len(f.instances))
	for _, in := range f.instances {
		out = append(out, catalog.ServiceInstance{Node: in.Node, Service: in.Service})
	}
	slices.SortFunc(out, func(a, b catalog.ServiceInstance) int {
		return cmp.Or(cmp.Compare(a.Service.Service, b.Service.Service),
			cmp.Compare(a.Node.Node, b.Node.Node), cmp.Compare(a.Service.ID, b.Service.ID))
	})
	return out, meta, nil
}

// ServiceInstances filters as the store does: name case-insensitively, then
// tag when one is given.
func (f *fakeCatalog) ServiceInstances(_ context.Context, opts queryOpts, name, tag string) ([]catalog.ServiceInstance, queryMeta, error) {
	meta := f.meta(opts)
	f.mu.Lock()
	f.gotName, f.gotTag = name, tag
	f.mu.Unlock()
	if f.err != nil {
		return nil, queryMeta{}, f.err
	}
	var out []catalog.ServiceInstance
	for _, in := range f.instances {
		if strings.EqualFold(in.Service.Service, name) && (tag == "" || in.Service.HasTag(tag)) {
			out = append(out, in)
		}
	}
	return out, meta, nil
}

// NodeServices returns the node of that name among nodes and the services
// of the instances on it.
func (f *fakeCatalog) NodeServices(_ context.Context, opts queryOpts, node string) (*catalog.Node, []*catalog.Service, queryMeta, error) {
	meta := f.meta(opts)
	if f.err != nil {
		return nil, nil, queryMeta{}, f.err
	}
	var n *catalog.Node
	for _, c := range f.nodes {
		if strings.EqualFold(c.Node, node) {
			n = c
		}
	}
	var svcs []*catalog.Service
	for _, in := range f.instances {
		if n != nil && strings.EqualFold(in.Node.Node, node) {
			svcs = append(svcs, in.Service)
		}
	}
	return n, svcs, meta, nil
}

// filterChecks returns the checks keep accepts, recording arg as the name
// asked for.
func (f *fakeCatalog) filterChecks(opts queryOpts, arg string, keep func(*catalog.Check) bool) ([]*catalog.Check, queryMeta, error) {
	meta := f.meta(opts)
	f.mu.Lock()
	f.gotName = arg
	f.mu.Unlock()
	if f.err != nil {
		return nil, queryMeta{}, f.err
	}
	var out []*catalog.Check
	for _, c := range f.checks {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out, meta, nil
}

func (f *fakeCatalog) NodeChecks(_ context.Context, opts queryOpts, node string) ([]*catalog.Check, queryMeta, error) {
	return f.filterChecks(opts, node, func(c *catalog.Check) bool { return strings.EqualFold(c.Node, node) })
}

func (f *fakeCatalog) ServiceChecks(_ context.Context, opts queryOpts, service string) ([]*catalog.Check, queryMeta, error) {
	return f.filterChecks(opts, service, func(c *catalog.Check) bool { return strings.EqualFold(c.ServiceName, service) })
}

func (f *fakeCatalog) ChecksInState(_ context.Context, opts queryOpts, state string) ([]*catalog.Check, queryMeta, error) {
	return f.filterChecks(opts, state, func(c *catalog.Check) bool { return state == "any" || string(c.Status) == state })
}

func (f *fakeCatalog) Register(_ context.Context, dc string, req *catalog.RegisterRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registered = append(f.registered, req)
	f.writeDCs = append(f.writeDCs, dc)
	return f.err
}

func (f *fakeCatalog) Deregister(_ context.Context, dc string, req *catalog.DeregisterRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deregistered = append(f.deregistered, req)
	f.writeDCs = append(f.writeDCs, dc)
	return f.err
}

func (f *fakeCatalog) opts() queryOpts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gotOpts
}

func (f *fakeCatalog) asked() (name, tag string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gotName, f.gotTag
}

// fakeStatus is the leader the servers name.
type fakeStatus string

func (s fakeStatus) Leader(context.Context) (string, error) { return string(s), nil }

// fakeCluster is an httpapi.Cluster with fixed members and Raft
// configuration, recording the joins and leaves it is asked for.
type fakeCluster struct {
	members []httpapi.Member
	// wan is the WAN pool's members; nil makes the agent a client, in
	// no WAN pool.
	wan     []httpapi.Member
	dcs     []string
	dcsErr  error
	raft    *rpc.RaftConfigurationResponse
	raftErr error
	// joined is how many addresses Join reports answered; joinErr its error.
	joined   int
	joinErr  error
	leaveErr error

	mu           sync.Mutex
	joinAddrs    [][]string
	joinWANAddrs [][]string
	leaves       int
	forceLeaves  []string // "<node> prune=<bool> wan=<bool>"
}

var _ httpapi.Cluster = (*fakeCluster)(nil)

func (f *fakeCluster) Members() []httpapi.Member { return f.members }

func (f *fakeCluster) Join(_ context.Context, addrs []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joinAddrs = append(f.joinAddrs, slices.Clone(addrs))
	return f.joined, f.joinErr
}

func (f *fakeCluster) WANMembers() ([]httpapi.Member, error) {
	if f.wan == nil {
		return nil, fmt.Errorf("client agent: %w", httpapi.ErrNotInWAN)
	}
	return f.wan, nil
}

func (f *fakeCluster) JoinWAN(_ context.Context, addrs []string) (int, error) {
	if f.wan == nil {
		return 0, fmt.Errorf("client agent: %w", httpapi.ErrNotInWAN)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joinWANAddrs = append(f.joinWANAddrs, slices.Clone(addrs))
	return f.joined, f.joinErr
}

func (f *fakeCluster) Datacenters(context.Context) ([]string, error) { return f.dcs, f.dcsErr }

// wanCalls returns the addresses of every JoinWAN so far.
func (f *fakeCluster) wanCalls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.joinWANAddrs)
}

func (f *fakeCluster) ForceLeave(_ context.Context, node string, prune, wan bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forceLeaves = append(f.forceLeaves, fmt.Sprintf("%s prune=%v wan=%v", node, prune, wan))
	if wan && f.wan == nil {
		return httpapi.ErrNotInWAN
	}
	return nil
}

func (f *fakeCluster) Leave(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaves++
	return f.leaveErr
}

func (f *fakeCluster) RaftConfiguration(context.Context) (*rpc.RaftConfigurationResponse, error) {
	return f.raft, f.raftErr
}

// Keyring is refused: the fake has no gossip pools.
func (f *fakeCluster) Keyring(context.Context, rpc.KeyringOp, string, bool) ([]httpapi.KeyringResponse, error) {
	return nil, errors.New("fake cluster: no keyring")
}

// calls returns the addresses of every Join so far and the number of Leaves.
func (f *fakeCluster) calls() ([][]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.joinAddrs), f.leaves
}

// memCatalog is a local.Catalog holding one node's services and checks in
// maps, so tests can run a real local.State behind the API.
type memCatalog struct {
	mu       sync.Mutex
	node     *catalog.Node
	services map[string]*catalog.Service
	checks   map[string]*catalog.Check
	writes   int
	err      error // returned by every call when set
}

var _ local.Catalog = (*memCatalog)(nil)

func (m *memCatalog) Register(_ context.Context, req *catalog.RegisterRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.writes++
	m.node = &catalog.Node{ID: req.ID, Node: req.Node, Address: req.Address, Datacenter: req.Datacenter, Meta: req.NodeMeta}
	if req.Service != nil {
		cp := *req.Service
		cp.Tags = slices.Clone(cp.Tags)
		cp.Meta = maps.Clone(cp.Meta)
		if m.services == nil {
			m.services = map[string]*catalog.Service{}
		}
		m.services[cp.ID] = &cp
	}
	for _, c := range req.Checks {
		cp := *c
		cp.Node = req.Node
		if m.checks == nil {
			m.checks = map[string]*catalog.Check{}
		}
		m.checks[cp.CheckID] = &cp
	}
	return nil
}

func (m *memCatalog) Deregister(_ context.Context, req *catalog.DeregisterRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.writes++
	switch {
	case req.CheckID != "":
		delete(m.checks, req.CheckID)
	case req.ServiceID != "":
		delete(m.services, req.ServiceID)
		for id, c := range m.checks {
			if c.ServiceID == req.ServiceID {
				delete(m.checks, id)
			}
		}
	}
	return nil
}

func (m *memCatalog) NodeChecks(context.Context, string) (uint64, []*catalog.Check, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return 0, nil, m.err
	}
	out := make([]*catalog.Check, 0, len(m.checks))
	for _, c := range m.checks {
		cp := *c
		out = append(out, &cp)
	}
	return uint64(m.writes), out, nil
}

func (m *memCatalog) NodeServices(context.Context, string) (*catalog.Node, []*catalog.Service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, nil, m.err
	}
	return m.node, slices.Collect(maps.Values(m.services)), nil
}

func (m *memCatalog) setErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// hasCheck reports whether the catalog holds the check with the given ID
// (any value other than a string is never held).
func (m *memCatalog) hasCheck(id any) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := id.(string)
	_, held := m.checks[s]
	return ok && held
}

// snapshot returns the writes so far and a copy of the services by ID.
func (m *memCatalog) snapshot() (int, map[string]catalog.Service) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]catalog.Service, len(m.services))
	for id, s := range m.services {
		out[id] = *s
	}
	return m.writes, out
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testConfig() httpapi.Config {
	cfg := httpapi.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Datacenter = "dc1"
	cfg.MaxBodyBytes = testMaxBody
	// httptest.NewRequest's Host; a real client on loopback names an IP.
	cfg.AllowedHosts = []string{"example.com"}
	return cfg
}

// newAPI returns a server with cfg over deps; a nil Local or Cluster is
// an empty fake, a nil Door answers as fakeDoor over the Cluster and a
// leader at 10.0.0.1:8300, a nil Logger discards.
func newAPI(t testing.TB, cfg httpapi.Config, deps httpapi.Deps) *httpapi.Server {
	t.Helper()
	if deps.Local == nil {
		deps.Local = &fakeLocal{}
	}
	if deps.Cluster == nil {
		deps.Cluster = &fakeCluster{}
	}
	if deps.Door == nil {
		deps.Door = fakeDoor{backends: []any{deps.Cluster, fakeStatus("10.0.0.1:8300")}}
	}
	if deps.Logger == nil {
		deps.Logger = discard()
	}
	s, err := httpapi.New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// newServerConfig returns the handler of a server with cfg over l and
// empty fakes.
func newServerConfig(t testing.TB, cfg httpapi.Config, l httpapi.Local) http.Handler {
	t.Helper()
	return newAPI(t, cfg, httpapi.Deps{Local: l, Door: fakeDoor{backends: []any{&fakeCatalog{}, fakeStatus("10.0.0.1:8300")}}}).Handler()
}

// newServer returns the handler of a server over the given parts; nil
// parts are replaced by empty fakes. c answers the servers' part.
func newServer(t testing.TB, l httpapi.Local, c any) http.Handler {
	t.Helper()
	return newServerWith(t, l, c, fakeStatus("10.0.0.1:8300"))
}

func newServerWith(t testing.TB, l httpapi.Local, c any, st leaderBackend) http.Handler {
	t.Helper()
	return newServerAll(t, l, c, st, nil)
}

// newClusterServer returns the handler of a server over cl and empty fakes.
func newClusterServer(t testing.TB, cl httpapi.Cluster) http.Handler {
	t.Helper()
	return newServerAll(t, nil, nil, fakeStatus("10.0.0.1:8300"), cl)
}

// newServerAll returns the handler of a server whose door is answered by
// c (the servers' data), st (the leader) and cl (also its Cluster).
func newServerAll(t testing.TB, l httpapi.Local, c any, st leaderBackend, cl httpapi.Cluster) http.Handler {
	t.Helper()
	if c == nil {
		c = &fakeCatalog{}
	}
	if cl == nil {
		cl = &fakeCluster{}
	}
	door := fakeDoor{backends: []any{c, cl, st}}
	return newAPI(t, testConfig(), httpapi.Deps{Local: l, Cluster: cl, Door: door}).Handler()
}

// realLocal returns a local.State over an in-memory catalog.
func realLocal(t testing.TB) (*local.State, *memCatalog) {
	t.Helper()
	cfg := local.DefaultConfig()
	cfg.NodeName, cfg.Address, cfg.Datacenter = "node1", "10.0.0.1", "dc1"
	cat := &memCatalog{}
	st, err := local.New(cfg, cat, discard())
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(st.Close)
	return st, cat
}

// serve runs one request through h.
func serve(h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	var r io.Reader = http.NoBody
	if body != "" {
		r = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, r))
	return rec
}

// wantStatus fails the test unless rec has the status code, showing the body.
func wantStatus(t testing.TB, rec *httptest.ResponseRecorder, code int) {
	t.Helper()
	if rec.Code != code {
		t.Fatalf("got status %d, want %d; body %s", rec.Code, code, rec.Body)
	}
}

// errorBody checks that rec holds a one-line JSON error body and returns it.
func errorBody(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("got Content-Type %q, want application/json", ct)
	}
	body := rec.Body.String()
	if strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
		t.Errorf("got body %q, want one line", body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", body, err)
	}
	if msg, _ := m["error"].(string); msg == "" {
		t.Errorf("got body %s, want a non-empty \"error\"", body)
	}
	return m
}

// decode decodes rec's JSON body into a value of type T.
func decode[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return v
}

// keys returns the sorted keys of a JSON object.
func keys(t testing.TB, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("got %T (%v), want a JSON object", v, v)
	}
	return slices.Sorted(maps.Keys(m))
}

func sorted(s ...string) []string { return slices.Sorted(slices.Values(s)) }

var errBoom = errors.New("boom")
