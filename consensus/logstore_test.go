package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/raft"
)

// TestLogStoreSurvivesTailTruncation drives the on-disk log store New opens
// the way Raft drives a follower that learns of a new leader: append, delete
// a suffix (DeleteRange of the tail), append the new leader's entries. Then
// it closes and reopens the store and reads every entry back. raft-wal
// v0.4.0 marked a truncated tail segment sealed without writing its index
// block, so the reopened log failed with "sealed segment has no index
// block" and Raft panicked at start (hashicorp/raft-wal#31, issue 28).
func TestLogStoreSurvivesTailTruncation(t *testing.T) {
	dir := t.TempDir()
	// Small segments, so the truncations below land inside the active tail
	// segment, inside a sealed one, and across segment boundaries.
	cfg := DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.LogSegmentSize = "s1", dir, 16<<10
	want := map[uint64]raft.Log{}
	var last uint64

	open := func() (raft.LogStore, *Server) {
		t.Helper()
		s := &Server{cfg: cfg, logger: slog.New(slog.DiscardHandler), health: newStorageHealth(slog.New(slog.DiscardHandler)), walMetrics: newWALMetrics()}
		rc := raft.DefaultConfig()
		rc.Logger = newHCLog(s.logger)
		logs, _, _, err := s.openStores(rc)
		if err != nil {
			t.Fatalf("open log store: %v", err)
		}
		return logs, s
	}
	// appendFrom stores entries from..to of term in batches, as Raft does.
	appendFrom := func(logs raft.LogStore, from, to, term uint64) {
		t.Helper()
		for i := from; i <= to; {
			var batch []*raft.Log
			for ; i <= to && len(batch) < 7; i++ {
				l := raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: bytes.Repeat([]byte(fmt.Sprintf("%d/%d;", term, i)), 60)}
				want[i] = l
				batch = append(batch, &l)
			}
			if err := logs.StoreLogs(batch); err != nil {
				t.Fatalf("store logs %d..%d of term %d: %v", batch[0].Index, batch[len(batch)-1].Index, term, err)
			}
		}
		last = to
	}
	truncate := func(logs raft.LogStore, from uint64) {
		t.Helper()
		if err := logs.DeleteRange(from, last); err != nil {
			t.Fatalf("delete %d..%d: %v", from, last, err)
		}
		for i := from; i <= last; i++ {
			delete(want, i)
		}
		last = from - 1
	}
	check := func(logs raft.LogStore, when string) {
		t.Helper()
		first, err := logs.FirstIndex()
		if err != nil {
			t.Fatalf("%s: first index: %v", when, err)
		}
		lastIdx, err := logs.LastIndex()
		if err != nil {
			t.Fatalf("%s: last index: %v", when, err)
		}
		if first != 1 || lastIdx != last {
			t.Fatalf("%s: log holds %d..%d, want 1..%d", when, first, lastIdx, last)
		}
		for i := uint64(1); i <= last; i++ {
			var got raft.Log
			if err := logs.GetLog(i, &got); err != nil {
				t.Fatalf("%s: get log %d: %v", when, i, err)
			}
			w := want[i]
			if got.Index != w.Index || got.Term != w.Term || got.Type != w.Type || !bytes.Equal(got.Data, w.Data) {
				t.Fatalf("%s: log %d is term %d %q, want term %d %q", when, i, got.Term, got.Data[:min(len(got.Data), 12)], w.Term, w.Data[:12])
			}
		}
	}

	logs, s := open()
	appendFrom(logs, 1, 200, 1)
	truncate(logs, 190) // inside the active tail segment
	appendFrom(logs, 190, 230, 2)
	truncate(logs, 120) // across segment boundaries, into a sealed segment
	appendFrom(logs, 120, 180, 3)
	check(logs, "before restart")
	s.closeStores()

	logs, s = open()
	check(logs, "after restart")
	truncate(logs, 175) // the tail segment a restart left
	appendFrom(logs, 175, 260, 4)
	s.closeStores()

	logs, s = open()
	defer s.closeStores()
	check(logs, "after second restart")
}

// TestUnreadableLogIsAnError: a log with an entry that cannot be read (here
// a sealed segment cut short; in issue 28, a tail sealed without its index
// by raft-wal v0.4.0) makes New fail with ErrLogUnreadable, naming the raft
// directory to move aside, where Raft would panic and the server crash-loop.
func TestUnreadableLogIsAnError(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Address, cfg.DataDir, cfg.LogSegmentSize = "s1", "127.0.0.1:8300", t.TempDir(), 16<<10
	s := &Server{cfg: cfg, logger: slog.New(slog.DiscardHandler), health: newStorageHealth(slog.New(slog.DiscardHandler)), walMetrics: newWALMetrics()}
	rc := raft.DefaultConfig()
	rc.Logger = newHCLog(s.logger)
	logs, _, _, err := s.openStores(rc)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 200; i++ {
		if err := logs.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte("x"), 400)}}); err != nil {
			t.Fatal(err)
		}
	}
	s.closeStores()
	segs, err := filepath.Glob(filepath.Join(cfg.DataDir, "raft", "wal", "*.wal"))
	if err != nil || len(segs) < 3 {
		t.Fatalf("want several segments, got %v (%v)", segs, err)
	}
	slices.Sort(segs)
	if err := os.Truncate(segs[0], 1024); err != nil {
		t.Fatal(err)
	}

	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, store, slog.New(slog.DiscardHandler))
	if err == nil {
		srv.Shutdown()
		t.Fatal("New started on a log it cannot read")
	}
	if !errors.Is(err, ErrLogUnreadable) || !strings.Contains(err.Error(), filepath.Join(cfg.DataDir, "raft")) {
		t.Fatalf("New: %v; want ErrLogUnreadable naming the raft directory", err)
	}
}
