package rpc

import (
	"context"
	"crypto/tls"
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
// With ServerConfig.RaftTLS set, Dial speaks TLS (TLSByte, a handshake,
// then RaftByte inside); Accept returns connections over TLS as
// *tls.Conn.
//
// Accept, Dial, Close and Addr may be called from any goroutine.
type Layer struct {
	addr  atomic.Pointer[net.Addr]
	conns chan net.Conn
	tls   *tls.Config // of Dial; nil for plain
	// source is the local address Dial connects from; nil lets the
	// system choose.
	source *net.TCPAddr

	closeOnce sync.Once
	done      chan struct{}
}

var _ net.Listener = (*Layer)(nil)

func newLayer(tlsConfig *tls.Config) *Layer {
	return &Layer{conns: make(chan net.Conn), done: make(chan struct{}), tls: tlsConfig}
}

// sourceAddr is the local address to dial from: ip (port chosen by the
// system), or nil for the system's choice when ip is empty.
func sourceAddr(ip string) *net.TCPAddr {
	if ip == "" {
		return nil
	}
	return &net.TCPAddr{IP: net.ParseIP(ip)}
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
// the returned connection arrives on that server's Layer.Accept. With
// ServerConfig.RaftTLS it writes TLSByte first and RaftByte inside the TLS
// session, and returns the *tls.Conn. timeout bounds the dial, the
// handshake and the first writes together.
func (l *Layer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	d := &net.Dialer{Deadline: deadline}
	if l.source != nil {
		d.LocalAddr = l.source
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rpc: raft dial %s: %w", addr, err)
	}
	if l.tls != nil {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		conn, err = startTLS(ctx, conn, l.tls, addr)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("rpc: raft dial %s: %w", addr, err)
		}
	}
	if err := writeFirstByte(conn, RaftByte, deadline); err != nil {
		closeQuietly(conn)
		return nil, fmt.Errorf("rpc: raft dial %s: %w", addr, err)
	}
	return conn, nil
}

// startTLS writes TLSByte to conn and runs the client side of a TLS
// handshake over it with cfg, until ctx ends (it must have a deadline).
// On error conn is closed.
//
// With TLS 1.3 the client's handshake ends before the server has checked
// the client's certificate: a server that refuses it closes the
// connection afterwards, which the caller sees at its next read.
func startTLS(ctx context.Context, conn net.Conn, cfg *tls.Config, addr string) (*tls.Conn, error) {
	deadline, _ := ctx.Deadline()
	if err := writeFirstByte(conn, TLSByte, deadline); err != nil {
		closeQuietly(conn)
		return nil, err
	}
	tc := tls.Client(conn, withServerName(cfg, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		closeQuietly(conn)
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
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
