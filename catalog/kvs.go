package catalog

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

// This file holds the key/value store (Consul's KV): a table of entries
// beside the catalog's, written through the same Raft log and read with
// the same blocking queries. Sessions (sessions.go) lock keys.

// DefaultKVMaxValueSize is the largest value an entry may hold unless
// configured (limits { kv_max_value_size }), in bytes: Consul's 512 KiB.
// MaxKVValueSize is the most that can be configured, so that a write
// always fits one RPC message (8 MiB).
const (
	DefaultKVMaxValueSize = 512 * 1024
	MaxKVValueSize        = 4 << 20
)

const (
	tableKVS = "kvs"
	// kvsDeletedRow is a row of the index table whose Index is the Raft
	// index of the last delete of any key. A list's index is at least
	// that (see KVList).
	kvsDeletedRow = "kvs-deleted"
)

// KVEntry is one key and its value: Consul's DirEntry.
type KVEntry struct {
	// Key is the entry's name: case-sensitive, not empty, not starting
	// with "/". "/" is only a convention for hierarchy (see KVKeys).
	Key string
	// Value is opaque, at most the configured limit (by default
	// DefaultKVMaxValueSize) bytes.
	Value []byte
	// Flags is an opaque number clients use as they like.
	Flags uint64
	// LockIndex counts the times the key was locked by a session.
	LockIndex uint64
	// Session is the ID of the session holding the key's lock, "" for
	// none.
	Session string
	RaftIndex
}

// KVOp is what a KVRequest does.
type KVOp string

// The operations on the key/value store.
const (
	// KVSet writes an entry.
	KVSet KVOp = "set"
	// KVCAS writes an entry only if its ModifyIndex is
	// Entry.ModifyIndex (0: only if the key does not exist).
	KVCAS KVOp = "cas"
	// KVDelete deletes a key.
	KVDelete KVOp = "delete"
	// KVDeleteCAS deletes a key only if its ModifyIndex is
	// Entry.ModifyIndex.
	KVDeleteCAS KVOp = "delete-cas"
	// KVDeleteTree deletes every key starting with Entry.Key.
	KVDeleteTree KVOp = "delete-tree"
	// KVLock writes an entry and locks it for Entry.Session: done if
	// the key is free (LockIndex grows by one) or already held by that
	// session, and not within a lock-delay.
	KVLock KVOp = "lock"
	// KVUnlock writes an entry and releases its lock: done only if
	// Entry.Session holds it.
	KVUnlock KVOp = "unlock"
)

// KVRequest is one write to the key/value store: the command the Raft log
// carries. For the CAS operations Entry.ModifyIndex is the index the entry
// must have (Consul's shape); for the deletes only Entry.Key is read.
type KVRequest struct {
	Op    KVOp
	Entry KVEntry
}

// kvTables is the schema of the key/value store.
func kvTables() map[string]*memdb.TableSchema {
	return map[string]*memdb.TableSchema{
		tableKVS: {
			Name: tableKVS,
			Indexes: map[string]*memdb.IndexSchema{
				// id is exact (keys are case-sensitive); its prefix
				// form ("id_prefix") answers lists.
				"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
				// session: the keys a session locks (unlocked keys
				// are left out).
				"session": {Name: "session", AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "Session", Lowercase: true}},
			},
		},
	}
}

// ValidateKV checks a write before it enters the log, and returns a
// *FieldError naming the first bad field: the key ("Key"; an empty one is
// allowed only for a delete-tree, which then deletes everything) and the
// value's size ("Value", at most maxValue bytes). An unknown Op, or one
// valid only in a transaction (KVGet and the checks, txn.go), is an "Op"
// error.
func ValidateKV(req *KVRequest, maxValue int) error {
	if !kvWriteOp(req.Op) {
		return errKVOp(req.Op)
	}
	return validateKVEntry(req, maxValue)
}

// validateKVEntry checks the entry of an operation whose Op is known, as
// ValidateKV describes; ValidateTxn shares it.
func validateKVEntry(req *KVRequest, maxValue int) error {
	// An empty prefix is every key.
	if req.Entry.Key == "" && req.Op != KVDeleteTree && req.Op != KVGetTree {
		return fieldErr("Key", "is required")
	}
	switch req.Op {
	case KVLock, KVUnlock, KVCheckSession:
		if req.Entry.Session == "" {
			return fieldErr("Session", "is required to %s a key", req.Op)
		}
	}
	if strings.HasPrefix(req.Entry.Key, "/") {
		return fieldErr("Key", "must not start with \"/\", got %q", req.Entry.Key)
	}
	if n := len(req.Entry.Value); n > maxValue {
		return fieldErr("Value", "must be at most %d bytes, got %d", maxValue, n)
	}
	return nil
}

// errKVOp is the error of an Op that is not a write.
func errKVOp(op KVOp) *FieldError {
	return fieldErr("Op", "must be set, cas, delete, delete-cas, delete-tree, lock or unlock, got %q", op)
}

// kvWriteOp reports whether op is one of the writes a KVRequest may carry
// on its own.
func kvWriteOp(op KVOp) bool {
	switch op {
	case KVSet, KVCAS, KVDelete, KVDeleteCAS, KVDeleteTree, KVLock, KVUnlock:
		return true
	}
	return false
}

// ApplyKV applies a KVRequest at Raft index idx, at time at (the log
// entry's time stamp, against which lock-delays are compared; zero: none
// is), and reports whether it was done: false for a CAS operation whose
// index did not match, or a lock or unlock refused. The
// request is not validated here (servers validate before the write enters
// the log, which must replay as it was applied), except that an Op that
// is not a write is an error.
func (s *Store) ApplyKV(idx uint64, at time.Time, req *KVRequest) (bool, error) {
	r := s.applyOne(idx, at, Write{KV: req})
	done, _ := r.Value.(bool)
	return done, r.Err
}

// KVSet writes e's key, value and flags at Raft index idx. Its
// ModifyIndex becomes idx even when nothing else changed (Consul's rule:
// a write is a change clients may wait for); CreateIndex, LockIndex and
// Session are kept from the entry it replaces.
func (s *Store) KVSet(idx uint64, e *KVEntry) error {
	_, err := s.writeKV(idx, func(tx *memdb.Txn) error {
		_, err := kvsSetTxn(tx, idx, e)
		return err
	})
	return err
}

// KVCAS writes e as KVSet does if the key's ModifyIndex is cas, or, with
// cas 0, if the key does not exist; it reports whether it wrote.
func (s *Store) KVCAS(idx uint64, e *KVEntry, cas uint64) (bool, error) {
	return s.writeKV(idx, func(tx *memdb.Txn) error {
		_, err := kvsCASTxn(tx, idx, e, cas)
		return err
	})
}

// KVLock writes e's key, value and flags and locks the key for
// e.Session, and reports whether it did: the key was free, or already
// held by that session (then only the value and flags change), and its
// lock-delay (from a session that held it) is over at at. A new lock
// adds one to LockIndex. The session must exist, else a *FieldError.
func (s *Store) KVLock(idx uint64, at time.Time, e *KVEntry) (bool, error) {
	return s.writeKV(idx, func(tx *memdb.Txn) error {
		_, err := kvsLockTxn(tx, idx, at, e)
		return err
	})
}

// KVUnlock writes e's key, value and flags and releases its lock, if
// e.Session holds it; it reports whether it did.
func (s *Store) KVUnlock(idx uint64, e *KVEntry) (bool, error) {
	return s.writeKV(idx, func(tx *memdb.Txn) error {
		_, err := kvsUnlockTxn(tx, idx, e)
		return err
	})
}

// KVDelete deletes key at Raft index idx; deleting a key that does not
// exist changes nothing.
func (s *Store) KVDelete(idx uint64, key string) error {
	_, err := s.writeKV(idx, func(tx *memdb.Txn) error {
		return kvsDeleteTxn(tx, idx, key)
	})
	return err
}

// KVDeleteCAS deletes key if its ModifyIndex is cas, and reports whether
// the key is gone: true also when it did not exist (Consul's answer).
func (s *Store) KVDeleteCAS(idx uint64, key string, cas uint64) (bool, error) {
	return s.writeKV(idx, func(tx *memdb.Txn) error {
		return kvsDeleteCASTxn(tx, idx, key, cas)
	})
}

// KVDeleteTree deletes every key starting with prefix ("" deletes all) at
// Raft index idx.
func (s *Store) KVDeleteTree(idx uint64, prefix string) error {
	_, err := s.writeKV(idx, func(tx *memdb.Txn) error {
		return kvsDeleteTreeTxn(tx, idx, prefix)
	})
	return err
}

// write runs fn in a write transaction, committing it when fn reports
// done without error.
func (s *Store) write(idx uint64, fn func(tx *memdb.Txn) (bool, error)) (bool, error) {
	st := s.state.Load()
	tx := st.db.Txn(true)
	defer tx.Abort()
	tx.TrackChanges()
	done, err := fn(tx)
	if err != nil || !done {
		return false, err
	}
	st.commit(tx, idx)
	return true, nil
}

// writeKV runs one key/value write in a write transaction (write): a
// *kvRefused from fn is reported as not done, without error.
func (s *Store) writeKV(idx uint64, fn func(tx *memdb.Txn) error) (bool, error) {
	return s.write(idx, func(tx *memdb.Txn) (bool, error) {
		err := fn(tx)
		if _, refused := errors.AsType[*kvRefused](err); refused {
			return false, nil
		}
		return err == nil, err
	})
}

// kvRefused is the error of an operation whose condition did not hold (a
// CAS whose index did not match, a lock refused, a check that failed),
// worded as Consul words it. A single write answers false for it; a
// transaction fails that operation with its text.
type kvRefused struct{ reason string }

func (e *kvRefused) Error() string { return e.reason }

func refused(format string, args ...any) *kvRefused {
	return &kvRefused{reason: fmt.Sprintf(format, args...)}
}

// The tx-level writes below are the one implementation of each
// operation, shared by the single writes above and by transactions
// (txn.go). Each returns the entry it stored (nil for the deletes), to be
// treated as immutable, or a *kvRefused when its condition did not hold.

// kvsWriteTxn applies the write req in tx at idx; its Op must be one
// kvWriteOp accepts.
func kvsWriteTxn(tx *memdb.Txn, idx uint64, at time.Time, req *KVRequest) (*KVEntry, error) {
	e := &req.Entry
	switch req.Op {
	case KVSet:
		return kvsSetTxn(tx, idx, e)
	case KVCAS:
		return kvsCASTxn(tx, idx, e, e.ModifyIndex)
	case KVDelete:
		return nil, kvsDeleteTxn(tx, idx, e.Key)
	case KVDeleteCAS:
		return nil, kvsDeleteCASTxn(tx, idx, e.Key, e.ModifyIndex)
	case KVDeleteTree:
		return nil, kvsDeleteTreeTxn(tx, idx, e.Key)
	case KVLock:
		return kvsLockTxn(tx, idx, at, e)
	case KVUnlock:
		return kvsUnlockTxn(tx, idx, e)
	}
	return nil, errKVOp(req.Op)
}

func kvsFirst(tx *memdb.Txn, key string) (*KVEntry, error) {
	raw, err := tx.First(tableKVS, "id", key)
	if err != nil {
		return nil, fmt.Errorf("look up key %q: %w", key, err)
	}
	e, _ := raw.(*KVEntry)
	return e, nil
}

func kvsSetTxn(tx *memdb.Txn, idx uint64, e *KVEntry) (*KVEntry, error) {
	if e.Key == "" {
		return nil, fieldErr("Key", "is required")
	}
	old, err := kvsFirst(tx, e.Key)
	if err != nil {
		return nil, err
	}
	cp := &KVEntry{Key: e.Key, Value: append([]byte(nil), e.Value...), Flags: e.Flags}
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if old != nil {
		cp.CreateIndex, cp.LockIndex, cp.Session = old.CreateIndex, old.LockIndex, old.Session
	}
	return cp, kvsInsert(tx, idx, cp)
}

func kvsCASTxn(tx *memdb.Txn, idx uint64, e *KVEntry, cas uint64) (*KVEntry, error) {
	old, err := kvsFirst(tx, e.Key)
	if err != nil {
		return nil, err
	}
	switch {
	case cas == 0 && old != nil, cas != 0 && (old == nil || old.ModifyIndex != cas):
		return nil, refused("failed to set key %q, index is stale", e.Key)
	}
	return kvsSetTxn(tx, idx, e)
}

func kvsLockTxn(tx *memdb.Txn, idx uint64, at time.Time, e *KVEntry) (*KVEntry, error) {
	raw, err := tx.First(tableSessions, "id", e.Session)
	if err != nil {
		return nil, fmt.Errorf("look up session %q: %w", e.Session, err)
	}
	sess, _ := raw.(*Session)
	if sess == nil {
		return nil, fieldErr("Session", "no session %q", e.Session)
	}
	old, err := kvsFirst(tx, e.Key)
	if err != nil {
		return nil, err
	}
	if old != nil && old.Session == sess.ID {
		return kvsSetTxn(tx, idx, e)
	}
	if old != nil && old.Session != "" {
		return nil, refused("failed to lock key %q, lock is already held", e.Key)
	}
	delayed, err := lockDelayed(tx, at, e.Key)
	if err != nil {
		return nil, err
	}
	if delayed {
		return nil, refused("failed to lock key %q due to lock delay", e.Key)
	}
	if _, err := tx.DeleteAll(tableLockDelays, "id", e.Key); err != nil {
		return nil, fmt.Errorf("lock-delay of key %q: %w", e.Key, err)
	}
	cp := &KVEntry{Key: e.Key, Value: append([]byte(nil), e.Value...), Flags: e.Flags, LockIndex: 1, Session: sess.ID}
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if old != nil {
		cp.CreateIndex, cp.LockIndex = old.CreateIndex, old.LockIndex+1
	}
	return cp, kvsInsert(tx, idx, cp)
}

func kvsUnlockTxn(tx *memdb.Txn, idx uint64, e *KVEntry) (*KVEntry, error) {
	old, err := kvsFirst(tx, e.Key)
	if err != nil {
		return nil, err
	}
	if old == nil || !strings.EqualFold(old.Session, e.Session) {
		return nil, refused("failed to unlock key %q, lock isn't held, or is held by another session", e.Key)
	}
	cp := &KVEntry{Key: e.Key, Value: append([]byte(nil), e.Value...), Flags: e.Flags, LockIndex: old.LockIndex}
	cp.CreateIndex, cp.ModifyIndex = old.CreateIndex, idx
	return cp, kvsInsert(tx, idx, cp)
}

// kvsInsert stores e at idx.
func kvsInsert(tx *memdb.Txn, idx uint64, e *KVEntry) error {
	if err := tx.Insert(tableKVS, e); err != nil {
		return fmt.Errorf("insert key %q: %w", e.Key, err)
	}
	return bumpIndex(tx, tableKVS, idx)
}

func kvsDeleteTxn(tx *memdb.Txn, idx uint64, key string) error {
	n, err := tx.DeleteAll(tableKVS, "id", key)
	if err != nil {
		return fmt.Errorf("delete key %q: %w", key, err)
	}
	if n > 0 {
		return kvsBumpDeleted(tx, idx)
	}
	return nil
}

func kvsDeleteCASTxn(tx *memdb.Txn, idx uint64, key string, cas uint64) error {
	old, err := kvsFirst(tx, key)
	if err != nil || old == nil {
		return err
	}
	if old.ModifyIndex != cas {
		return refused("failed to delete key %q, index is stale", key)
	}
	return kvsDeleteTxn(tx, idx, key)
}

func kvsDeleteTreeTxn(tx *memdb.Txn, idx uint64, prefix string) error {
	n, err := tx.DeletePrefix(tableKVS, "id_prefix", prefix)
	if err != nil {
		return fmt.Errorf("delete keys under %q: %w", prefix, err)
	}
	if n {
		return kvsBumpDeleted(tx, idx)
	}
	return nil
}

// kvsBumpDeleted records a delete at idx: in the table's index and in the
// last-delete row.
func kvsBumpDeleted(tx *memdb.Txn, idx uint64) error {
	if err := bumpIndex(tx, tableKVS, idx); err != nil {
		return err
	}
	return bumpIndex(tx, kvsDeletedRow, idx)
}

// KVGet returns the entry of key, or nil when there is none, and the index
// to block on: the entry's ModifyIndex, or the table's index when there is
// no entry (so that a delete, which moves it, ends a wait on the key).
func (s *Store) KVGet(ws WatchSet, key string) (uint64, *KVEntry, error) {
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableKVS, "id", key)
	if err != nil {
		return 0, nil, fmt.Errorf("look up key %q: %w", key, err)
	}
	ws.Add(ch)
	if e, ok := raw.(*KVEntry); ok {
		return e.ModifyIndex, e, nil
	}
	return maxIndex(tx, tableKVS), nil, nil
}

// KVList returns the entries whose keys start with prefix ("" for all),
// sorted by key, and the index to block on: the highest ModifyIndex among
// them, raised to the index of the last delete of any key, so that a
// delete under the prefix moves it (Consul keeps tombstones for that; one
// index for all deletes is coarser, as a delete elsewhere moves it too,
// but bounded and never misses a delete). With no entries, the table's
// index.
func (s *Store) KVList(ws WatchSet, prefix string) (uint64, []*KVEntry, error) {
	tx := s.read(ws)
	var out []*KVEntry
	idx, err := kvsEach(tx, ws, prefix, func(e *KVEntry) { out = append(out, e) })
	return idx, out, err
}

// KVKeys returns the keys starting with prefix, sorted, and the index to
// block on as KVList's. With a separator, a key with the separator after
// the prefix is cut after its first one, and the duplicates this makes
// are left out: "a/b/c" and "a/b/d" under "a/" with "/" are "a/b/" once.
func (s *Store) KVKeys(ws WatchSet, prefix, separator string) (uint64, []string, error) {
	tx := s.read(ws)
	var out []string
	idx, err := kvsEach(tx, ws, prefix, func(e *KVEntry) {
		key := e.Key
		if separator != "" {
			if i := strings.Index(key[len(prefix):], separator); i >= 0 {
				key = key[:len(prefix)+i+len(separator)]
			}
		}
		// Keys come sorted, so the duplicates a cut makes are adjacent.
		if n := len(out); n == 0 || out[n-1] != key {
			out = append(out, key)
		}
	})
	return idx, out, err
}

// kvsEach calls fn with every entry under prefix, in key order, and
// returns the index of the list (see KVList).
func kvsEach(tx *memdb.Txn, ws WatchSet, prefix string, fn func(*KVEntry)) (uint64, error) {
	it, err := tx.Get(tableKVS, "id_prefix", prefix)
	if err != nil {
		return 0, fmt.Errorf("list keys under %q: %w", prefix, err)
	}
	ws.Add(it.WatchCh())
	var idx uint64
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*KVEntry)
		idx = max(idx, e.ModifyIndex)
		fn(e)
	}
	if idx == 0 {
		return maxIndex(tx, tableKVS), nil
	}
	return max(idx, maxIndex(tx, kvsDeletedRow)), nil
}

// LastIndex returns the Raft index of the last write to any table of the
// store (the catalog's, prepared queries, ACLs, the key/value store): how
// far the store has applied the log, as far as its data shows.
func (s *Store) LastIndex() uint64 {
	return maxIndex(s.read(nil), allTables()...)
}

// allTables names every table with an index row.
func allTables() []string {
	return []string{tableNodes, tableServices, tableChecks, tableQueries, tableACLPolicies, tableACLTokens, tableACLRoles, tableKVS, tableSessions, tableCoordinates}
}
