package rpc

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRaftLayerDialAccept(t *testing.T) {
	a, _ := startServer(t, testConfig())
	b, _ := startServer(t, testConfig())

	type accepted struct {
		conn net.Conn
		err  error
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := a.RaftLayer().Accept()
		acc <- accepted{c, err}
	}()

	conn, err := b.RaftLayer().Dial(a.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	payload := []byte{RaftByte, RPCByte, 'r', 'a', 'f', 't', 0}
	if _, err := conn.Write(payload); err != nil {
		t.Fatalf("Write: %v", err)
	}

	var got accepted
	select {
	case got = <-acc:
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not return")
	}
	if got.err != nil {
		t.Fatalf("Accept: %v", got.err)
	}
	defer got.conn.Close()
	buf := make([]byte, len(payload))
	_ = got.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(got.conn, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(buf, payload) {
		t.Errorf("payload: got %v, want %v (first byte consumed, the rest intact)", buf, payload)
	}
	// And back.
	if _, err := got.conn.Write([]byte("ok")); err != nil {
		t.Fatalf("write back: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	back := make([]byte, 2)
	if _, err := io.ReadFull(conn, back); err != nil || string(back) != "ok" {
		t.Errorf("read back: got %q, %v; want \"ok\"", back, err)
	}
	if got, want := a.RaftLayer().Addr().String(), a.Addr().String(); got != want {
		t.Errorf("layer Addr: got %s, want %s", got, want)
	}
}

func TestRaftLayerCloseUnblocksAccept(t *testing.T) {
	s, _ := startServer(t, testConfig())
	errc := make(chan error, 1)
	go func() {
		_, err := s.RaftLayer().Accept()
		errc <- err
	}()
	if err := s.RaftLayer().Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: got %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still blocked after Close")
	}
	// A Raft connection arriving now is closed by the server.
	conn, err := s.RaftLayer().Dial(s.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	expectClosed(t, conn, 5*time.Second)
}

func TestAdvertiseAddr(t *testing.T) {
	cfg := testConfig()
	cfg.AdvertiseAddr = "10.1.2.3:8300"
	s, _ := startServer(t, cfg)
	if got := s.RaftLayer().Addr().String(); got != cfg.AdvertiseAddr {
		t.Errorf("layer Addr: got %s, want %s", got, cfg.AdvertiseAddr)
	}
}

// expectClosed waits for the server to close conn: a read ends in EOF or
// a reset, not in a timeout.
func expectClosed(t *testing.T, conn net.Conn, within time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %s", within)
	}
}

func TestRefusedConnections(t *testing.T) {
	cfg := testConfig()
	cfg.HandshakeTimeout = 200 * time.Millisecond
	logs := &lockedBuffer{}
	s, _ := startServerLogged(t, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	addr := s.Addr().String()
	p, _ := newPool(t)

	t.Run("garbage", func(t *testing.T) {
		for _, first := range []string{"GET / HTTP/1.1\r\n\r\n", "\x00", "\xff\x01\x02"} {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write([]byte(first)); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, conn, 2*time.Second)
			conn.Close()
		}
	})
	t.Run("silent", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		expectClosed(t, conn, 5*time.Second)
		if elapsed := time.Since(start); elapsed < 100*time.Millisecond {
			t.Errorf("closed after %s, before the handshake timeout", elapsed)
		}
	})
	t.Run("still serving", func(t *testing.T) {
		if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
			t.Fatalf("Call: %v", err)
		}
	})
	// Four refusals, one debug line: the rest are counted, not logged.
	out := logs.String()
	if n := strings.Count(out, "refused connection"); n != 1 {
		t.Errorf("refusal log lines: got %d, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "level=INFO") || strings.Contains(out, "level=WARN") {
		t.Errorf("refusals logged above debug:\n%s", out)
	}
	s.mu.Lock()
	pending := len(s.pending)
	s.mu.Unlock()
	if pending != 0 {
		t.Errorf("connections in handshake: got %d, want 0", pending)
	}
}

func TestServerLifecycle(t *testing.T) {
	s, _ := startServer(t, testConfig())
	if err := s.Start(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("second Start: got %v, want ErrServerClosed", err)
	}
	shutdown(t, s)
	shutdown(t, s) // idempotent
	if err := s.Start(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Start after Shutdown: got %v, want ErrServerClosed", err)
	}
	if err := s.Register("Echo", newEcho()); err == nil {
		t.Error("registering a name twice: got nil error")
	}
}

func TestConfigValidate(t *testing.T) {
	srv := DefaultServerConfig()
	if err := srv.Validate(); err != nil {
		t.Errorf("DefaultServerConfig: %v", err)
	}
	pool := DefaultPoolConfig()
	if err := pool.Validate(); err != nil {
		t.Errorf("DefaultPoolConfig: %v", err)
	}
	if err := DefaultBlockingLimits().Validate(); err != nil {
		t.Errorf("DefaultBlockingLimits: %v", err)
	}
	srv = ServerConfig{Addr: "nope", AdvertiseAddr: "x:99999", MaxMessageSize: 10, MaxConnsPerClient: -1, MaxCallsPerClient: -1}
	pool = PoolConfig{MaxMessageSize: -1}
	limits := BlockingLimits{Default: time.Minute, Max: time.Second, JitterFraction: -1}
	for _, tc := range []struct {
		name   string
		err    error
		fields []string
	}{
		{"server", srv.Validate(), []string{"Addr", "AdvertiseAddr", "HandshakeTimeout", "MaxMessageSize", "MaxReplySize", "MaxConnsPerClient", "MaxCallsPerClient", "KeepAliveInterval", "ConnectionWriteTimeout"}},
		{"pool", pool.Validate(), []string{"DialTimeout", "MaxMessageSize", "MaxReplySize", "KeepAliveInterval", "ConnectionWriteTimeout"}},
		{"limits", limits.Validate(), []string{"Max", "JitterFraction"}},
	} {
		if tc.err == nil {
			t.Errorf("%s: got nil error", tc.name)
			continue
		}
		for _, f := range tc.fields {
			if !strings.Contains(tc.err.Error(), f+":") {
				t.Errorf("%s: error %q does not name %s", tc.name, tc.err, f)
			}
		}
	}
	if _, err := NewServer(srv, nil); err == nil {
		t.Error("NewServer with a bad config: got nil error")
	}
	if _, err := NewPool(pool, nil); err == nil {
		t.Error("NewPool with a bad config: got nil error")
	}
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines to
// write to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
