package resolver

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Backoff after a failed Accept that may succeed later (out of file
// descriptors, mostly): miekg/dns retries such an error at once, which
// would spin a core for as long as the process is out of them.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = 500 * time.Millisecond
)

// tcpLimitListener is a net.Listener serving at most max connections at
// once, counted in live, which several listeners may share (plain TCP and
// DNS over TLS count against one cap): a connection over that is closed as soon as it is accepted (and
// counted in refused), and Accept goes on to the next one. Closing it at
// once, rather than leaving it in the backlog, frees its file descriptor
// and keeps the clients behind it moving. Accept is called from
// miekg/dns's one accept loop; connections are counted down from the
// goroutines serving them, as they close.
type tcpLimitListener struct {
	net.Listener
	max     int64
	live    *atomic.Int64
	refused *atomic.Uint64
	backoff time.Duration // only the accept loop touches it
}

func newTCPLimitListener(ln net.Listener, maxConns int, live *atomic.Int64, refused *atomic.Uint64) *tcpLimitListener {
	return &tcpLimitListener{Listener: ln, max: int64(maxConns), live: live, refused: refused}
}

// Accept returns the next connection within the cap.
func (l *tcpLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			//lint:ignore SA1019 Temporary is what miekg/dns retries on; back off before it does.
			if errors.As(err, &ne) && ne.Temporary() {
				l.backoff = min(max(2*l.backoff, acceptBackoffMin), acceptBackoffMax)
				time.Sleep(l.backoff)
			}
			return nil, err
		}
		l.backoff = 0
		if l.live.Add(1) > l.max {
			l.live.Add(-1)
			_ = c.Close()
			l.refused.Add(1)
			continue
		}
		return &tcpLimitConn{Conn: c, l: l}, nil
	}
}

// tcpLimitConn is a connection tcpLimitListener admitted; closing it (the
// first time) gives its place back.
type tcpLimitConn struct {
	net.Conn
	l      *tcpLimitListener
	closed atomic.Bool
}

func (c *tcpLimitConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.live.Add(-1)
	}
	return c.Conn.Close()
}
