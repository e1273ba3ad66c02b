package catalog

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-memdb"
)

// WatchSet collects the channels of everything a read looked at; waiting on
// it returns when any of that data changes. It is go-memdb's type, aliased so
// callers need not import go-memdb.
type WatchSet = memdb.WatchSet

// NewWatchSet returns an empty WatchSet.
func NewWatchSet() WatchSet { return memdb.NewWatchSet() }

// Store is the catalog's state store. Reads never block writes; every value a
// read returns is shared with other readers and must not be modified.
type Store struct {
	state atomic.Pointer[storeState]
}

// storeState is one database generation. Restore replaces it whole and
// closes abandon, waking every watcher of the old generation.
type storeState struct {
	db      *memdb.MemDB
	abandon chan struct{}
	changes *changeLog
}

// NewStore returns an empty store.
func NewStore() (*Store, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("create state store: %w", err)
	}
	s := &Store{}
	s.state.Store(&storeState{db: db, abandon: make(chan struct{}), changes: newChangeLog(0)})
	return s, nil
}

// read opens a read transaction and adds the abandon channel to ws, so a
// watcher also wakes when the whole store is replaced by a restore.
func (s *Store) read(ws WatchSet) *memdb.Txn {
	st := s.state.Load()
	if ws != nil {
		ws.Add(st.abandon)
	}
	return st.db.Txn(false)
}

// Index returns the Raft index of the last write to any of the catalog's
// tables.
func (s *Store) Index() uint64 {
	return maxIndex(s.read(nil), tableNodes, tableServices, tableChecks)
}

func maxIndex(tx *memdb.Txn, tables ...string) uint64 {
	var max uint64
	for _, t := range tables {
		raw, err := tx.First(tableIndex, "id", t)
		if err == nil && raw != nil {
			if i := raw.(*indexRow).Index; i > max {
				max = i
			}
		}
	}
	return max
}

func bumpIndex(tx *memdb.Txn, table string, idx uint64) error {
	if err := tx.Insert(tableIndex, &indexRow{Table: table, Index: idx}); err != nil {
		return fmt.Errorf("update index of %s: %w", table, err)
	}
	return nil
}

// Register is RegisterAt with no time: a session it ends gives its keys
// no lock-delay. The FSM uses RegisterAt; tests and tools may use this.
func (s *Store) Register(idx uint64, req *RegisterRequest) error {
	return s.RegisterAt(idx, time.Time{}, req)
}

// RegisterAt applies a RegisterRequest at Raft index idx: the node, then
// its service, then its checks, all or nothing. Rows that do not change
// keep their ModifyIndex, so watchers are not woken for nothing. A check
// that turns critical ends the sessions tied to it, in the same write;
// their keys' lock-delays run from at (the log entry's time stamp).
func (s *Store) RegisterAt(idx uint64, at time.Time, req *RegisterRequest) error {
	return s.applyOne(idx, at, Write{Register: req}).Err
}

func registerTxn(tx *memdb.Txn, idx uint64, at time.Time, req *RegisterRequest) error {
	raw, err := tx.First(tableNodes, "id", req.Node)
	if err != nil {
		return fmt.Errorf("look up node %q: %w", req.Node, err)
	}
	existing, _ := raw.(*Node)
	switch {
	case existing != nil && req.SkipNodeUpdate:
	case existing == nil && req.Address == "" && !req.CreateMissingNode:
		return fmt.Errorf("node %q: %w", req.Node, ErrNotFound)
	default:
		n := &Node{ID: req.ID, Node: req.Node, Address: req.Address, Datacenter: req.Datacenter, Meta: maps.Clone(req.NodeMeta),
			TaggedAddresses: maps.Clone(req.TaggedAddresses), Locality: cloneLocality(req.Locality)}
		if existing == nil || !sameNode(existing, n) {
			n.CreateIndex, n.ModifyIndex = idx, idx
			if existing != nil {
				n.CreateIndex = existing.CreateIndex
			}
			if err := tx.Insert(tableNodes, n); err != nil {
				return fmt.Errorf("insert node %q: %w", req.Node, err)
			}
			if err := bumpIndex(tx, tableNodes, idx); err != nil {
				return err
			}
		}
	}
	if req.Service != nil {
		if err := ensureService(tx, idx, req.Node, req.Service); err != nil {
			return err
		}
	}
	for _, c := range req.Checks {
		if err := ensureCheck(tx, idx, at, req.Node, c); err != nil {
			return err
		}
	}
	return nil
}

func sameNode(a, b *Node) bool {
	return a.ID == b.ID && a.Node == b.Node && a.Address == b.Address &&
		a.Datacenter == b.Datacenter && maps.Equal(a.Meta, b.Meta) && maps.Equal(a.TaggedAddresses, b.TaggedAddresses) &&
		sameLocality(a.Locality, b.Locality)
}

// SameAs reports whether two services are registered with the same fields,
// ignoring their Raft indexes.
func (a *Service) SameAs(b *Service) bool { return sameService(a, b) }

func sameService(a, b *Service) bool {
	return a.ID == b.ID && a.Service == b.Service && slices.Equal(a.Tags, b.Tags) &&
		a.Address == b.Address && a.Port == b.Port && maps.Equal(a.Meta, b.Meta) && a.Weights == b.Weights &&
		maps.Equal(a.TaggedAddresses, b.TaggedAddresses) && a.EnableTagOverride == b.EnableTagOverride &&
		a.SocketPath == b.SocketPath && slices.Equal(a.Ports, b.Ports) && sameLocality(a.Locality, b.Locality) &&
		a.Kind == b.Kind && bytes.Equal(a.Proxy, b.Proxy)
}

// SameLocality reports whether a and b are the same place (nil: none).
func SameLocality(a, b *Locality) bool { return sameLocality(a, b) }

func sameLocality(a, b *Locality) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Clone returns a deep copy of s, sharing nothing with it.
func (s *Service) Clone() *Service {
	cp := *s
	cp.Tags = slices.Clone(s.Tags)
	cp.Meta = maps.Clone(s.Meta)
	cp.TaggedAddresses = maps.Clone(s.TaggedAddresses)
	cp.Ports = slices.Clone(s.Ports)
	cp.Proxy = slices.Clone(s.Proxy)
	cp.Locality = cloneLocality(s.Locality)
	return &cp
}

func cloneLocality(l *Locality) *Locality {
	if l == nil {
		return nil
	}
	cp := *l
	return &cp
}

func ensureService(tx *memdb.Txn, idx uint64, node string, svc *Service) error {
	raw, err := tx.First(tableServices, "id", node, svc.ID)
	if err != nil {
		return fmt.Errorf("look up service %q: %w", svc.ID, err)
	}
	cp := *svc.Clone()
	if old, ok := raw.(*serviceRow); ok {
		if sameService(old.Service, &cp) {
			return nil
		}
		cp.CreateIndex = old.Service.CreateIndex
	} else {
		cp.CreateIndex = idx
	}
	cp.ModifyIndex = idx
	row := newServiceRow(node, &cp)
	if err := tx.Insert(tableServices, row); err != nil {
		return fmt.Errorf("insert service %q: %w", svc.ID, err)
	}
	if err := bumpIndex(tx, tableServices, idx); err != nil {
		return err
	}
	return renameServiceChecks(tx, idx, node, &cp)
}

func newServiceRow(node string, svc *Service) *serviceRow {
	return &serviceRow{Node: node, ID: svc.ID, Name: strings.ToLower(svc.Service), Address: svc.Address, Service: svc}
}

// renameServiceChecks keeps the ServiceName and ServiceTags of a service's
// checks equal to the service's when a registration changes them.
func renameServiceChecks(tx *memdb.Txn, idx uint64, node string, svc *Service) error {
	checks, err := serviceChecks(tx, node, svc.ID)
	if err != nil {
		return err
	}
	for _, c := range checks {
		if c.ServiceName == svc.Service && slices.Equal(c.ServiceTags, svc.Tags) {
			continue
		}
		cp := *c
		cp.ServiceName, cp.ServiceTags, cp.ModifyIndex = svc.Service, svc.Tags, idx
		if err := tx.Insert(tableChecks, newCheckRow(&cp)); err != nil {
			return fmt.Errorf("rename check %q: %w", cp.CheckID, err)
		}
		if err := bumpIndex(tx, tableChecks, idx); err != nil {
			return err
		}
	}
	return nil
}

func ensureCheck(tx *memdb.Txn, idx uint64, at time.Time, node string, c *Check) error {
	cp := *c
	cp.Node = node
	cp.RaftIndex = RaftIndex{} // a check read back from the store is the same check
	if cp.ServiceID != "" {
		raw, err := tx.First(tableServices, "id", node, cp.ServiceID)
		if err != nil {
			return fmt.Errorf("look up service %q: %w", cp.ServiceID, err)
		}
		if raw == nil {
			return fmt.Errorf("check %q: service %q: %w", cp.CheckID, cp.ServiceID, ErrNotFound)
		}
		cp.ServiceName = raw.(*serviceRow).Service.Service
		cp.ServiceTags = raw.(*serviceRow).Service.Tags
	} else {
		cp.ServiceTags = nil
	}
	raw, err := tx.First(tableChecks, "id", node, cp.CheckID)
	if err != nil {
		return fmt.Errorf("look up check %q: %w", cp.CheckID, err)
	}
	if old, ok := raw.(*checkRow); ok {
		if old.Check.SameAs(&cp) {
			return nil
		}
		cp.CreateIndex = old.Check.CreateIndex
	} else {
		cp.CreateIndex = idx
	}
	cp.ModifyIndex = idx
	if err := tx.Insert(tableChecks, newCheckRow(&cp)); err != nil {
		return fmt.Errorf("insert check %q: %w", cp.CheckID, err)
	}
	if err := bumpIndex(tx, tableChecks, idx); err != nil {
		return err
	}
	if cp.Status == HealthCritical {
		return invalidateSessions(tx, idx, at, node, cp.CheckID)
	}
	return nil
}

// Deregister is DeregisterAt with no time: a session it ends gives its
// keys no lock-delay. The FSM uses DeregisterAt.
func (s *Store) Deregister(idx uint64, req *DeregisterRequest) error {
	return s.DeregisterAt(idx, time.Time{}, req)
}

// DeregisterAt applies a DeregisterRequest at Raft index idx. Removing what
// is not there is not an error: deregistration is idempotent. Removing a
// check ends the sessions tied to it, removing a node every session of
// it, in the same write; their keys' lock-delays run from at.
func (s *Store) DeregisterAt(idx uint64, at time.Time, req *DeregisterRequest) error {
	return s.applyOne(idx, at, Write{Deregister: req}).Err
}

func deregisterTxn(tx *memdb.Txn, idx uint64, at time.Time, req *DeregisterRequest) error {
	switch {
	case req.CheckID != "":
		return deleteCheck(tx, idx, at, req.Node, req.CheckID)
	case req.ServiceID != "":
		return deleteService(tx, idx, at, req.Node, req.ServiceID)
	}
	return deleteNode(tx, idx, at, req.Node)
}

func deleteCheck(tx *memdb.Txn, idx uint64, at time.Time, node, id string) error {
	n, err := tx.DeleteAll(tableChecks, "id", node, id)
	if err != nil {
		return fmt.Errorf("delete check %q: %w", id, err)
	}
	if n == 0 {
		return nil
	}
	if err := bumpIndex(tx, tableChecks, idx); err != nil {
		return err
	}
	return invalidateSessions(tx, idx, at, node, id)
}

func deleteService(tx *memdb.Txn, idx uint64, at time.Time, node, id string) error {
	n, err := tx.DeleteAll(tableServices, "id", node, id)
	if err != nil {
		return fmt.Errorf("delete service %q: %w", id, err)
	}
	if n == 0 {
		return nil
	}
	if err := bumpIndex(tx, tableServices, idx); err != nil {
		return err
	}
	checks, err := serviceChecks(tx, node, id)
	if err != nil {
		return err
	}
	for _, c := range checks {
		if err := deleteCheck(tx, idx, at, node, c.CheckID); err != nil {
			return err
		}
	}
	return nil
}

func deleteNode(tx *memdb.Txn, idx uint64, at time.Time, node string) error {
	n, err := tx.DeleteAll(tableNodes, "id", node)
	if err != nil {
		return fmt.Errorf("delete node %q: %w", node, err)
	}
	if n == 0 {
		return nil
	}
	if err := bumpIndex(tx, tableNodes, idx); err != nil {
		return err
	}
	if n, err := deleteNodeRows(tx, tableServices, node); err != nil {
		return fmt.Errorf("delete services of node %q: %w", node, err)
	} else if n > 0 {
		if err := bumpIndex(tx, tableServices, idx); err != nil {
			return err
		}
	}
	if n, err := deleteNodeRows(tx, tableChecks, node); err != nil {
		return fmt.Errorf("delete checks of node %q: %w", node, err)
	} else if n > 0 {
		if err := bumpIndex(tx, tableChecks, idx); err != nil {
			return err
		}
	}
	if err := deleteCoordinate(tx, idx, node); err != nil { // coordinates.go
		return err
	}
	return invalidateSessions(tx, idx, at, node, "")
}

// serviceChecks returns the checks on one service of a node.
func serviceChecks(tx *memdb.Txn, node, serviceID string) ([]*Check, error) {
	all, _, err := nodeChecks(tx, node)
	if err != nil {
		return nil, err
	}
	var out []*Check
	for _, c := range all {
		if c.ServiceID == serviceID {
			out = append(out, c)
		}
	}
	return out, nil
}

// nodeChecks returns every check of a node and a channel that closes when
// any of them changes.
func nodeChecks(tx *memdb.Txn, node string) ([]*Check, <-chan struct{}, error) {
	it, err := nodeRows(tx, tableChecks, node)
	if err != nil {
		return nil, nil, fmt.Errorf("list checks of node %q: %w", node, err)
	}
	var out []*Check
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*checkRow).Check)
	}
	return out, it.WatchCh(), nil
}
