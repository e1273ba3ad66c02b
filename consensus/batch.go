package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/hashicorp/raft"
)

// Group commit: writes that arrive at the leader while an earlier write
// is being committed wait for it and then go to Raft together, as one log
// entry (cmdBatch), so that the log, the followers and the fsyncs carry
// one entry for many writes. A write arriving when none is in flight goes
// at once, alone: a lone writer waits for nothing. Each write keeps its
// own result, and its own failure (catalog.Store.ApplyBatch); all the
// writes of a batch get its index.
//
// Forwarded writes are batched here too, with the leader's own. A
// follower forwards the writes that arrive while one of its forwards is
// in flight together, as one call (rpc.Pool.CallCoalesced, to a leader
// that announces gossip.FeatureBatchedForwards); the leader runs them
// at once, so they reach this batcher together.
//
// A server older than this one cannot read a batch entry, so batches are
// written only with Config.GroupCommit (on by default; an operator who
// wants to roll a server back to such a version onto its data dir turns
// it off, as that server would replay batches from its log), and while every
// server of the datacenter says in gossip that it reads them
// (gossip.FeatureBatchedWrites; Leader.Reconcile sets
// Server.batchWrites); otherwise each write is its own entry, as before.

// Bounds of one batch. raft sends at most MaxAppendEntries (64) entries
// per message and suggests entries under raft.SuggestedMaxDataSize (512
// KiB); a batch of at most 128 writes and 256 KiB keeps a message of 64
// batches bounded, and a registration storm's batches large. A write
// larger than maxBatchBytes goes alone.
const (
	maxBatchWrites = 128
	maxBatchBytes  = 256 << 10
)

// batchCommand is a cmdBatch entry: commands encoded by encodeCommand
// (each may be a cmdOnce), applied in order at the entry's index.
type batchCommand struct {
	Cmds [][]byte
}

// batchResponse is the FSM's answer to a cmdBatch entry: one per
// command, an error or what that command alone would have answered.
type batchResponse []any

// batchable reports whether commands of type t may go in a batch: the
// frequent writes, which catalog.Store.ApplyBatch knows.
func batchable(t commandType) bool {
	switch t {
	case cmdRegister, cmdDeregister, cmdKV, cmdSession, cmdTxn:
		return true
	}
	return false
}

// decodeWrite decodes a batchable command.
func decodeWrite(index uint64, data []byte) (catalog.Write, error) {
	var w catalog.Write
	var err error
	switch commandType(data[0]) {
	case cmdRegister:
		w.Register = &catalog.RegisterRequest{}
		err = decode(data[1:], w.Register)
	case cmdDeregister:
		w.Deregister = &catalog.DeregisterRequest{}
		err = decode(data[1:], w.Deregister)
	case cmdKV:
		w.KV = &catalog.KVRequest{}
		err = decode(data[1:], w.KV)
	case cmdSession:
		w.Session = &catalog.SessionRequest{}
		err = decode(data[1:], w.Session)
	case cmdTxn:
		w.Txn = &catalog.TxnRequest{}
		err = decode(data[1:], w.Txn)
	default:
		return w, fmt.Errorf("log index %d type %d in a batch: %w", index, data[0], ErrUnknownCommand)
	}
	if err != nil {
		return w, fmt.Errorf("decode command %d at index %d: %w", data[0], index, err)
	}
	return w, nil
}

// writeResponse is what the FSM answers for one write's result.
func writeResponse(r catalog.WriteResult) any {
	if r.Err != nil {
		return r.Err
	}
	return r.Value
}

// applyBatch applies a cmdBatch entry. A command with a request ID
// applied already (or earlier in the batch: the leader puts no two of one
// ID in a batch) is skipped as applyOnce skips it.
func (f *fsm) applyBatch(l *raft.Log) any {
	var b batchCommand
	if err := decode(l.Data[1:], &b); err != nil {
		return fmt.Errorf("decode batch at index %d: %w", l.Index, err)
	}
	resp := make(batchResponse, len(b.Cmds))
	writes := make([]catalog.Write, 0, len(b.Cmds))
	slots := make([]int, 0, len(b.Cmds)) // slots[j]: the command of writes[j]
	ids := make([]string, len(b.Cmds))
	var seen map[string]bool
	for i, data := range b.Cmds {
		if len(data) == 0 {
			resp[i] = fmt.Errorf("log index %d: empty command in a batch: %w", l.Index, ErrUnknownCommand)
			continue
		}
		if commandType(data[0]) == cmdOnce {
			var c onceCommand
			if err := decode(data[1:], &c); err != nil {
				resp[i] = fmt.Errorf("decode request at index %d: %w", l.Index, err)
				continue
			}
			if f.once.applied(c.ID) || seen[c.ID] {
				continue
			}
			if seen == nil {
				seen = make(map[string]bool)
			}
			seen[c.ID], ids[i], data = true, c.ID, c.Data
			if len(data) == 0 {
				resp[i] = fmt.Errorf("log index %d: empty command in a batch: %w", l.Index, ErrUnknownCommand)
				continue
			}
		}
		w, err := decodeWrite(l.Index, data)
		if err != nil {
			resp[i] = err
			continue
		}
		writes = append(writes, w)
		slots = append(slots, i)
	}
	for j, r := range f.store.ApplyBatch(l.Index, l.AppendedAt, writes) {
		i := slots[j]
		resp[i] = writeResponse(r)
		if r.Err == nil && ids[i] != "" {
			f.once.record(ids[i], l.AppendedAt)
		}
	}
	return resp
}

// pendingWrite is one write waiting in the batcher, or being committed.
type pendingWrite struct {
	ctx  context.Context
	data []byte // encodeCommand's, maybe a cmdOnce
	id   string // request ID, "" for none
	// deadline is ctx's, or Config.ApplyTimeout from when it came
	// without one (Server.waitBound).
	deadline time.Time
	// state moves from queued to taken (by the batcher, which will answer
	// on done) or to abandoned (by the writer, whose ctx ended first).
	state atomic.Int32
	done  chan struct{}
	resp  any
	err   error
}

const (
	writeQueued int32 = iota
	writeTaken
	writeAbandoned
)

// batcher collects the batchable writes of one server.
type batcher struct {
	s        *Server
	mu       sync.Mutex
	queue    []*pendingWrite
	bytes    int // of the queue's data
	inflight int // goroutines committing (run)
	wg       sync.WaitGroup
	// batches and batched count the batch entries written and the writes
	// in them (cairn_raft_batches_total, cairn_raft_batched_writes_total).
	batches, batched atomic.Uint64
}

// apply commits data (a batchable command) with the writes around it and
// returns the FSM's answer for it. A write whose ctx ends while queued is
// not sent, and returns ctx's error; once taken it is waited for, as
// Server.applyResponse waits.
func (b *batcher) apply(ctx context.Context, data []byte, id string) (any, error) {
	timeout, err := b.s.waitBound(ctx)
	if err != nil {
		return nil, err
	}
	w := &pendingWrite{ctx: ctx, data: data, id: id, deadline: time.Now().Add(timeout), done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	b.bytes += len(data)
	// Nothing in flight: go now. A full batch goes now as well, beside
	// the one in flight, rather than grow past the bounds.
	if b.inflight == 0 || len(b.queue) >= maxBatchWrites || b.bytes >= maxBatchBytes {
		batch := b.take()
		b.inflight++
		b.wg.Go(func() { b.run(batch) })
	}
	b.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
			return nil, fmt.Errorf("raft apply: %w", ctx.Err())
		}
		<-w.done
	}
	return w.resp, w.err
}

// take removes the next batch from the queue: up to the bounds, and
// stopping before a second write of one request ID (the FSM would skip
// it). b.mu is held.
func (b *batcher) take() []*pendingWrite {
	n, size := 0, 0
	var ids map[string]bool
	for _, w := range b.queue {
		if n > 0 && (n == maxBatchWrites || size+len(w.data) > maxBatchBytes || w.id != "" && ids[w.id]) {
			break
		}
		if w.id != "" {
			if ids == nil {
				ids = make(map[string]bool)
			}
			ids[w.id] = true
		}
		n++
		size += len(w.data)
	}
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	b.bytes -= size
	if len(b.queue) == 0 {
		b.queue = nil // let the backing array go
	}
	return batch
}

// run commits batch, then whatever queued meanwhile, until the queue is
// empty.
func (b *batcher) run(batch []*pendingWrite) {
	for {
		b.commit(batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inflight--
			b.mu.Unlock()
			return
		}
		batch = b.take()
		b.mu.Unlock()
	}
}

// commit sends the writes of batch still waited for to Raft, one entry
// for all of them when batches are allowed and there are several, and
// answers each.
func (b *batcher) commit(batch []*pendingWrite) {
	live := batch[:0:0]
	for _, w := range batch {
		if w.state.CompareAndSwap(writeQueued, writeTaken) {
			live = append(live, w)
		} // else abandoned: its writer has returned
	}
	for {
		var bounds []time.Duration
		live, bounds = b.inTime(live)
		if len(live) == 0 {
			return
		}
		if len(live) == 1 || !b.s.batchWrites.Load() {
			// Each its own entry; raft still writes those it has at
			// once together.
			futures := make([]raft.ApplyFuture, len(live))
			for i, w := range live {
				futures[i] = b.s.raft.Apply(w.data, bounds[i])
			}
			for i, w := range live {
				w.resp, w.err = entryResult(futures[i])
				close(w.done)
			}
			return
		}
		if b.commitBatch(live, slices.Min(bounds)) {
			return
		}
	}
}

// inTime answers, with the error of a write never started, the writes of
// live whose callers have stopped waiting, and returns the others with
// how long each may wait for Raft to take it.
func (b *batcher) inTime(live []*pendingWrite) ([]*pendingWrite, []time.Duration) {
	kept := live[:0]
	bounds := make([]time.Duration, 0, len(live))
	for _, w := range live {
		err := w.ctx.Err()
		d := time.Until(w.deadline)
		if err == nil && d <= 0 {
			err = context.DeadlineExceeded
		}
		if err != nil {
			w.err = fmt.Errorf("raft apply: %w", err)
			close(w.done)
			continue
		}
		kept = append(kept, w)
		bounds = append(bounds, d)
	}
	return kept, bounds
}

// commitBatch sends live as one batch entry, which Raft must take within
// timeout (the batch's shortest wait: no write is started after its
// caller stopped waiting), and answers each write, unless Raft did not
// take it in time: then it answers none and returns false, for commit to
// send again those with time left.
func (b *batcher) commitBatch(live []*pendingWrite, timeout time.Duration) bool {
	cmd := batchCommand{Cmds: make([][]byte, len(live))}
	for i, w := range live {
		cmd.Cmds[i] = w.data
	}
	data, err := encodeCommand(cmdBatch, &cmd)
	var resp any
	if err == nil {
		resp, err = entryResult(b.s.raft.Apply(data, timeout))
		if errors.Is(err, raft.ErrEnqueueTimeout) {
			return false
		}
		b.batches.Add(1)
		b.batched.Add(uint64(len(live)))
	}
	all, _ := resp.(batchResponse)
	for i, w := range live {
		switch {
		case err != nil:
			w.err = err
		case len(all) != len(live):
			w.err = fmt.Errorf("raft apply: batch of %d answered with %d results", len(live), len(all))
		default:
			w.resp = all[i]
			if e, ok := w.resp.(error); ok {
				w.resp, w.err = nil, e
			}
		}
		close(w.done)
	}
	return true
}

// allowBatches lets the batcher write batch entries only while every
// server of the datacenter reads them: each server of the Raft
// configuration has a gossip member that says so (gossip.Features), and
// so does every server gossip knows that has not left (one the reconcile
// is about to add). Reconcile calls it before adding servers, so a
// server that cannot read batches is added only once none are written.
func (l *Leader) allowBatches() {
	peers, err := l.s.Peers()
	ok := err == nil && l.s.cfg.GroupCommit
	servers := l.serversByRaftID()
	for _, p := range peers {
		if m, known := servers[p.ID]; !known || !m.Features.Has(gossip.FeatureBatchedWrites) {
			ok = false
		}
	}
	for _, m := range servers {
		if m.Status != gossip.StatusLeft && !m.Features.Has(gossip.FeatureBatchedWrites) {
			ok = false
		}
	}
	if l.s.batchWrites.Swap(ok) != ok {
		l.logger.Info("batched writes", "enabled", ok)
	}
}
