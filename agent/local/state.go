package local

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"

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
}

// State is this agent's own node and services.
type State struct {
	cfg     Config
	catalog Catalog
	persist persister
	logger  *slog.Logger

	mu       sync.Mutex // guards services
	services map[string]*catalog.Service

	// syncMu keeps a full sync from comparing against a half-pushed change:
	// the sync holds it exclusively, each change shared. It is taken before
	// idLocks, which are taken before mu.
	syncMu sync.RWMutex
	// idLocks serialise changes to one service ID (hashed to a stripe), so
	// they reach the catalog in the order they were stored, while changes
	// to different services push concurrently and Raft commits them
	// together.
	idLocks [64]sync.Mutex
	// retry wakes the anti-entropy loop early, after a failed push.
	retry chan struct{}
}

// New loads the persisted services (if cfg.DataDir is set) and returns the
// state; nothing is pushed until SyncFull or Run.
func New(cfg Config, cat Catalog, logger *slog.Logger) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &State{
		cfg: cfg, catalog: cat, logger: logger.With("component", "local"),
		services: make(map[string]*catalog.Service),
		retry:    make(chan struct{}, 1),
	}
	if cfg.DataDir != "" {
		s.persist.dir = filepath.Join(cfg.DataDir, "services")
	}
	loaded, err := s.persist.load()
	if err != nil {
		return nil, fmt.Errorf("load local services: %w", err)
	}
	for _, svc := range loaded {
		s.services[svc.ID] = svc
	}
	return s, nil
}

// Services returns a copy of the local services, sorted by ID.
func (s *State) Services() []*catalog.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*catalog.Service, 0, len(s.services))
	for _, svc := range s.services {
		out = append(out, cloneService(svc))
	}
	slices.SortFunc(out, func(a, b *catalog.Service) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AddService validates svc (filling in defaults), stores and persists it,
// then pushes it to the catalog and returns once it is committed. A
// validation error is a *catalog.FieldError and changes nothing. A push
// that fails returns an error wrapping ErrNotSynced: the service is kept and
// anti-entropy retries it.
func (s *State) AddService(ctx context.Context, svc *catalog.Service) error {
	svc = cloneService(svc)
	if err := catalog.NormalizeService(svc); err != nil {
		return err
	}
	// Held until the push is done: two changes to one service then reach
	// the catalog in the order they were stored.
	unlock := s.lockChange(svc.ID)
	defer unlock()
	s.mu.Lock()
	if err := s.persist.save(svc); err != nil {
		s.mu.Unlock()
		return err
	}
	s.services[svc.ID] = svc
	s.mu.Unlock()

	if err := s.catalog.Register(ctx, s.registerRequest(svc)); err != nil {
		s.retrySoon()
		return fmt.Errorf("register service %q: %w: %w", svc.ID, ErrNotSynced, err)
	}
	return nil
}

// RemoveService forgets a service and deregisters it from the catalog. An
// unknown ID returns ErrUnknownService.
func (s *State) RemoveService(ctx context.Context, id string) error {
	unlock := s.lockChange(id)
	defer unlock()
	s.mu.Lock()
	if _, ok := s.services[id]; !ok {
		s.mu.Unlock()
		return fmt.Errorf("service %q: %w", id, ErrUnknownService)
	}
	if err := s.persist.remove(id); err != nil {
		s.mu.Unlock()
		return err
	}
	delete(s.services, id)
	s.mu.Unlock()

	err := s.catalog.Deregister(ctx, &catalog.DeregisterRequest{
		Datacenter: s.cfg.Datacenter, Node: s.cfg.NodeName, ServiceID: id,
	})
	if err != nil {
		s.retrySoon()
		return fmt.Errorf("deregister service %q: %w: %w", id, ErrNotSynced, err)
	}
	return nil
}

// lockChange takes the locks of a change to service id and returns their
// release.
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

func (s *State) registerRequest(svc *catalog.Service) *catalog.RegisterRequest {
	return &catalog.RegisterRequest{
		Datacenter: s.cfg.Datacenter,
		ID:         s.cfg.NodeID,
		Node:       s.cfg.NodeName,
		Address:    s.cfg.Address,
		NodeMeta:   s.cfg.NodeMeta,
		Service:    svc,
	}
}

func (s *State) retrySoon() {
	select {
	case s.retry <- struct{}{}:
	default:
	}
}

func cloneService(svc *catalog.Service) *catalog.Service {
	cp := *svc
	cp.Tags = slices.Clone(svc.Tags)
	cp.Meta = maps.Clone(svc.Meta)
	cp.RaftIndex = catalog.RaftIndex{}
	return &cp
}
