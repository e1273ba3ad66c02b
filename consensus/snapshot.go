package consensus

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// SaveSnapshot writes an archive (archive.go) of this server's catalog, as
// it is now, to w. On the leader it is current; on a follower it may trail
// by what is in flight.
func (s *Server) SaveSnapshot(w io.Writer, dc string) (*SnapshotMeta, error) {
	d, err := s.store.Dump()
	if err != nil {
		return nil, fmt.Errorf("save snapshot: %w", err)
	}
	meta, err := writeArchive(w, d, dc, s.Term(), time.Now())
	if err != nil {
		return nil, fmt.Errorf("save snapshot: %w", err)
	}
	return meta, nil
}

// RestoreSnapshot verifies an archive and replaces the catalog of every
// server with it, through Raft: the leader installs it as a Raft snapshot
// and its followers receive that snapshot as they would when far behind.
// It returns the archive's meta and the index the restored catalog is at,
// once a quorum holds it (raft.Restore commits an entry after the hole it
// leaves in the log, which a follower can accept only once it installed
// the snapshot). Only the leader can restore (ErrNotLeader); a
// bad archive is a *catalog.FieldError naming "snapshot", and then nothing
// has changed.
//
// The restored catalog's index is set past every index the cluster has
// used, so that no blocking query or cache sees the index move backwards,
// and every one of them wakes up (the change feed is Reset).
//
// Like Consul's restore it is for disaster recovery: it replaces anything
// written since the archive was saved. Writes wait while it runs.
func (s *Server) RestoreSnapshot(ctx context.Context, archive io.Reader) (*SnapshotMeta, uint64, error) {
	if !s.IsLeader() {
		return nil, 0, fmt.Errorf("restore snapshot: %w", ErrNotLeader)
	}
	meta, d, err := readArchive(archive, &s.inflated)
	if err != nil {
		return nil, 0, err
	}
	timeout, err := s.waitBound(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("restore snapshot: %w", err)
	}
	index, err := s.restore(d, timeout)
	if err != nil {
		return nil, 0, fmt.Errorf("restore snapshot: %w", err)
	}
	s.signalRestored()
	s.logger.Info("restored catalog snapshot", "index", index, "saved_index", meta.Index,
		"saved_dc", meta.Datacenter, "nodes", meta.Nodes, "services", meta.Services, "checks", meta.Checks)
	return meta, index, nil
}

// restore installs d through raft.Restore and returns the index the
// catalog is at afterwards. It holds writeMu, so no catalog write is in
// flight: every index the catalog has used is at most raft's LastIndex,
// and the dump's index is set one past it (or kept, when higher). Raft
// gives the snapshot a higher index still, so later writes land above it.
func (s *Server) restore(d *catalog.Dump, timeout time.Duration) (uint64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	d.Index = max(d.Index, s.raft.LastIndex()+1)
	index := d.Index
	var b bytes.Buffer
	// The DNSSEC key is the datacenter's, not the catalog's: archives do
	// not carry it, and a restore keeps the one in use, so validators'
	// trust anchors stay right (dnssec.go).
	if err := codec.NewEncoder(&b, msgpackHandle).Encode(fsmState{Dump: d, DNSSEC: s.fsm.dnssec.Load()}); err != nil {
		return 0, fmt.Errorf("encode catalog: %w", err)
	}
	// From here on d is not used, so the collector may free the
	// archive's rows while the FSM builds the catalog from b.
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: index, Size: int64(b.Len())}
	if err := raftError(s.raft.Restore(meta, &b, timeout)); err != nil {
		return 0, err
	}
	return index, nil
}

// SnapshotInflatedBytes returns how many bytes this server inflated from
// the archives it was given to restore, since it started.
func (s *Server) SnapshotInflatedBytes() uint64 { return s.inflated.Load() }

// Restored returns a channel that receives a value after each restore of
// a snapshot through RestoreSnapshot. It is a level-triggered signal with
// one reader, the Leader, which reconciles the gossip membership into the
// restored catalog at once rather than at its next interval.
func (s *Server) Restored() <-chan struct{} { return s.restored }

func (s *Server) signalRestored() {
	select {
	case s.restored <- struct{}{}:
	default: // one pending signal is enough
	}
}
