package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
)

// Server listens on the server port, reads each connection's first byte,
// and serves RPC sessions or hands Raft connections to its Layer.
//
// Its methods are served through two doors: over the port (Pool.Call, a
// stream per call) and in process (Call). Register may be called at any
// time; Start once; Shutdown once or more. All methods may be called from
// any goroutine.
type Server struct {
	cfg     ServerConfig
	logger  *slog.Logger
	methods registry
	yamux   *yamux.Config
	layer   *Layer

	// life is the server's lifetime, not a request's: Shutdown cancels
	// it, which ends the context of every call in flight through either
	// door (each call's own context derives from it or is tied to it).
	life     context.Context
	shutDown context.CancelFunc

	// badConn rate-limits the debug lines about refused connections,
	// peerRefused the warnings about peers' traffic refused (admit),
	// limited those about writes refused by the rate limit.
	badConn     sampler
	peerRefused sampler
	limited     sampler
	// expired paces the warnings about requests read after their
	// deadline, overBudget those about clients over their budget.
	expired    sampler
	overBudget sampler
	// writes is the per-address write rate limit; nil without one.
	writes *writeLimiter
	// budget counts each client's connections and calls (budget.go);
	// tooManyCalls is the answer to a call over it, encoded once.
	budget       *clientBudget
	tooManyCalls []byte
	// metrics counts and times the calls (metrics.go).
	metrics *serverMetrics
	// authz checks each call against its method's Need (need.go).
	authz atomic.Pointer[CallAuthorizer]

	mu       sync.Mutex
	ln       net.Listener
	started  bool
	closed   bool
	pending  map[net.Conn]struct{}       // connections that have not sent their first byte
	sessions map[*yamux.Session]struct{} // RPC sessions being served

	sessionsServed atomic.Int64
	wg             sync.WaitGroup
}

// NewServer returns a server for cfg that is not yet listening. logger
// gets the component attribute "rpc".
func NewServer(cfg ServerConfig, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "rpc")
	tooMany, err := encodeFrame(responseHeader{Seq: 1, Error: WireError(fmt.Errorf(
		"rpc: this client address has %d calls in flight on this server already: %w", cfg.MaxCallsPerClient, ErrTooManyCalls)).Error()}, nil)
	if err != nil { // not reached: a header of strings encodes
		return nil, err
	}
	life, shutDown := context.WithCancel(context.Background())
	layer := newLayer(cfg.RaftTLS)
	layer.source = sourceAddr(cfg.SourceAddr)
	return &Server{
		cfg:          cfg,
		logger:       logger,
		yamux:        yamuxConfig(cfg.KeepAliveInterval, cfg.ConnectionWriteTimeout, logger),
		layer:        layer,
		life:         life,
		shutDown:     shutDown,
		badConn:      sampler{every: time.Minute},
		peerRefused:  sampler{every: time.Minute},
		limited:      sampler{every: time.Minute},
		expired:      sampler{every: time.Minute},
		overBudget:   sampler{every: time.Minute},
		writes:       newWriteLimiter(cfg.WriteRate, cfg.WriteBurst),
		budget:       newClientBudget(cfg.MaxConnsPerClient, cfg.MaxCallsPerClient),
		tooManyCalls: tooMany,
		metrics:      newServerMetrics(),
		pending:      make(map[net.Conn]struct{}),
		sessions:     make(map[*yamux.Session]struct{}),
	}, nil
}

// Register publishes the methods of rcvr under name, called as
// "name.Method": its exported methods of the form
//
//	func (t *T) Method(ctx context.Context, args *A, reply *R) error
//
// Other exported methods are skipped (a Close, an in-process helper),
// except those that look like an RPC method gone wrong, which are an
// error naming the method, so that the mistake shows here rather than as
// "can't find method" at the first call: a method returning only error
// that takes three arguments, the first a context.Context, with args or
// reply not a pointer; or one of net/rpc's shape, func(*A, *R) error,
// without the ctx. A receiver without any RPC method, an empty name or
// one taken already are errors too.
//
// A method runs once per call, on a goroutine of its own over the port
// and in the caller's goroutine through Call. ctx ends when the caller
// goes away (its context ends, or its connection does) or the server
// shuts down; a method that can block (a blocking query) must return
// then, since Shutdown waits for it. Its error reaches the caller through
// WireError, as a *RemoteError: the method need not encode it.
func (s *Server) Register(name string, rcvr any) error {
	if err := s.methods.register(name, rcvr); err != nil {
		return fmt.Errorf("rpc: register %q: %w", name, err)
	}
	return nil
}

// Call runs method ("Service.Method") in the calling goroutine, without a
// connection or encoding: args must be the method's own *A and reply its
// *R (filled in) or nil; another type is an error wrapping ErrCodec that
// names both types. The method gets args as they are and may change them
// (the consensus endpoints mark a request they forward, and put the
// marks back when the forward returns): give each call args of its own,
// unless the endpoint says otherwise.
//
// Call is the in-process door to what Pool.Call reaches over the port, and
// it fails the same way, so that a caller may use either: the method's
// error is encoded with WireError and decoded into a *RemoteError, as
// Pool.Call's is, so errors.As and errors.Is find a *catalog.FieldError or
// a known sentinel and nothing else (an error the method met forwarding
// the request, such as ErrTransport, does not leak out as the caller's
// own); an unknown method is a *RemoteError too. When ctx has ended (or
// its deadline passed) by the time the method returns, the error wraps
// ctx.Err() whatever it answered, as Pool.Call gives up on an answer it
// stops waiting for.
//
// Call works whether or not Start was called. After Shutdown it fails
// with ErrServerClosed; a call in flight when Shutdown begins sees its
// ctx end and fails with ErrServerClosed (a write's fate is unknown then,
// as over a connection that broke). Shutdown waits for calls in flight.
func (s *Server) Call(ctx context.Context, method string, args, reply any) error {
	if err := s.call(ctx, method, args, reply); err != nil {
		return fmt.Errorf("rpc %s: %w", method, err)
	}
	return nil
}

func (s *Server) call(ctx context.Context, name string, args, reply any) error {
	if !s.enter() {
		return ErrServerClosed
	}
	defer s.wg.Done()
	if err := ctx.Err(); err != nil {
		return err
	}
	m, err := s.methods.lookup(name)
	if err != nil {
		return asRemote(err)
	}
	argv, replyv, err := m.values(args, reply)
	if err != nil {
		return err
	}
	if err := s.authorize(m.name, m.need, args); err != nil {
		return asRemote(err)
	}
	// The method's ctx is the caller's, ended also by Shutdown.
	callCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	err = s.invoke(callCtx, m, argv, replyv)
	stop()
	cancel()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case deadlinePassed(ctx):
		// A deadline the method met through a connection (a forward's
		// stream) can fire a moment before ctx's timer, as in Pool.call.
		return context.DeadlineExceeded
	case s.life.Err() != nil:
		return ErrServerClosed
	case err != nil:
		return asRemote(serverSideCancel(err))
	}
	return nil
}

// enter counts an in-process call in wg, so that Shutdown waits for it;
// false after Shutdown. The count is taken under mu, which Shutdown holds
// to set closed, so that none is added once Shutdown waits.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// asRemote turns a method's error into what the calling side of a stream
// makes of it: WireError's text, decoded. Call goes through the text, not
// around it, so that the two doors cannot disagree.
func asRemote(err error) *RemoteError {
	return newRemoteError(WireError(err).Error())
}

// Start binds the listener (by the time it returns, Addr is valid and
// connections are accepted) and serves in the background until Shutdown.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.started {
		return fmt.Errorf("rpc: start: %w", ErrServerClosed)
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("rpc: listen on %s: %w", s.cfg.Addr, err)
	}
	addr := ln.Addr()
	if s.cfg.AdvertiseAddr != "" {
		if addr, err = net.ResolveTCPAddr("tcp", s.cfg.AdvertiseAddr); err != nil {
			closeQuietly(ln)
			return fmt.Errorf("rpc: AdvertiseAddr %q: %w", s.cfg.AdvertiseAddr, err)
		}
	}
	s.layer.setAddr(addr)
	s.ln, s.started = ln, true
	s.wg.Go(func() { s.acceptLoop(ln) })
	return nil
}

// Addr returns the address the server listens on, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// RaftLayer returns the Raft side of the port. It is the same Layer for
// the server's whole life; its Addr is valid once Start has returned.
func (s *Server) RaftLayer() *Layer { return s.layer }

// Shutdown stops accepting, closes every connection still in its
// handshake, every RPC session (calls in flight see their stream fail)
// and the Raft layer, ends the context of every method running (through
// either door), then waits for the server's goroutines, including RPC
// methods still running, until ctx ends. Raft connections already
// accepted belong to Raft and stay open.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if s.ln != nil {
			closeQuietly(s.ln)
		}
		for c := range s.pending {
			closeQuietly(c)
		}
	}
	sessions := make([]*yamux.Session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()

	// Session.Close waits for the session's own loops; outside the lock,
	// since the serving goroutines take it to untrack themselves.
	for _, sess := range sessions {
		closeQuietly(sess)
	}
	closeQuietly(s.layer)
	// Only now, with the sessions closed, end the methods' ctx: a method
	// that answers at once when it ends (a blocking query) must not get
	// its answer out first, since callers over the port are told that a
	// call in flight fails with the connection.
	s.shutDown()

	done := make(chan struct{})
	go func() { // ends with the last of wg's goroutines
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rpc: shutdown: %w", ctx.Err())
	}
}

// acceptLoop accepts connections until the listener is closed.
func (s *Server) acceptLoop(ln net.Listener) {
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off as
			// net/http does, rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-s.life.Done():
				return
			}
		}
		backoff = 0
		client := budgetKey(conn.RemoteAddr())
		if !s.budget.take(client, false) {
			closeQuietly(conn)
			s.overClientBudget("max_conns_per_client", client, s.cfg.MaxConnsPerClient)
			continue
		}
		if !s.track(conn) {
			s.budget.give(client, false)
			closeQuietly(conn)
			return
		}
		s.wg.Go(func() { s.handleConn(conn, client) })
	}
}

// track records conn as in its handshake; false after Shutdown.
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.pending[conn] = struct{}{}
	return true
}

func (s *Server) untrack(conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, conn)
}

// handleConn reads conn's first byte (and, after TLSByte, runs the TLS
// handshake and reads the byte inside), all within HandshakeTimeout,
// checks that the peer may use what it asked for, and serves the
// connection by it. The connection holds one of client's connections in
// the budget until it ends or is handed to Raft.
func (s *Server) handleConn(raw net.Conn, client string) {
	s.metrics.conns.Inc()
	release := sync.OnceFunc(func() {
		s.budget.give(client, false)
		s.metrics.conns.Dec()
	})
	defer release()
	conn, kind, state, no := s.handshake(raw)
	s.untrack(raw)
	if no == nil {
		no = s.admit(raw.RemoteAddr(), kind, state)
	}
	if no != nil {
		s.refuse(raw, no)
		return
	}
	switch kind {
	case RPCByte:
		calls := client
		if s.forwarder(raw.RemoteAddr(), state) {
			calls = "" // a server's calls are not budgeted; its connection is
		}
		s.serveSession(conn, calls)
	case RaftByte:
		release() // Raft's from now on (ServerConfig.MaxConnsPerClient)
		s.layer.handoff(conn, s.life.Done())
	}
}

// forwarder reports whether the RPC client at remote, over a connection
// with TLS state (nil when plain), is a server exempt from
// MaxCallsPerClient (ServerConfig.Forwarder).
func (s *Server) forwarder(remote net.Addr, state *tls.ConnectionState) bool {
	if s.cfg.Forwarder == nil || !s.cfg.Forwarder(remote) {
		return false
	}
	return s.cfg.RaftPeer == nil || (state != nil && s.cfg.RaftPeer(*state))
}

// refusal is why a connection is refused: a log message and its
// attributes, and whether it is a peer's traffic refused (admit: WARN, so
// that a server refusing another's Raft or RPC says so where an operator
// looks) or a connection that never said what it was (DEBUG).
type refusal struct {
	msg  string
	args []any
	peer bool
}

func refused(msg string, args ...any) *refusal { return &refusal{msg: msg, args: args} }

func refusedPeer(msg string, args ...any) *refusal { return &refusal{msg: msg, args: args, peer: true} }

// handshake reads raw's first byte and, for TLSByte, runs the TLS
// handshake and reads the first byte inside it, before HandshakeTimeout.
// It returns the connection to serve (raw, or the *tls.Conn over it), its
// kind (RPCByte or RaftByte) and its TLS state (nil when plain), or why
// it is refused.
func (s *Server) handshake(raw net.Conn) (net.Conn, byte, *tls.ConnectionState, *refusal) {
	// The deadline covers writes too: the server's side of a TLS
	// handshake writes to a peer that may not read.
	if err := raw.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout)); err != nil {
		return nil, 0, nil, refused("cannot set deadline", "err", err)
	}
	kind, err := readByte(raw)
	if err != nil {
		return nil, 0, nil, refused("no first byte", "err", err)
	}
	conn := net.Conn(raw)
	var state *tls.ConnectionState
	switch kind {
	case TLSByte:
		if s.cfg.TLS == nil {
			return nil, 0, nil, refused("TLS is not configured")
		}
		tc := tls.Server(raw, s.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			return nil, 0, nil, refused("TLS handshake failed", "err", err)
		}
		if kind, err = readByte(tc); err != nil {
			return nil, 0, nil, refused("no first byte inside TLS", "err", err)
		}
		st := tc.ConnectionState()
		conn, state = tc, &st
	case RPCByte, RaftByte:
		if s.cfg.RequireTLS {
			return nil, 0, nil, refused("plain connection where TLS is required", "kind", kindName(kind))
		}
	}
	if kind != RPCByte && kind != RaftByte {
		return nil, 0, nil, refused("unknown first byte", "byte", kind, "tls", state != nil)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, 0, nil, refused("cannot clear deadline", "err", err)
	}
	return conn, kind, state, nil
}

// admit asks ServerConfig.Admit about the connection, then, for Raft,
// ServerConfig.RaftPeer; it returns why when either says no.
func (s *Server) admit(remote net.Addr, kind byte, state *tls.ConnectionState) *refusal {
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(remote, kind); err != nil {
			return refusedPeer("not admitted", "kind", kindName(kind), "err", err)
		}
	}
	if kind == RaftByte && s.cfg.RaftPeer != nil {
		if state == nil {
			return refusedPeer("Raft without TLS where peers must prove to be servers")
		}
		if !s.cfg.RaftPeer(*state) {
			return refusedPeer("Raft from a peer whose certificate is not a server's of this datacenter", "subject", peerSubject(state))
		}
	}
	return nil
}

// peerSubject names the peer's certificate in a log line.
func peerSubject(state *tls.ConnectionState) string {
	if len(state.PeerCertificates) == 0 {
		return "(none)"
	}
	return state.PeerCertificates[0].Subject.CommonName
}

func readByte(conn net.Conn) (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// refuse closes conn and logs why, at most once a minute for each of
// the two levels (see refusal).
func (s *Server) refuse(conn net.Conn, no *refusal) {
	closeQuietly(conn)
	sampler, level := &s.badConn, slog.LevelDebug
	if no.peer {
		sampler, level = &s.peerRefused, slog.LevelWarn
	}
	if ok, dropped := sampler.allow(time.Now()); ok {
		args := append(no.args, "peer", conn.RemoteAddr().String(), "local", conn.LocalAddr().String(), "dropped", dropped)
		s.logger.Log(context.Background(), level, "refused connection: "+no.msg, args...)
	}
}

// serveSession serves a yamux session over conn: each stream it accepts
// is served on its own goroutine, as long as client has fewer than
// MaxCallsPerClient in flight ("" for no cap).
func (s *Server) serveSession(conn net.Conn, client string) {
	transit := newTransitBaseline(time.Now()) // transit.go: the handshake is done
	// One write per data frame (frameconn.go).
	sess, err := yamux.Server(newFrameConn(conn), s.yamux)
	if err != nil { // only for an invalid config, which NewServer rules out
		closeQuietly(conn)
		s.logger.Error("start yamux session", "err", err)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		closeQuietly(sess)
		return
	}
	s.sessions[sess] = struct{}{}
	s.mu.Unlock()
	s.sessionsServed.Add(1)
	defer func() {
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		closeQuietly(sess)
	}()

	// Streams over the budget are accepted (acknowledged) and answered
	// at once, so the caller fails fast and tries elsewhere. Leaving them
	// unaccepted instead would block the caller's OpenStream and, after
	// yamux's StreamOpenTimeout, close its whole session.
	remote := conn.RemoteAddr()
	wake := watchSession(sess) // yamuxwake.go
	for {
		stream, err := sess.AcceptStream()
		if err != nil { // the session is closed
			return
		}
		if !s.budget.take(client, true) {
			s.refuseCall(stream, wake, client)
			continue
		}
		s.metrics.inFlight.Inc()
		s.wg.Go(func() {
			defer s.budget.give(client, true)
			defer s.metrics.inFlight.Dec()
			defer wake.add(stream)()
			s.serveStream(stream, remote, transit, client)
		})
	}
}

// refuseCall answers a stream of client, which has MaxCallsPerClient calls
// in flight already, with ErrTooManyCalls (the same bytes every time), and
// closes it. The request is not read: the answer goes first, and the caller, which writes its
// request before it reads, finds it there. A caller that does not read
// holds up only its own session's accept loop, for at most
// ConnectionWriteTimeout.
func (s *Server) refuseCall(st *yamux.Stream, wake *sessionWaker, client string) {
	s.overClientBudget("max_calls_per_client", client, s.cfg.MaxCallsPerClient)
	defer wake.add(st)()
	_, _ = st.Write(s.tooManyCalls) // a caller that cannot read it has gone
	closeQuietly(st)
}

// overClientBudget counts a connection or call of client refused over the
// budget (reason names the cap) and warns, at most once a minute: a
// legitimate client there means the cap is too low for it.
func (s *Server) overClientBudget(reason, client string, limit int) {
	s.metrics.refused.WithLabelValues(reason).Inc()
	if ok, dropped := s.overBudget.allow(time.Now()); ok {
		s.logger.Warn("refused a client over its budget on the server port", "peer", client, "cap", reason, "limit", limit, "dropped", dropped)
	}
}

// stream is what serveStream needs of a yamux stream; tests give it a
// fake.
type stream interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
}

// serveStream serves the one call a stream carries: it reads the request,
// runs the method and writes the response, then closes the stream. A
// request that cannot be read (the caller hung up, or sent a frame too
// large or malformed) gets no answer: the stream is closed, which the
// caller sees as a transport error.
//
// remote is the address of the session's peer, for the write rate limit;
// nil (in tests) limits nothing. transit is the session's (transit.go);
// nil takes nothing off a request's time left. client is the session's
// key in the per-client budget ("" for none), which the calls of a batch
// beyond its first are taken from (batch.go).
func (s *Server) serveStream(st stream, remote net.Addr, transit *transitBaseline, client string) {
	defer closeQuietly(st)
	c := newStreamCodec(st, s.cfg.MaxMessageSize, s.cfg.MaxReplySize)
	c.clockOffset = s.cfg.ClockOffset
	req, err := c.readRequestHeader()
	arrived := time.Now()
	if err != nil {
		return
	}
	c.onWriteError = func(err error) {
		s.logger.Debug("cannot write response", "method", req.ServiceMethod, "err", err)
	}
	name := req.ServiceMethod
	sm := s.methods.lookupStream(name)
	var m *method
	if sm == nil && name != BatchMethod {
		if m, err = s.methods.lookup(name); err != nil {
			c.writeResponse(req, err, nil)
			return
		}
		name = m.name
	}
	deadline, hasDeadline := req.deadlineOf(transit, arrived, s.cfg.ClockOffset)
	if hasDeadline && !time.Now().Before(deadline) {
		// Read too late (this server was stopped, or the request was
		// held up on the way): the caller has given up, and may have
		// sent it again elsewhere. Running it now could undo what came
		// after.
		s.metrics.late.WithLabelValues(name).Inc()
		if ok, dropped := s.expired.allow(time.Now()); ok {
			s.logger.Warn("refused a request read after its caller's deadline",
				"method", name, "peer", remote, "late_by", time.Since(deadline).Round(time.Millisecond), "dropped", dropped)
		}
		c.writeResponse(req, fmt.Errorf("rpc: %s: %w: the caller's deadline passed %s before this server read the request",
			name, context.DeadlineExceeded, time.Since(deadline).Round(time.Millisecond)), nil)
		return
	}
	if sm != nil {
		s.serveStreamMethod(st, c, req, sm, deadline) // stream.go
		return
	}
	if name == BatchMethod {
		s.serveBatch(st, c, req, remote, client, deadline) // batch.go
		return
	}
	args := reflect.New(m.args.Elem())
	if err := c.decode(args.Interface()); err != nil {
		c.writeResponse(req, fmt.Errorf("rpc: %s: cannot decode arguments: %w", m.name, err), nil)
		return
	}
	if err := s.authorize(m.name, m.need, args.Interface()); err != nil {
		c.writeResponse(req, err, nil)
		return
	}
	if _, write := args.Interface().(Write); write && !s.allowWrite(remote) {
		if ok, dropped := s.limited.allow(time.Now()); ok {
			s.logger.Debug("write refused by the rate limit", "peer", remote.String(), "method", m.name, "dropped", dropped)
		}
		c.writeResponse(req, fmt.Errorf("rpc: %s from %s: %w", m.name, remote, ErrRateLimited), nil)
		return
	}
	reply := reflect.New(m.reply.Elem())
	err = serverSideCancel(s.runStreamCall(st, c, deadline, func(ctx context.Context) error {
		return s.invoke(ctx, m, args, reply)
	}))
	c.writeResponse(req, err, reply.Interface())
}

// errCallerGone is the cause of a method's ctx ending because its caller
// closed the stream (its own ctx ended, or it hung up) or its session
// failed.
var errCallerGone = errors.New("rpc: the caller has gone")

// runStreamCall runs a method (run) for a stream's request with a ctx that
// ends when the server shuts down, the request's deadline passes or the
// caller goes away. The caller sends nothing after its request and closes
// the stream only once it has the reply (or, for a stream method, the
// replies it wants) or has stopped waiting for it, so a read of the stream returning (end of
// stream, a reset, a failed session, or bytes the protocol does not
// allow) means that nobody waits for the answer any more. A goroutine
// makes that read while the method runs; it is woken (a read deadline in
// the past) and waited for when the method returns.
func (s *Server) runStreamCall(st stream, c *streamCodec, deadline time.Time, run func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(s.life)
	defer cancel(nil)
	if !deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, deadline)
		defer stop()
	}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		_, err := c.r.ReadByte()
		if err == nil {
			err = errors.New("data after the request")
		}
		cancel(fmt.Errorf("%w: %w", errCallerGone, err))
	}()
	defer func() {
		_ = st.SetReadDeadline(pastDeadline)
		<-watching
	}()
	return run(ctx)
}

// invoke runs m, for either door. A method that panics returns an error
// instead, and the panic is logged with its stack, as net/http does for a
// handler: a peer's request must not take the whole server down, and an
// in-process caller gets what a caller over the port would.
func (s *Server) invoke(ctx context.Context, m *method, args, reply reflect.Value) error {
	return s.metrics.observe(m.name, args, func() error {
		return s.guard(m.name, func() error { return m.call(ctx, args, reply) })
	})
}

// guard runs the method named name (fn) and turns a panic into its error.
func (s *Server) guard(name string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("rpc method panicked", "method", name, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("rpc: %s panicked: %v", name, p)
		}
	}()
	return fn()
}
