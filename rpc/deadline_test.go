package rpc

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Counter counts the calls it runs.
type Counter struct{ runs atomic.Int64 }

func (c *Counter) Bump(_ context.Context, _ *EchoArgs, _ *EchoReply) error {
	c.runs.Add(1)
	return nil
}

// serveOne has s serve one stream carrying a request for method with
// deadline (zero: none), and returns the response's error text.
func serveOne(t *testing.T, s *Server, method string, deadline time.Time) string {
	t.Helper()
	req := requestHeader{ServiceMethod: method, Seq: 1}
	if !deadline.IsZero() {
		req.Deadline = deadline.UnixNano()
	}
	var in, out bytes.Buffer
	if err := newStreamCodec(nopCloser{ReadWriter: &in}, 1<<20, 1<<20).writeFrame(req, &EchoArgs{}); err != nil {
		t.Fatal(err)
	}
	s.serveStream(streamInput{Reader: &in, Writer: &out}, nil)
	c := newStreamCodec(nopCloser{ReadWriter: &out}, 1<<20, 1<<20)
	if err := c.readFrame(); err != nil {
		t.Fatalf("no response: %v", err)
	}
	var h responseHeader
	if err := c.dec.Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Error
}

// TestRequestReadAfterItsDeadlineIsNotRun: a request a server reads only
// after its caller's deadline (the server was stopped, say, and the
// caller has given up and maybe sent it elsewhere) is answered with an
// error and not run; one within its deadline runs.
func TestRequestReadAfterItsDeadlineIsNotRun(t *testing.T) {
	s, _ := newLocalServer(t)
	counter := &Counter{}
	if err := s.Register("Counter", counter); err != nil {
		t.Fatal(err)
	}
	if msg := serveOne(t, s, "Counter.Bump", time.Now().Add(-time.Second)); !strings.Contains(msg, "deadline") {
		t.Errorf("late request: got error %q, want one about the deadline", msg)
	}
	if n := counter.runs.Load(); n != 0 {
		t.Fatalf("late request ran %d times, want 0", n)
	}
	if msg := serveOne(t, s, "Counter.Bump", time.Now().Add(time.Minute)); msg != "" {
		t.Errorf("request within its deadline: got error %q", msg)
	}
	if msg := serveOne(t, s, "Counter.Bump", time.Time{}); msg != "" {
		t.Errorf("request without a deadline: got error %q", msg)
	}
	if n := counter.runs.Load(); n != 2 {
		t.Errorf("requests in time ran %d times, want 2", n)
	}
}

// TestCallCarriesItsDeadline: the method runs under the caller's
// deadline, sent with the request.
func TestCallCarriesItsDeadline(t *testing.T) {
	s, _ := startServer(t, testConfig())
	got := make(chan time.Time, 1)
	if err := s.Register("Clock", &clock{got: got}); err != nil {
		t.Fatal(err)
	}
	p, _ := newPool(t)
	deadline := time.Now().Add(42 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := p.Call(ctx, s.Addr().String(), "Clock.Deadline", &EchoArgs{}, &EchoReply{}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; !d.Equal(time.Unix(0, deadline.UnixNano())) {
		t.Errorf("method's deadline %v, want the caller's %v", d, deadline)
	}
}

type clock struct{ got chan time.Time }

func (c *clock) Deadline(ctx context.Context, _ *EchoArgs, _ *EchoReply) error {
	d, _ := ctx.Deadline()
	c.got <- d
	return nil
}
