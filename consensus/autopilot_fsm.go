package consensus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// This file keeps autopilot's configuration in Raft: the command that sets
// it (cmdAutopilot), its place in the FSM and in Raft's snapshots, and the
// Server's methods that read and write it; and a server's own Raft stats,
// which the leader asks every server for.

// fsmState is what a Raft snapshot holds: the catalog, with autopilot's
// configuration beside it. The Dump's fields are encoded inline, so the
// snapshot is a msgpack catalog.Dump with one key more: a snapshot written
// before the configuration existed, or a restored archive's catalog (a
// plain Dump), decodes with none, and an older server reading a newer
// snapshot ignores the key.
type fsmState struct {
	*catalog.Dump
	Autopilot *rpc.AutopilotConfig
	// DNSSEC is the datacenter's DNSSEC key, if any (dnssec.go).
	DNSSEC *rpc.DNSSECKey `codec:",omitempty"`
	// Once is the request IDs applied lately (once.go).
	Once []onceEntry
}

// autopilotRequest is the command that sets autopilot's configuration.
type autopilotRequest struct {
	Config rpc.AutopilotConfig
	// CAS sets it only if the stored configuration's ModifyIndex is
	// still Index (0: none is stored yet). It is checked by the FSM,
	// where writes are ordered.
	CAS   bool
	Index uint64
}

// errCASMismatch is the FSM's answer to a CAS whose index no longer
// matches; SetAutopilotConfig turns it into "not updated".
var errCASMismatch = errors.New("autopilot configuration changed since it was read")

// applyAutopilot stores req's configuration at index, keeping the first
// store's CreateIndex.
func (f *fsm) applyAutopilot(index uint64, req *autopilotRequest) any {
	cur := f.autopilot.Load()
	var curIndex uint64
	if cur != nil {
		curIndex = cur.ModifyIndex
	}
	if req.CAS && req.Index != curIndex {
		return errCASMismatch
	}
	next := req.Config
	next.CreateIndex, next.ModifyIndex = index, index
	if cur != nil {
		next.CreateIndex = cur.CreateIndex
	}
	f.autopilot.Store(&next)
	return nil
}

// rpc.AutopilotConfig returns autopilot's configuration as this server has
// applied it (on a follower it may trail the leader's), nil when none was
// stored yet.
func (s *Server) AutopilotConfig() *rpc.AutopilotConfig {
	c := s.fsm.autopilot.Load()
	if c == nil {
		return nil
	}
	out := *c
	return &out
}

// SetAutopilotConfig stores cfg (its indexes are ignored) through Raft and
// returns once it is applied. With cas it is stored only if the stored
// configuration's ModifyIndex is still index (0 when none is stored), and
// updated reports whether it was. Only the leader can (ErrNotLeader); an
// invalid cfg is a *catalog.FieldError naming the field.
func (s *Server) SetAutopilotConfig(ctx context.Context, cfg rpc.AutopilotConfig, cas bool, index uint64) (updated bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	err = s.apply(ctx, cmdAutopilot, &autopilotRequest{Config: cfg, CAS: cas, Index: index})
	switch {
	case errors.Is(err, errCASMismatch):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("set autopilot configuration: %w", err)
	}
	return true, nil
}

// initAutopilot stores cfg when no configuration is stored yet: the leader
// runs it when it takes office, as Consul's does, so that every later
// leader applies the first one's configuration, or an operator's.
func (s *Server) initAutopilot(ctx context.Context, cfg rpc.AutopilotConfig) error {
	if s.fsm.autopilot.Load() != nil {
		return nil
	}
	if _, err := s.SetAutopilotConfig(ctx, cfg, true, 0); err != nil {
		return fmt.Errorf("store the initial autopilot configuration: %w", err)
	}
	return nil
}

// raftStats is this server's view of its own Raft log, as the leader asks
// for it: how long ago it heard from the leader (0 on the leader, -1 when
// never), and the term and index of its last entry.
func (s *Server) raftStats(version string) *rpc.RaftStatsResponse {
	st := s.raft.Stats()
	out := &rpc.RaftStatsResponse{ID: s.id, LastContact: s.LastContact(), Version: version, StorageError: s.StorageStatus().Error}
	if out.LastContact == math.MaxInt64 {
		out.LastContact = -1
	}
	out.LastTerm, _ = strconv.ParseUint(st["last_log_term"], 10, 64)
	out.LastIndex, _ = strconv.ParseUint(st["last_log_index"], 10, 64)
	return out
}
