package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Pool makes RPC calls to servers. It keeps one yamux session per server
// address, dialed on first use, and opens one stream per call, so any
// number of concurrent calls share a connection. A session that fails is
// replaced by the next call to that address.
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

	mu     sync.Mutex
	conns  map[string]*poolConn
	closed bool
	wg     sync.WaitGroup
}

// poolConn is the session to one address, or its dial in progress.
type poolConn struct {
	ready chan struct{}  // closed when the dial has ended
	sess  *yamux.Session // set before ready is closed, if the dial worked
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
		var d net.Dialer
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
		conns:      make(map[string]*poolConn),
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
//   - context.Canceled, context.DeadlineExceeded: ctx ended;
//   - ErrPoolClosed: after Close.
func (p *Pool) Call(ctx context.Context, addr, method string, args, reply any) error {
	err := p.call(ctx, addr, method, args, reply)
	if err != nil {
		return fmt.Errorf("rpc %s to %s: %w", method, addr, err)
	}
	return nil
}

func (p *Pool) call(ctx context.Context, addr, method string, args, reply any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sess, err := p.session(ctx, addr)
	if err != nil {
		return err
	}
	// OpenStream does not block on the network; it waits only when
	// yamux's backlog of unacknowledged streams is full.
	stream, err := sess.OpenStream()
	if err != nil {
		p.drop(addr, sess)
		return notSentError(err)
	}
	defer closeQuietly(stream)
	if deadline, ok := ctx.Deadline(); ok {
		_ = stream.SetDeadline(deadline)
	}
	// On cancellation, a deadline in the past wakes the blocked read or
	// write; the deferred Close then ends the stream.
	stop := context.AfterFunc(ctx, func() { _ = stream.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	err = newStreamCodec(stream, p.cfg.MaxMessageSize).call(method, args, reply)
	var remote *RemoteError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &remote), errors.Is(err, ErrCodec), errors.Is(err, ErrMessageTooLarge):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, yamux.ErrTimeout) && deadlinePassed(ctx):
		// The stream's deadline can fire a moment before ctx's timer.
		return context.DeadlineExceeded
	}
	if sess.IsClosed() {
		p.drop(addr, sess)
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

// session returns the live session to addr, dialing it (once, however
// many callers wait) if there is none.
func (p *Pool) session(ctx context.Context, addr string) (*yamux.Session, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	pc := p.conns[addr]
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
		p.conns[addr] = pc
		p.wg.Go(func() { p.connect(addr, pc) })
	}
	p.mu.Unlock()

	select {
	case <-pc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if pc.err != nil {
		return nil, pc.err
	}
	return pc.sess, nil
}

// connect dials addr and starts the session of pc. It runs on its own
// goroutine so that callers can give up waiting (their ctx) without
// aborting a dial others wait for.
func (p *Pool) connect(addr string, pc *poolConn) {
	sess, err := p.open(addr)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.closed { // Close has already closed the others
		closeQuietly(sess)
		sess, err = nil, ErrPoolClosed
	}
	pc.sess, pc.err = sess, err
	close(pc.ready)
}

func (p *Pool) open(addr string) (*yamux.Session, error) {
	ctx, cancel := context.WithTimeout(p.dialCtx, p.cfg.DialTimeout)
	defer cancel()
	conn, err := p.dial(ctx, addr)
	if err != nil {
		return nil, notSentError(fmt.Errorf("dial: %w", err))
	}
	deadline, _ := ctx.Deadline()
	if err := writeFirstByte(conn, RPCByte, deadline); err != nil {
		closeQuietly(conn)
		return nil, notSentError(err)
	}
	sess, err := yamux.Client(conn, p.yamux)
	if err != nil { // only for an invalid config, which NewPool rules out
		closeQuietly(conn)
		return nil, notSentError(err)
	}
	return sess, nil
}

// drop forgets sess, if it is still the session to addr, and closes it,
// so that the next call dials again.
func (p *Pool) drop(addr string, sess *yamux.Session) {
	p.mu.Lock()
	if pc := p.conns[addr]; pc != nil && pc.sess == sess {
		delete(p.conns, addr)
	}
	p.mu.Unlock()
	closeQuietly(sess)
}

// Close closes every session (calls in flight fail with ErrTransport),
// aborts dials in progress and waits for them. Calls after Close fail
// with ErrPoolClosed. Close is idempotent and returns nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cancelDial()
	var sessions []*yamux.Session
	for addr, pc := range p.conns {
		select {
		case <-pc.ready:
			if pc.sess != nil {
				sessions = append(sessions, pc.sess)
			}
		default: // connect sees closed and closes its own session
		}
		delete(p.conns, addr)
	}
	p.mu.Unlock()
	for _, sess := range sessions {
		closeQuietly(sess)
	}
	p.wg.Wait()
	return nil
}
