package consensus

import (
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// A snapshot that cannot be written makes the storage unhealthy until
// one is written whole.
func TestSnapshotWriteFailureIsStorageFailure(t *testing.T) {
	h := newStorageHealth(slog.New(slog.DiscardHandler))
	full := &failingSnapshots{SnapshotStore: raft.NewInmemSnapshotStore(), fail: true}
	store := watchedSnapshots{SnapshotStore: full, health: h}
	persist := func() error {
		sink, err := store.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
		if err != nil {
			return err
		}
		if _, err := sink.Write([]byte("catalog")); err != nil {
			_ = sink.Cancel()
			return err
		}
		return sink.Close()
	}
	if err := persist(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("snapshot on a full disk: got %v, want ENOSPC", err)
	}
	st := h.status()
	if st.Healthy || st.Failures != 1 || !strings.HasPrefix(st.Error, "snapshot: ") {
		t.Fatalf("after a failed snapshot: got %+v, want unhealthy, 1 failure, a snapshot error", st)
	}
	full.fail = false
	if err := persist(); err != nil {
		t.Fatal(err)
	}
	if st := h.status(); !st.Healthy || st.Error != "" || st.Failures != 1 {
		t.Fatalf("after a snapshot written whole: got %+v, want healthy, the 1 failure counted", st)
	}
}

// failingSnapshots' sinks fail every write with ENOSPC while fail is set.
type failingSnapshots struct {
	raft.SnapshotStore
	fail bool
}

func (f *failingSnapshots) Create(v raft.SnapshotVersion, index, term uint64, c raft.Configuration, ci uint64, tr raft.Transport) (raft.SnapshotSink, error) {
	sink, err := f.SnapshotStore.Create(v, index, term, c, ci, tr)
	if err != nil || !f.fail {
		return sink, err
	}
	return failingSink{sink}, nil
}

type failingSink struct{ raft.SnapshotSink }

func (failingSink) Write([]byte) (int, error) { return 0, syscall.ENOSPC }
