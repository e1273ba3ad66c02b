package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/internal/waittest"
)

// Inner and Payload exercise the msgpack round trip: nesting, pointers,
// maps, slices, durations, times and embedded envelopes.
type Inner struct {
	Port    int
	Weights map[string]int
	Options QueryOptions
}

type Payload struct {
	Name  string
	Tags  []string
	Meta  map[string]string
	TTL   time.Duration
	When  time.Time
	Inner *Inner
	Any   map[string]any
	Blob  []byte
}

type EchoArgs struct {
	Payload Payload
	Delay   time.Duration // Slow: how long to take
	Fail    string        // Fail: the error to return
	Pad     int           // Echo: bytes added to the reply's Blob
	QueryOptions
}

type EchoReply struct {
	Payload Payload
	QueryMeta
}

// Echo is the test service.
type Echo struct {
	stop    chan struct{} // closed at the end of the test: Slow returns
	started chan struct{} // Slow and Block send on it, if not nil, when they start
	// ended receives, if not nil, the cause of each Block's ctx ending.
	ended chan error
}

func newEcho() *Echo { return &Echo{stop: make(chan struct{})} }

func (e *Echo) Echo(_ context.Context, args *EchoArgs, reply *EchoReply) error {
	reply.Payload = args.Payload
	if args.Pad > 0 {
		reply.Payload.Blob = append(reply.Payload.Blob, make([]byte, args.Pad)...)
	}
	reply.Index = args.MinQueryIndex + 1
	reply.KnownLeader = true
	reply.LastContact = args.MaxQueryTime
	return nil
}

func (e *Echo) Fail(_ context.Context, args *EchoArgs, reply *EchoReply) error {
	return errors.New(args.Fail)
}

// Slow answers after args.Delay, or when the test ends: it ignores ctx, as
// a method that cannot be interrupted does.
func (e *Echo) Slow(_ context.Context, args *EchoArgs, reply *EchoReply) error {
	e.start()
	select {
	case <-time.After(args.Delay):
	case <-e.stop:
	}
	reply.Payload = args.Payload
	return nil
}

// Block waits for ctx to end, as a blocking query does, reports the
// cause on ended, and answers with its latest result (the args).
func (e *Echo) Block(ctx context.Context, args *EchoArgs, reply *EchoReply) error {
	if err := e.hold(ctx); err != nil {
		return err
	}
	reply.Payload = args.Payload
	return nil
}

// hold tells started, waits for ctx to end and reports the cause on
// ended; it fails if the test ends first.
func (e *Echo) hold(ctx context.Context) error {
	e.start()
	select {
	case <-ctx.Done():
	case <-e.stop:
		return errors.New("the test ended before ctx did")
	}
	if e.ended != nil {
		e.ended <- context.Cause(ctx)
	}
	return nil
}

func (e *Echo) start() {
	if e.started != nil {
		select {
		case e.started <- struct{}{}:
		case <-e.stop:
		}
	}
}

// testConfig is a server config for tests: a free port on loopback.
func testConfig() ServerConfig {
	cfg := DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	return cfg
}

// startServer starts a server with an Echo service, shut down at the end
// of the test (Echo's slow calls released first).
func startServer(t testing.TB, cfg ServerConfig) (*Server, *Echo) {
	t.Helper()
	return startServerLogged(t, cfg, nil)
}

// startServerLogged is startServer with a logger.
func startServerLogged(t testing.TB, cfg ServerConfig, logger *slog.Logger) (*Server, *Echo) {
	t.Helper()
	s, err := NewServer(cfg, logger)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	echo := newEcho()
	if err := s.Register("Echo", echo); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		select {
		case <-echo.stop:
		default:
			close(echo.stop)
		}
		shutdown(t, s)
	})
	return s, echo
}

func shutdown(t testing.TB, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// newPool returns a pool, closed at the end of the test, and the number
// of connections it has dialed so far.
func newPool(t testing.TB) (*Pool, *atomic.Int64) {
	t.Helper()
	dials := new(atomic.Int64)
	cfg := DefaultPoolConfig()
	cfg.DialTimeout = 2 * time.Second
	cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	p, err := NewPool(cfg, nil)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, dials
}

// testCtx bounds a call in a test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waittest.For(t, timeout, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}
