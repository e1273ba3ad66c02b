package rpc

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Counter counts the calls it runs.
type Counter struct{ runs atomic.Int64 }

func (c *Counter) Bump(_ context.Context, _ *EchoArgs, _ *EchoReply) error {
	c.runs.Add(1)
	return nil
}

// serveOne has s serve one stream carrying a request for method with
// deadline (zero: none) as a caller of the previous release sends it (an
// absolute time only), and returns the response's error text.
func serveOne(t *testing.T, s *Server, method string, deadline time.Time) string {
	t.Helper()
	req := requestHeader{ServiceMethod: method, Seq: 1}
	if !deadline.IsZero() {
		req.Deadline = deadline.UnixNano()
	}
	return serveHeader(t, s, nil, req)
}

// serveHeader has s serve one stream carrying req, on a session whose
// transit baseline is b, and returns the response's error text.
func serveHeader(t *testing.T, s *Server, b *transitBaseline, req requestHeader) string {
	t.Helper()
	var in, out bytes.Buffer
	if err := newStreamCodec(nopCloser{ReadWriter: &in}, 1<<20, 1<<20).writeFrame(req, &EchoArgs{}); err != nil {
		t.Fatal(err)
	}
	s.serveStream(streamInput{Reader: &in, Writer: &out}, nil, b, "")
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
	// The server's deadline is its arrival plus the time left: the
	// caller's, give or take the transit.
	d := <-got
	if d.Sub(deadline).Abs() > time.Second {
		t.Errorf("method's deadline %v, want about the caller's %v", d, deadline)
	}
	t.Logf("the server's deadline is %v after the caller's", d.Sub(deadline))
}

type clock struct{ got chan time.Time }

func (c *clock) Deadline(ctx context.Context, _ *EchoArgs, _ *EchoReply) error {
	d, _ := ctx.Deadline()
	c.got <- d
	return nil
}

// TestRequestTimeLeftIsPreferredToAClock: a request carries the time its
// caller has left; the absolute deadline beside it (for servers of the
// previous release) is read by the caller's clock, which may be off, and
// is not used when the time left is there. A caller whose clock is 5s
// behind sends a deadline that is already past here; its request runs.
func TestRequestTimeLeftIsPreferredToAClock(t *testing.T) {
	s, _ := newLocalServer(t)
	counter := &Counter{}
	if err := s.Register("Counter", counter); err != nil {
		t.Fatal(err)
	}
	behind := time.Now().Add(-5 * time.Second)
	req := requestHeader{ServiceMethod: "Counter.Bump", Seq: 1, Sent: int64(time.Millisecond),
		Timeout: int64(2 * time.Second), Deadline: behind.Add(2 * time.Second).UnixNano()}
	if msg := serveHeader(t, s, newTransitBaseline(time.Now()), req); msg != "" {
		t.Errorf("request with 2s left from a caller 5s behind: got error %q", msg)
	}
	if n := counter.runs.Load(); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}

// TestRequestHeldUpOnTheWayLosesThatTime: a request that took 10s longer
// on the way than its session's handshake and other requests (held in a
// partition's retransmit queue, or read by a server that was stopped)
// lost those 10s: with 7s left when sent, its caller has given up, and it
// is not run. One that came as fast as the others runs. The first
// request of a session is measured against the handshake.
func TestRequestHeldUpOnTheWayLosesThatTime(t *testing.T) {
	s, _ := newLocalServer(t)
	counter := &Counter{}
	if err := s.Register("Counter", counter); err != nil {
		t.Fatal(err)
	}
	const left = int64(7 * time.Second)
	// Sessions that began 30s ago here (and at the caller).
	began := time.Now().Add(-30 * time.Second)
	fresh := requestHeader{ServiceMethod: "Counter.Bump", Seq: 1, Sent: int64(30 * time.Second), Timeout: left}
	held := requestHeader{ServiceMethod: "Counter.Bump", Seq: 1, Sent: int64(20 * time.Second), Timeout: left}

	b := newTransitBaseline(began)
	if msg := serveHeader(t, s, b, fresh); msg != "" {
		t.Fatalf("request that came at once: got error %q", msg)
	}
	if msg := serveHeader(t, s, b, held); !strings.Contains(msg, "deadline") {
		t.Errorf("request held up 10s with 7s left: got error %q, want one about the deadline", msg)
	}
	if msg := serveHeader(t, s, newTransitBaseline(began), held); !strings.Contains(msg, "deadline") {
		t.Errorf("first request of a session, held up 10s with 7s left: got error %q, want one about the deadline", msg)
	}
	if n := counter.runs.Load(); n != 1 {
		t.Errorf("ran %d times, want 1 (the held-up ones must not run)", n)
	}
}

// TestHeadersKeepThePreviousReleasesFields: a server of the previous
// release reads a request header of this one (its Deadline, the fields
// it does not know ignored), and a caller of the previous release reads
// a response header of this one.
func TestHeadersKeepThePreviousReleasesFields(t *testing.T) {
	type prevRequest struct {
		ServiceMethod string
		Seq           uint64
		Deadline      int64
	}
	type prevResponse struct {
		ServiceMethod string
		Seq           uint64
		Error         string
	}
	var req, resp []byte
	if err := codec.NewEncoderBytes(&req, msgpackHandle).Encode(requestHeader{ServiceMethod: "A.B", Seq: 1, Deadline: 5, Timeout: 7, Sent: 9}); err != nil {
		t.Fatal(err)
	}
	if err := codec.NewEncoderBytes(&resp, msgpackHandle).Encode(responseHeader{ServiceMethod: "A.B", Seq: 1, Error: "no", Now: 3}); err != nil {
		t.Fatal(err)
	}
	var pr prevRequest
	if err := codec.NewDecoderBytes(req, msgpackHandle).Decode(&pr); err != nil || pr != (prevRequest{"A.B", 1, 5}) {
		t.Errorf("request header as the previous release reads it: got %+v, %v", pr, err)
	}
	var ps prevResponse
	if err := codec.NewDecoderBytes(resp, msgpackHandle).Decode(&ps); err != nil || ps != (prevResponse{"A.B", 1, "no"}) {
		t.Errorf("response header as the previous release reads it: got %+v, %v", ps, err)
	}
}
