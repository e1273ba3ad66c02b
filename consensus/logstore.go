package consensus

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cairndns/cairn/internal/diskfree"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
)

// walStore is the Raft log and stable store on disk: raft-wal, reopened
// from disk when it wedges, with every write's outcome recorded in a
// storageHealth.
//
// raft-wal (v0.4) moves to a new segment file on a background goroutine
// after the append that fills the current one. When that fails (no room to
// preallocate the new file), the full segment stays the tail in memory and
// every later append fails with ErrSealed, whatever room comes back: the
// rotation is never tried again. Its metadata already names the new
// segment, so opening the WAL again creates that file (or takes over the
// empty one the failed attempt left). walStore does so on ErrSealed, once
// the file system has room for a segment, and retries the write.
//
// Raft calls the writes from its main goroutine and reads from several;
// all may run concurrently with each other.
type walStore struct {
	dir         string
	segmentSize int
	hclog       hclog.Logger
	health      *storageHealth
	metrics     *walMetrics

	// mu is held shared by every call into the WAL and exclusively while
	// it is reopened, so that no read finds it closed.
	mu  sync.RWMutex
	wal *raftwal.WAL // nil after a failed reopen
}

var (
	_ raft.LogStore          = (*walStore)(nil)
	_ raft.StableStore       = (*walStore)(nil)
	_ raft.MonotonicLogStore = (*walStore)(nil)
)

// errStoreClosed is returned by a walStore whose reopen failed, until one
// succeeds.
var errStoreClosed = errors.New("raft log store is closed after a failed reopen")

// reopenMargin is the room a reopen wants besides a segment's, for the
// metadata database to grow.
const reopenMargin = 1 << 20

func openWALStore(dir string, segmentSize int, logger hclog.Logger, health *storageHealth, metrics *walMetrics) (*walStore, error) {
	s := &walStore{dir: dir, segmentSize: segmentSize, hclog: logger, health: health, metrics: metrics}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// open opens the WAL in s.dir. s.mu must be held exclusively, or s not yet
// shared.
func (s *walStore) open() error {
	// raft-wal ≥ v0.4.1: v0.4.0 sealed a truncated tail segment without its
	// index block, and the log could not be read after a restart
	// (hashicorp/raft-wal#31). Its Close also releases the metadata
	// database's file lock, so the same process can open the directory
	// again (a reopen, a test's restart).
	wal, err := raftwal.Open(s.dir, raftwal.WithLogger(s.hclog), raftwal.WithSegmentSize(s.segmentSize), raftwal.WithMetricsCollector(s.metrics))
	if err != nil {
		return fmt.Errorf("open raft log %s: %w", s.dir, err)
	}
	s.wal = wal
	return nil
}

// Close closes the WAL and its metadata database. Idempotent.
func (s *walStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

func (s *walStore) closeLocked() error {
	if s.wal == nil {
		return nil
	}
	err := s.wal.Close()
	s.wal = nil
	return err
}

// reopen closes the WAL and opens it again from disk, unless the file
// system lacks room for a new segment (then it changes nothing: a WAL
// that failed to open again would fail every read too). It leaves the
// store closed only when the open itself fails; later writes try again.
func (s *walStore) reopen() error {
	if sp, err := diskfree.Of(s.dir); err == nil && sp.Free < uint64(s.segmentSize)+reopenMargin {
		return fmt.Errorf("not reopening the raft log: %d bytes free, a segment needs %d", sp.Free, s.segmentSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.closeLocked(); err != nil {
		s.hclog.Warn("closing the wedged raft log", "error", err)
	}
	if err := s.open(); err != nil {
		return err
	}
	s.hclog.Info("reopened the raft log after a failed segment rotation")
	return nil
}

// read runs fn on the WAL.
func (s *walStore) read(fn func(*raftwal.WAL) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.wal == nil {
		return errStoreClosed
	}
	return fn(s.wal)
}

// write runs fn, a write of store, on the WAL, reopening it and trying
// once more when it is wedged (or closed by a failed reopen), and records
// the outcome.
func (s *walStore) write(store string, fn func(*raftwal.WAL) error) error {
	err := s.read(fn)
	if errors.Is(err, raftwal.ErrSealed) || errors.Is(err, errStoreClosed) {
		if rerr := s.reopen(); rerr != nil {
			err = fmt.Errorf("%w (%w)", err, rerr)
		} else {
			err = s.read(fn)
		}
	}
	if err != nil {
		err = fmt.Errorf("raft %s store: %w", store, err)
	}
	s.health.record(store, err)
	return err
}

// IsMonotonic tells raft, as raft-wal does, that the log takes no gaps:
// after installing a snapshot raft empties it rather than leave one.
func (s *walStore) IsMonotonic() bool { return true }

func (s *walStore) FirstIndex() (i uint64, err error) {
	err = s.read(func(w *raftwal.WAL) error { i, err = w.FirstIndex(); return err })
	return i, err
}

func (s *walStore) LastIndex() (i uint64, err error) {
	err = s.read(func(w *raftwal.WAL) error { i, err = w.LastIndex(); return err })
	return i, err
}

func (s *walStore) GetLog(index uint64, log *raft.Log) error {
	return s.read(func(w *raftwal.WAL) error { return w.GetLog(index, log) })
}

func (s *walStore) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

func (s *walStore) StoreLogs(logs []*raft.Log) error {
	return s.write(storeLog, func(w *raftwal.WAL) error { return w.StoreLogs(logs) })
}

func (s *walStore) DeleteRange(min, max uint64) error {
	return s.write(storeLog, func(w *raftwal.WAL) error { return w.DeleteRange(min, max) })
}

func (s *walStore) Set(key, val []byte) error {
	return s.write(storeStable, func(w *raftwal.WAL) error { return w.Set(key, val) })
}

func (s *walStore) Get(key []byte) (v []byte, err error) {
	err = s.read(func(w *raftwal.WAL) error { v, err = w.Get(key); return err })
	return v, err
}

func (s *walStore) SetUint64(key []byte, val uint64) error {
	return s.write(storeStable, func(w *raftwal.WAL) error { return w.SetUint64(key, val) })
}

func (s *walStore) GetUint64(key []byte) (v uint64, err error) {
	err = s.read(func(w *raftwal.WAL) error { v, err = w.GetUint64(key); return err })
	return v, err
}
