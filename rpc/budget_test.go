package rpc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// poolFrom returns a pool whose connections leave from ip, closed at the
// end of the test.
func poolFrom(t *testing.T, ip string) *Pool {
	t.Helper()
	cfg := DefaultPoolConfig()
	cfg.DialTimeout, cfg.SourceAddr = 2*time.Second, ip
	p, err := NewPool(cfg, nil)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// dialFrom opens a TCP connection from ip to addr, closed at the end of
// the test.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// usedBy is what the client at ip holds in s's budget.
func usedBy(s *Server, ip string) clientUse {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	if u := s.budget.used[ip]; u != nil {
		return *u
	}
	return clientUse{}
}

// TestMaxConnsPerClient: connections from one address past the cap are
// closed as they are accepted, before the handshake timeout; another
// address is served; a Raft connection stops counting once Raft has it;
// a slot freed is taken again.
func TestMaxConnsPerClient(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConnsPerClient = 2
	cfg.HandshakeTimeout = time.Minute // held connections stay in their handshake
	s, _ := startServer(t, cfg)
	addr := s.Addr().String()

	held := []net.Conn{dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)}
	waitFor(t, 10*time.Second, "two connections in their handshake", func() bool {
		return testutil.ToFloat64(s.metrics.conns) == 2
	})
	start := time.Now()
	expectClosed(t, dialFrom(t, "127.0.0.1", addr), 10*time.Second)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("third connection closed after %s: the handshake timeout, not the cap", took)
	}
	// The count may land just after the client sees the close.
	waitFor(t, 10*time.Second, "the refused connection counted", func() bool {
		return testutil.ToFloat64(s.metrics.refused.WithLabelValues("max_conns_per_client")) == 1
	})
	if err := poolFrom(t, "127.0.0.2").Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("call from another address: %v", err)
	}

	// A Raft connection counts only until Raft has it.
	held[0].Close()
	waitFor(t, 10*time.Second, "the closed connection to stop counting", func() bool {
		return usedBy(s, "127.0.0.1").conns == 1
	})
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := s.RaftLayer().Accept()
		if err == nil {
			accepted <- c
		}
	}()
	raft, err := s.RaftLayer().Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("raft dial: %v", err)
	}
	defer raft.Close()
	defer within(t, accepted, 10*time.Second, "Raft to accept").Close()
	held[1].Close()
	p := poolFrom(t, "127.0.0.1")
	waitFor(t, 10*time.Second, "a call from the capped address once its connections closed", func() bool {
		return p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}) == nil
	})
	// One RPC session, the Raft connection not counted: room for one more.
	second := dialFrom(t, "127.0.0.1", addr)
	if _, err := second.Write([]byte{RPCByte}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the pool's session and the second connection counted", func() bool {
		return usedBy(s, "127.0.0.1").conns == 2
	})
	expectClosed(t, dialFrom(t, "127.0.0.1", addr), 10*time.Second)
}

// TestMaxCallsPerClient: calls of one address over all its connections
// past the cap are answered with ErrTooManyCalls at once, without
// running; another address is served; a call that ends frees its slot.
func TestMaxCallsPerClient(t *testing.T) {
	cfg := testConfig()
	cfg.MaxCallsPerClient = 2
	s, echo := startServer(t, cfg)
	echo.started = make(chan struct{}, 2)
	addr := s.Addr().String()
	p1, p2 := poolFrom(t, "127.0.0.1"), poolFrom(t, "127.0.0.1") // two connections

	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 2)
	for _, p := range []*Pool{p1, p2} {
		go func() { errc <- p.Call(ctx, addr, "Echo.Block", &EchoArgs{}, &EchoReply{}) }()
	}
	for range 2 {
		within(t, echo.started, 10*time.Second, "Block to start")
	}
	if n := testutil.ToFloat64(s.metrics.inFlight); n != 2 {
		t.Errorf("calls in flight: got %v, want 2", n)
	}
	for _, p := range []*Pool{p1, p2} {
		err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{})
		var remote *RemoteError
		if !errors.Is(err, ErrTooManyCalls) || !errors.As(err, &remote) || errors.Is(err, ErrTransport) {
			t.Errorf("call over the cap: got %v, want a RemoteError wrapping ErrTooManyCalls", err)
		}
	}
	if n := testutil.ToFloat64(s.metrics.refused.WithLabelValues("max_calls_per_client")); n != 2 {
		t.Errorf("refused calls counted: got %v, want 2", n)
	}
	if err := poolFrom(t, "127.0.0.2").Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("call from another address: %v", err)
	}
	cancel()
	for range 2 {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("Block: got %v, want context.Canceled", err)
		}
	}
	waitFor(t, 10*time.Second, "a free call slot", func() bool {
		return p1.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}) == nil
	})
}

// TestForwarderHasNoCallCap: a server forwarding its clients' calls is not
// held to MaxCallsPerClient.
func TestForwarderHasNoCallCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxCallsPerClient = 1
	cfg.Forwarder = func(remote net.Addr) bool { return hostOf(remote) == "127.0.0.1" }
	s, echo := startServer(t, cfg)
	echo.started = make(chan struct{}, 2)
	addr := s.Addr().String()
	p := poolFrom(t, "127.0.0.1")
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	errc := make(chan error, 2)
	for range 2 {
		go func() { errc <- p.Call(ctx, addr, "Echo.Block", &EchoArgs{}, &EchoReply{}) }()
	}
	for range 2 {
		within(t, echo.started, 10*time.Second, "Block to start")
	}
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Errorf("a forwarder's third call: %v", err)
	}
	cancel()
	for range 2 {
		<-errc
	}
}
