package rpc

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Coalesced calls: a server forwarding writes to its leader sends those
// that arrive while one of its forwards is in flight together, as one
// BatchMethod call whose reply holds each call's own answer. One stream,
// one request frame and one reply frame then carry many writes, where
// each would have cost a stream's opening and closing frames, a
// goroutine and a system call or more on both servers; the leader runs
// the calls of a batch at once, so its group commit (consensus) takes
// them in one Raft entry. A call arriving when none is in flight is sent
// at once, alone, as before: a lone writer waits for nothing.
//
// Only a server that announces it takes BatchMethod is sent batches (the
// caller checks, in gossip); an older one answers it "can't find method".
// A batch is as many calls of its caller's budget (MaxCallsPerClient) as
// it carries: the calls over the budget are refused, ErrTooManyCalls, as
// streams over it are.

// BatchMethod is the method of a coalesced call.
const BatchMethod = "RPC.Batch"

// Bounds of one batch: as many calls as a Raft batch takes, and well
// under a request's MaxMessageSize. A call whose arguments are larger
// goes alone.
const (
	maxBatchCalls     = 128
	maxBatchBytes     = 256 << 10
	maxBatchCallBytes = 64 << 10
)

// batchRequest is BatchMethod's arguments: calls to run, each with its
// arguments encoded as a call's body would be.
type batchRequest struct {
	Calls []batchCall
}

type batchCall struct {
	Method string
	// Timeout is how long the caller had left for this call when the
	// batch was sent, in nanoseconds (requestHeader.Timeout's measure; 0
	// for no deadline): the server runs the call under the batch's
	// deadline less the difference.
	Timeout int64 `codec:",omitempty"`
	Args    []byte
}

// batchReply is BatchMethod's reply: one result per call, in order.
type batchReply struct {
	Results []batchResult
}

// batchResult is one call's answer: Error as a response header carries
// it (WireError's text), or Reply encoded.
type batchResult struct {
	Error string `codec:",omitempty"`
	Reply []byte `codec:",omitempty"`
}

// serveBatch runs the calls of a BatchMethod request, each as serveStream
// runs a call of its own (decoded, authorized, rate limited, under its own
// deadline, within client's budget: the stream took one call of it), all
// at once, and answers with every result.
func (s *Server) serveBatch(st stream, c *streamCodec, req requestHeader, remote net.Addr, client string, deadline time.Time) {
	var b batchRequest
	if err := c.decode(&b); err != nil {
		c.writeResponse(req, fmt.Errorf("rpc: %s: cannot decode arguments: %w", BatchMethod, err), nil)
		return
	}
	if len(b.Calls) == 0 || len(b.Calls) > maxBatchCalls {
		c.writeResponse(req, fmt.Errorf("rpc: %s: %d calls, want 1 to %d", BatchMethod, len(b.Calls), maxBatchCalls), nil)
		return
	}
	reply := batchReply{Results: make([]batchResult, len(b.Calls))}
	err := serverSideCancel(s.runStreamCall(st, c, deadline, func(ctx context.Context) error {
		var wg sync.WaitGroup
		for i := range b.Calls {
			call := &b.Calls[i]
			callDeadline := time.Time{}
			if call.Timeout != 0 && req.Timeout != 0 && !deadline.IsZero() {
				callDeadline = deadline.Add(-time.Duration(req.Timeout - call.Timeout))
			}
			if i > 0 && !s.budget.take(client, true) {
				s.overClientBudget("max_calls_per_client", client, s.cfg.MaxCallsPerClient)
				reply.Results[i] = batchResult{Error: WireError(fmt.Errorf("rpc: %s: %w", call.Method, ErrTooManyCalls)).Error()}
				continue
			}
			wg.Go(func() {
				if i > 0 {
					defer s.budget.give(client, true)
				}
				reply.Results[i] = s.batchCall(ctx, call, callDeadline, remote)
			})
		}
		wg.Wait()
		return nil
	}))
	c.writeResponse(req, err, &reply)
}

// batchCall runs one call of a batch.
func (s *Server) batchCall(ctx context.Context, call *batchCall, deadline time.Time, remote net.Addr) batchResult {
	reply, err := s.runBatchCall(ctx, call, deadline, remote)
	if err != nil {
		return batchResult{Error: WireError(err).Error()}
	}
	return batchResult{Reply: reply}
}

func (s *Server) runBatchCall(ctx context.Context, call *batchCall, deadline time.Time, remote net.Addr) ([]byte, error) {
	m, err := s.methods.lookup(call.Method)
	if err != nil {
		return nil, err
	}
	if !deadline.IsZero() {
		if !time.Now().Before(deadline) {
			s.metrics.late.WithLabelValues(m.name).Inc()
			return nil, fmt.Errorf("rpc: %s: %w: the caller's deadline passed %s before this server read the request",
				m.name, context.DeadlineExceeded, time.Since(deadline).Round(time.Millisecond))
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	args := reflect.New(m.args.Elem())
	if err := codec.NewDecoderBytes(call.Args, msgpackHandle).Decode(args.Interface()); err != nil {
		return nil, fmt.Errorf("rpc: %s: cannot decode arguments: %w", m.name, fmt.Errorf("%w: %v", ErrCodec, err))
	}
	if err := s.authorize(m.name, m.need, args.Interface()); err != nil {
		return nil, err
	}
	if _, write := args.Interface().(Write); write && !s.allowWrite(remote) {
		return nil, fmt.Errorf("rpc: %s from %s: %w", m.name, remote, ErrRateLimited)
	}
	reply := reflect.New(m.reply.Elem())
	if err := serverSideCancel(s.invoke(ctx, m, args, reply)); err != nil {
		return nil, err
	}
	var out []byte
	if err := codec.NewEncoderBytes(&out, msgpackHandle).Encode(reply.Interface()); err != nil {
		return nil, fmt.Errorf("rpc: cannot send reply: %w: %v", ErrCodec, err)
	}
	return out, nil
}

// CallCoalesced is Call, for a write to a server that takes BatchMethod:
// when no call of CallCoalesced to addr is in flight it is Call; else it
// waits for the one in flight to end and goes in the next batch to addr,
// with the calls that queued meanwhile. Its error is what Call's would
// be: the server's answer to it alone as a *RemoteError, or the batch's
// failure (a transport error, say) if the batch failed as a whole. When
// ctx ends while it is queued it was never sent (ErrNotSent); after it
// was sent, the call returns ctx's error at once and its outcome is
// unknown, as Call's.
func (p *Pool) CallCoalesced(ctx context.Context, addr, method string, args, reply any) error {
	key := poolKey{dc: strings.ToLower(p.cfg.Datacenter), addr: addr}
	start := time.Now()
	err := p.coalesced(ctx, key, method, args, reply)
	p.metrics.observe(key.dc, args, err, time.Since(start))
	if err != nil {
		return fmt.Errorf("rpc %s to %s: %w", method, addr, err)
	}
	return nil
}

// coalescer holds, per server, whether a coalesced call is in flight and
// the calls waiting for the next batch.
type coalescer struct {
	mu     sync.Mutex
	queues map[poolKey]*callQueue
}

type callQueue struct {
	busy  bool
	calls []*queuedCall
}

// queuedCall is one call waiting in a callQueue, or sent in a batch.
type queuedCall struct {
	ctx      context.Context
	method   string
	args     []byte // encoded when queued: the caller owns its args again once it returns
	deadline time.Time
	// state moves from queued to taken (by the batch, which will answer on
	// done) or abandoned (by the caller, whose ctx ended first), and from
	// taken to answering (the batch writes reply) or abandoned.
	state atomic.Int32
	reply any
	err   error
	done  chan struct{}
}

const (
	callQueued int32 = iota
	callTaken
	callAnswering
	callAbandoned
)

func (p *Pool) coalesced(ctx context.Context, key poolKey, method string, args, reply any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	c := &p.coalesce
	c.mu.Lock()
	if c.queues == nil {
		c.queues = make(map[poolKey]*callQueue)
	}
	q := c.queues[key]
	if q == nil {
		q = &callQueue{}
		c.queues[key] = q
	}
	if !q.busy {
		q.busy = true
		c.mu.Unlock()
		err := p.call(ctx, key, method, args, reply)
		p.next(key, q)
		return err
	}
	c.mu.Unlock()

	var body []byte
	if err := codec.NewEncoderBytes(&body, msgpackHandle).Encode(args); err != nil {
		return fmt.Errorf("%w: encode body: %v", ErrCodec, err)
	}
	if len(body) > maxBatchCallBytes {
		return p.call(ctx, key, method, args, reply)
	}
	deadline, _ := ctx.Deadline()
	qc := &queuedCall{ctx: ctx, method: method, args: body, deadline: deadline, reply: reply, done: make(chan struct{})}
	c.mu.Lock()
	if !q.busy { // the one in flight ended meanwhile: go now
		q.busy = true
		c.mu.Unlock()
		err := p.call(ctx, key, method, args, reply)
		p.next(key, q)
		return err
	}
	q.calls = append(q.calls, qc)
	c.mu.Unlock()

	select {
	case <-qc.done:
		return qc.err
	case <-ctx.Done():
	}
	if qc.state.CompareAndSwap(callQueued, callAbandoned) {
		return fmt.Errorf("%w: waiting for a batch: %w", ErrNotSent, ctx.Err())
	}
	if qc.state.CompareAndSwap(callTaken, callAbandoned) {
		if deadlinePassed(ctx) {
			return context.DeadlineExceeded
		}
		return ctx.Err()
	}
	<-qc.done // being answered
	return qc.err
}

// next sends the calls queued for key while one was in flight, batch
// after batch on a goroutine of its own, or marks key idle.
func (p *Pool) next(key poolKey, q *callQueue) {
	c := &p.coalesce
	c.mu.Lock()
	if len(q.calls) == 0 {
		q.busy = false
		c.mu.Unlock()
		return
	}
	batch := q.take()
	c.mu.Unlock()
	p.wg.Go(func() {
		for {
			p.sendBatch(key, batch)
			c.mu.Lock()
			if len(q.calls) == 0 {
				q.busy = false
				c.mu.Unlock()
				return
			}
			batch = q.take()
			c.mu.Unlock()
		}
	})
}

// take removes the next batch from q; p.coalesce.mu is held.
func (q *callQueue) take() []*queuedCall {
	n, size := 0, 0
	for _, qc := range q.calls {
		if n == maxBatchCalls || n > 0 && size+len(qc.args) > maxBatchBytes {
			break
		}
		n++
		size += len(qc.args)
	}
	batch := q.calls[:n:n]
	q.calls = q.calls[n:]
	if len(q.calls) == 0 {
		q.calls = nil
	}
	return batch
}

// sendBatch sends the calls of batch whose callers still wait as one
// BatchMethod call, under the latest of their deadlines, and answers each.
func (p *Pool) sendBatch(key poolKey, batch []*queuedCall) {
	live := batch[:0:0]
	var latest time.Time
	unbounded := false
	for _, qc := range batch {
		if !qc.state.CompareAndSwap(callQueued, callTaken) {
			continue
		}
		live = append(live, qc)
		unbounded = unbounded || qc.deadline.IsZero()
		if qc.deadline.After(latest) {
			latest = qc.deadline
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !unbounded {
		ctx, cancel = context.WithDeadline(ctx, latest)
	}
	defer cancel()
	now := time.Now()
	req := batchRequest{Calls: make([]batchCall, len(live))}
	for i, qc := range live {
		req.Calls[i] = batchCall{Method: qc.method, Args: qc.args}
		if !qc.deadline.IsZero() {
			req.Calls[i].Timeout = max(int64(qc.deadline.Sub(now)), 1)
		}
	}
	var reply batchReply
	p.metrics.batches.Inc()
	p.metrics.batched.Add(float64(len(live)))
	err := p.call(ctx, key, BatchMethod, &req, &reply)
	if err == nil && len(reply.Results) != len(live) {
		err = fmt.Errorf("%w: %s answered %d results for %d calls", ErrCodec, BatchMethod, len(reply.Results), len(live))
	}
	for i, qc := range live {
		if !qc.state.CompareAndSwap(callTaken, callAnswering) {
			continue // abandoned: its caller has returned
		}
		switch {
		case err != nil:
			qc.err = err
		case reply.Results[i].Error != "":
			qc.err = newRemoteError(reply.Results[i].Error)
		case qc.reply != nil:
			if derr := codec.NewDecoderBytes(reply.Results[i].Reply, msgpackHandle).Decode(qc.reply); derr != nil {
				qc.err = fmt.Errorf("decode reply: %w: %v", ErrCodec, derr)
			}
		}
		close(qc.done)
	}
}
