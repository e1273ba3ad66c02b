package faults

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
)

// The compaction scenarios (issue 28): the leader is killed while Raft
// writes a snapshot, or while it deletes the log the snapshot made
// obsolete; then it and every other server must restart. The servers
// snapshot every few hundred entries and keep few behind
// (compactingServers), and a bulk writer gives the leader a few MiB of
// state, so that a snapshot lasts long enough to be caught and a
// compaction removes whole segments.
const compactingServers = `raft_snapshot_threshold = 256
raft_snapshot_interval = "100ms"
raft_trailing_logs = 64
raft_logstore { wal { segment_size_mb = 1 } }
`

const (
	bulkKeys      = 64
	bulkValueSize = 256 << 10 // 16 MiB of state in all; 4 entries fill a 1 MiB segment
	loadedWithin  = 60 * time.Second
	catchWithin   = 30 * time.Second // for the loaded leader to start a snapshot or a compaction
	downFor       = 2 * time.Second  // between the kill and the restart
	watchEvery    = 500 * time.Microsecond
)

// compactLine is Raft's log line as it starts to delete a range of its log.
var compactLine = regexp.MustCompile(`msg="compacting logs".* from=(\d+) to=(\d+)`)

// killLeaderMidSnapshot kills the leader once a snapshot of its is part
// written: its directory (<id>.tmp, renamed once the snapshot is complete)
// holds some state.
func killLeaderMidSnapshot(r *run) {
	l := r.leader
	r.target = r.describe(l) + " while it writes a snapshot"
	load := startBulk(r, l)
	dir := filepath.Join(l.dataDir, "raft", "snapshots")
	var tmp string
	caught := watch(catchWithin, func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".tmp") {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, e.Name(), "state.bin")); err == nil && fi.Size() >= bulkValueSize {
				tmp = e.Name()
				return true
			}
		}
		return false
	})
	if !caught {
		load.stop()
		r.t.Fatalf("%s wrote no snapshot within %v", l.name, catchWithin)
	}
	r.c.kill(l)
	r.faultAt = r.mark("kill -9 " + l.name + " as it writes snapshot " + tmp)
	load.stop()
	// The directory keeps its name only if the snapshot was not complete:
	// that is the window aimed at.
	fi, err := os.Stat(filepath.Join(dir, tmp, "state.bin"))
	if err == nil {
		r.mark(fmt.Sprintf("landed mid-snapshot: %s left with %d bytes of state written", tmp, fi.Size()))
	} else {
		r.mark("landed after the snapshot was complete (" + tmp + " renamed): missed the window")
	}
	r.hold(downFor)
	r.healAt = r.mark("restart " + l.name)
	r.restart(l)
	// Raft would keep it for ever; the server removes it as it starts.
	if _, err := os.Stat(filepath.Join(dir, tmp)); err == nil {
		r.t.Errorf("%s kept the unfinished snapshot %s after its restart", l.name, tmp)
	}
	r.restartEach()
}

// killLeaderMidTruncation kills the leader as it deletes the segments of
// its log that a snapshot made obsolete: once it logs "compacting logs"
// (raft-wal's DeleteRange of the head follows: it commits its new
// metadata, then deletes the segments), at the first file deleted from
// its log's directory.
func killLeaderMidTruncation(r *run) {
	l := r.leader
	r.target = r.describe(l) + " while it compacts its log"
	load := startBulk(r, l)
	walDir := filepath.Join(l.dataDir, "raft", "wal")
	tail, err := openTail(l.logPath)
	if err == nil {
		defer tail.Close()
	}
	deletes, err2 := watchDeletes(walDir)
	if err = errors.Join(err, err2); err != nil {
		load.stop()
		r.t.Fatal(err)
	}
	defer deletes.Close()
	var before []segment
	var upTo uint64
	caught := watch(catchWithin, func() bool {
		deletes.drain()          // earlier compactions'
		segs := segments(walDir) // before the log line: what the compaction starts from
		m := compactLine.FindStringSubmatch(tail.next())
		if m == nil {
			before = segs
			return false
		}
		upTo, _ = strconv.ParseUint(m[2], 10, 64)
		if before == nil {
			before = segs
		}
		return true
	})
	if !caught {
		load.stop()
		r.t.Fatalf("%s compacted no log within %v", l.name, catchWithin)
	}
	// A deletion wakes the watcher at once; a compaction that deletes
	// nothing is killed after a second.
	deletedFirst := deletes.await(time.Second)
	r.c.kill(l)
	r.faultAt = r.mark(fmt.Sprintf("kill -9 %s as it compacts its log up to %d (%s)", l.name, upTo,
		map[bool]string{true: "at its first segment deleted", false: "no segment deleted within 1s"}[deletedFirst]))
	load.stop()
	doomed, gone := 0, 0
	after := segments(walDir)
	for i, s := range before {
		// raft-wal removes only segments wholly within the range.
		if i+1 < len(before) && before[i+1].base <= upTo+1 {
			doomed++
			if !slices.Contains(after, s) {
				gone++
			}
		}
	}
	first, err := walFirstIndex(walDir)
	switch {
	case err != nil:
		r.t.Fatalf("read %s's log metadata after the kill: %v", l.name, err)
	case first <= upTo:
		r.mark(fmt.Sprintf("landed before raft-wal committed the truncation (its log still starts at %d), %d segment(s) to remove", first, doomed))
	case gone < doomed:
		r.mark(fmt.Sprintf("landed mid-truncation: committed (the log starts at %d), %d of the %d segments it removes deleted", first, gone, doomed))
	default:
		r.mark(fmt.Sprintf("landed after the truncation: committed, all %d segments it removes deleted", doomed))
	}
	r.hold(downFor)
	r.healAt = r.mark("restart " + l.name)
	r.restart(l)
	r.restartEach()
}

// walFirstIndex reads the first index of the log raft-wal has committed
// to its metadata (wal-meta.db, bucket "wal-meta", key "m": JSON of its
// segments), once the server that holds it is gone.
func walFirstIndex(dir string) (uint64, error) {
	db, err := bbolt.Open(filepath.Join(dir, "wal-meta.db"), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var state struct{ Segments []struct{ MinIndex uint64 } }
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("wal-meta"))
		if b == nil {
			return errors.New("no wal-meta bucket")
		}
		return json.Unmarshal(b.Get([]byte("m")), &state)
	})
	if err != nil {
		return 0, err
	}
	if len(state.Segments) == 0 {
		return 0, errors.New("no segments")
	}
	return state.Segments[0].MinIndex, nil
}

// deleteWatch reports the files deleted from a directory (inotify).
type deleteWatch struct {
	fd  int
	f   *os.File // fd, for reads the runtime's poller waits for
	buf []byte
}

func watchDeletes(dir string) (*deleteWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_DELETE); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	// Non-blocking, so that the runtime's poller waits for it with a
	// deadline.
	return &deleteWatch{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), buf: make([]byte, 64<<10)}, nil
}

// await waits up to limit for a deletion and says whether one came.
func (w *deleteWatch) await(limit time.Duration) bool {
	_ = w.f.SetReadDeadline(time.Now().Add(limit))
	n, err := w.f.Read(w.buf)
	return err == nil && n > 0
}

// drain discards the deletions reported so far (read from fd directly:
// a read past its deadline would not read at all).
func (w *deleteWatch) drain() {
	for {
		if n, err := syscall.Read(w.fd, w.buf); n <= 0 || err != nil {
			return
		}
	}
}

func (w *deleteWatch) Close() error { return w.f.Close() }

// watch calls cond every watchEvery until it holds or limit passes, and
// says whether it held: a window of a few milliseconds is caught where
// poll's intervals would miss it.
func watch(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(watchEvery)
	}
	return false
}

// segment is a raft-wal segment file: <base index>-<id>.wal.
type segment struct {
	base uint64
	name string
}

// segments lists the segment files in dir, by base index.
func segments(dir string) []segment {
	entries, _ := os.ReadDir(dir)
	var out []segment
	for _, e := range entries {
		base, _, ok := strings.Cut(e.Name(), "-")
		if !strings.HasSuffix(e.Name(), ".wal") || !ok {
			continue
		}
		n, err := strconv.ParseUint(base, 10, 64)
		if err == nil {
			out = append(out, segment{base: n, name: e.Name()})
		}
	}
	slices.SortFunc(out, func(a, b segment) int { return cmp.Compare(a.base, b.base) })
	return out
}

// logTailer reads what an agent's log gained since it last read.
type logTailer struct {
	f    *os.File
	off  int64
	buf  []byte
	part string // an incomplete last line, kept for the next read
}

func openTail(path string) (*logTailer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &logTailer{f: f, off: off, buf: make([]byte, 64<<10)}, nil
}

// next returns the complete lines written since the last call.
func (t *logTailer) next() string {
	var b strings.Builder
	b.WriteString(t.part)
	for {
		n, err := t.f.ReadAt(t.buf, t.off)
		t.off += int64(n)
		b.Write(t.buf[:n])
		if n < len(t.buf) || err != nil {
			break
		}
	}
	s := b.String()
	i := strings.LastIndexByte(s, '\n')
	t.part = s[i+1:]
	return s[:i+1]
}

func (t *logTailer) Close() error { return t.f.Close() }

// bulkLoad writes bulkValueSize values under bulk/<n> through one server's
// HTTP API, one at a time (the workload's checks do not read them).
type bulkLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startBulk starts writing to s and returns once every key has been
// written once: from then on s holds bulkKeys × bulkValueSize of state.
func startBulk(r *run, s *agent) *bulkLoad {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &bulkLoad{cancel: cancel}
	loaded := make(chan struct{})
	client := &http.Client{Timeout: 5 * time.Second}
	value := strings.Repeat("b", bulkValueSize)
	b.wg.Go(func() {
		for n := 0; ctx.Err() == nil; {
			status, _, err := call(ctx, client, http.MethodPut, fmt.Sprintf("%s/v1/kv/bulk/%d", s.httpURL(), n%bulkKeys), value)
			if err != nil || status != http.StatusOK {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if n++; n == bulkKeys {
				close(loaded)
			}
		}
	})
	select {
	case <-loaded:
		r.mark(fmt.Sprintf("%s holds %d MiB of bulk state", s.name, bulkKeys*bulkValueSize>>20))
	case <-time.After(loadedWithin):
		b.stop()
		r.t.Fatalf("%d bulk writes to %s did not succeed within %v", bulkKeys, s.name, loadedWithin)
	}
	return b
}

func (b *bulkLoad) stop() {
	b.cancel()
	b.wg.Wait()
}
