package consensus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// Server is one Raft server holding the catalog.
type Server struct {
	cfg Config
	// id is this server's Raft ID: cfg.NodeID, or the name an older data
	// dir gave it (raftid.go).
	id     string
	store  *catalog.Store
	raft   *raft.Raft
	logger *slog.Logger
	// fsm and snaps are kept to find the index of the Raft configuration
	// (RaftConfiguration).
	fsm   *fsm
	snaps raft.SnapshotStore
	// closers release the on-disk log store after Raft stops, in order;
	// empty in memory.
	closers []io.Closer
	// health is the outcome of the latest writes to the log store, stable
	// store and snapshots (storage.go).
	health *storageHealth
	// walMetrics counts what raft-wal reports (collector.go).
	walMetrics *walMetrics
	// netTrans is the network transport when cfg.Layer is set; Shutdown
	// closes it (Raft does not when it has already stopped itself, as on
	// its removal from the configuration).
	netTrans *raft.NetworkTransport

	// leadership: raft's NotifyCh, drained by one goroutine (wg) until
	// stop is closed into the broadcast channel LeadershipChanged returns.
	stop          chan struct{}
	stopOnce      sync.Once
	wg            sync.WaitGroup
	leaderMu      sync.Mutex
	leaderChanged chan struct{}
	// leaderSeen is closed and replaced whenever Raft reports another
	// leader (or none): LeaderObserved.
	leaderSeen chan struct{}

	// writeMu is held shared by every catalog write (apply) and
	// exclusively by a snapshot restore, which must know that no write
	// is in flight to pick the restored catalog's index (snapshot.go).
	writeMu sync.RWMutex
	// restored signals the Leader after a restore (Restored).
	restored chan struct{}
	// inflated counts the bytes inflated from archives to restore
	// (SnapshotInflatedBytes).
	inflated atomic.Uint64
	// ttls are the session TTL timers, run while the leader duties run
	// (session_ttl.go).
	ttls sessionTimers
	// batcher commits concurrent writes as one log entry while
	// batchWrites, which the leader duties set when every server reads
	// batch entries (batch.go).
	batcher     batcher
	batchWrites atomic.Bool
}

// New opens (or creates) the Raft state under cfg.DataDir, restores the
// catalog from the latest snapshot and log, and starts Raft. With
// cfg.Bootstrap and no prior state it forms a cluster of this server alone;
// servers of a larger cluster start without it and are joined by
// BootstrapCluster or by a leader's AddVoter. With cfg.Layer Raft talks to
// its peers through the rpc server's port; without it the transport is
// in-process (unit tests).
func New(cfg Config, store *catalog.Store, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger = logger.With("component", "consensus")
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = newHCLog(logger)
	// Raft's replication series carry the peer as a label; the older
	// copies with the peer in the name would add series per server.
	rc.NoLegacyTelemetry = true
	// Raft blocks on NotifyCh until it is read; watchLeadership reads it
	// for the server's whole life.
	notify := make(chan bool, 1)
	rc.NotifyCh = notify

	s := &Server{cfg: cfg, store: store, logger: logger, fsm: &fsm{store: store}, stop: make(chan struct{}),
		leaderChanged: make(chan struct{}), leaderSeen: make(chan struct{}), restored: make(chan struct{}, 1),
		health: newStorageHealth(logger), walMetrics: newWALMetrics()}
	s.batcher.s = s
	logs, stable, snaps, err := s.openStores(rc)
	if err != nil {
		return nil, err
	}
	snaps = sizedSnapshots{snaps} // fsm.Restore reads a snapshot in one allocation
	s.snaps = snaps
	s.id = s.raftID(logs, snaps)
	rc.LocalID = raft.ServerID(s.id)
	var transport raft.Transport
	if cfg.Layer != nil {
		s.netTrans = newNetworkTransport(cfg.Layer, rc)
		transport = s.netTrans
	} else {
		_, transport = raft.NewInmemTransport(raft.ServerAddress(cfg.Address))
	}
	fail := func(err error) (*Server, error) {
		s.closeTransport()
		s.closeStores()
		return nil, err
	}

	if cfg.Bootstrap {
		existing, err := raft.HasExistingState(logs, stable, snaps)
		if err != nil {
			return fail(fmt.Errorf("check raft state: %w", err))
		}
		if !existing {
			conf := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: transport.LocalAddr()}}}
			if err := raft.BootstrapCluster(rc, logs, stable, snaps, transport, conf); err != nil {
				return fail(fmt.Errorf("bootstrap raft: %w", err))
			}
		}
	}
	r, err := s.newRaft(rc, logs, stable, snaps, transport)
	if err != nil {
		return fail(fmt.Errorf("start raft: %w", err))
	}
	s.raft = r
	s.wg.Go(func() { s.watchLeadership(notify) })
	s.watchLeader()
	return s, nil
}

// newRaft is raft.NewRaft, with the panic it raises on a log entry it
// cannot read turned into ErrLogUnreadable, which says what to do: a log
// damaged by raft-wal v0.4.0 (issue 28) stays unreadable, and a server
// crash-looping on it tells the operator nothing. NewRaft panics before it
// starts any goroutine, so nothing is left running.
func (s *Server) newRaft(rc *raft.Config, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, transport raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		if p := recover(); p != nil {
			dir := filepath.Join(s.cfg.DataDir, "raft")
			err = fmt.Errorf("%w (%v): if the other servers run, stop this one, move %s aside and start it again: "+
				"it rejoins the cluster and its leader sends it the log", ErrLogUnreadable, p, dir)
		}
	}()
	return raft.NewRaft(rc, s.fsm, logs, stable, snaps, transport)
}

func (s *Server) openStores(rc *raft.Config) (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	if s.cfg.DataDir == "" {
		mem := raft.NewInmemStore()
		return mem, mem, raft.NewInmemSnapshotStore(), nil
	}
	walDir := filepath.Join(s.cfg.DataDir, "raft", "wal")
	if err := os.MkdirAll(walDir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("create raft log dir: %w", err)
	}
	wal, err := openWALStore(walDir, s.cfg.LogSegmentSize, rc.Logger, s.health, s.walMetrics)
	if err != nil {
		return nil, nil, nil, err
	}
	s.closers = []io.Closer{wal}
	snapDir := filepath.Join(s.cfg.DataDir, "raft")
	// The log store is open, so no other process has this data dir.
	if err := s.removeUnfinishedSnapshots(filepath.Join(snapDir, "snapshots")); err != nil {
		s.closeStores()
		return nil, nil, nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(snapDir, s.cfg.SnapshotsRetained, rc.Logger)
	if err != nil {
		s.closeStores()
		return nil, nil, nil, fmt.Errorf("open raft snapshots in %s: %w", snapDir, err)
	}
	// Raft reads back each entry it has just written: the leader to send
	// it to the followers, every server to apply it once committed. The
	// cache answers those from memory, where raft-wal would read the
	// segment file (a pread and a decode each).
	logs, err := raft.NewLogCache(logCacheEntries, wal)
	if err != nil {
		s.closeStores()
		return nil, nil, nil, fmt.Errorf("raft log cache: %w", err)
	}
	return logs, wal, watchedSnapshots{SnapshotStore: snaps, health: s.health}, nil
}

// logCacheEntries is how many of the latest Raft log entries are kept in
// memory: many more than are in flight between the leader and a follower
// that keeps up, and with batch entries of up to 256 KiB (batch.go) at
// most 32 MiB.
const logCacheEntries = 128

// removeUnfinishedSnapshots deletes the snapshots whose writing was cut
// short (a kill, a crash) and left in dir as <id>.tmp: Raft never
// completes or deletes them, and warns of each whenever it lists its
// snapshots (at start, and at each snapshot taken).
func (s *Server) removeUnfinishedSnapshots(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read raft snapshots: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove unfinished raft snapshot: %w", err)
		}
		s.logger.Warn("removed a raft snapshot whose writing was cut short", "snapshot", e.Name())
	}
	return nil
}

func (s *Server) closeStores() {
	for _, c := range s.closers {
		if err := c.Close(); err != nil {
			s.logger.Error("close raft log", "err", err)
		}
	}
	s.closers = nil
}

// Store returns the catalog this server applies to. On the leader it is
// current; on a follower it may lag by what is in flight.
func (s *Server) Store() *catalog.Store { return s.store }

// Leader returns the address of the current leader, or "" when none is known.
func (s *Server) Leader() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// IsLeader reports whether this server is the leader.
func (s *Server) IsLeader() bool { return s.raft.State() == raft.Leader }

// WaitForLeader blocks until a leader is known or ctx ends.
func (s *Server) WaitForLeader(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.Leader() == "" {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for leader: %w: %w", ErrNoLeader, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Register commits a registration and returns once it is applied.
func (s *Server) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	if err := catalog.ValidateRegister(req); err != nil {
		return err
	}
	if err := s.apply(ctx, cmdRegister, req); err != nil {
		return fmt.Errorf("register node %q: %w", req.Node, err)
	}
	return nil
}

// Deregister commits a deregistration and returns once it is applied.
func (s *Server) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	if err := s.apply(ctx, cmdDeregister, req); err != nil {
		return fmt.Errorf("deregister on node %q: %w", req.Node, err)
	}
	return nil
}

// apply is the one place a write enters Raft: it encodes the command, waits
// for it to be committed and applied, and turns both Raft's error and the
// FSM's response into one returned error.
//
// ctx bounds the wait for Raft to take the command (waitBound: its
// deadline, else ApplyTimeout), and a ctx that has ended applies nothing.
// Once Raft has taken the command, apply waits until Raft commits and
// applies it or fails it (leadership lost, shutdown), however ctx fares:
// returning earlier would leave the write's fate unknown to the caller,
// and a snapshot restore relies on writeMu being held until it lands.
func (s *Server) apply(ctx context.Context, t commandType, req any) error {
	_, err := s.applyResponse(ctx, t, req)
	return err
}

// applyResponse is apply, also returning what the FSM answered when it
// was not an error (a KV write's outcome, fsm.go). Batchable writes go
// through the batcher (batch.go) while batches are allowed.
func (s *Server) applyResponse(ctx context.Context, t commandType, req any) (any, error) {
	s.writeMu.RLock()
	defer s.writeMu.RUnlock()
	data, err := encodeCommand(t, req)
	if err != nil {
		return nil, err
	}
	id := writeIDFrom(ctx)
	if id != "" {
		if data, err = encodeCommand(cmdOnce, &onceCommand{ID: id, Data: data}); err != nil {
			return nil, err
		}
	}
	if batchable(t) && s.batchWrites.Load() {
		return s.batcher.apply(ctx, data, id)
	}
	timeout, err := s.waitBound(ctx)
	if err != nil {
		return nil, err
	}
	return entryResult(s.raft.Apply(data, timeout))
}

// entryResult waits for a log entry to be committed and applied, and
// turns both Raft's error and the FSM's response into one returned error,
// or the response.
func entryResult(f raft.ApplyFuture) (any, error) {
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			// Refused before it entered the log: the next leader may
			// be sent it again.
			return nil, fmt.Errorf("%w: %w", ErrNotLeader, err)
		case errors.Is(err, raft.ErrLeadershipLost):
			// The entry was in the log when leadership went: the next
			// leader may commit it or not.
			return nil, fmt.Errorf("%w: %w: %w", rpc.ErrUnknownOutcome, ErrNotLeader, err)
		case errors.Is(err, raft.ErrEnqueueTimeout):
			// Never started: sending it again is safe.
			return nil, fmt.Errorf("raft apply: %w: %w", context.DeadlineExceeded, err)
		case errors.Is(err, raft.ErrRaftShutdown):
			return nil, fmt.Errorf("raft apply: %w: %w", rpc.ErrServerStopping, err)
		}
		return nil, fmt.Errorf("raft apply: %w", err)
	}
	resp := f.Response()
	if err, ok := resp.(error); ok && err != nil {
		return nil, err
	}
	return resp, nil
}

// Snapshot forces a Raft snapshot now (used by tests and operators).
func (s *Server) Snapshot() error {
	if err := s.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("raft snapshot: %w", err)
	}
	return nil
}

// Shutdown stops Raft, waiting for in-flight applies, closes the network
// transport (and with it the rpc layer and Raft's connections), stops the
// leadership watcher, then closes the log store so nothing is left
// half-written.
func (s *Server) Shutdown() error {
	err := s.raft.Shutdown().Error()
	s.batcher.wg.Wait()
	s.closeTransport()
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
	s.closeStores()
	if err != nil {
		return fmt.Errorf("shut down raft: %w", err)
	}
	return nil
}
