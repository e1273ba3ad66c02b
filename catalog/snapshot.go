package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"
)

// Dump is a point-in-time copy of the whole catalog, as written to and read
// from Raft snapshots.
type Dump struct {
	Index    uint64 // the highest table index
	Nodes    []*Node
	Services []DumpService
	Checks   []*Check
	// Queries are the prepared queries; a snapshot written before they
	// existed has none.
	Queries []*PreparedQuery
	// ACLPolicies and ACLTokens are the ACL data (tokens with their
	// secrets hashed); ACLBootstrapIndex is the index of the bootstrap, 0
	// when none was made.
	ACLPolicies       []*ACLPolicy
	ACLTokens         []*ACLToken
	ACLBootstrapIndex uint64
	// ACLRoles are the roles, ACLReplicaStale the replica's mark
	// (ACLReplicaStale); a snapshot written before them has none.
	ACLRoles        []*ACLRole
	ACLReplicaStale uint64
	// KVs are the key/value store's entries; a snapshot written before
	// it existed has none.
	KVs []*KVEntry
	// Sessions are the sessions, and LockDelays the keys' lock-delays
	// (part of the state every server must agree on, since they decide
	// locks); a snapshot written before they existed has none.
	Sessions   []*Session
	LockDelays []*KVLockDelay
	// Coordinates are the nodes' network coordinates; a snapshot
	// written before they existed has none.
	Coordinates []*CoordinateEntry
}

// DumpService is a service with the node it is registered on.
type DumpService struct {
	Node    string
	Service *Service
}

// Dump copies the current catalog out of one consistent read.
func (s *Store) Dump() (*Dump, error) {
	tx := s.read(nil)
	d := &Dump{Index: maxIndex(tx, allTables()...)}
	err := eachRow(tx, tableNodes, func(raw any) { d.Nodes = append(d.Nodes, raw.(*Node)) })
	if err == nil {
		err = eachRow(tx, tableServices, func(raw any) {
			r := raw.(*serviceRow)
			d.Services = append(d.Services, DumpService{Node: r.Node, Service: r.Service})
		})
	}
	if err == nil {
		err = eachRow(tx, tableChecks, func(raw any) { d.Checks = append(d.Checks, raw.(*checkRow).Check) })
	}
	if err == nil {
		err = eachRow(tx, tableQueries, func(raw any) { d.Queries = append(d.Queries, raw.(*queryRow).Query) })
	}
	if err == nil {
		err = eachRow(tx, tableACLPolicies, func(raw any) { d.ACLPolicies = append(d.ACLPolicies, raw.(*ACLPolicy)) })
	}
	if err == nil {
		err = eachRow(tx, tableACLTokens, func(raw any) { d.ACLTokens = append(d.ACLTokens, raw.(*ACLToken)) })
	}
	if err == nil {
		err = eachRow(tx, tableACLRoles, func(raw any) { d.ACLRoles = append(d.ACLRoles, raw.(*ACLRole)) })
	}
	if err == nil {
		err = eachRow(tx, tableKVS, func(raw any) { d.KVs = append(d.KVs, raw.(*KVEntry)) })
	}
	if err == nil {
		err = eachRow(tx, tableSessions, func(raw any) { d.Sessions = append(d.Sessions, raw.(*Session)) })
	}
	if err == nil {
		err = eachRow(tx, tableLockDelays, func(raw any) { d.LockDelays = append(d.LockDelays, raw.(*KVLockDelay)) })
	}
	if err == nil {
		err = eachRow(tx, tableCoordinates, func(raw any) { d.Coordinates = append(d.Coordinates, raw.(*CoordinateEntry)) })
	}
	if err != nil {
		return nil, fmt.Errorf("dump catalog: %w", err)
	}
	if raw, _ := tx.First(tableIndex, "id", aclBootstrapRow); raw != nil {
		d.ACLBootstrapIndex = raw.(*indexRow).Index
	}
	if raw, _ := tx.First(tableIndex, "id", aclReplicaStaleRow); raw != nil {
		d.ACLReplicaStale = raw.(*indexRow).Index
	}
	return d, nil
}

func eachRow(tx *memdb.Txn, table string, fn func(any)) error {
	it, err := tx.Get(table, "id")
	if err != nil {
		return err
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		fn(raw)
	}
	return nil
}

// Restore replaces the whole catalog with d. Every watcher of the old
// contents is woken, since anything may have changed.
func (s *Store) Restore(d *Dump) error {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return fmt.Errorf("restore catalog: %w", err)
	}
	tx := db.Txn(true)
	defer tx.Abort()
	for _, n := range d.Nodes {
		if err := tx.Insert(tableNodes, n); err != nil {
			return fmt.Errorf("restore node %q: %w", n.Node, err)
		}
	}
	for _, ds := range d.Services {
		if err := tx.Insert(tableServices, newServiceRow(ds.Node, ds.Service)); err != nil {
			return fmt.Errorf("restore service %q: %w", ds.Service.ID, err)
		}
	}
	// Snapshots written before checks carried ServiceTags lack them: they
	// are the services' tags, set here as the store sets them.
	tags := make(map[[2]string][]string, len(d.Services))
	for _, ds := range d.Services {
		tags[[2]string{strings.ToLower(ds.Node), ds.Service.ID}] = ds.Service.Tags
	}
	for _, c := range d.Checks {
		if c.ServiceID != "" {
			if t := tags[[2]string{strings.ToLower(c.Node), c.ServiceID}]; !slices.Equal(t, c.ServiceTags) {
				cp := *c
				cp.ServiceTags = t
				c = &cp
			}
		}
		if err := tx.Insert(tableChecks, newCheckRow(c)); err != nil {
			return fmt.Errorf("restore check %q: %w", c.CheckID, err)
		}
	}
	for _, q := range d.Queries {
		if err := tx.Insert(tableQueries, newQueryRow(q)); err != nil {
			return fmt.Errorf("restore query %q: %w", q.ID, err)
		}
	}
	for _, p := range d.ACLPolicies {
		if err := tx.Insert(tableACLPolicies, p); err != nil {
			return fmt.Errorf("restore ACL policy %q: %w", p.ID, err)
		}
	}
	for _, t := range d.ACLTokens {
		if err := tx.Insert(tableACLTokens, t); err != nil {
			return fmt.Errorf("restore ACL token %q: %w", t.AccessorID, err)
		}
	}
	for _, r := range d.ACLRoles {
		if err := tx.Insert(tableACLRoles, r); err != nil {
			return fmt.Errorf("restore ACL role %q: %w", r.ID, err)
		}
	}
	if d.ACLReplicaStale > 0 {
		if err := tx.Insert(tableIndex, &indexRow{Table: aclReplicaStaleRow, Index: d.ACLReplicaStale}); err != nil {
			return fmt.Errorf("restore ACL replica mark: %w", err)
		}
	}
	for _, e := range d.KVs {
		if err := tx.Insert(tableKVS, e); err != nil {
			return fmt.Errorf("restore key %q: %w", e.Key, err)
		}
	}
	for _, sess := range d.Sessions {
		if err := tx.Insert(tableSessions, sess); err != nil {
			return fmt.Errorf("restore session %q: %w", sess.ID, err)
		}
	}
	for _, r := range d.LockDelays {
		if err := tx.Insert(tableLockDelays, r); err != nil {
			return fmt.Errorf("restore lock-delay of key %q: %w", r.Key, err)
		}
	}
	for _, c := range d.Coordinates {
		if err := tx.Insert(tableCoordinates, c); err != nil {
			return fmt.Errorf("restore coordinate of node %q: %w", c.Node, err)
		}
	}
	if d.ACLBootstrapIndex > 0 {
		if err := tx.Insert(tableIndex, &indexRow{Table: aclBootstrapRow, Index: d.ACLBootstrapIndex}); err != nil {
			return fmt.Errorf("restore ACL bootstrap: %w", err)
		}
	}
	// The last delete of a key is not in the dump: the snapshot's index
	// stands for it (kvs.go), which can only make a list's index higher.
	for _, t := range append(allTables(), kvsDeletedRow) {
		if err := bumpIndex(tx, t, d.Index); err != nil {
			return err
		}
	}
	tx.Commit()
	// The new generation's change log starts at the snapshot's index: a
	// reader behind it gets Reset. (One exactly at it would not; a server
	// restores only when far behind, or at start with no readers yet.)
	old := s.state.Swap(&storeState{db: db, abandon: make(chan struct{}), changes: newChangeLog(d.Index)})
	close(old.abandon)
	return nil
}
