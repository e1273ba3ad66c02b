package consensus

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestLogStoreOpensRaftWALv040Dir opens a raft directory written by
// raft-wal v0.4.0, the version cairn's previous release linked
// (testdata/raftwal-v0.4.0, made by its gen program), and reads back every
// entry and the stable store's keys, then appends and reopens. raft-wal
// v0.4.1 fixed how a truncated tail is sealed (issue 28) without changing
// the on-disk format, so a data dir of the previous release needs no
// migration. A log v0.4.0 already damaged that way stays unreadable:
// TestUnreadableLogIsAnError covers what New says then.
func TestLogStoreOpensRaftWALv040Dir(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.LogSegmentSize = "s1", t.TempDir(), 16<<10
	walDir := filepath.Join(cfg.DataDir, "raft", "wal")
	if err := os.CopyFS(walDir, os.DirFS(filepath.Join("testdata", "raftwal-v0.4.0"))); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(walDir, "gen")); err != nil {
		t.Fatal(err)
	}
	open := func() (raft.LogStore, raft.StableStore, *Server) {
		t.Helper()
		s := &Server{cfg: cfg, logger: slog.New(slog.DiscardHandler), health: newStorageHealth(slog.New(slog.DiscardHandler)), walMetrics: newWALMetrics()}
		rc := raft.DefaultConfig()
		rc.Logger = newHCLog(s.logger)
		logs, stable, _, err := s.openStores(rc)
		if err != nil {
			t.Fatalf("open the v0.4.0 log: %v", err)
		}
		return logs, stable, s
	}
	check := func(logs raft.LogStore, stable raft.StableStore, wantLast uint64) {
		t.Helper()
		first, err1 := logs.FirstIndex()
		last, err2 := logs.LastIndex()
		if err1 != nil || err2 != nil || first != 21 || last != wantLast {
			t.Fatalf("log holds %d..%d (%v, %v), want 21..%d", first, last, err1, err2, wantLast)
		}
		for i := first; i <= last; i++ {
			var l raft.Log
			if err := logs.GetLog(i, &l); err != nil {
				t.Fatalf("get log %d: %v", i, err)
			}
			term := 1 + i/50
			if want := bytes.Repeat([]byte(fmt.Sprintf("%d/%d;", term, i)), 50); l.Index != i || l.Term != term || !bytes.Equal(l.Data, want) {
				t.Fatalf("log %d reads index %d term %d %.12q, want term %d %.12q", i, l.Index, l.Term, l.Data, term, want)
			}
		}
		if term, err := stable.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
			t.Fatalf("CurrentTerm: got %d, %v; want 7", term, err)
		}
		if cand, err := stable.Get([]byte("LastVoteCand")); err != nil || string(cand) != "s2" {
			t.Fatalf("LastVoteCand: got %q, %v; want s2", cand, err)
		}
	}

	logs, stable, s := open()
	check(logs, stable, 120)
	next := &raft.Log{Index: 121, Term: 3, Type: raft.LogCommand, Data: bytes.Repeat([]byte("3/121;"), 50)}
	if err := logs.StoreLogs([]*raft.Log{next}); err != nil {
		t.Fatalf("append to the v0.4.0 log: %v", err)
	}
	s.closeStores()

	logs, stable, s = open()
	defer s.closeStores()
	check(logs, stable, 121)
}
