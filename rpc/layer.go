package rpc

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Layer is the Raft side of the server port: a net.Listener whose Accept
// returns the connections that started with RaftByte (that byte already
// read), and a Dial that opens such connections to other servers. The
// consensus package adapts it to raft.StreamLayer with a wrapper that
// converts the address type.
//
// Accept, Dial, Close and Addr may be called from any goroutine.
type Layer struct {
	addr  atomic.Pointer[net.Addr]
	conns chan net.Conn

	closeOnce sync.Once
	done      chan struct{}
}

var _ net.Listener = (*Layer)(nil)

func newLayer() *Layer {
	return &Layer{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *Layer) setAddr(a net.Addr) { l.addr.Store(&a) }

// Accept waits for the next Raft connection. After Close it returns an
// error wrapping net.ErrClosed.
func (l *Layer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("rpc: raft layer: %w", net.ErrClosed)
	}
}

// Close stops Accept; connections arriving afterwards are closed.
// Connections already accepted belong to their caller and stay open.
// Close is idempotent and always returns nil.
func (l *Layer) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr returns the address Raft should advertise: ServerConfig's
// AdvertiseAddr if set, else the listener's. It is nil until the
// server's Start has returned.
func (l *Layer) Addr() net.Addr {
	if a := l.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Dial connects to the server port at addr and writes RaftByte, so that
// the returned connection arrives on that server's Layer.Accept. timeout
// bounds the dial and the first write together.
func (l *Layer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	conn, err := (&net.Dialer{Deadline: deadline}).Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rpc: raft dial %s: %w", addr, err)
	}
	if err := writeFirstByte(conn, RaftByte, deadline); err != nil {
		closeQuietly(conn)
		return nil, fmt.Errorf("rpc: raft dial %s: %w", addr, err)
	}
	return conn, nil
}

// handoff gives conn to Accept, or closes it if the layer is closed (or
// stop is) first. It blocks while nobody accepts: Raft's transport
// accepts in a loop, and a peer that cannot get through retries.
func (l *Layer) handoff(conn net.Conn, stop <-chan struct{}) {
	select {
	case l.conns <- conn:
	case <-l.done:
		closeQuietly(conn)
	case <-stop:
		closeQuietly(conn)
	}
}

// writeFirstByte writes b to conn within deadline, then clears the
// connection's write deadline.
func writeFirstByte(conn net.Conn, b byte, deadline time.Time) error {
	if err := conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write([]byte{b}); err != nil {
		return err
	}
	return conn.SetWriteDeadline(time.Time{})
}
