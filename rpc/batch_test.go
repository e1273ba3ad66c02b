package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// queued is how many calls wait for the next batch to addr.
func queued(p *Pool, addr string) int {
	p.coalesce.mu.Lock()
	defer p.coalesce.mu.Unlock()
	if q := p.coalesce.queues[poolKey{dc: strings.ToLower(p.cfg.Datacenter), addr: addr}]; q != nil {
		return len(q.calls)
	}
	return 0
}

// holdCoalescer starts a coalesced Echo.Slow call that takes d, so that
// the calls made while it runs queue, and returns its result channel.
func holdCoalescer(t *testing.T, p *Pool, echo *Echo, addr string, d time.Duration) <-chan error {
	t.Helper()
	echo.started = make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- p.CallCoalesced(testCtx(t), addr, "Echo.Slow", &EchoArgs{Delay: d}, &EchoReply{})
	}()
	within(t, echo.started, 10*time.Second, "Slow to start")
	return done
}

// TestCoalescedCallsGoTogether: calls made while one is in flight wait
// for it, then go in one batch, and each gets its own answer: its reply,
// or its own error as the method returned it.
func TestCoalescedCallsGoTogether(t *testing.T) {
	t.Parallel()
	s, echo := startServer(t, testConfig())
	addr := s.Addr().String()
	p, _ := newPool(t)
	slow := holdCoalescer(t, p, echo, addr, 300*time.Millisecond)

	const n = 20
	var wg sync.WaitGroup
	replies := make([]EchoReply, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			method, args := "Echo.Echo", &EchoArgs{Payload: Payload{Name: fmt.Sprint("call-", i)}, QueryOptions: QueryOptions{MinQueryIndex: uint64(i)}}
			if i%5 == 4 {
				method, args.Fail = "Echo.Fail", fmt.Sprint("failure ", i)
			}
			errs[i] = p.CallCoalesced(testCtx(t), addr, method, args, &replies[i])
		})
	}
	waitFor(t, 5*time.Second, "every call to queue behind the one in flight", func() bool { return queued(p, addr) == n })
	if err := within(t, slow, 10*time.Second, "Slow to answer"); err != nil {
		t.Fatalf("the call in flight: %v", err)
	}
	wg.Wait()
	for i := range n {
		if i%5 == 4 {
			var remote *RemoteError
			if !errors.As(errs[i], &remote) || !strings.Contains(errs[i].Error(), fmt.Sprint("failure ", i)) {
				t.Errorf("call %d: got %v, want its own remote error %q", i, errs[i], fmt.Sprint("failure ", i))
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("call %d: %v", i, errs[i])
			continue
		}
		if got, want := replies[i].Payload.Name, fmt.Sprint("call-", i); got != want || replies[i].Index != uint64(i)+1 {
			t.Errorf("call %d: reply %q index %d, want %q index %d", i, got, replies[i].Index, want, i+1)
		}
	}
	if q := queued(p, addr); q != 0 {
		t.Errorf("%d calls still queued", q)
	}
}

// TestCoalescedCallAbandonedWhileQueuedIsUnsent: a call whose ctx ends
// while it waits for a batch was never sent, and says so (ErrNotSent, as
// Call's when its ctx ends waiting for a session), so that a write may go
// elsewhere.
func TestCoalescedCallAbandonedWhileQueuedIsUnsent(t *testing.T) {
	t.Parallel()
	s, echo := startServer(t, testConfig())
	addr := s.Addr().String()
	p, _ := newPool(t)
	slow := holdCoalescer(t, p, echo, addr, 500*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.CallCoalesced(ctx, addr, "Echo.Echo", &EchoArgs{}, &EchoReply{})
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want an unsent call past its deadline", err)
	}
	if err := within(t, slow, 10*time.Second, "Slow to answer"); err != nil {
		t.Fatalf("the call in flight: %v", err)
	}
	// The queue drains, and the next call goes at once, alone.
	waitFor(t, 5*time.Second, "the queue to drain", func() bool { return queued(p, addr) == 0 })
	var reply EchoReply
	if err := p.CallCoalesced(testCtx(t), addr, "Echo.Echo", &EchoArgs{Payload: Payload{Name: "after"}}, &reply); err != nil || reply.Payload.Name != "after" {
		t.Fatalf("a call after: %v, reply %q", err, reply.Payload.Name)
	}
}

// TestBatchCallPastItsDeadlineIsNotRun: a call of a batch whose own
// deadline passed before the server read it is refused unrun, as a call
// of its own would be, while the others of the batch run.
func TestBatchCallPastItsDeadlineIsNotRun(t *testing.T) {
	t.Parallel()
	s, echo := startServer(t, testConfig())
	echo.started = make(chan struct{}, 2)
	p, _ := newPool(t)
	encode := func(a *EchoArgs) []byte {
		var b []byte
		if err := codec.NewEncoderBytes(&b, msgpackHandle).Encode(a); err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := batchRequest{Calls: []batchCall{
		// 1ns left when sent: past by the time it is read.
		{Method: "Echo.Slow", Timeout: 1, Args: encode(&EchoArgs{Payload: Payload{Name: "late"}})},
		{Method: "Echo.Echo", Timeout: int64(5 * time.Second), Args: encode(&EchoArgs{Payload: Payload{Name: "in time"}})},
	}}
	var reply batchReply
	if err := p.Call(testCtx(t), s.Addr().String(), BatchMethod, &req, &reply); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if len(reply.Results) != 2 {
		t.Fatalf("%d results, want 2", len(reply.Results))
	}
	late := newRemoteError(reply.Results[0].Error)
	if !strings.Contains(late.Error(), "deadline exceeded: the caller's deadline passed") {
		t.Errorf("the late call: %v, want refused past its deadline", late)
	}
	select {
	case <-echo.started:
		t.Errorf("the late call ran")
	default:
	}
	var in EchoReply
	if reply.Results[1].Error != "" || codec.NewDecoderBytes(reply.Results[1].Reply, msgpackHandle).Decode(&in) != nil || in.Payload.Name != "in time" {
		t.Errorf("the call in time: error %q, reply %q", reply.Results[1].Error, in.Payload.Name)
	}
}

// TestBatchCallsCountAgainstTheBudget: a batch is as many calls of its
// caller's budget as it carries, so that a client cannot run more at once
// than MaxCallsPerClient by sending them together: those over it are
// refused unrun, as busy.
func TestBatchCallsCountAgainstTheBudget(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxCallsPerClient = 3
	s, echo := startServer(t, cfg)
	echo.started = make(chan struct{}, 8)
	p, _ := newPool(t)
	var args []byte
	if err := codec.NewEncoderBytes(&args, msgpackHandle).Encode(&EchoArgs{Delay: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	req := batchRequest{}
	for range 5 {
		req.Calls = append(req.Calls, batchCall{Method: "Echo.Slow", Timeout: int64(5 * time.Second), Args: args})
	}
	var reply batchReply
	if err := p.Call(testCtx(t), s.Addr().String(), BatchMethod, &req, &reply); err != nil {
		t.Fatalf("batch: %v", err)
	}
	for i, r := range reply.Results {
		busy := Classify(newRemoteError(r.Error)) == Busy
		if want := i >= 3; busy != want || (!want && r.Error != "") {
			t.Errorf("call %d: error %q, want refused as busy: %v", i, r.Error, want)
		}
	}
	if n := len(echo.started); n != 3 {
		t.Errorf("%d calls ran, want 3", n)
	}
}

// TestBatchBounds: a batch takes at most maxBatchCalls calls and about
// maxBatchBytes of arguments; a call over the bytes still goes, alone.
func TestBatchBounds(t *testing.T) {
	t.Parallel()
	calls := func(n, size int) *callQueue {
		q := &callQueue{}
		for range n {
			q.calls = append(q.calls, &queuedCall{args: make([]byte, size)})
		}
		return q
	}
	for _, tc := range []struct {
		name      string
		q         *callQueue
		wantSizes []int
	}{
		{"count", calls(maxBatchCalls+3, 10), []int{maxBatchCalls, 3}},
		{"bytes", calls(5, maxBatchBytes/2), []int{2, 2, 1}},
		{"one large call", calls(1, maxBatchBytes+1), []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sizes []int
			for len(tc.q.calls) > 0 {
				sizes = append(sizes, len(tc.q.take()))
			}
			if fmt.Sprint(sizes) != fmt.Sprint(tc.wantSizes) {
				t.Errorf("batches of %v, want %v", sizes, tc.wantSizes)
			}
		})
	}
}
