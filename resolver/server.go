package resolver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// readBufferSize is the size of the buffer a UDP query is read into: more
// than any query needs (a question and an OPT record), so none is cut
// (one larger is read cut, does not unpack, and gets FORMERR).
const readBufferSize = 4096

// socketReadBuffer is the receive buffer asked for each UDP socket
// (SO_RCVBUF; the kernel caps it at net.core.rmem_max). A reader answers
// a batch before it reads again, so datagrams wait in the socket while
// it does, and through a GC pause: the default (about 200 KiB, some 200
// small datagrams) overflowed under dnsperf's 800 queries in flight,
// dropping a few. 4 MiB holds a few thousand; it is memory only while
// datagrams wait.
const socketReadBuffer = 4 << 20

// bindAttempts is how often Start tries to find a port free for both TCP
// and UDP when Config.Addr has port 0.
const bindAttempts = 10

// networks names the servers of Server.servers, in order: TCP, then DNS
// over TLS when Config.TLSAddr is set. UDP is served by cairn's own
// readers (udp.go).
var networks = [...]string{"tcp", "tls"}

// Server is cairn's DNS server. Create it with New, then Start it; stop it
// with Shutdown. It is also a dns.Handler, which tests call directly.
type Server struct {
	cfg   Config
	zone  *zones.Zone   // the primary zone, zones[0]
	zones []*zones.Zone // the primary zone, then the alternative ones
	src   Source
	log   *slog.Logger

	panics       atomic.Uint64 // panics recovered while answering
	lastPanicLog atomic.Int64  // Unix nanoseconds of the last panic logged
	// metrics counts questions and latency (metrics.go). Its own
	// allocation: every query writes it, and in Server it would share
	// cache lines with fields every query reads on other cores.
	metrics *metrics
	// cookies is the key of server cookies (cookie.go).
	cookies cookieSecret
	// rrl limits the rate of UDP replies (rrl.go); nil when off.
	rrl *rrl
	// signer signs answers (dnssec.go); nil until a key is set.
	signer atomic.Pointer[signer]
	// packers holds the buffers and compression maps replies are packed
	// with (pack.go), so that packing allocates nothing.
	packers sync.Pool

	mu      sync.Mutex    // guards what follows
	state   int           // stateNew, stateStarted or stateStopped
	servers []*dns.Server // TCP and DNS over TLS
	udp     []*udpSocket  // the UDP sockets, all bound to udpAddr
	udpAddr net.Addr
	tcpAddr net.Addr
	tlsAddr net.Addr
	// tcp counts the TCP and TLS connections open, against
	// Config.MaxTCPConns and MaxTCPConnsPerClient (tcplimit.go); nil
	// with neither.
	tcp *tcpLimits
	wg  sync.WaitGroup // the serving goroutines, UDP readers included
}

const (
	stateNew = iota
	stateStarted
	stateStopped
)

// New returns a server answering from src for the names of zs: the
// primary zone first, then any alternative ones (other domains for the
// same names, such as Consul's alt_domain). A question is answered by the
// first zone whose domain it is under, so records such as SRV targets are
// spelt under the domain the question was asked in. A zone under an
// earlier one's domain could never answer and is an error. A nil logger
// discards the server's few log lines.
func New(cfg Config, zs []*zones.Zone, src Source, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkZones(zs); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("resolver: nil source")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, zone: zs[0], zones: slices.Clone(zs), src: src, log: logger.With("component", "resolver"),
		metrics: &metrics{epoch: time.Now()}, rrl: newRRL(cfg.RRL), cookies: newCookieSecret(cfg.CookieSecret)}
	if cfg.MaxTCPConns > 0 || cfg.MaxTCPConnsPerClient > 0 {
		s.tcp = newTCPLimits(cfg.MaxTCPConns, cfg.MaxTCPConnsPerClient, &s.metrics.tcpRefused)
	}
	return s, nil
}

// Start binds the UDP sockets (Config.UDPSockets) and the TCP listener
// (and the DNS over TLS listener when Config.TLSAddr is set), starts
// serving on each and returns once all serve. A bind error is returned
// and nothing is left running. Start may be called once.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return errors.New("resolver: server already started")
	}
	pcs, ln, err := listen(s.cfg.Addr, udpSockets(s.cfg.UDPSockets))
	if err != nil {
		return fmt.Errorf("start DNS server on %s: %w", s.cfg.Addr, err)
	}
	var tlsLn net.Listener
	if s.cfg.TLSAddr != "" {
		if tlsLn, err = net.Listen("tcp", s.cfg.TLSAddr); err != nil {
			closeAll(pcs)
			_ = ln.Close()
			return fmt.Errorf("start DNS over TLS on %s: %w", s.cfg.TLSAddr, err)
		}
	}
	s.state = stateStarted
	s.udpAddr, s.tcpAddr = pcs[0].LocalAddr(), ln.Addr()
	if tlsLn != nil {
		s.tlsAddr = tlsLn.Addr()
	}
	s.servers = []*dns.Server{s.streamServer(s.limit(ln))}
	if tlsLn != nil {
		// The cap counts the TCP connections under TLS (limit first, so a
		// connection over it is closed before any handshake); the
		// handshake itself runs at the first read, within ReadTimeout.
		s.servers = append(s.servers, s.streamServer(tls.NewListener(s.limit(tlsLn), s.cfg.TLS)))
	}
	type report struct {
		i   int
		err error // nil: serving
	}
	reports := make(chan report, len(s.servers))
	for i, srv := range s.servers {
		s.wg.Go(func() {
			serving := false // only this goroutine touches it
			srv.NotifyStartedFunc = func() { serving = true; reports <- report{i, nil} }
			err := srv.ActivateAndServe()
			switch {
			case !serving:
				reports <- report{i, orErr(err, errors.New("stopped before serving"))}
			case err != nil:
				s.log.Error("DNS server stopped", "net", networks[i], "err", err)
			}
		})
	}
	var errs []error
	var serving []*dns.Server
	for range s.servers {
		r := <-reports
		if r.err != nil {
			errs = append(errs, fmt.Errorf("serve %s: %w", networks[r.i], r.err))
			continue
		}
		serving = append(serving, s.servers[r.i])
	}
	if len(errs) == 0 {
		// Bound, UDP sockets queue datagrams already: their readers
		// cannot fail to start, so they start once the rest serves.
		s.udp = make([]*udpSocket, len(pcs))
		for i, pc := range pcs {
			a, _ := pc.LocalAddr().(*net.UDPAddr)
			s.udp[i] = &udpSocket{conn: pc, wild: a != nil && a.IP.IsUnspecified() && watchDestination(pc)}
		}
		s.startUDP(s.udp)
		return nil
	}
	for _, srv := range serving {
		_ = srv.ShutdownContext(context.Background()) // the start error is what matters
	}
	s.wg.Wait()
	closeAll(pcs)
	_ = ln.Close() // in case serving never began; closing twice is harmless
	if tlsLn != nil {
		_ = tlsLn.Close()
	}
	s.state = stateStopped
	s.udpAddr, s.tcpAddr, s.tlsAddr = nil, nil, nil
	return fmt.Errorf("start DNS server on %s: %w", s.cfg.Addr, errors.Join(errs...))
}

// streamServer serves DNS over TCP (or TLS) on ln: any number of queries
// per connection (RFC 7766), an idle one closed after TCPIdleTimeout.
func (s *Server) streamServer(ln net.Listener) *dns.Server {
	return &dns.Server{Listener: ln, Handler: s, ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout,
		MaxTCPQueries: -1, IdleTimeout: func() time.Duration { return s.cfg.TCPIdleTimeout }}
}

// limit puts ln under Config.MaxTCPConns and MaxTCPConnsPerClient,
// counted for every stream listener of s together (tcplimit.go).
func (s *Server) limit(ln net.Listener) net.Listener {
	if s.tcp == nil {
		return ln
	}
	return &tcpLimitListener{Listener: ln, l: s.tcp}
}

// orErr returns err, or def when err is nil.
func orErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// listen binds n UDP sockets and the TCP listener of addr. With port 0 it
// binds TCP to a free port first and then UDP to the same port, trying
// again with another port when that one is taken for UDP.
func listen(addr string, n int) ([]*net.UDPConn, net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	if p, _ := strconv.Atoi(port); p != 0 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		pcs, err := listenUDPs(addr, n)
		if err != nil {
			ln.Close()
			return nil, nil, err
		}
		return pcs, ln, nil
	}
	for attempt := 1; ; attempt++ {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		tcp := ln.Addr().(*net.TCPAddr)
		pcs, err := listenUDPs(net.JoinHostPort(tcp.IP.String(), strconv.Itoa(tcp.Port)), n)
		if err == nil {
			return pcs, ln, nil
		}
		ln.Close()
		if attempt == bindAttempts || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, err
		}
	}
}

// listenUDPs binds n UDP sockets to addr, sharing it (SO_REUSEPORT) when n
// is more than 1. On error none is left open.
func listenUDPs(addr string, n int) ([]*net.UDPConn, error) {
	pcs := make([]*net.UDPConn, 0, n)
	for range n {
		pc, err := listenUDP(addr, n > 1)
		if err != nil {
			closeAll(pcs)
			return nil, err
		}
		pcs = append(pcs, pc)
		if err := pc.SetReadBuffer(socketReadBuffer); err != nil {
			closeAll(pcs)
			return nil, fmt.Errorf("set the UDP receive buffer: %w", err)
		}
	}
	return pcs, nil
}

// closeAll closes each of pcs; closing one closed already is harmless.
func closeAll(pcs []*net.UDPConn) {
	for _, pc := range pcs {
		_ = pc.Close()
	}
}

// UDPAddr returns the address the UDP sockets are bound to (all the same
// one), nil before Start.
func (s *Server) UDPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.udpAddr
}

// TCPAddr returns the address the TCP listener is bound to, nil before
// Start.
func (s *Server) TCPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpAddr
}

// TLSAddr returns the address the DNS over TLS listener is bound to, nil
// before Start or without Config.TLSAddr.
func (s *Server) TLSAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tlsAddr
}

// Shutdown stops the listeners, lets the queries being answered finish
// until ctx is done, and waits for the serving goroutines to return (a
// query still waiting for its Source holds them up to Config.QueryTimeout
// longer). It returns ctx's error if ctx ended first. Shutting down a
// server that was never started, or a second time, does nothing.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateStarted {
		s.state = stateStopped
		return nil
	}
	s.state = stateStopped
	// A closed socket ends its readers' next read; each first finishes
	// (and replies to) the batch it is answering.
	for _, sock := range s.udp {
		_ = sock.conn.Close()
	}
	var errs []error
	for _, srv := range s.servers {
		if err := srv.ShutdownContext(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shut down DNS server: %w", err)
	}
	return nil
}
