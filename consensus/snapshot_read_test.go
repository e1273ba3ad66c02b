package consensus

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/hashicorp/raft"
)

func TestReadSnapshot(t *testing.T) {
	data := bytes.Repeat([]byte("snapshot"), 1000)
	for _, tc := range []struct {
		name string
		size int64 // 0: a reader that does not know its size
	}{
		{"unsized", 0},
		{"exact", int64(len(data))},
		{"recorded smaller", 10},
		{"recorded larger", int64(len(data)) * 3},
		{"recorded negative", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = io.NopCloser(iotest.HalfReader(bytes.NewReader(data)))
			if tc.size != 0 {
				r = sizedReader{ReadCloser: io.NopCloser(iotest.HalfReader(bytes.NewReader(data))), size: tc.size}
			}
			got, err := readSnapshot(r)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("got %d bytes, err %v; want the %d bytes", len(got), err, len(data))
			}
			if tc.size == int64(len(data)) && cap(got) != len(data)+1 {
				t.Errorf("buffer of a snapshot of the recorded size: got cap %d, want %d (no growth)", cap(got), len(data)+1)
			}
		})
	}
	broken := errors.New("disk on fire")
	_, err := readSnapshot(sizedReader{ReadCloser: io.NopCloser(iotest.ErrReader(broken)), size: 100})
	if !errors.Is(err, broken) {
		t.Errorf("read error: got %v, want %v", err, broken)
	}
}

// Raft restores what it opens through the store: the reader it gets must
// know the snapshot's size.
func TestSizedSnapshotsOpen(t *testing.T) {
	store := sizedSnapshots{raft.NewInmemSnapshotStore()}
	sink, err := store.Create(raft.SnapshotVersionMax, 7, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("catalog")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	meta, rc, err := store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if sr, ok := rc.(sizedReader); !ok || sr.size != meta.Size || meta.Size != int64(len("catalog")) {
		t.Errorf("Open: got a %T (meta size %d), want a sizedReader of size %d", rc, meta.Size, len("catalog"))
	}
}
