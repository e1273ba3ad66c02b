package rpc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
)

// size returns how many buckets l keeps.
func (l *writeLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func TestWriteLimiter(t *testing.T) {
	t.Parallel()
	l := newWriteLimiter(2, 3) // 2 a second, bursts of 3: full again 1.5s after empty
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if !l.allow("a", t0) {
			t.Fatalf("write %d of a burst of 3 refused", i+1)
		}
	}
	if l.allow("a", t0) {
		t.Error("a 4th write in the same instant: allowed, want refused")
	}
	if !l.allow("b", t0) {
		t.Error("another address shares a's bucket")
	}
	if l.allow("a", t0.Add(400*time.Millisecond)) {
		t.Error("after 0.4s (0.8 tokens): allowed, want refused")
	}
	if !l.allow("a", t0.Add(500*time.Millisecond)) {
		t.Error("after 0.5s (1 token): refused, want allowed")
	}
	if l.allow("a", t0.Add(500*time.Millisecond)) {
		t.Error("the refilled token taken twice")
	}
	// Idle for long: the burst comes back, never more.
	later := t0.Add(time.Hour)
	for i := range 3 {
		if !l.allow("a", later) {
			t.Fatalf("after an hour, write %d of 3 refused", i+1)
		}
	}
	if l.allow("a", later) {
		t.Error("after an hour, a 4th write: allowed, want refused (the bucket holds 3)")
	}
	// b has been idle for an hour and is dropped at the next sweep.
	if got := l.size(); got != 1 {
		t.Errorf("buckets after b went idle: got %d, want 1", got)
	}
	if newWriteLimiter(0, 10) != nil {
		t.Error("rate 0: got a limiter, want none")
	}
	if l := newWriteLimiter(1e-300, 1000); l.full <= 0 {
		t.Errorf("a tiny rate: refill time %s overflowed", l.full)
	}
}

func TestWriteLimiterBounded(t *testing.T) {
	t.Parallel()
	l := newWriteLimiter(1e-6, 1) // buckets that never refill in this test
	now := time.Unix(1000, 0)
	for i := range maxBuckets + 10 {
		l.allow(strconv.Itoa(i), now)
	}
	if got := l.size(); got != maxBuckets {
		t.Errorf("buckets: got %d, want the cap %d", got, maxBuckets)
	}
}

// WriteArgs are the arguments of a write endpoint.
type WriteArgs struct {
	Value string
	WriteRequest
}

// Store is a service with a write and a read.
type Store struct{}

func (Store) Put(_ context.Context, args *WriteArgs, reply *EchoReply) error {
	reply.Payload.Name = args.Value
	return nil
}

func (Store) Get(_ context.Context, _ *EchoArgs, reply *EchoReply) error {
	reply.Payload.Name = "read"
	return nil
}

func TestWriteRateLimit(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.WriteRate, cfg.WriteBurst = 20, 2 // a token every 50ms
	s, _ := startServer(t, cfg)
	if err := s.Register("Store", Store{}); err != nil {
		t.Fatal(err)
	}
	p, _ := newPool(t)
	addr := s.Addr().String()
	put := func() error {
		return p.Call(testCtx(t), addr, "Store.Put", &WriteArgs{Value: "v"}, &EchoReply{})
	}
	// Make sure the burst is spent within one refill, however slow the
	// machine: keep writing until one is refused.
	var err error
	for range 100 {
		if err = put(); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("writes over the limit: got %v, want ErrRateLimited", err)
	}
	if _, ok := errors.AsType[*RemoteError](err); !ok || errors.Is(err, ErrTransport) {
		t.Errorf("a rate-limited write: got %v, want a *RemoteError, not a transport error", err)
	}
	// Reads, and writes in process, are not limited.
	for range 5 {
		if err := p.Call(testCtx(t), addr, "Store.Get", &EchoArgs{}, &EchoReply{}); err != nil {
			t.Fatalf("read while writes are limited: %v", err)
		}
		if err := s.Call(testCtx(t), "Store.Put", &WriteArgs{}, &EchoReply{}); err != nil {
			t.Fatalf("in-process write while writes over the port are limited: %v", err)
		}
	}
	// The bucket refills.
	waitFor(t, 5*time.Second, "a write allowed again", func() bool { return put() == nil })
}

func TestWriteRateExempt(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.WriteRate, cfg.WriteBurst = 0.001, 1
	cfg.Forwarder = func(remote net.Addr) bool { return true }
	s, _ := startServer(t, cfg)
	if err := s.Register("Store", Store{}); err != nil {
		t.Fatal(err)
	}
	p, _ := newPool(t)
	for i := range 5 {
		if err := p.Call(testCtx(t), s.Addr().String(), "Store.Put", &WriteArgs{}, &EchoReply{}); err != nil {
			t.Fatalf("exempt write %d: %v", i+1, err)
		}
	}
}
