package rpc

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
)

// TestSessionShutdownWakesBlockedRead: a read blocked on a stream whose
// session shuts down returns, and its stream was given a deadline in the
// past, the arrangement that keeps yamux v0.1.2 from spinning there.
func TestSessionShutdownWakesBlockedRead(t *testing.T) {
	t.Parallel()
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
	defer server.Close()
	stream, err := client.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	spy := &deadlineSpy{Stream: stream}
	defer wakeOnDone(sessionDone(client), spy)()

	read := make(chan error, 1)
	go func() {
		_, err := stream.Read(make([]byte, 1))
		read <- err
	}()
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("read returned data from a closed session")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still blocked 10s after its session shut down")
	}
	deadline := time.Now().Add(10 * time.Second)
	for spy.last().IsZero() || !spy.last().Before(time.Now()) {
		if time.Now().After(deadline) {
			t.Fatalf("stream deadline after shutdown = %v, want one in the past", spy.last())
		}
		time.Sleep(time.Millisecond)
	}
}

// deadlineSpy records the last deadline set on a stream.
type deadlineSpy struct {
	*yamux.Stream
	mu sync.Mutex
	at time.Time
}

func (s *deadlineSpy) SetDeadline(t time.Time) error {
	s.mu.Lock()
	s.at = t
	s.mu.Unlock()
	return s.Stream.SetDeadline(t)
}

func (s *deadlineSpy) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}
