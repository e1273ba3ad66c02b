package rpc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Count is the test stream method: it sends args.Pad replies, with
// Index 1 to Pad, then fails with args.Fail if it is set, returns if
// args.Delay is 0, and else waits for its ctx to end, reporting the cause
// on echo.ended.
func (e *Echo) Count(ctx context.Context, args *EchoArgs, send func(*EchoReply) error) error {
	for i := range args.Pad {
		r := &EchoReply{Payload: args.Payload}
		r.Index = uint64(i + 1)
		if err := send(r); err != nil {
			return err
		}
	}
	switch {
	case args.Fail != "":
		return errors.New(args.Fail)
	case args.Delay == 0:
		return nil
	}
	if err := e.hold(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// streamDoors starts a server with Echo and its Count stream, and returns
// the two ways to start a stream: over the port (a pool) and in process.
func streamDoors(t *testing.T) (*Server, *Echo, map[string]func(ctx context.Context, args *EchoArgs) (Stream, error)) {
	t.Helper()
	s, echo := startServer(t, testConfig())
	if err := RegisterStream(s, "Echo.Count", NeedPublic(), echo.Count); err != nil {
		t.Fatalf("RegisterStream: %v", err)
	}
	p, _ := newPool(t)
	return s, echo, map[string]func(ctx context.Context, args *EchoArgs) (Stream, error){
		"port": func(ctx context.Context, args *EchoArgs) (Stream, error) {
			return p.Stream(ctx, s.Addr().String(), "Echo.Count", args)
		},
		"in process": func(ctx context.Context, args *EchoArgs) (Stream, error) {
			return s.Stream(ctx, "Echo.Count", args)
		},
	}
}

func TestStreamRepliesThenEnd(t *testing.T) {
	t.Parallel()
	_, _, doors := streamDoors(t)
	for name, open := range doors {
		t.Run(name, func(t *testing.T) {
			for _, fail := range []string{"", "out of cheese"} {
				st, err := open(testCtx(t), &EchoArgs{Pad: 3, Fail: fail, Payload: Payload{Name: "p"}})
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				for want := uint64(1); want <= 3; want++ {
					var r EchoReply
					if err := st.Recv(testCtx(t), &r); err != nil || r.Index != want || r.Payload.Name != "p" {
						t.Fatalf("reply %d: got %+v, %v", want, r, err)
					}
				}
				err = st.Recv(testCtx(t), &EchoReply{})
				var remote *RemoteError
				switch {
				case fail == "" && (!errors.As(err, &remote) || !errors.Is(err, ErrStreamEnded)):
					t.Errorf("after the last reply of a method that returned: got %v, want a RemoteError wrapping ErrStreamEnded", err)
				case fail != "" && (!errors.As(err, &remote) || !strings.Contains(err.Error(), fail)):
					t.Errorf("after the last reply of a method that failed: got %v, want a RemoteError saying %q", err, fail)
				}
				if again := st.Recv(testCtx(t), &EchoReply{}); again == nil || again.Error() != err.Error() {
					t.Errorf("Recv after the end: got %v, want %v again", again, err)
				}
				_ = st.Close()
			}
		})
	}
}

// TestStreamCloseEndsMethod: closing a stream ends its method's ctx, and
// a Recv past its ctx's deadline returns without ending the method.
func TestStreamCloseEndsMethod(t *testing.T) {
	t.Parallel()
	_, echo, doors := streamDoors(t)
	echo.started = make(chan struct{})
	echo.ended = make(chan error, 1)
	for name, open := range doors {
		t.Run(name, func(t *testing.T) {
			st, err := open(testCtx(t), &EchoArgs{Pad: 1, Delay: time.Hour})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if err := st.Recv(testCtx(t), &EchoReply{}); err != nil {
				t.Fatalf("first reply: %v", err)
			}
			within(t, echo.started, 10*time.Second, "Count to wait")
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if err := st.Recv(ctx, &EchoReply{}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Recv on a quiet stream past its deadline: got %v, want DeadlineExceeded", err)
			}
			select {
			case cause := <-echo.ended:
				t.Fatalf("the method ended (%v) when a Recv gave up", cause)
			default:
			}
			_ = st.Close()
			cause := within(t, echo.ended, 10*time.Second, "the method's ctx to end")
			if name == "port" && !errors.Is(cause, errCallerGone) || name != "port" && !errors.Is(cause, context.Canceled) {
				t.Errorf("cause of the method's ctx ending: got %v", cause)
			}
		})
	}
}

// TestStreamShutdownEnds: Shutdown ends the streams in flight through
// either door, and waits for their methods.
func TestStreamShutdownEnds(t *testing.T) {
	t.Parallel()
	s, echo, doors := streamDoors(t)
	echo.started = make(chan struct{})
	var streams []Stream
	for _, name := range []string{"port", "in process"} {
		st, err := doors[name](testCtx(t), &EchoArgs{Delay: time.Hour})
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		defer st.Close()
		within(t, echo.started, 10*time.Second, "Count to wait")
		streams = append(streams, st)
	}
	shutdown(t, s)
	if err := streams[0].Recv(testCtx(t), &EchoReply{}); !errors.Is(err, ErrTransport) && !errors.Is(err, ErrServerStopping) {
		t.Errorf("stream over the port after Shutdown: got %v, want ErrTransport or ErrServerStopping", err)
	}
	if err := streams[1].Recv(testCtx(t), &EchoReply{}); !errors.Is(err, ErrServerClosed) {
		t.Errorf("stream in process after Shutdown: got %v, want ErrServerClosed", err)
	}
	if _, err := doors["in process"](testCtx(t), &EchoArgs{}); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Stream after Shutdown: got %v, want ErrServerClosed", err)
	}
}

func TestRegisterStreamRefuses(t *testing.T) {
	t.Parallel()
	s, echo := newLocalServer(t)
	for _, name := range []string{"Count", "Echo.", ".Count", "Echo.Count.More", "Echo.Echo"} {
		if err := RegisterStream(s, name, NeedPublic(), echo.Count); err == nil {
			t.Errorf("RegisterStream(%q): got nil, want an error", name)
		}
	}
	if err := RegisterStream(s, "Echo.Count", NeedPublic(), echo.Count); err != nil {
		t.Fatalf("RegisterStream: %v", err)
	}
	if err := RegisterStream(s, "Echo.Count", NeedPublic(), echo.Count); err == nil {
		t.Error("RegisterStream twice: got nil, want an error")
	}
	if err := s.Call(testCtx(t), "Echo.Count", &EchoArgs{}, &EchoReply{}); err == nil {
		t.Error("Call of a stream method: got nil, want an error")
	}
	if _, err := s.Stream(testCtx(t), "Echo.Echo", &EchoArgs{}); err == nil || !strings.Contains(err.Error(), "not a stream method") {
		t.Errorf("Stream of a call: got %v, want an error saying it is not a stream method", err)
	}
	if _, err := s.Stream(testCtx(t), "Echo.Count", &EchoReply{}); !errors.Is(err, ErrCodec) {
		t.Errorf("Stream with args of the wrong type: got %v, want ErrCodec", err)
	}
}

// pacer's stream method sends a reply each time next is sent to, so that
// every Recv of its caller waits for data, as a feed's does.
type pacer struct{ next chan struct{} }

func (p *pacer) Paced(ctx context.Context, _ *EchoArgs, send func(*EchoReply) error) error {
	for i := uint64(1); ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-p.next:
		}
		r := &EchoReply{}
		r.Index = i
		if err := send(r); err != nil {
			return err
		}
	}
}

// BenchmarkStreamRecvWaiting is one reply of a stream over the port whose
// Recv waits for it, with a deadline on each Recv as an agent's feed has.
func BenchmarkStreamRecvWaiting(b *testing.B) {
	s, _ := startServer(b, testConfig())
	pc := &pacer{next: make(chan struct{})}
	if err := RegisterStream(s, "Pacer.Paced", NeedPublic(), pc.Paced); err != nil {
		b.Fatal(err)
	}
	p, _ := newPool(b)
	st, err := p.Stream(context.Background(), s.Addr().String(), "Pacer.Paced", &EchoArgs{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var r EchoReply
	b.ReportAllocs()
	for b.Loop() {
		pc.next <- struct{}{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := st.Recv(ctx, &r)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}
