package catalog

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"
)

// This file holds sessions (Consul's): a session ties locks on keys to a
// node and some of its checks. It ends when it is destroyed, when one of
// its checks turns critical or is deleted, when its node is deregistered
// (all inside the write that did it), or when its TTL lapses (the leader
// destroys it). Ending it releases its locks, or deletes its keys, and
// keeps each key from being locked again for the session's lock-delay.

const (
	tableSessions = "sessions"
	// tableLockDelays holds, per key, until when a lock on it is refused
	// after a session holding it ended.
	tableLockDelays = "kvs-lock-delays"
)

// Session limits and defaults, Consul's.
const (
	// DefaultLockDelay is a session's LockDelay when none is given.
	DefaultLockDelay = 15 * time.Second
	// MaxLockDelay is the longest LockDelay.
	MaxLockDelay = 60 * time.Second
	// SessionTTLMin and SessionTTLMax bound a session's TTL.
	SessionTTLMin = 10 * time.Second
	SessionTTLMax = 24 * time.Hour
)

// SessionBehavior is what ending a session does to the keys it locks.
type SessionBehavior string

// The behaviors.
const (
	// SessionRelease releases the locks, keeping the keys.
	SessionRelease SessionBehavior = "release"
	// SessionDelete deletes the keys.
	SessionDelete SessionBehavior = "delete"
)

// ServiceCheck names a service-level check a session is tied to.
type ServiceCheck struct {
	ID        string
	Namespace string `json:",omitempty"`
}

// Session is one session (Consul's structs.Session).
type Session struct {
	// ID is a UUID, chosen by the server that takes the create.
	ID   string
	Name string
	// Node is the node the session belongs to; it must exist.
	Node string
	// NodeChecks and ServiceChecks are the checks on Node the session
	// is tied to: none may be critical when it is created, and one
	// turning critical or going away ends it.
	NodeChecks    []string
	ServiceChecks []ServiceCheck
	// LockDelay is how long a key it locked stays unlockable by others
	// after it ends; 0 for none.
	LockDelay time.Duration
	// Behavior says what ending it does to its keys.
	Behavior SessionBehavior
	// TTL ("30s"), when not "", is how long the session lives without a
	// renew: between SessionTTLMin and SessionTTLMax.
	TTL string
	RaftIndex
}

// SessionOp is what a SessionRequest does.
type SessionOp string

// The operations on sessions.
const (
	SessionCreate  SessionOp = "create"
	SessionDestroy SessionOp = "destroy"
)

// SessionRequest creates or destroys a session: the command the Raft log
// carries. A destroy reads only Session.ID.
type SessionRequest struct {
	Op      SessionOp
	Session Session
}

// KVLockDelay is a key that may not be locked before Until (Unix
// nanoseconds, of the log's time stamps): a session that held it ended.
type KVLockDelay struct {
	Key   string
	Until int64
}

func sessionTables() map[string]*memdb.TableSchema {
	return map[string]*memdb.TableSchema{
		tableSessions: {
			Name: tableSessions,
			Indexes: map[string]*memdb.IndexSchema{
				"id":   {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID", Lowercase: true}},
				"node": {Name: "node", Indexer: &memdb.StringFieldIndex{Field: "Node", Lowercase: true}},
			},
		},
		tableLockDelays: {
			Name: tableLockDelays,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
			},
		},
	}
}

// ValidateSession checks a session before its create enters the log, and
// returns a *FieldError naming the first bad field. What depends on the
// store (the node, its checks) is checked when the create applies.
func ValidateSession(s *Session) error {
	switch {
	case s.ID == "":
		return fieldErr("ID", "is required")
	case s.Node == "":
		return fieldErr("Node", "is required")
	}
	switch s.Behavior {
	case SessionRelease, SessionDelete:
	default:
		return fieldErr("Behavior", "must be %q or %q, got %q", SessionRelease, SessionDelete, s.Behavior)
	}
	if s.LockDelay < 0 || s.LockDelay > MaxLockDelay {
		return fieldErr("LockDelay", "must be between 0s and %s, got %s", MaxLockDelay, s.LockDelay)
	}
	if s.TTL != "" {
		ttl, err := time.ParseDuration(s.TTL)
		if err != nil {
			return fieldErr("TTL", "must be a duration such as \"30s\", got %q", s.TTL)
		}
		if ttl < SessionTTLMin || ttl > SessionTTLMax {
			return fieldErr("TTL", "must be between %s and %s, got %s", SessionTTLMin, SessionTTLMax, s.TTL)
		}
	}
	for i, id := range s.NodeChecks {
		if id == "" {
			return fieldErr(fmt.Sprintf("NodeChecks[%d]", i), "is empty")
		}
	}
	for i, c := range s.ServiceChecks {
		if c.ID == "" {
			return fieldErr(fmt.Sprintf("ServiceChecks[%d].ID", i), "is required")
		}
	}
	return nil
}

// TTLDuration returns the session's TTL, 0 when it has none.
func (s *Session) TTLDuration() time.Duration {
	d, _ := time.ParseDuration(s.TTL)
	return d
}

// ApplySession applies a SessionRequest at Raft index idx, at time at
// (the log entry's time stamp, from which lock-delays run).
func (s *Store) ApplySession(idx uint64, at time.Time, req *SessionRequest) error {
	return s.applyOne(idx, at, Write{Session: req}).Err
}

func sessionTxn(tx *memdb.Txn, idx uint64, at time.Time, req *SessionRequest) error {
	switch req.Op {
	case SessionCreate:
		return sessionCreateTxn(tx, idx, &req.Session)
	case SessionDestroy:
		return destroySession(tx, idx, at, req.Session.ID)
	}
	return fieldErr("Op", "must be create or destroy, got %q", req.Op)
}

// SessionCreate stores a new session at Raft index idx. Its node must
// exist and each of its checks must exist on the node and not be
// critical; else a *FieldError names the field.
func (s *Store) SessionCreate(idx uint64, sess *Session) error {
	return s.ApplySession(idx, time.Time{}, &SessionRequest{Op: SessionCreate, Session: *sess})
}

func sessionCreateTxn(tx *memdb.Txn, idx uint64, sess *Session) error {
	raw, err := tx.First(tableNodes, "id", sess.Node)
	if err != nil {
		return fmt.Errorf("look up node %q: %w", sess.Node, err)
	}
	if raw == nil {
		return fieldErr("Node", "no node %q is registered", sess.Node)
	}
	checkOK := func(field, id string, service bool) error {
		raw, err := tx.First(tableChecks, "id", sess.Node, id)
		if err != nil {
			return fmt.Errorf("look up check %q: %w", id, err)
		}
		row, _ := raw.(*checkRow)
		switch {
		case row == nil:
			return fieldErr(field, "no check %q on node %q", id, sess.Node)
		case service && row.ServiceID == "":
			return fieldErr(field, "check %q is a node check, not a service check", id)
		case row.Check.Status == HealthCritical:
			return fieldErr(field, "check %q is critical", id)
		}
		return nil
	}
	for i, id := range sess.NodeChecks {
		if err := checkOK(fmt.Sprintf("NodeChecks[%d]", i), id, false); err != nil {
			return err
		}
	}
	for i, c := range sess.ServiceChecks {
		if err := checkOK(fmt.Sprintf("ServiceChecks[%d].ID", i), c.ID, true); err != nil {
			return err
		}
	}
	if old, err := tx.First(tableSessions, "id", sess.ID); err != nil || old != nil {
		if err == nil {
			err = fieldErr("ID", "session %q exists", sess.ID)
		}
		return err
	}
	cp := *sess
	cp.NodeChecks = slices.Clone(sess.NodeChecks)
	cp.ServiceChecks = slices.Clone(sess.ServiceChecks)
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if err := tx.Insert(tableSessions, &cp); err != nil {
		return fmt.Errorf("insert session %q: %w", sess.ID, err)
	}
	return bumpIndex(tx, tableSessions, idx)
}

// destroySession deletes session id, releasing or deleting its keys as
// its Behavior says and giving each its lock-delay from at (none when at
// is zero). A session that does not exist is not an error.
func destroySession(tx *memdb.Txn, idx uint64, at time.Time, id string) error {
	raw, err := tx.First(tableSessions, "id", id)
	if err != nil {
		return fmt.Errorf("look up session %q: %w", id, err)
	}
	sess, _ := raw.(*Session)
	if sess == nil {
		return nil
	}
	if err := tx.Delete(tableSessions, sess); err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	if err := bumpIndex(tx, tableSessions, idx); err != nil {
		return err
	}
	it, err := tx.Get(tableKVS, "session", sess.ID)
	if err != nil {
		return fmt.Errorf("keys of session %q: %w", id, err)
	}
	var held []*KVEntry
	for raw := it.Next(); raw != nil; raw = it.Next() {
		held = append(held, raw.(*KVEntry))
	}
	for _, e := range held {
		if sess.LockDelay > 0 && !at.IsZero() {
			if err := tx.Insert(tableLockDelays, &KVLockDelay{Key: e.Key, Until: at.Add(sess.LockDelay).UnixNano()}); err != nil {
				return fmt.Errorf("lock-delay of key %q: %w", e.Key, err)
			}
		}
		if sess.Behavior == SessionDelete {
			if err := kvsDeleteTxn(tx, idx, e.Key); err != nil {
				return err
			}
			continue
		}
		cp := *e
		cp.Session, cp.ModifyIndex = "", idx
		if err := tx.Insert(tableKVS, &cp); err != nil {
			return fmt.Errorf("release key %q: %w", e.Key, err)
		}
		if err := bumpIndex(tx, tableKVS, idx); err != nil {
			return err
		}
	}
	return nil
}

// invalidateSessions destroys the sessions of node tied to check id (all
// of the node's sessions when id is ""): the check turned critical or
// went away, or the node did.
func invalidateSessions(tx *memdb.Txn, idx uint64, at time.Time, node, checkID string) error {
	it, err := tx.Get(tableSessions, "node", node)
	if err != nil {
		return fmt.Errorf("sessions of node %q: %w", node, err)
	}
	var ids []string
	for raw := it.Next(); raw != nil; raw = it.Next() {
		s := raw.(*Session)
		if checkID == "" || slices.Contains(s.NodeChecks, checkID) ||
			slices.ContainsFunc(s.ServiceChecks, func(c ServiceCheck) bool { return c.ID == checkID }) {
			ids = append(ids, s.ID)
		}
	}
	for _, id := range ids {
		if err := destroySession(tx, idx, at, id); err != nil {
			return err
		}
	}
	return nil
}

// SessionGet returns session id, nil when there is none, and the index to
// block on (the sessions table's).
func (s *Store) SessionGet(ws WatchSet, id string) (uint64, *Session, error) {
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableSessions, "id", id)
	if err != nil {
		return 0, nil, fmt.Errorf("look up session %q: %w", id, err)
	}
	ws.Add(ch)
	sess, _ := raw.(*Session)
	return maxIndex(tx, tableSessions), sess, nil
}

// SessionList returns the sessions of node, or every session when node is
// "", and the index to block on.
func (s *Store) SessionList(ws WatchSet, node string) (uint64, []*Session, error) {
	tx := s.read(ws)
	var it memdb.ResultIterator
	var err error
	if node == "" {
		it, err = tx.Get(tableSessions, "id")
	} else {
		it, err = tx.Get(tableSessions, "node", node)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("list sessions: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*Session
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*Session))
	}
	return maxIndex(tx, tableSessions), out, nil
}

// lockDelayed reports whether key may not be locked at at.
func lockDelayed(tx *memdb.Txn, at time.Time, key string) (bool, error) {
	if at.IsZero() {
		return false, nil
	}
	raw, err := tx.First(tableLockDelays, "id", key)
	if err != nil {
		return false, fmt.Errorf("lock-delay of key %q: %w", key, err)
	}
	row, _ := raw.(*KVLockDelay)
	return row != nil && at.UnixNano() < row.Until, nil
}
