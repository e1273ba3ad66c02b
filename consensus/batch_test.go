package consensus

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/hashicorp/raft"
)

// indexBefore is lastLogIndex once the entries of s's taking leadership
// are in (a barrier's entry after them).
func indexBefore(t *testing.T, s *Server) uint64 {
	t.Helper()
	if err := s.raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	return lastLogIndex(t, s)
}

func lastLogIndex(t *testing.T, s *Server) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s.RaftStats()["last_log_index"], 10, 64)
	if err != nil {
		t.Fatalf("last_log_index: %v", err)
	}
	return v
}

// holdBatcher makes s's batcher believe a write is in flight, so that the
// writes that follow queue; release sends the queue as its run would once
// that write was done.
func holdBatcher(s *Server) (release func()) {
	b := &s.batcher
	b.mu.Lock()
	b.inflight++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inflight--
			b.mu.Unlock()
			return
		}
		batch := b.take()
		b.mu.Unlock()
		b.run(batch)
	}
}

func waitQueued(t *testing.T, s *Server, n int) {
	t.Helper()
	waittest.For(t, 10*time.Second, "writes queued in the batcher", func() error {
		s.batcher.mu.Lock()
		defer s.batcher.mu.Unlock()
		if got := len(s.batcher.queue); got != n {
			return fmt.Errorf("%d writes queued, want %d", got, n)
		}
		return nil
	})
}

func kvSet(key, value string) *catalog.KVRequest {
	return &catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: key, Value: []byte(value)}}
}

// TestBatcherResultsPerWrite: writes queued behind one in flight go to
// Raft as one entry, and each comes back with its own result or error: a
// refused CAS, a lock on a session that does not exist, a registration
// that fails part way and a failed transaction fail alone.
func TestBatcherResultsPerWrite(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	ctx := context.Background()
	if _, err := s.ApplyKV(ctx, kvSet("held", "old")); err != nil {
		t.Fatal(err)
	}
	s.batchWrites.Store(true)
	before := indexBefore(t, s)
	release := holdBatcher(s)

	type outcome struct {
		resp any
		err  error
	}
	writes := []struct {
		name  string
		t     commandType
		req   any
		check func(o outcome) error
	}{
		{"set", cmdKV, kvSet("a", "1"), func(o outcome) error {
			if o.resp != true || o.err != nil {
				return fmt.Errorf("got %v, %v; want true", o.resp, o.err)
			}
			return nil
		}},
		{"cas refused", cmdKV, &catalog.KVRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: "held", Value: []byte("x"), RaftIndex: catalog.RaftIndex{ModifyIndex: 1}}}, func(o outcome) error {
			if o.resp != false || o.err != nil {
				return fmt.Errorf("got %v, %v; want false", o.resp, o.err)
			}
			return nil
		}},
		{"lock without session", cmdKV, &catalog.KVRequest{Op: catalog.KVLock, Entry: catalog.KVEntry{Key: "l", Session: "nope"}}, func(o outcome) error {
			if _, ok := errors.AsType[*catalog.FieldError](o.err); !ok {
				return fmt.Errorf("got %v, %v; want a FieldError", o.resp, o.err)
			}
			return nil
		}},
		{"register fails part way", cmdRegister, &catalog.RegisterRequest{Node: "bad", Address: "10.0.0.9",
			Checks: []*catalog.Check{{CheckID: "c", Name: "c", Status: catalog.HealthPassing, ServiceID: "nope"}}}, func(o outcome) error {
			if !errors.Is(o.err, catalog.ErrNotFound) {
				return fmt.Errorf("got %v, %v; want ErrNotFound", o.resp, o.err)
			}
			return nil
		}},
		{"register", cmdRegister, &catalog.RegisterRequest{Node: "n2", Address: "10.0.0.2"}, func(o outcome) error {
			if o.resp != nil || o.err != nil {
				return fmt.Errorf("got %v, %v; want nil", o.resp, o.err)
			}
			return nil
		}},
		{"txn fails", cmdTxn, &catalog.TxnRequest{Ops: []catalog.TxnOp{{KV: kvSet("t", "1")},
			{KV: &catalog.KVRequest{Op: catalog.KVCheckNotExists, Entry: catalog.KVEntry{Key: "held"}}}}}, func(o outcome) error {
			if r, ok := o.resp.(*catalog.TxnResponse); !ok || len(r.Errors) == 0 || o.err != nil {
				return fmt.Errorf("got %v, %v; want a failed transaction", o.resp, o.err)
			}
			return nil
		}},
		{"set 2", cmdKV, kvSet("b", "2"), func(o outcome) error {
			if o.resp != true || o.err != nil {
				return fmt.Errorf("got %v, %v; want true", o.resp, o.err)
			}
			return nil
		}},
	}
	got := make([]outcome, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() {
			resp, err := s.applyResponse(ctx, w.t, w.req)
			got[i] = outcome{resp, err}
		})
	}
	waitQueued(t, s, len(writes))
	release()
	wg.Wait()
	for i, w := range writes {
		if err := w.check(got[i]); err != nil {
			t.Errorf("%s: %v", w.name, err)
		}
	}
	if n := lastLogIndex(t, s) - before; n != 1 {
		t.Errorf("got %d log entries for %d writes, want 1", n, len(writes))
	}
	if b, w := s.batcher.batches.Load(), s.batcher.batched.Load(); b != 1 || w != uint64(len(writes)) {
		t.Errorf("counted %d batches of %d writes, want 1 of %d", b, w, len(writes))
	}
	_, a, _ := s.Store().KVGet(nil, "a")
	_, b, _ := s.Store().KVGet(nil, "b")
	if a == nil || b == nil || a.ModifyIndex != before+1 || b.ModifyIndex != before+1 {
		t.Errorf("keys a, b: got %+v, %+v; want both at index %d", a, b, before+1)
	}
	if _, n, _ := s.Store().Node(nil, "bad"); n != nil {
		t.Errorf("node bad: got %+v, want none", n)
	}
}

// TestBatcherLoneWriterGoesAtOnce: a writer alone never waits for a
// batch: each of its writes is its own log entry, sent when it arrives.
func TestBatcherLoneWriterGoesAtOnce(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	s.batchWrites.Store(true)
	before := indexBefore(t, s)
	const n = 20
	for i := range n {
		if done, err := s.ApplyKV(context.Background(), kvSet(fmt.Sprintf("k%d", i), "v")); !done || err != nil {
			t.Fatalf("write %d: got %v, %v", i, done, err)
		}
	}
	if got := lastLogIndex(t, s) - before; got != n {
		t.Errorf("got %d log entries for %d writes one after another, want %d", got, n, n)
	}
	if b := s.batcher.batches.Load(); b != 0 {
		t.Errorf("got %d batches, want none", b)
	}
}

// TestBatcherDropsWriteWhoseCallerStoppedWaiting: a write whose ctx ends
// while it is queued returns ctx's error and is never applied.
func TestBatcherDropsWriteWhoseCallerStoppedWaiting(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	s.batchWrites.Store(true)
	before := indexBefore(t, s)
	release := holdBatcher(s)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.ApplyKV(ctx, kvSet("late", "v"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want DeadlineExceeded", err)
	}
	release()
	if _, e, _ := s.Store().KVGet(nil, "late"); e != nil {
		t.Errorf("key late: got %+v, want none", e)
	}
	if got := lastLogIndex(t, s) - before; got != 0 {
		t.Errorf("got %d log entries, want none", got)
	}
}

// TestBatcherFallsBackToSingleEntries: without batchWrites (a server in
// the datacenter cannot read batches) queued writes still go, each as its
// own entry.
func TestBatcherFallsBackToSingleEntries(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	s.batchWrites.Store(true)
	release := holdBatcher(s)
	const n = 5
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.ApplyKV(context.Background(), kvSet(fmt.Sprintf("k%d", i), "v")) })
	}
	waitQueued(t, s, n)
	s.batchWrites.Store(false)
	before := indexBefore(t, s)
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if got := lastLogIndex(t, s) - before; got != n {
		t.Errorf("got %d log entries for %d writes, want %d", got, n, n)
	}
}

// TestBatcherTakeBounds: a batch stops at maxBatchWrites, at maxBatchBytes
// (a larger write goes alone), and before a second write of one request
// ID.
func TestBatcherTakeBounds(t *testing.T) {
	mk := func(size int, id string) *pendingWrite { return &pendingWrite{data: make([]byte, size), id: id} }
	for _, tc := range []struct {
		name  string
		queue []*pendingWrite
		want  []int // sizes of the batches taken until the queue is empty
	}{
		{"count", func() []*pendingWrite {
			q := make([]*pendingWrite, maxBatchWrites+3)
			for i := range q {
				q[i] = mk(10, "")
			}
			return q
		}(), []int{maxBatchWrites, 3}},
		{"bytes", []*pendingWrite{mk(maxBatchBytes/2, ""), mk(maxBatchBytes/2, ""), mk(1, "")}, []int{2, 1}},
		{"large write alone", []*pendingWrite{mk(maxBatchBytes+1, ""), mk(1, "")}, []int{1, 1}},
		{"same ID", []*pendingWrite{mk(1, "x"), mk(1, "y"), mk(1, "x"), mk(1, "")}, []int{2, 2}},
	} {
		b := &batcher{}
		for _, w := range tc.queue {
			b.queue = append(b.queue, w)
			b.bytes += len(w.data)
		}
		var got []int
		for len(b.queue) > 0 {
			got = append(got, len(b.take()))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || b.bytes != 0 {
			t.Errorf("%s: took batches of %v (bytes left %d), want %v", tc.name, got, b.bytes, tc.want)
		}
	}
}

// TestFSMBatchAppliesRequestOnce: a batch entry skips a command whose
// request ID was applied already, applies the others and remembers their
// IDs, as single entries do.
func TestFSMBatchAppliesRequestOnce(t *testing.T) {
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	f := &fsm{store: store}
	at := time.Unix(1000, 0)
	mustApply(t, f, kvEntry(t, 1, "x", "1", at))
	wrap := func(id string, req *catalog.KVRequest) []byte {
		data, err := encodeCommand(cmdKV, req)
		if err != nil {
			t.Fatal(err)
		}
		if data, err = encodeCommand(cmdOnce, &onceCommand{ID: id, Data: data}); err != nil {
			t.Fatal(err)
		}
		return data
	}
	data, err := encodeCommand(cmdBatch, &batchCommand{Cmds: [][]byte{wrap("x", kvSet("a", "x")), wrap("y", kvSet("b", "y"))}})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: data, AppendedAt: at}).(batchResponse)
	if !ok || len(resp) != 2 || resp[0] != nil || resp[1] != true {
		t.Fatalf("batch: got %#v, want [nil true]", resp)
	}
	if _, e, _ := store.KVGet(nil, "a"); e != nil {
		t.Errorf("key a (request x, applied before): got %+v, want none", e)
	}
	if !f.once.applied("y") {
		t.Error("request y: not remembered")
	}
}

// TestAllowBatches: the leader allows batch entries only while every
// server of the Raft configuration, and every server gossip knows, says
// it reads them.
func TestAllowBatches(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	s.cfg.GroupCommit = true
	srv := func(node string, f gossip.Features, st gossip.Status) gossip.Member {
		return gossip.Member{Name: node, Node: node, Addr: netip.MustParseAddr("127.0.0.1"), Status: st,
			Datacenter: "dc1", Role: gossip.RoleServer, RPCAddr: "127.0.0.1:8300", Features: f}
	}
	for _, tc := range []struct {
		name    string
		members fixedMembers
		want    bool
	}{
		{"all", fixedMembers{srv("n1", gossip.FeatureBatchedWrites, gossip.StatusAlive)}, true},
		{"self without", fixedMembers{srv("n1", 0, gossip.StatusAlive)}, false},
		{"self unknown", fixedMembers{srv("n9", gossip.FeatureBatchedWrites, gossip.StatusAlive)}, false},
		{"older server joining", fixedMembers{srv("n1", gossip.FeatureBatchedWrites, gossip.StatusAlive), srv("n2", 0, gossip.StatusAlive)}, false},
		{"older server failed", fixedMembers{srv("n1", gossip.FeatureBatchedWrites, gossip.StatusAlive), srv("n2", 0, gossip.StatusFailed)}, false},
		{"older server left", fixedMembers{srv("n1", gossip.FeatureBatchedWrites, gossip.StatusAlive), srv("n2", 0, gossip.StatusLeft)}, true},
	} {
		l, err := NewLeader(DefaultLeaderConfig(), s, tc.members, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.allowBatches()
		if got := s.batchWrites.Load(); got != tc.want {
			t.Errorf("%s: batches allowed %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without Config.GroupCommit, never.
	s.cfg.GroupCommit = false
	l, err := NewLeader(DefaultLeaderConfig(), s, fixedMembers{srv("n1", gossip.FeatureBatchedWrites, gossip.StatusAlive)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.allowBatches()
	if s.batchWrites.Load() {
		t.Error("without GroupCommit: batches allowed")
	}
}

type fixedMembers []gossip.Member

func (m fixedMembers) Members() []gossip.Member { return m }
func (m fixedMembers) Changes() <-chan struct{} { return nil }

// blockingReader blocks its first Read until release is closed, then
// fails: a snapshot restore reading it holds Raft's leader loop, so that
// nothing is taken from the apply queue meanwhile.
type blockingReader struct {
	reading chan struct{}
	release chan struct{}
	once    sync.Once
}

func (r *blockingReader) Read([]byte) (int, error) {
	r.once.Do(func() { close(r.reading) })
	<-r.release
	return 0, errors.New("released")
}

// TestBatcherResendsWhenRaftTookNothing: a batch Raft does not take
// within its shortest caller's wait is not applied; the writes whose
// callers still wait are sent again and applied, the others fail as
// never started.
func TestBatcherResendsWhenRaftTookNothing(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	s.batchWrites.Store(true)
	r := &blockingReader{reading: make(chan struct{}), release: make(chan struct{})}
	var wg sync.WaitGroup
	defer wg.Wait()
	// A restore waits for the configuration entry to be applied.
	if err := s.raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	restored := make(chan error, 1)
	wg.Go(func() {
		restored <- s.raft.Restore(&raft.SnapshotMeta{Version: raft.SnapshotVersionMax}, r, 30*time.Second)
	})
	select {
	case <-r.reading:
	case err := <-restored:
		t.Fatalf("restore did not read its snapshot: %v", err)
	}
	release := holdBatcher(s)
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var shortErr, longErr error
	var writers sync.WaitGroup
	writers.Go(func() { _, shortErr = s.ApplyKV(short, kvSet("short", "v")) })
	writers.Go(func() { _, longErr = s.ApplyKV(context.Background(), kvSet("long", "v")) })
	waitQueued(t, s, 2)
	wg.Go(release)
	// The short write's wait ends while Raft is held; then Raft is let go.
	writers.Go(func() {
		<-short.Done()
		time.AfterFunc(200*time.Millisecond, func() { close(r.release) })
	})
	writers.Wait()
	if !errors.Is(shortErr, context.DeadlineExceeded) {
		t.Errorf("short write: got %v, want DeadlineExceeded", shortErr)
	}
	if longErr != nil {
		t.Errorf("long write: %v", longErr)
	}
	if _, e, _ := s.Store().KVGet(nil, "short"); e != nil {
		t.Errorf("key short: got %+v, want none", e)
	}
	if _, e, _ := s.Store().KVGet(nil, "long"); e == nil {
		t.Error("key long: not written")
	}
}
