package httpapi

import (
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// refuseWriteTimeout bounds writing the refusal to a connection over a
// limit. The few bytes fit in the send buffer of a new connection, so the
// write does not wait; the deadline only keeps a broken one from holding
// up the accept loop.
const refuseWriteTimeout = 100 * time.Millisecond

// refuseLogInterval is the least time between two log lines about refused
// connections.
const refuseLogInterval = time.Minute

// httpRefusal returns the whole response written to a connection refused
// with code: a status line, a JSON error body, and "Connection: close".
func httpRefusal(code int, status, msg string) []byte {
	body := `{"error":` + strconv.Quote(msg) + "}\n"
	return []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + status + "\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Connection: close\r\n\r\n" + body)
}

var (
	tooManyFromClient = httpRefusal(429, "Too Many Requests", "too many connections from this address: close some before opening more")
	tooManyInAll      = httpRefusal(503, "Service Unavailable", "the agent holds as many connections as it may: try again later")
)

// limitListener is a net.Listener that caps the connections it has
// accepted and that are still open: at most perClient from one remote IP
// address, at most total in all (0: no cap). A connection over a cap is
// accepted, answered with a minimal HTTP response (429 for the client cap,
// 503 for the total) and closed at once, and Accept goes on to the next
// one: leaving it in the backlog would not free its file descriptor's
// worth of kernel memory, and would stall every client behind it.
//
// Accept is called from the http.Server's one accept loop; the counts are
// also decremented from the connections' goroutines as they close.
type limitListener struct {
	net.Listener
	perClient, total int
	logger           *slog.Logger
	refused          atomic.Uint64 // connections refused so far
	lastLog          atomic.Int64  // Unix nanoseconds of the last log line about them

	mu   sync.Mutex // guards what follows
	live map[netip.Addr]int
	n    int
}

func newLimitListener(ln net.Listener, perClient, total int, logger *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, perClient: perClient, total: total, logger: logger, live: make(map[netip.Addr]int)}
}

// Accept returns the next connection within the limits, refusing those
// over them on the way.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		refusal, reason := l.admit(ip)
		if refusal == nil {
			return &countedConn{Conn: c, l: l, ip: ip}, nil
		}
		_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		_, _ = c.Write(refusal) // the client may be gone already: nothing to do about it
		_ = c.Close()
		l.noteRefused(ip, reason)
	}
}

// remoteIP returns the IP address c comes from (an IPv4-mapped IPv6
// address as the IPv4 one), or the zero Addr for a connection that is not
// TCP.
func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// admit counts a new connection from ip and returns nil, or returns the
// refusal to send it, and why, when it is over a limit.
func (l *limitListener) admit(ip netip.Addr) (refusal []byte, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total > 0 && l.n >= l.total {
		return tooManyInAll, "MaxConns"
	}
	if l.perClient > 0 && l.live[ip] >= l.perClient {
		return tooManyFromClient, "MaxConnsPerClient"
	}
	l.n++
	l.live[ip]++
	return nil, ""
}

// release forgets a connection from ip that closed.
func (l *limitListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.live[ip]--; l.live[ip] <= 0 {
		delete(l.live, ip)
	}
}

// noteRefused counts a refusal and logs it, unless a refusal was logged
// less than refuseLogInterval ago: a flood must not flood the log too.
func (l *limitListener) noteRefused(ip netip.Addr, limit string) {
	n := l.refused.Add(1)
	now, last := time.Now().UnixNano(), l.lastLog.Load()
	if now-last < int64(refuseLogInterval) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.logger.Warn("refusing HTTP connections over a limit", "client", ip.String(), "limit", limit, "refused", n)
}

// countedConn is a connection limitListener admitted; closing it (the
// first time) gives its place back.
type countedConn struct {
	net.Conn
	l      *limitListener
	ip     netip.Addr
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.ip)
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when it can, as net/http does to
// a *net.TCPConn before closing one whose request it did not read whole
// (so the client gets the response rather than a reset).
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
