package consensus

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/raft"
)

// kvEntry is the log entry of a registration of service kv with Meta v,
// wrapped as request id when id is not empty, stamped at.
func kvEntry(t *testing.T, index uint64, id, v string, at time.Time) *raft.Log {
	t.Helper()
	data, err := encodeCommand(cmdRegister, &catalog.RegisterRequest{
		Datacenter: "dc1", Node: "n1", Address: "10.0.0.1",
		Service: &catalog.Service{ID: "kv", Service: "kv", Meta: map[string]string{"v": v}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		if data, err = encodeCommand(cmdOnce, &onceCommand{ID: id, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: data, AppendedAt: at}
}

func kvValue(t *testing.T, f *fsm) string {
	t.Helper()
	_, inst, err := f.store.ServiceInstances(nil, "kv", "")
	if err != nil || len(inst) != 1 {
		t.Fatalf("kv instances: %v, %v", inst, err)
	}
	return inst[0].Service.Meta["v"]
}

func mustApply(t *testing.T, f *fsm, l *raft.Log) {
	t.Helper()
	if err, _ := f.Apply(l).(error); err != nil {
		t.Fatalf("apply index %d: %v", l.Index, err)
	}
}

// TestReplayedRequestDoesNotUndoANewerWrite: a write applied under a
// request ID, then a newer write, then the first request again (a copy a
// paused server forwarded late): the copy is skipped, on this FSM and on
// one restored from its snapshot, and the newer value stays. Past the
// window the ID is forgotten.
func TestReplayedRequestDoesNotUndoANewerWrite(t *testing.T) {
	f := newTestFSM(t)
	t0 := time.Unix(1_800_000_000, 0)
	mustApply(t, f, kvEntry(t, 1, "req-a", "old", t0))
	mustApply(t, f, kvEntry(t, 2, "", "new", t0.Add(time.Second)))
	mustApply(t, f, kvEntry(t, 3, "req-a", "old", t0.Add(10*time.Second)))
	if got := kvValue(t, f); got != "new" {
		t.Fatalf("after the replay: kv is %q, want %q", got, "new")
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
		t.Fatal(err)
	}
	mustApply(t, g, kvEntry(t, 4, "req-a", "old", t0.Add(20*time.Second)))
	if got := kvValue(t, g); got != "new" {
		t.Fatalf("replay after a restore: kv is %q, want %q", got, "new")
	}

	// Another request moves the clock past the window: req-a is
	// forgotten and applies again.
	mustApply(t, g, kvEntry(t, 5, "req-b", "b", t0.Add(onceWindow+time.Minute)))
	mustApply(t, g, kvEntry(t, 6, "req-a", "late", t0.Add(onceWindow+time.Minute)))
	if got := kvValue(t, g); got != "late" {
		t.Errorf("past the window: kv is %q, want %q", got, "late")
	}
	if len(g.once.order) != 2 {
		t.Errorf("remembered %v, want req-b and req-a only", g.once.order)
	}
}

// TestFailedRequestIsNotRemembered: a request whose write failed is not
// remembered, so sending it again applies it (and fails the same way, or
// succeeds once the cause is gone).
func TestFailedRequestIsNotRemembered(t *testing.T) {
	f := newTestFSM(t)
	data, err := encodeCommand(cmdOnce, &onceCommand{ID: "req-x", Data: []byte{99}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data}).(error); !ok {
		t.Fatal("an unknown command inside a request applied without error")
	}
	if f.once.applied("req-x") {
		t.Error("a failed request was remembered as applied")
	}
}
