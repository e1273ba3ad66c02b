package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// Catalog is what the agent needs of the servers to keep the catalog true
// about its node. Calls may block on the network; they honour ctx.
type Catalog interface {
	Register(ctx context.Context, req *catalog.RegisterRequest) error
	Deregister(ctx context.Context, req *catalog.DeregisterRequest) error
	// NodeServices returns what the catalog holds for node: the node (nil
	// when it is not registered) and its services.
	NodeServices(ctx context.Context, node string) (*catalog.Node, []*catalog.Service, error)
	// NodeChecks returns the checks the catalog holds for node.
	NodeChecks(ctx context.Context, node string) (uint64, []*catalog.Check, error)
}

// State is this agent's own node: its services and their checks, which it
// runs, persists and keeps the catalog in step with.
type State struct {
	cfg       Config
	catalog   Catalog
	services  persister
	checkDir  persister
	runner    *checks.Manager
	logger    *slog.Logger
	closeOnce sync.Once

	mu   sync.Mutex // guards services and checks
	svcs map[string]*catalog.Service
	// tokens holds the ACL token each service was registered with, by
	// service ID: its syncs are made with it.
	tokens map[string]string
	// fromConfig holds the IDs of the services of the config file
	// (SetConfigServices), which a reload replaces.
	fromConfig map[string]bool
	checks     map[string]*checkEntry
	nodeLock   string // the idLocks key of node-level checks
	// svcsChanged is closed, and replaced, at each change to svcs.
	svcsChanged chan struct{}

	// syncMu keeps a full sync from comparing against a half-pushed change:
	// the sync holds it exclusively, each change shared. It is taken before
	// idLocks, which are taken before mu.
	syncMu sync.RWMutex
	// idLocks serialise changes to one service (hashed to a stripe), so
	// they reach the catalog in the order they were stored, while changes
	// to different services push concurrently and Raft commits them
	// together. A check is locked under its service's ID.
	idLocks [64]sync.Mutex

	// retry wakes the anti-entropy loop early, after a failed push; push
	// wakes the pusher when a check's state changed.
	retry chan struct{}
	push  chan struct{}
	// syncSoon wakes the anti-entropy loop for a full sync at once: the
	// config file's services, stored without a push, reach the catalog.
	syncSoon chan struct{}

	// syncs and syncFailures count full syncs by outcome (SyncStats).
	syncs, syncFailures atomic.Uint64
}

// checkEntry is one of the agent's checks: what it runs (nil for a
// maintenance check) and its state, as the catalog should hold it.
type checkEntry struct {
	def   *checks.Definition
	check catalog.Check
	// pushed is the state last sent to the catalog successfully, and
	// pushedAt when: the pusher sends a check whose state differs.
	pushed   catalog.Check
	pushedAt time.Time
	// criticalSince is when the check turned critical; zero otherwise.
	criticalSince time.Time
}

// New loads the persisted services and checks (if cfg.DataDir is set),
// starts the checks, and returns the state; nothing is pushed until
// SyncFull or Run. Close stops the checks.
func New(cfg Config, cat Catalog, logger *slog.Logger) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &State{
		cfg: cfg, catalog: cat, logger: logger.With("component", "local"),
		services:    persister{kind: "service"},
		checkDir:    persister{kind: "check"},
		svcs:        make(map[string]*catalog.Service),
		tokens:      make(map[string]string),
		checks:      make(map[string]*checkEntry),
		nodeLock:    "\x00node", // no service ID is empty
		svcsChanged: make(chan struct{}),
		retry:       make(chan struct{}, 1),
		push:        make(chan struct{}, 1),
		syncSoon:    make(chan struct{}, 1),
	}
	if cfg.DataDir != "" {
		s.services.dir = filepath.Join(cfg.DataDir, "services")
		s.checkDir.dir = filepath.Join(cfg.DataDir, "checks")
	}
	loaded, tokens, fromConfig, err := loadServices(s.services)
	if err != nil {
		return nil, fmt.Errorf("load local services: %w", err)
	}
	s.tokens, s.fromConfig = tokens, fromConfig
	for _, svc := range loaded {
		if slices.Contains(cfg.ServerServices, svc.ID) {
			// Registered before the servers kept it; theirs wins.
			logger.Warn("ignoring a stored service whose ID the servers keep", "service", svc.ID)
			continue
		}
		s.svcs[svc.ID] = svc
	}
	runner, err := checks.NewManager(cfg.Checks, s, s, logger)
	if err != nil {
		return nil, err
	}
	s.runner = runner
	if err := s.loadChecks(); err != nil {
		runner.Close()
		return nil, err
	}
	return s, nil
}

// Close stops every check runner and waits for them. Closing twice is
// harmless.
func (s *State) Close() { s.closeOnce.Do(s.runner.Close) }

// Services returns a copy of the local services, sorted by ID.
func (s *State) Services() []*catalog.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*catalog.Service, 0, len(s.svcs))
	for _, svc := range s.svcs {
		out = append(out, cloneService(svc))
	}
	slices.SortFunc(out, func(a, b *catalog.Service) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ServicesChanged returns a channel closed at the next change to the
// services (what Services returns).
func (s *State) ServicesChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.svcsChanged
}

// servicesChangedLocked wakes those waiting on ServicesChanged; s.mu is
// held.
func (s *State) servicesChangedLocked() {
	close(s.svcsChanged)
	s.svcsChanged = make(chan struct{})
}

// AddService validates svc (filling in defaults) and its checks, pushes
// the service with its checks to the catalog, then stores and persists
// them and starts the checks. The checks replace every check the service
// had. A validation error is a *catalog.FieldError and changes nothing;
// so does the servers' refusal. A push that fails otherwise (no server
// answered) returns an error wrapping ErrNotSynced: the service is kept
// and anti-entropy retries it. A service of the config file with svc's ID
// becomes the API's: a reload no longer touches it.
func (s *State) AddService(ctx context.Context, svc *catalog.Service, defs []*checks.Definition) error {
	return s.addService(ctx, svc, defs, acl.TokenFromContext(ctx), false)
}

// addService is AddService. fromConfig marks a service of the config file
// (SetConfigServices), which is stored without a push: the full sync,
// woken at once, sends it, so that loading the config never waits on the
// servers.
func (s *State) addService(ctx context.Context, svc *catalog.Service, defs []*checks.Definition, token string, fromConfig bool) error {
	svc = cloneService(svc)
	if err := catalog.NormalizeService(svc); err != nil {
		return err
	}
	if slices.Contains(s.cfg.ServerServices, svc.ID) {
		return &catalog.FieldError{Field: "ID", Reason: fmt.Sprintf("%q is the servers' own service, kept by the leader", svc.ID)}
	}
	defs, err := s.serviceChecks(svc, defs)
	if err != nil {
		return err
	}
	// Held until the push is done: two changes to one service then reach
	// the catalog in the order they were stored.
	unlock := s.lockChange(svc.ID)
	defer unlock()
	states := make([]*catalog.Check, len(defs))
	for i, def := range defs {
		c := s.checkState(def, svc.Service)
		states[i] = &c
	}
	var pushErr error
	if !fromConfig {
		req := s.registerRequest(svc)
		req.Checks = states
		pushErr = s.catalog.Register(ctx, req)
		if refused(pushErr) {
			return fmt.Errorf("register service %q: %w", svc.ID, pushErr)
		}
	}
	if err := saveService(s.services, svc, token, fromConfig); err != nil {
		return err
	}
	s.mu.Lock()
	s.svcs[svc.ID] = svc
	s.servicesChangedLocked()
	if token != "" {
		s.tokens[svc.ID] = token
	} else {
		delete(s.tokens, svc.ID)
	}
	if fromConfig {
		s.fromConfig[svc.ID] = true
	} else {
		delete(s.fromConfig, svc.ID)
	}
	var stale []string
	for id, e := range s.checks {
		if e.check.ServiceID == svc.ID && e.def != nil && !slices.ContainsFunc(defs, func(d *checks.Definition) bool { return d.ID == id }) {
			stale = append(stale, id)
		}
	}
	s.mu.Unlock()
	for i, def := range defs {
		if err := s.storeCheck(def, *states[i]); err != nil {
			return err
		}
	}
	if fromConfig {
		for _, id := range stale {
			if err := s.forgetCheck(id); err != nil {
				return err
			}
		}
		s.wake(s.syncSoon)
		return nil
	}
	if pushErr == nil {
		s.markPushed(states)
	}
	for _, id := range stale {
		// Unreachable servers: each is dropped here all the same, and
		// the error of the registration is the one returned.
		if err := s.dropCheck(ctx, id); err != nil && pushErr == nil {
			return err
		}
	}
	if pushErr != nil {
		s.retrySoon()
		return fmt.Errorf("register service %q: %w: %w", svc.ID, ErrNotSynced, pushErr)
	}
	s.logger.Info("service registered", "service", svc.ID, "name", svc.Service, "checks", len(defs))
	return nil
}

// ConfigService is a service of the agent's config file (Consul's service
// and services blocks) with its checks and the ACL token it is synced with.
type ConfigService struct {
	Service *catalog.Service
	Checks  []*checks.Definition
	Token   string
}

// SetConfigServices makes services the services of the config file, at
// start and on every reload, as Consul loads them: each is stored (and
// persisted, marked as the config's) as AddService stores it, and the
// config's services that are no longer in it are removed; the full sync,
// woken at once, brings the catalog in step. A service registered
// through the API is left alone unless services holds its ID. A bad
// service is a *catalog.FieldError naming it (services[i].Port), and
// changes nothing.
func (s *State) SetConfigServices(services []ConfigService) error {
	keep := make(map[string]bool, len(services))
	for i, cs := range services {
		svc := cloneService(cs.Service)
		err := catalog.NormalizeService(svc)
		if err == nil {
			_, err = s.serviceChecks(svc, cs.Checks)
		}
		if err != nil {
			var fe *catalog.FieldError
			if errors.As(err, &fe) {
				return &catalog.FieldError{Field: fmt.Sprintf("services[%d].%s", i, fe.Field), Reason: fe.Reason}
			}
			return fmt.Errorf("services[%d]: %w", i, err)
		}
		keep[svc.ID] = true
	}
	for _, cs := range services {
		if err := s.addService(context.Background(), cs.Service, cs.Checks, cs.Token, true); err != nil {
			return err
		}
	}
	s.mu.Lock()
	var gone []string
	for id := range s.fromConfig {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	s.mu.Unlock()
	for _, id := range gone {
		unlock := s.lockChange(id)
		err := s.forgetService(id)
		unlock()
		if err != nil {
			return err
		}
	}
	s.wake(s.syncSoon)
	return nil
}

// serviceChecks validates the checks registered with svc, belonging to it.
func (s *State) serviceChecks(svc *catalog.Service, defs []*checks.Definition) ([]*checks.Definition, error) {
	out := make([]*checks.Definition, 0, len(defs))
	for i, d := range defs {
		d := *d
		d.ServiceID = svc.ID
		if d.ID == "" && len(defs) > 1 {
			d.ID = fmt.Sprintf("service:%s:%d", svc.ID, i+1)
		}
		if err := d.Validate(fmt.Sprintf("Checks[%d].", i), s.cfg.Checks.EnableScriptChecks); err != nil {
			return nil, err
		}
		if err := reservedCheckID(fmt.Sprintf("Checks[%d].CheckID", i), d.ID); err != nil {
			return nil, err
		}
		out = append(out, &d)
	}
	return out, nil
}

// RemoveService deregisters a service from the catalog (which drops its
// checks with it), then forgets it and its checks; the servers' refusal
// leaves it as it was. An unknown ID returns ErrUnknownService.
func (s *State) RemoveService(ctx context.Context, id string) error {
	unlock := s.lockChange(id)
	defer unlock()
	if !s.HasService(id) {
		return fmt.Errorf("service %q: %w", id, ErrUnknownService)
	}
	err := s.catalog.Deregister(ctx, &catalog.DeregisterRequest{
		Datacenter: s.cfg.Datacenter, Node: s.cfg.NodeName, ServiceID: id,
	})
	if refused(err) {
		return fmt.Errorf("deregister service %q: %w", id, err)
	}
	if ferr := s.forgetService(id); ferr != nil {
		return ferr
	}
	if err != nil {
		s.retrySoon()
		return fmt.Errorf("deregister service %q: %w: %w", id, ErrNotSynced, err)
	}
	s.logger.Info("service deregistered", "service", id)
	return nil
}

// forgetService stops and forgets a service and its checks here, leaving
// the catalog to the sync. The caller holds the service's change lock.
func (s *State) forgetService(id string) error {
	s.mu.Lock()
	var owned []string
	for cid, e := range s.checks {
		if e.check.ServiceID == id {
			owned = append(owned, cid)
		}
	}
	s.mu.Unlock()
	for _, cid := range owned {
		s.runner.Remove(cid)
		if err := s.checkDir.remove(cid); err != nil {
			return err
		}
	}
	if err := s.services.remove(id); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.svcs, id)
	s.servicesChangedLocked()
	delete(s.tokens, id)
	delete(s.fromConfig, id)
	for _, cid := range owned {
		delete(s.checks, cid)
	}
	s.mu.Unlock()
	return nil
}

// lockChange takes the locks of a change to service id (s.nodeLock for
// the node's own checks) and returns their release.
func (s *State) lockChange(id string) (unlock func()) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	l := &s.idLocks[h.Sum32()%uint32(len(s.idLocks))]
	s.syncMu.RLock()
	l.Lock()
	return func() {
		l.Unlock()
		s.syncMu.RUnlock()
	}
}

// registerRequest registers svc (nil for none) on this node. It leaves the
// node's row as it is if the row exists (SkipNodeUpdate): writing the row,
// its metadata and tagged addresses, is the full sync's job, with the
// agent's token, so that a push needs only the service's rights, not
// node:write (the servers ask node:write of a registration that would
// change the node). A push finding no row creates it.
func (s *State) registerRequest(svc *catalog.Service) *catalog.RegisterRequest {
	return &catalog.RegisterRequest{
		Datacenter:      s.cfg.Datacenter,
		ID:              s.cfg.NodeID,
		Node:            s.cfg.NodeName,
		Address:         s.cfg.Address,
		TaggedAddresses: s.cfg.TaggedAddresses,
		NodeMeta:        s.cfg.NodeMeta,
		Service:         svc,
		SkipNodeUpdate:  true,
	}
}

// SyncStats counts the full anti-entropy syncs that succeeded and that
// failed, since New.
func (s *State) SyncStats() (ok, failed uint64) { return s.syncs.Load(), s.syncFailures.Load() }

// CheckRuns counts the probes the agent's checks ran, by type and status.
func (s *State) CheckRuns() []checks.RunCount { return s.runner.Runs() }

// withServiceToken returns ctx carrying the token the service was
// registered with, unless ctx carries one already (a request's own) or the
// service has none (the agent's token is used then).
func (s *State) withServiceToken(ctx context.Context, serviceID string) context.Context {
	if acl.TokenFromContext(ctx) != "" {
		return ctx
	}
	s.mu.Lock()
	tok := s.tokens[serviceID]
	s.mu.Unlock()
	if tok == "" {
		return ctx
	}
	return acl.ContextWithToken(ctx, tok)
}

func (s *State) retrySoon() { s.wake(s.retry) }

// wake signals ch (buffered 1) without blocking.
func (s *State) wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func cloneService(svc *catalog.Service) *catalog.Service {
	cp := svc.Clone()
	cp.RaftIndex = catalog.RaftIndex{}
	return cp
}
