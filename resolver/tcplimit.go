package resolver

import (
	"errors"
	"net"
	"net/netip"
	"sync"
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

// ipv6ClientBits is the prefix of an IPv6 source address counted as one
// client by Config.MaxTCPConnsPerClient: a host is commonly given a whole
// /64, and any address of it completes a handshake.
const ipv6ClientBits = 64

// tcpLimits counts the stream connections (TCP and DNS over TLS
// together) open at once, in all and per client address, against
// Config.MaxTCPConns and Config.MaxTCPConnsPerClient (0: no cap). A
// connection over either cap is closed as soon as it is accepted (and
// counted in refused), and Accept goes on to the next one. Closing it at
// once, rather than leaving it in the backlog, frees its file descriptor
// and keeps the clients behind it moving; the per-client cap keeps one
// address from taking every place of the global one. Accept is called
// from miekg/dns's accept loops, one per listener; connections are
// counted down from the goroutines serving them, as they close.
type tcpLimits struct {
	max, perClient int
	refused        *atomic.Uint64

	mu     sync.Mutex
	live   int
	client map[netip.Addr]int // only addresses with a connection open
}

func newTCPLimits(maxConns, perClient int, refused *atomic.Uint64) *tcpLimits {
	return &tcpLimits{max: maxConns, perClient: perClient, refused: refused, client: make(map[netip.Addr]int)}
}

// admit counts a connection from remote in, unless a cap is reached.
func (l *tcpLimits) admit(key netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.live >= l.max || l.perClient > 0 && l.client[key] >= l.perClient {
		return false
	}
	l.live++
	l.client[key]++
	return true
}

// release counts a connection admitted for key out.
func (l *tcpLimits) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live--
	if n := l.client[key] - 1; n > 0 {
		l.client[key] = n
	} else {
		delete(l.client, key)
	}
}

// clientKey names the client of a connection from addr: its IPv4
// address, or the /64 of its IPv6 one.
func clientKey(addr net.Addr) netip.Addr {
	a, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := a.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(ipv6ClientBits)
		ip = p.Addr()
	}
	return ip
}

// tcpLimitListener is a net.Listener whose connections are counted
// against its tcpLimits.
type tcpLimitListener struct {
	net.Listener
	l       *tcpLimits
	backoff time.Duration // only the accept loop touches it
}

// Accept returns the next connection within the caps.
func (ln *tcpLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			var ne net.Error
			//lint:ignore SA1019 Temporary is what miekg/dns retries on; back off before it does.
			if errors.As(err, &ne) && ne.Temporary() {
				ln.backoff = min(max(2*ln.backoff, acceptBackoffMin), acceptBackoffMax)
				time.Sleep(ln.backoff)
			}
			return nil, err
		}
		ln.backoff = 0
		key := clientKey(c.RemoteAddr())
		if !ln.l.admit(key) {
			_ = c.Close()
			ln.l.refused.Add(1)
			continue
		}
		return &tcpLimitConn{Conn: c, l: ln.l, key: key}, nil
	}
}

// tcpLimitConn is a connection tcpLimitListener admitted; closing it (the
// first time) gives its place back.
type tcpLimitConn struct {
	net.Conn
	l      *tcpLimits
	key    netip.Addr
	closed atomic.Bool
}

func (c *tcpLimitConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.key)
	}
	return c.Conn.Close()
}
