package rpc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func samplePayload() Payload {
	return Payload{
		Name: "web",
		Tags: []string{"v1", "primary"},
		Meta: map[string]string{"env": "prod", "": "empty key"},
		TTL:  90 * time.Second,
		When: time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC),
		Inner: &Inner{
			Port:    8080,
			Weights: map[string]int{"passing": 10, "warning": 1},
			Options: QueryOptions{Datacenter: "dc2", MinQueryIndex: 42, MaxQueryTime: 3 * time.Minute, AllowStale: true},
		},
		Any:  map[string]any{"s": "x", "n": int64(-3), "nested": map[string]any{"b": true}},
		Blob: []byte{0, 1, 2, 255},
	}
}

func TestCallRoundTrip(t *testing.T) {
	s, _ := startServer(t, testConfig())
	p, _ := newPool(t)
	args := EchoArgs{Payload: samplePayload(), QueryOptions: QueryOptions{MinQueryIndex: 7, MaxQueryTime: time.Minute}}
	var reply EchoReply
	if err := p.Call(testCtx(t), s.Addr().String(), "Echo.Echo", &args, &reply); err != nil {
		t.Fatalf("Call: %v", err)
	}
	got, want := reply.Payload, args.Payload
	if !got.When.Equal(want.When) {
		t.Errorf("When: got %v, want %v", got.When, want.When)
	}
	got.When, want.When = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("payload:\ngot  %#v\nwant %#v", got, want)
	}
	if m := (QueryMeta{Index: 8, LastContact: time.Minute, KnownLeader: true}); reply.QueryMeta != m {
		t.Errorf("QueryMeta: got %+v, want %+v", reply.QueryMeta, m)
	}
	// A nil reply discards the answer.
	if err := p.Call(testCtx(t), s.Addr().String(), "Echo.Echo", &args, nil); err != nil {
		t.Fatalf("Call with nil reply: %v", err)
	}
}

func TestConcurrentCallsShareOneSession(t *testing.T) {
	s, _ := startServer(t, testConfig())
	p, dials := newPool(t)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			args := EchoArgs{Payload: Payload{Name: fmt.Sprint("call-", i)}}
			var reply EchoReply
			if err := p.Call(testCtx(t), s.Addr().String(), "Echo.Echo", &args, &reply); err != nil {
				errs <- err
				return
			}
			if reply.Payload.Name != args.Payload.Name {
				errs <- fmt.Errorf("got %q, want %q", reply.Payload.Name, args.Payload.Name)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("dials: got %d, want 1", got)
	}
	if got := s.sessionsServed.Load(); got != 1 {
		t.Errorf("sessions served: got %d, want 1", got)
	}
}

func TestRemoteErrorIsNotTransport(t *testing.T) {
	s, _ := startServer(t, testConfig())
	p, dials := newPool(t)
	addr := s.Addr().String()
	for _, tc := range []struct {
		method, fail, want string
	}{
		{"Echo.Fail", "not the leader", "not the leader"},
		{"Echo.Nope", "", "can't find method"},
		{"Nope.Echo", "", "can't find service"},
	} {
		err := p.Call(testCtx(t), addr, tc.method, &EchoArgs{Fail: tc.fail}, &EchoReply{})
		var remote *RemoteError
		if !errors.As(err, &remote) {
			t.Fatalf("%s: got %v, want a *RemoteError", tc.method, err)
		}
		if !strings.Contains(remote.Message, tc.want) {
			t.Errorf("%s: message %q, want it to contain %q", tc.method, remote.Message, tc.want)
		}
		if errors.Is(err, ErrTransport) {
			t.Errorf("%s: %v wraps ErrTransport", tc.method, err)
		}
	}
	// The session survives remote errors.
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("Call after remote errors: %v", err)
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("dials: got %d, want 1", got)
	}
}

func TestTransportErrorNoServer(t *testing.T) {
	s, _ := startServer(t, testConfig())
	addr := s.Addr().String()
	shutdown(t, s)
	p, _ := newPool(t)
	err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{})
	if !errors.Is(err, ErrTransport) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("got %v, want ErrTransport and ErrNotSent", err)
	}
	var remote *RemoteError
	if errors.As(err, &remote) {
		t.Errorf("got a RemoteError: %v", err)
	}
}

func TestShutdownMidCallThenRestart(t *testing.T) {
	s, echo := startServer(t, testConfig())
	echo.started = make(chan struct{})
	addr := s.Addr().String()
	p, dials := newPool(t)

	errc := make(chan error, 1)
	go func() {
		errc <- p.Call(testCtx(t), addr, "Echo.Slow", &EchoArgs{Delay: time.Minute}, &EchoReply{})
	}()
	select {
	case <-echo.started:
	case <-time.After(10 * time.Second):
		t.Fatal("Slow did not start")
	}
	shutdownDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdownDone <- s.Shutdown(ctx)
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrTransport) || errors.Is(err, ErrNotSent) {
			t.Errorf("call during shutdown: got %v, want ErrTransport, not ErrNotSent (it was sent)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call did not fail when the server shut down")
	}
	close(echo.stop) // Shutdown waits for the running method
	if err := <-shutdownDone; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	// A new server on the same address: the pool redials.
	cfg := testConfig()
	cfg.Addr = addr
	startServer(t, cfg)
	var last error
	waitFor(t, 10*time.Second, "a call to the restarted server", func() bool {
		last = p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{})
		if last != nil && !errors.Is(last, ErrTransport) {
			t.Fatalf("call to restarted server: %v", last)
		}
		return last == nil
	})
	if got := dials.Load(); got != 2 {
		t.Errorf("dials: got %d, want 2", got)
	}
}

func TestContextEndsSlowCall(t *testing.T) {
	s, _ := startServer(t, testConfig())
	addr := s.Addr().String()
	p, dials := newPool(t)

	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		ctx, cancel := tc.ctx()
		start := time.Now()
		err := p.Call(ctx, addr, "Echo.Slow", &EchoArgs{Delay: time.Minute}, &EchoReply{})
		elapsed := time.Since(start)
		cancel()
		if elapsed > 3*time.Second || elapsed < 50*time.Millisecond {
			t.Errorf("%s: returned after %s, want about 100ms", tc.name, elapsed)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		if errors.Is(err, ErrTransport) {
			t.Errorf("%s: %v wraps ErrTransport", tc.name, err)
		}
	}
	cancelCtx, cancel := context.WithCancel(context.Background())
	cancel()
	// An already ended context fails before any work.
	if err := p.Call(cancelCtx, addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); !errors.Is(err, context.Canceled) {
		t.Errorf("ended ctx: got %v, want context.Canceled", err)
	}
	// The session is still good.
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("Call after cancellations: %v", err)
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("dials: got %d, want 1", got)
	}
}

func TestMessageTooLarge(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageSize, cfg.MaxReplySize = 4096, 16384
	s, _ := startServer(t, cfg)
	addr := s.Addr().String()
	p, _ := newPool(t)
	big := Payload{Blob: make([]byte, 8192)}

	// Arguments too large for the pool's own limit: not sent.
	p.cfg.MaxMessageSize = 4096
	err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{Payload: big}, &EchoReply{})
	if !errors.Is(err, ErrMessageTooLarge) || errors.Is(err, ErrTransport) {
		t.Errorf("large args: got %v, want ErrMessageTooLarge and not ErrTransport", err)
	}
	// Arguments over the server's limit: the server closes the stream.
	p.cfg.MaxMessageSize = DefaultPoolConfig().MaxMessageSize
	err = p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{Payload: big}, &EchoReply{})
	if !errors.Is(err, ErrTransport) {
		t.Errorf("args over the server's limit: got %v, want ErrTransport", err)
	}
	// A reply over the server's request limit but within its reply
	// limit: answered (a read of a large catalog is legitimately big).
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{Pad: 8192}, &EchoReply{}); err != nil {
		t.Errorf("reply over MaxMessageSize, within MaxReplySize: got %v, want it answered", err)
	}
	// A reply over the server's reply limit: answered with an error.
	err = p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{Pad: 32768}, &EchoReply{})
	var remote *RemoteError
	if !errors.As(err, &remote) || !strings.Contains(remote.Message, "too large") {
		t.Errorf("large reply: got %v, want a RemoteError about size", err)
	}
	// A reply over the pool's own reply limit: refused as it arrives.
	p.cfg.MaxReplySize = 4096
	err = p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{Pad: 8192}, &EchoReply{})
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("reply over the pool's MaxReplySize: got %v, want ErrMessageTooLarge", err)
	}
	p.cfg.MaxReplySize = DefaultPoolConfig().MaxReplySize
	// The session still serves.
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("Call after large messages: %v", err)
	}
}

func TestCodecErrorOnReplyMismatch(t *testing.T) {
	s, _ := startServer(t, testConfig())
	p, _ := newPool(t)
	var wrong struct{ Payload int }
	err := p.Call(testCtx(t), s.Addr().String(), "Echo.Echo", &EchoArgs{Payload: Payload{Name: "x"}}, &wrong)
	if !errors.Is(err, ErrCodec) || errors.Is(err, ErrTransport) {
		t.Errorf("got %v, want ErrCodec and not ErrTransport", err)
	}
}

func TestPoolClosed(t *testing.T) {
	s, _ := startServer(t, testConfig())
	p, _ := newPool(t)
	addr := s.Addr().String()
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("after Close: got %v, want ErrPoolClosed", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
