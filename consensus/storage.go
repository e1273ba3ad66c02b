package consensus

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StorageStatus says whether this server can write its Raft log, its
// stable store (term and vote) and its snapshots. A server that cannot
// keeps answering stale reads but can take no part in writes: it steps
// down if it leads (raft does, on a failed append), autopilot judges it
// unhealthy, and the leader marks its cairn service's storage check
// critical.
type StorageStatus struct {
	// Healthy is false while the latest write of any of the three failed.
	Healthy bool
	// Error is that failure ("" when Healthy), prefixed with what failed.
	Error string
	// Since is when Healthy last changed; zero if it never did.
	Since time.Time
	// Failures counts every failed write since the server started.
	Failures uint64
}

// What a storage failure is of.
const (
	storeLog      = "log"      // appends and truncations of the Raft log
	storeStable   = "stable"   // the term and vote
	storeSnapshot = "snapshot" // snapshots taken, installed or restored
)

// storageRepeatLog is how often a storage failure that persists is logged
// again.
const storageRepeatLog = 30 * time.Second

// storageHealth tracks the outcome of the latest write of each store.
// Every method is safe for concurrent use.
type storageHealth struct {
	logger *slog.Logger

	mu       sync.Mutex
	failing  map[string]error // by store, only those whose latest write failed
	since    time.Time
	logged   time.Time // when a failure was last logged
	failures uint64
}

func newStorageHealth(logger *slog.Logger) *storageHealth {
	return &storageHealth{logger: logger, failing: make(map[string]error)}
}

// record notes the outcome of one write of store: a failure is logged
// at ERROR at once when the server was healthy, then every
// storageRepeatLog while it lasts; the recovery is logged once.
func (h *storageHealth) record(store string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if err == nil {
		if _, ok := h.failing[store]; !ok {
			return
		}
		delete(h.failing, store)
		if len(h.failing) == 0 {
			h.logger.Info("raft storage writes again", "store", store, "failed_for", now.Sub(h.since).Round(time.Millisecond))
			h.since = now
		}
		return
	}
	h.failures++
	healthy := len(h.failing) == 0
	h.failing[store] = err
	if healthy {
		h.since = now
	}
	if healthy || now.Sub(h.logged) >= storageRepeatLog {
		h.logged = now
		h.logger.Error("raft storage cannot write: this server takes no part in writes until it can (free space in its data dir)",
			"store", store, "err", err, "failures", h.failures, "failing_for", now.Sub(h.since).Round(time.Millisecond))
	}
}

func (h *storageHealth) status() StorageStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := StorageStatus{Healthy: len(h.failing) == 0, Since: h.since, Failures: h.failures}
	var msgs []string
	for _, store := range slices.Sorted(maps.Keys(h.failing)) {
		msgs = append(msgs, store+": "+h.failing[store].Error())
	}
	st.Error = strings.Join(msgs, "; ")
	return st
}

// StorageStatus reports whether this server can write its Raft state. A
// server without a data dir (in memory) is always healthy.
func (s *Server) StorageStatus() StorageStatus { return s.health.status() }

// watchedSnapshots is a snapshot store whose writes are recorded in a
// storageHealth: a snapshot that cannot be created, written or closed is
// a failure; one closed whole, a success.
type watchedSnapshots struct {
	raft.SnapshotStore
	health *storageHealth
}

func (w watchedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := w.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		err = fmt.Errorf("create snapshot: %w", err)
		w.health.record(storeSnapshot, err)
		return nil, err
	}
	return &watchedSink{SnapshotSink: sink, health: w.health}, nil
}

type watchedSink struct {
	raft.SnapshotSink
	health *storageHealth
}

func (s *watchedSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	if err != nil {
		s.health.record(storeSnapshot, fmt.Errorf("write snapshot: %w", err))
	}
	return n, err
}

func (s *watchedSink) Close() error {
	err := s.SnapshotSink.Close()
	if err != nil {
		err = fmt.Errorf("close snapshot: %w", err)
	}
	s.health.record(storeSnapshot, err)
	return err
}
