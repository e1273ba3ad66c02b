package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Pool makes RPC calls to servers. It keeps one yamux session per server
// address, dialed on first use, and opens one stream per call, so any
// number of concurrent calls share a connection. A session that fails is
// replaced by the next call to that address.
//
// With PoolConfig.TLS, a session is dialed for a datacenter (Call's is
// PoolConfig.Datacenter, CallDC's the one named) and the server's
// certificate verified for it; sessions are kept per datacenter and
// address, so that one verified as a server of one datacenter never
// carries a call meant for another.
//
// Call and Close may be called from any goroutine.
type Pool struct {
	cfg    PoolConfig
	logger *slog.Logger
	yamux  *yamux.Config
	dial   func(ctx context.Context, addr string) (net.Conn, error)

	// dialCtx is the pool's lifetime, not a request's: Close cancels it
	// to abort dials in progress (the way net/http keeps a base context).
	dialCtx    context.Context
	cancelDial context.CancelFunc

	metrics *poolMetrics // metrics.go
	skew    *skewMeter   // skew.go

	coalesce coalescer // batch.go

	mu     sync.Mutex
	conns  map[poolKey]*poolConn
	closed bool
	wg     sync.WaitGroup
}

// poolKey names a session: the datacenter it was verified for
// (lowercase) and the server's address.
type poolKey struct{ dc, addr string }

// poolConn is the session to one address, or its dial in progress.
type poolConn struct {
	ready chan struct{}  // closed when the dial has ended
	sess  *yamux.Session // set before ready is closed, if the dial worked
	wake  *sessionWaker  // with sess: its streams (yamuxwake.go)
	epoch time.Time      // with sess: when it began, for requestHeader.Sent
	err   error          // set before ready is closed, if it did not
}

// NewPool returns an empty pool. logger gets the component attribute
// "rpc".
func NewPool(cfg PoolConfig, logger *slog.Logger) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "rpc")
	dial := cfg.Dial
	if dial == nil {
		d := net.Dialer{}
		if src := sourceAddr(cfg.SourceAddr); src != nil {
			d.LocalAddr = src
		}
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{
		cfg:        cfg,
		logger:     logger,
		yamux:      yamuxConfig(cfg.KeepAliveInterval, cfg.ConnectionWriteTimeout, logger),
		dial:       dial,
		dialCtx:    ctx,
		cancelDial: cancel,
		conns:      make(map[poolKey]*poolConn),
		metrics:    newPoolMetrics(),
		skew:       newSkewMeter(logger, cfg.ClockOffset),
	}, nil
}

// Call calls method ("Service.Method") on the server at addr with args
// and decodes the result into reply (a pointer, or nil to discard it).
//
// ctx bounds the whole call: its deadline becomes the stream's, and when
// it ends the call returns at once with an error wrapping ctx.Err(). The
// errors are told apart with errors.Is and errors.As:
//   - *RemoteError: the server ran (or refused) the call and said no;
//   - ErrTransport: the server could not be reached or the connection
//     failed, before or during the call — retry a read elsewhere; it
//     also wraps ErrNotSent when the request was never written, so that
//     a write may be retried too;
//   - ErrCodec or ErrMessageTooLarge: args or reply do not fit the wire;
//   - context.Canceled, context.DeadlineExceeded: ctx ended (with
//     ErrNotSent when that was before the request was written);
//   - ErrPoolClosed: after Close.
//
// The server is one of PoolConfig.Datacenter: with TLS, its certificate is
// verified for that datacenter.
func (p *Pool) Call(ctx context.Context, addr, method string, args, reply any) error {
	return p.CallDC(ctx, p.cfg.Datacenter, addr, method, args, reply)
}

// CallDC is Call to a server of datacenter dc ("" means
// PoolConfig.Datacenter): with TLS, the server's certificate is verified
// for dc (PoolConfig.TLS(dc)). A server forwarding a request to another
// datacenter calls it with that datacenter's name. Without TLS it is Call.
func (p *Pool) CallDC(ctx context.Context, dc, addr, method string, args, reply any) error {
	if dc == "" {
		dc = p.cfg.Datacenter
	}
	start := time.Now()
	err := p.call(ctx, poolKey{dc: strings.ToLower(dc), addr: addr}, method, args, reply)
	p.metrics.observe(dc, args, err, time.Since(start))
	if err != nil {
		return fmt.Errorf("rpc %s to %s: %w", method, addr, err)
	}
	return nil
}

func (p *Pool) call(ctx context.Context, key poolKey, method string, args, reply any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pc, err := p.session(ctx, key)
	if err != nil {
		return err
	}
	sess := pc.sess
	// OpenStream does not block on the network; it waits only when
	// yamux's backlog of unacknowledged streams is full.
	stream, err := sess.OpenStream()
	if err != nil {
		p.drop(key, pc)
		return notSentError(err)
	}
	defer closeQuietly(stream)
	// When ctx ends (canceled, or at its deadline), a deadline in the
	// past wakes the blocked read or write; the deferred Close then ends
	// the stream. The stream gets no deadline of its own: yamux would
	// start a timer on each wait for data.
	deadline, _ := ctx.Deadline()
	stop := context.AfterFunc(ctx, func() { _ = stream.SetDeadline(pastDeadline) })
	defer stop()
	defer pc.wake.add(stream)() // yamuxwake.go

	c := newStreamCodec(stream, p.cfg.MaxReplySize, p.cfg.MaxMessageSize)
	c.clockOffset = p.cfg.ClockOffset
	sent := time.Now()
	err = c.call(method, deadline, pc.epoch, args, reply)
	p.skew.observe(key.addr, sent, time.Now(), c.serverNow) // skew.go
	var remote *RemoteError
	switch {
	case err == nil:
		return nil
	case deadlinePassed(ctx):
		// The server ran the method under this same deadline (it goes
		// with the request), so its failure at the deadline is the
		// caller's own deadline passing, whichever timer fired first.
		return context.DeadlineExceeded
	case errors.As(err, &remote), errors.Is(err, ErrCodec), errors.Is(err, ErrMessageTooLarge):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if sess.IsClosed() {
		p.drop(key, pc)
	}
	return transportError(err)
}

func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

func transportError(err error) error {
	return fmt.Errorf("%w: %w", ErrTransport, err)
}

// notSentError is a transport error that happened before any of the
// request was written: the server cannot have run it.
func notSentError(err error) error {
	return fmt.Errorf("%w: %w: %w", ErrTransport, ErrNotSent, err)
}

// session returns the live session of key, dialing it (once, however
// many callers wait) if there is none.
func (p *Pool) session(ctx context.Context, key poolKey) (*poolConn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	pc := p.conns[key]
	if pc != nil {
		select {
		case <-pc.ready:
			if pc.err != nil || pc.sess.IsClosed() {
				pc = nil // failed or broken: dial again
			}
		default: // a dial in progress: wait for it
		}
	}
	if pc == nil {
		pc = &poolConn{ready: make(chan struct{})}
		p.conns[key] = pc
		p.wg.Go(func() { p.connect(key, pc) })
	}
	p.mu.Unlock()

	select {
	case <-pc.ready:
	case <-ctx.Done():
		// Nothing was sent on the session yet: the request cannot run.
		return nil, fmt.Errorf("%w: waiting for a session: %w", ErrNotSent, ctx.Err())
	}
	if pc.err != nil {
		return nil, pc.err
	}
	return pc, nil
}

// connect dials key's server and starts the session of pc. It runs on its
// own goroutine so that callers can give up waiting (their ctx) without
// aborting a dial others wait for.
func (p *Pool) connect(key poolKey, pc *poolConn) {
	sess, epoch, err := p.open(key)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.closed { // Close has already closed the others
		closeQuietly(sess)
		sess, err = nil, ErrPoolClosed
	}
	pc.sess, pc.epoch, pc.err = sess, epoch, err
	if sess != nil {
		pc.wake = watchSession(sess)
	}
	close(pc.ready)
}

// open dials key's server, runs the TLS handshake when the pool has TLS
// for key's datacenter, starts a session and waits for the server to
// answer a ping on it, all within DialTimeout. It returns when the
// session began here: when the answer came, after the server's session
// began (firstPing).
func (p *Pool) open(key poolKey) (*yamux.Session, time.Time, error) {
	ctx, cancel := context.WithTimeout(p.dialCtx, p.cfg.DialTimeout)
	defer cancel()
	conn, err := p.dial(ctx, key.addr)
	if err != nil {
		return nil, time.Time{}, notSentError(fmt.Errorf("dial: %w", err))
	}
	if p.cfg.TLS != nil {
		if cfg := p.cfg.TLS(key.dc); cfg != nil {
			if conn, err = startTLS(ctx, conn, cfg, key.addr); err != nil {
				return nil, time.Time{}, notSentError(err)
			}
		}
	}
	deadline, _ := ctx.Deadline()
	if err := writeFirstByte(conn, RPCByte, deadline); err != nil {
		closeQuietly(conn)
		return nil, time.Time{}, notSentError(err)
	}
	// One write per data frame (frameconn.go).
	sess, err := yamux.Client(newFrameConn(conn), p.yamux)
	if err != nil { // only for an invalid config, which NewPool rules out
		closeQuietly(conn)
		return nil, time.Time{}, notSentError(err)
	}
	if err := firstPing(ctx, sess); err != nil {
		closeQuietly(sess)
		return nil, time.Time{}, notSentError(fmt.Errorf("first ping: %w", err))
	}
	return sess, time.Now(), nil
}

// firstPing pings a new session's server and waits, until ctx ends, for
// the answer, before any request goes on the session. A server that hung
// before reading the connection's first bytes would read a request sent
// behind them together with them when it resumes, and could not tell
// that the request waited: its session, and the transit baseline, begin
// only then (transit.go). The answer proves the server's session has
// begun; the session's age here counts from it, so that no request's
// transit is measured from a start later than the request's sending.
func firstPing(ctx context.Context, sess *yamux.Session) error {
	done := make(chan error, 1)
	go func() {
		_, err := sess.Ping()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		closeQuietly(sess) // ends the Ping
		<-done
		return ctx.Err()
	}
}

// drop forgets pc, if it is still the session of key, and closes it, so
// that the next call dials again.
func (p *Pool) drop(key poolKey, pc *poolConn) {
	p.mu.Lock()
	if p.conns[key] == pc {
		delete(p.conns, key)
	}
	p.mu.Unlock()
	pc.close()
}

// close closes pc's session, waking its calls and streams first
// (yamuxwake.go).
func (pc *poolConn) close() {
	pc.wake.wake()
	closeQuietly(pc.sess)
}

// Close closes every session (calls in flight fail with ErrTransport),
// aborts dials in progress and waits for them. Calls after Close fail
// with ErrPoolClosed. Close is idempotent and returns nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cancelDial()
	var open []*poolConn
	for key, pc := range p.conns {
		select {
		case <-pc.ready:
			if pc.sess != nil {
				open = append(open, pc)
			}
		default: // connect sees closed and closes its own session
		}
		delete(p.conns, key)
	}
	p.mu.Unlock()
	for _, pc := range open {
		pc.close()
	}
	p.wg.Wait()
	return nil
}

// Probe checks, within ctx, that the server at addr (of the pool's
// datacenter) answers on the session calls to it use, with a yamux ping:
// a server that is hung (stopped, or cut off by a partition) keeps its TCP
// connections open and its calls unanswered, and only a ping tells it from
// one that is merely slow. With no session yet, one is dialed. An error
// wraps ErrTransport, or is ctx's.
func (p *Pool) Probe(ctx context.Context, addr string) error {
	return p.ProbeDC(ctx, "", addr)
}

// ProbeDC is Probe of a server of datacenter dc, as CallDC is Call.
func (p *Pool) ProbeDC(ctx context.Context, dc, addr string) error {
	if dc == "" {
		dc = p.cfg.Datacenter
	}
	key := poolKey{dc: strings.ToLower(dc), addr: addr}
	pc, err := p.session(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	sess := pc.sess
	done := make(chan error, 1)
	// Ping waits up to ConnectionWriteTimeout on its own: it runs on a
	// goroutine that ctx does not hold up, and ends by that timeout.
	p.wg.Go(func() {
		_, err := sess.Ping()
		done <- err
	})
	select {
	case err := <-done:
		if err != nil {
			return transportError(fmt.Errorf("ping %s: %w", addr, err))
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Forget closes the session to the server at addr (of the pool's
// datacenter), if there is one: calls in flight on it fail at once with
// ErrTransport, and the next call dials again. A caller that found the
// server hung uses it so that every call waiting on that server moves on.
func (p *Pool) Forget(addr string) {
	key := poolKey{dc: strings.ToLower(p.cfg.Datacenter), addr: addr}
	p.mu.Lock()
	pc := p.conns[key]
	p.mu.Unlock()
	if pc == nil {
		return
	}
	select {
	case <-pc.ready:
		if pc.sess != nil {
			p.drop(key, pc)
		}
	default: // a dial in progress: it ends by DialTimeout
	}
}
