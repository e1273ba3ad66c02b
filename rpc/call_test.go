package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// within waits for a value on c, failing the test after timeout.
func within[T any](t *testing.T, c <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
		panic("unreachable")
	}
}

// TestCallerGoneEndsServerMethod: a method blocked over the port sees its
// ctx end when the caller's ctx ends, whether cancelled or past its
// deadline: the pool closes the stream, and the server notices.
func TestCallerGoneEndsServerMethod(t *testing.T) {
	s, echo := startServer(t, testConfig())
	echo.started = make(chan struct{})
	echo.ended = make(chan error, 1)
	addr := s.Addr().String()
	p, _ := newPool(t)

	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		end  bool // cancel once the method has started
		want error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, true, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- p.Call(ctx, addr, "Echo.Block", &EchoArgs{}, &EchoReply{}) }()
			within(t, echo.started, 10*time.Second, "Block to start")
			if tc.end {
				cancel()
			}
			// Past a deadline the server's copy of it (sent with the
			// request) and the caller's timer race: the method may end and
			// its reply arrive just before the caller gives up.
			err := within(t, errc, 10*time.Second, "the call to return")
			if !errors.Is(err, tc.want) && !(tc.want == context.DeadlineExceeded && err == nil) {
				t.Errorf("call: got %v, want %v", err, tc.want)
			}
			// Past a deadline, the deadline sent with the request may end
			// the method's ctx before the server sees the caller go.
			cause := within(t, echo.ended, 10*time.Second, "the method's ctx to end")
			if !errors.Is(cause, errCallerGone) && !(tc.want == context.DeadlineExceeded && errors.Is(cause, context.DeadlineExceeded)) {
				t.Errorf("cause of the method's ctx ending: got %v, want errCallerGone or the caller's %v", cause, tc.want)
			}
		})
	}
	// The session still serves.
	if err := p.Call(testCtx(t), addr, "Echo.Echo", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatalf("Call after cancellations: %v", err)
	}
}

// TestShutdownEndsMethods: Shutdown ends the ctx of the methods running,
// through either door, and waits for them.
func TestShutdownEndsMethods(t *testing.T) {
	s, echo := startServer(t, testConfig())
	echo.started = make(chan struct{})
	echo.ended = make(chan error, 2)
	p, _ := newPool(t)

	wire := make(chan error, 1)
	go func() { wire <- p.Call(testCtx(t), s.Addr().String(), "Echo.Block", &EchoArgs{}, &EchoReply{}) }()
	within(t, echo.started, 10*time.Second, "Block over the port to start")
	local := make(chan error, 1)
	go func() { local <- s.Call(testCtx(t), "Echo.Block", &EchoArgs{}, &EchoReply{}) }()
	within(t, echo.started, 10*time.Second, "Block in process to start")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Shutdown has waited for both methods: their ctx ended.
	for range 2 {
		if cause := within(t, echo.ended, time.Second, "a method's ctx to end"); cause == nil {
			t.Error("a method's ctx ended without a cause")
		}
	}
	if err := within(t, wire, 10*time.Second, "the call over the port"); !errors.Is(err, ErrTransport) {
		t.Errorf("call over the port: got %v, want ErrTransport", err)
	}
	if err := within(t, local, 10*time.Second, "the call in process"); !errors.Is(err, ErrServerClosed) {
		t.Errorf("call in process: got %v, want ErrServerClosed", err)
	}
}

// newLocalServer returns a server with Echo registered that is never
// started, shut down at the end of the test.
func newLocalServer(t testing.TB) (*Server, *Echo) {
	t.Helper()
	s, err := NewServer(testConfig(), nil)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	echo := newEcho()
	if err := s.Register("Echo", echo); err != nil {
		t.Fatalf("Register: %v", err)
	}
	t.Cleanup(func() {
		close(echo.stop)
		shutdown(t, s)
	})
	return s, echo
}

func TestServerCallInProcess(t *testing.T) {
	s, echo := newLocalServer(t)
	if s.Addr() != nil {
		t.Fatalf("Addr: got %v, want nil before Start", s.Addr())
	}
	args := &EchoArgs{Payload: samplePayload(), QueryOptions: QueryOptions{MinQueryIndex: 7, MaxQueryTime: time.Minute}}
	var reply EchoReply
	if err := s.Call(testCtx(t), "Echo.Echo", args, &reply); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if m := (QueryMeta{Index: 8, LastContact: time.Minute, KnownLeader: true}); reply.QueryMeta != m {
		t.Errorf("QueryMeta: got %+v, want %+v", reply.QueryMeta, m)
	}
	// Nothing was encoded: the reply shares the args' memory.
	if &reply.Payload.Tags[0] != &args.Payload.Tags[0] || reply.Payload.Inner != args.Payload.Inner {
		t.Error("the reply holds copies of the args: they were encoded")
	}
	if err := s.Call(testCtx(t), "Echo.Echo", args, nil); err != nil {
		t.Errorf("Call with a nil reply: %v", err)
	}

	t.Run("wrong types", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			args, reply any
			want        []string
		}{
			{"args of another type", &EchoReply{}, &EchoReply{}, []string{"Echo.Echo", "args are *rpc.EchoReply", "*rpc.EchoArgs"}},
			{"args not a pointer", EchoArgs{}, &EchoReply{}, []string{"Echo.Echo", "args are rpc.EchoArgs", "*rpc.EchoArgs"}},
			{"nil args", nil, &EchoReply{}, []string{"Echo.Echo", "args are nil", "*rpc.EchoArgs"}},
			{"nil pointer args", (*EchoArgs)(nil), &EchoReply{}, []string{"Echo.Echo", "args are a nil *rpc.EchoArgs"}},
			{"reply of another type", &EchoArgs{}, &EchoArgs{}, []string{"Echo.Echo", "reply is *rpc.EchoArgs", "*rpc.EchoReply"}},
			{"nil pointer reply", &EchoArgs{}, (*EchoReply)(nil), []string{"Echo.Echo", "reply is a nil *rpc.EchoReply"}},
		} {
			err := s.Call(testCtx(t), "Echo.Echo", tc.args, tc.reply)
			if !errors.Is(err, ErrCodec) {
				t.Errorf("%s: got %v, want ErrCodec", tc.name, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not say %q", tc.name, err, w)
				}
			}
		}
	})

	t.Run("caller cancels", func(t *testing.T) {
		echo.started = make(chan struct{})
		echo.ended = make(chan error, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- s.Call(ctx, "Echo.Block", &EchoArgs{}, &EchoReply{}) }()
		within(t, echo.started, 10*time.Second, "Block to start")
		cancel()
		// Block answered (its latest result), but the caller stopped
		// waiting: its ctx's error, as Pool.Call gives.
		if err := within(t, errc, 10*time.Second, "Call to return"); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if cause := within(t, echo.ended, 10*time.Second, "the method's ctx to end"); !errors.Is(cause, context.Canceled) {
			t.Errorf("cause: got %v, want context.Canceled", cause)
		}
		done, stop := context.WithCancel(context.Background())
		stop()
		if err := s.Call(done, "Echo.Echo", &EchoArgs{}, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("ended ctx: got %v, want context.Canceled", err)
		}
	})
}

func TestServerCallAfterShutdown(t *testing.T) {
	s, _ := newLocalServer(t)
	shutdown(t, s)
	err := s.Call(testCtx(t), "Echo.Echo", &EchoArgs{}, &EchoReply{})
	if !errors.Is(err, ErrServerClosed) {
		t.Errorf("got %v, want ErrServerClosed", err)
	}
	if _, ok := errors.AsType[*RemoteError](err); ok {
		t.Errorf("%v is a RemoteError", err)
	}
}

// Endpoint fails the way the consensus endpoints do: with plain errors,
// some of them from a forward to another server, which the Server
// encodes with WireError.
type Endpoint struct{}

// endpointErrors are the errors Endpoint.Fail returns, by args.Fail.
var endpointErrors = map[string]error{
	"field":         fmt.Errorf("register node %q: %w", "n1", &catalog.FieldError{Field: `Meta["a b"]`, Reason: "is bad"}),
	"not found":     fmt.Errorf("node %q: %w", "n9", catalog.ErrNotFound),
	"no path":       fmt.Errorf("%w dc9", ErrNoPathToDatacenter),
	"consistency":   fmt.Errorf("read: %w", ErrConflictingConsistency),
	"encoded":       WireError(fmt.Errorf("deregister: %w", catalog.ErrNotFound)),
	"from leader":   newRemoteError(WireError(&catalog.FieldError{Field: "Port", Reason: "is out of range"}).Error()),
	"forward broke": fmt.Errorf("forward to leader %s: %w", "10.0.0.1:8300", transportError(errors.New("connection reset"))),
	"forward unsent": fmt.Errorf("forward to leader %s: %w", "10.0.0.1:8300",
		notSentError(errors.New("connection refused"))),
	"forward codec":    fmt.Errorf("forward: %w: bad reply", ErrCodec),
	"forward deadline": fmt.Errorf("forward to datacenter dc2: %w", context.DeadlineExceeded),
	// The endpoint closing (its server shutting down) cancels a forward
	// while the caller still waits.
	"forward cancelled": fmt.Errorf("forward to leader %s: %w", "10.0.0.1:8300", context.Canceled),
	"marker":            errors.New(wireMarker + `field "x" "y" z`),
	"plain":             errors.New("raft apply: timed out"),
	"empty":             errors.New(""),
}

func (Endpoint) Fail(_ context.Context, args *EchoArgs, _ *EchoReply) error {
	return endpointErrors[args.Fail]
}

func (Endpoint) Panic(context.Context, *EchoArgs, *EchoReply) error {
	panic("the endpoint broke")
}

// verdict is what a caller can tell of an error with errors.Is and
// errors.As.
type verdict struct {
	Remote        bool
	Message       string
	Field         catalog.FieldError
	HasField      bool
	NotFound      bool
	NoPath        bool
	Consistency   bool
	Transport     bool
	NotSent       bool
	Codec         bool
	Canceled      bool
	Deadline      bool
	ServerClosed  bool
	Stopping      bool
	MessageTooBig bool
}

func judge(err error) verdict {
	v := verdict{
		NotFound:      errors.Is(err, catalog.ErrNotFound),
		NoPath:        errors.Is(err, ErrNoPathToDatacenter),
		Consistency:   errors.Is(err, ErrConflictingConsistency),
		Transport:     errors.Is(err, ErrTransport),
		NotSent:       errors.Is(err, ErrNotSent),
		Codec:         errors.Is(err, ErrCodec),
		Canceled:      errors.Is(err, context.Canceled),
		Deadline:      errors.Is(err, context.DeadlineExceeded),
		ServerClosed:  errors.Is(err, ErrServerClosed),
		Stopping:      errors.Is(err, ErrServerStopping),
		MessageTooBig: errors.Is(err, ErrMessageTooLarge),
	}
	if r, ok := errors.AsType[*RemoteError](err); ok {
		v.Remote, v.Message = true, r.Message
	}
	if fe, ok := errors.AsType[*catalog.FieldError](err); ok {
		v.HasField, v.Field = true, *fe
	}
	return v
}

// TestCallErrorsMatchPool: for the same failure of an endpoint, Server.Call
// and Pool.Call give errors that errors.Is and errors.As see alike, with
// the same message, so a caller may use either door. An error the
// endpoint met forwarding (a transport error, a deadline) stays inside
// the remote error in both: it is not the caller's own. It arrives as a
// server that stopped before answering, which a caller knows what to do
// with, not as an error without a code.
func TestCallErrorsMatchPool(t *testing.T) {
	s, _ := startServer(t, testConfig())
	if err := s.Register("Endpoint", Endpoint{}); err != nil {
		t.Fatal(err)
	}
	p, _ := newPool(t)
	addr := s.Addr().String()

	type call struct{ method, fail string }
	calls := []call{{"Endpoint.Nope", ""}, {"Nope.Fail", ""}, {"Nope", ""}, {"Endpoint.Panic", ""}}
	for name := range endpointErrors {
		calls = append(calls, call{"Endpoint.Fail", name})
	}
	for _, c := range calls {
		what := c.method + " " + c.fail
		args := &EchoArgs{Fail: c.fail}
		overPort := judge(p.Call(testCtx(t), addr, c.method, args, &EchoReply{}))
		inProcess := judge(s.Call(testCtx(t), c.method, args, &EchoReply{}))
		if overPort != inProcess {
			t.Errorf("%s:\nPool.Call   %+v\nServer.Call %+v", what, overPort, inProcess)
		}
		if !inProcess.Remote || inProcess.Transport || inProcess.Codec || inProcess.Deadline || inProcess.Message == "" {
			t.Errorf("%s: got %+v, want a RemoteError with a message and nothing of the caller's own", what, inProcess)
		}
	}

	// And what each says, in process.
	for _, tc := range []struct {
		fail string
		want verdict
	}{
		{"field", verdict{Remote: true, Message: `register node "n1": Meta["a b"]: is bad`, HasField: true, Field: catalog.FieldError{Field: `Meta["a b"]`, Reason: "is bad"}}},
		{"not found", verdict{Remote: true, Message: `node "n9": not found`, NotFound: true}},
		{"no path", verdict{Remote: true, Message: "no path to datacenter dc9", NoPath: true}},
		{"consistency", verdict{Remote: true, Message: "read: " + ErrConflictingConsistency.Error(), Consistency: true}},
		{"encoded", verdict{Remote: true, Message: "deregister: not found", NotFound: true}},
		{"from leader", verdict{Remote: true, Message: "Port: is out of range", HasField: true, Field: catalog.FieldError{Field: "Port", Reason: "is out of range"}}},
		{"forward broke", verdict{Remote: true, Message: "the server stopped before answering: " + endpointErrors["forward broke"].Error(), Stopping: true}},
		{"forward deadline", verdict{Remote: true, Message: "the server stopped before answering: " + endpointErrors["forward deadline"].Error(), Stopping: true}},
		{"forward cancelled", verdict{Remote: true, Message: "the server stopped before answering: " + endpointErrors["forward cancelled"].Error(), Stopping: true}},
	} {
		got := judge(s.Call(testCtx(t), "Endpoint.Fail", &EchoArgs{Fail: tc.fail}, nil))
		if got != tc.want {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tc.fail, got, tc.want)
		}
	}
}

func TestRegisterShapes(t *testing.T) {
	s, err := NewServer(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, s)
	for _, tc := range []struct {
		name string
		rcvr any
		want []string // in the error; none: Register succeeds
	}{
		{"good", Endpoint{}, nil},
		{"helpers skipped", withHelpers{}, nil},
		{"old", oldShape{}, []string{"method old.Do", "func(*rpc.EchoArgs, *rpc.EchoReply) error", "context.Context"}},
		{"value", valueArgs{}, []string{"method value.Do", "func(context.Context, rpc.EchoArgs, *rpc.EchoReply) error", "pointers"}},
		{"no RPC method", noMethods{}, []string{"no exported method"}},
		{"undeclared", struct{}{}, []string{"RPCNeeds"}},
		{"nil", nil, []string{"nil"}},
	} {
		err := s.Register(tc.name, tc.rcvr)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != nil && err == nil:
			t.Errorf("%s: got nil error", tc.name)
		case err != nil:
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not say %q", tc.name, err, w)
				}
			}
		}
	}
	if err := s.Register("", Endpoint{}); err == nil {
		t.Error("empty name: got nil error")
	}
	if err := s.Register("a.b", Endpoint{}); err == nil {
		t.Error("name with a dot: got nil error")
	}
	var reply EchoReply
	if err := s.Call(testCtx(t), "helpers skipped.Do", &EchoArgs{Payload: Payload{Name: "x"}}, &reply); err != nil || reply.Payload.Name != "x" {
		t.Errorf("Do next to helpers: got %q, %v", reply.Payload.Name, err)
	}
	if _, err := s.methods.lookup("helpers skipped.Close"); err == nil {
		t.Error("Close was registered")
	}
}

type withHelpers struct{}

func (withHelpers) Do(_ context.Context, args *EchoArgs, reply *EchoReply) error {
	reply.Payload = args.Payload
	return nil
}
func (withHelpers) Close()                                         {}
func (withHelpers) Lookup(context.Context, string) (string, error) { return "", nil }
func (withHelpers) Apply(context.Context, string, int) (int, error) {
	return 0, nil
}

type oldShape struct{}

func (oldShape) Do(*EchoArgs, *EchoReply) error { return nil }

type valueArgs struct{}

func (valueArgs) Do(context.Context, EchoArgs, *EchoReply) error { return nil }

// BenchmarkServerCall is the cost of the in-process door: a lookup, type
// checks, a ctx tied to the server's life and a reflect call.
func BenchmarkServerCall(b *testing.B) {
	s, _ := newLocalServer(b)
	ctx := context.Background()
	args := &EchoArgs{Payload: Payload{Name: "web"}}
	var reply EchoReply
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Call(ctx, "Echo.Echo", args, &reply); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkServerCallParallel(b *testing.B) {
	s, _ := newLocalServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		args := &EchoArgs{Payload: Payload{Name: "web"}}
		var reply EchoReply
		for pb.Next() {
			if err := s.Call(ctx, "Echo.Echo", args, &reply); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPoolCall is the same call over loopback, for comparison.
func BenchmarkPoolCall(b *testing.B) {
	s, _ := startServer(b, testConfig())
	p, _ := newPool(b)
	addr := s.Addr().String()
	ctx := context.Background()
	args := &EchoArgs{Payload: Payload{Name: "web"}}
	var reply EchoReply
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Call(ctx, addr, "Echo.Echo", args, &reply); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPoolCallDeadline is BenchmarkPoolCall with a deadline on each
// call, as every call of an agent's door has.
func BenchmarkPoolCallDeadline(b *testing.B) {
	s, _ := startServer(b, testConfig())
	p, _ := newPool(b)
	addr := s.Addr().String()
	args := &EchoArgs{Payload: Payload{Name: "web"}}
	var reply EchoReply
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := p.Call(ctx, addr, "Echo.Echo", args, &reply)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}
