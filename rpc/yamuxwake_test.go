package rpc

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
)

// yamuxPair returns the client end of a yamux session over a pipe, with
// a stream opened on it.
func yamuxPair(t *testing.T) (*yamux.Session, *yamux.Stream) {
	t.Helper()
	a, b := net.Pipe()
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	client, err := yamux.Client(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	server, err := yamux.Server(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	stream, err := client.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	return client, stream
}

// blockedRead starts a read of stream and returns where its error goes.
func blockedRead(stream *yamux.Stream) <-chan error {
	read := make(chan error, 1)
	go func() {
		_, err := stream.Read(make([]byte, 1))
		read <- err
	}()
	return read
}

func wantReadEnds(t *testing.T, read <-chan error) {
	t.Helper()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("read returned data from a closed session")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still blocked 10s after its session shut down")
	}
}

// TestSessionShutdownWakesBlockedRead: a read blocked on a stream whose
// session shuts down (here from yamux's side, as a failed keepalive
// does) returns, and its stream was given a deadline in the past, the
// arrangement that keeps yamux v0.1.2 from spinning there.
func TestSessionShutdownWakesBlockedRead(t *testing.T) {
	t.Parallel()
	client, stream := yamuxPair(t)
	spy := &deadlineSpy{Stream: stream, sess: client}
	defer watchSession(client).add(spy)()

	read := blockedRead(stream)
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	wantReadEnds(t, read)
	deadline := time.Now().Add(10 * time.Second)
	for at, _ := spy.last(); at.IsZero() || !at.Before(time.Now()); at, _ = spy.last() {
		if time.Now().After(deadline) {
			t.Fatalf("stream deadline after shutdown = %v, want one in the past", at)
		}
		time.Sleep(time.Millisecond)
	}
	// A stream added after the shutdown is woken at once.
	late := &deadlineSpy{Stream: stream, sess: client}
	watchSession(client).add(late)()
	if at, _ := late.last(); !at.Before(time.Now()) {
		t.Errorf("deadline of a stream added after the shutdown = %v, want one in the past", at)
	}
}

// TestPoolWakesStreamsBeforeClosing: a session the pool closes itself
// (a server found hung, Forget, Close) has its streams woken before it is
// closed, so no read waits on it through the close.
func TestPoolWakesStreamsBeforeClosing(t *testing.T) {
	t.Parallel()
	client, stream := yamuxPair(t)
	pc := &poolConn{sess: client, wake: watchSession(client)}
	spy := &deadlineSpy{Stream: stream, sess: client}
	defer pc.wake.add(spy)()
	read := blockedRead(stream)
	pc.close()
	wantReadEnds(t, read)
	at, closed := spy.last()
	if !at.Before(time.Now()) {
		t.Errorf("stream deadline = %v, want one in the past", at)
	}
	if closed {
		t.Error("the stream was woken after its session had closed, want before")
	}
}

// deadlineSpy records the last deadline set on a stream, and whether its
// session was closed then.
type deadlineSpy struct {
	*yamux.Stream
	sess   *yamux.Session
	mu     sync.Mutex
	at     time.Time
	closed bool
}

func (s *deadlineSpy) SetDeadline(t time.Time) error {
	s.mu.Lock()
	s.at, s.closed = t, s.sess.IsClosed()
	s.mu.Unlock()
	return s.Stream.SetDeadline(t)
}

func (s *deadlineSpy) last() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at, s.closed
}
