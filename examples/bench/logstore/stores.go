package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairndns/cairn/consensus"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
)

// store is what Raft needs of a log store on disk.
type store interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// storeKind opens one kind of store in a directory of its own.
type storeKind struct {
	name   string
	module string
	open   func(dir string) (store, error)
	// tail returns the file a torn write would hit and where the bytes
	// written to it end.
	tail func(dir string) (path string, end int64, err error)
	// lastWrite returns the file and the byte range of a write the store
	// made last, cut at a random point (from) within the last within
	// bytes: what a torn write would not have put on disk.
	lastWrite func(dir string, within int64, rng *rand.Rand) (path string, from, to int64, err error)
}

func (k storeKind) title() string { return k.module + " " + moduleVersion(k.module) }

var storeKinds = map[string]storeKind{
	"wal": {
		name:   "wal",
		module: "github.com/hashicorp/raft-wal",
		// As consensus opens it (logstore.go): its segment size, fsync on
		// every append (raft-wal has no other mode).
		open: func(dir string) (store, error) {
			return raftwal.Open(dir, raftwal.WithLogger(hclog.NewNullLogger()),
				raftwal.WithSegmentSize(consensus.DefaultConfig().LogSegmentSize))
		},
		tail: walTail,
		// The tail segment's last frames: a torn append.
		lastWrite: func(dir string, within int64, rng *rand.Rand) (string, int64, int64, error) {
			path, end, err := walTail(dir)
			if err != nil {
				return "", 0, 0, err
			}
			lo := max(0, end-within)
			return path, lo + rng.Int64N(end-lo), end, nil
		},
	},
	"bolt": {
		name:   "bolt",
		module: "github.com/hashicorp/raft-boltdb/v2",
		// As Consul opens it: one raft.db, fsync on every commit (NoSync
		// false), bbolt's default options.
		open: func(dir string) (store, error) {
			return raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		},
		tail:      boltTail,
		lastWrite: boltLastMeta,
	},
}

// walTail is the newest segment file. raft-wal preallocates segments, so
// the written bytes end before the file does: at the last nonzero byte,
// rounded up to its 8-byte frame alignment.
func walTail(dir string) (string, int64, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil || len(segs) == 0 {
		return "", 0, fmt.Errorf("no segment in %s: %w", dir, errCut)
	}
	slices.Sort(segs)
	path := segs[len(segs)-1]
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, err
	}
	end := int64(len(b))
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return path, min((end+7)&^7, int64(len(b))), nil
}

// boltTail is the database file. bbolt grows it ahead of need, so the
// written pages end at the high-water mark its newest meta page records.
func boltTail(dir string) (string, int64, error) {
	path, b, pageSize, meta, err := boltMeta(dir)
	if err != nil {
		return "", 0, err
	}
	end := int64(binary.LittleEndian.Uint64(b[meta+boltHdr+48:])) * pageSize
	if end <= 0 || end > int64(len(b)) {
		return "", 0, fmt.Errorf("%s: high-water mark %d outside the file of %d bytes: %w", path, end, len(b), errCut)
	}
	return path, end, nil
}

// boltLastMeta is the newest meta page from a random point in its fields
// to its end: bbolt's commit writes the data pages, syncs, then writes the
// meta page, so a torn commit is a torn meta page.
func boltLastMeta(dir string, _ int64, rng *rand.Rand) (string, int64, int64, error) {
	path, _, pageSize, meta, err := boltMeta(dir)
	if err != nil {
		return "", 0, 0, err
	}
	return path, meta + boltHdr + rng.Int64N(boltMetaLen), meta + pageSize, nil
}

// A bbolt page header is 16 bytes; the meta after it holds magic, version,
// page size and flags (4 bytes each), the root bucket (16), the freelist
// page (8), the high-water page id (8), the txid (8) and a checksum (8).
const (
	boltHdr     = 16
	boltMetaLen = 72
)

// boltMeta reads the database file in dir and finds its newest meta page
// (of the two at pages 0 and 1, the one with the higher txid).
func boltMeta(dir string) (path string, b []byte, pageSize, meta int64, err error) {
	path = filepath.Join(dir, "raft.db")
	if b, err = os.ReadFile(path); err != nil {
		return "", nil, 0, 0, err
	}
	if len(b) < boltHdr+boltMetaLen {
		return "", nil, 0, 0, fmt.Errorf("%s: too short for a meta page: %w", path, errCut)
	}
	pageSize = int64(binary.LittleEndian.Uint32(b[boltHdr+8:]))
	if 2*pageSize > int64(len(b)) {
		return "", nil, 0, 0, fmt.Errorf("%s: too short for two meta pages: %w", path, errCut)
	}
	if binary.LittleEndian.Uint64(b[pageSize+boltHdr+56:]) > binary.LittleEndian.Uint64(b[boltHdr+56:]) {
		meta = pageSize
	}
	return path, b, pageSize, meta, nil
}

// diskUsage is the bytes dir's files take on disk (allocated blocks) and
// their apparent size.
func diskUsage(dir string) (used, apparent int64) {
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		apparent += fi.Size()
		used += blocks(fi) * 512
		return nil
	})
	return used, apparent
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// entryData is entry i's data: size bytes that name i, so a reader can
// tell a wrong or damaged entry.
func entryData(i uint64, size int) []byte {
	s := fmt.Sprintf("entry %d;", i)
	return []byte(strings.Repeat(s, size/len(s)+1)[:size])
}
