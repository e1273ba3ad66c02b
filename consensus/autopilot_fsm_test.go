package consensus

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// bufferSink is a raft.SnapshotSink writing to memory.
type bufferSink struct{ bytes.Buffer }

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Cancel() error { return nil }
func (s *bufferSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*bufferSink)(nil)

func newTestFSM(t *testing.T) *fsm {
	t.Helper()
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	return &fsm{store: store}
}

// TestFSMSnapshotKeepsAutopilot: a snapshot carries autopilot's
// configuration beside the catalog; a snapshot of the format before it
// (a plain catalog dump) restores the catalog and no configuration.
func TestFSMSnapshotKeepsAutopilot(t *testing.T) {
	f := newTestFSM(t)
	if err := f.store.Register(5, &catalog.RegisterRequest{Datacenter: "dc1", Node: "n1", Address: "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	cfg := rpc.DefaultAutopilotConfig()
	cfg.ServerStabilizationTime = time.Minute
	if resp := f.applyAutopilot(7, &autopilotRequest{Config: cfg}); resp != nil {
		t.Fatalf("apply: %v", resp)
	}
	if resp := f.applyAutopilot(8, &autopilotRequest{Config: cfg, CAS: true, Index: 6}); resp != errCASMismatch {
		t.Fatalf("CAS with a stale index: got %v, want errCASMismatch", resp)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := newTestFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	got := g.autopilot.Load()
	cfg.CreateIndex, cfg.ModifyIndex = 7, 7
	if got == nil || *got != cfg {
		t.Errorf("restored autopilot: got %+v, want %+v", got, cfg)
	}
	if _, n, _ := g.store.Node(nil, "n1"); n == nil {
		t.Error("restored catalog lacks n1")
	}

	// The format before autopilot, as an archive's state.bin still is.
	d, err := f.store.Dump()
	if err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	if err := codec.NewEncoder(&old, msgpackHandle).Encode(d); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(&old)); err != nil {
		t.Fatalf("Restore of a plain dump: %v", err)
	}
	if got := g.autopilot.Load(); got != nil {
		t.Errorf("autopilot after restoring a plain dump: got %+v, want none", got)
	}
	if _, n, _ := g.store.Node(nil, "n1"); n == nil {
		t.Error("catalog restored from a plain dump lacks n1")
	}
}
