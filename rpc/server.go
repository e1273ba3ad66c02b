package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
)

// Server listens on the server port, reads each connection's first byte,
// and serves RPC sessions or hands Raft connections to its Layer.
//
// Register may be called at any time; Start once; Shutdown once or more.
// All methods may be called from any goroutine.
type Server struct {
	cfg    ServerConfig
	logger *slog.Logger
	rpc    *rpc.Server
	yamux  *yamux.Config
	layer  *Layer

	// badConn rate-limits the debug lines about refused connections.
	badConn sampler

	mu       sync.Mutex
	ln       net.Listener
	started  bool
	closed   bool
	pending  map[net.Conn]struct{}       // connections that have not sent their first byte
	sessions map[*yamux.Session]struct{} // RPC sessions being served
	quit     chan struct{}               // closed by Shutdown

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
	return &Server{
		cfg:      cfg,
		logger:   logger,
		rpc:      rpc.NewServer(),
		yamux:    yamuxConfig(cfg.KeepAliveInterval, cfg.ConnectionWriteTimeout, logger),
		layer:    newLayer(),
		badConn:  sampler{every: time.Minute},
		pending:  make(map[net.Conn]struct{}),
		sessions: make(map[*yamux.Session]struct{}),
		quit:     make(chan struct{}),
	}, nil
}

// Register publishes the methods of rcvr under name, as net/rpc's
// Server.RegisterName does: exported methods of the form
// func (t *T) Method(args *A, reply *R) error. A method runs on its own
// goroutine per call; one that can block (a blocking query) must return
// when its owner shuts down, since Shutdown waits for it.
func (s *Server) Register(name string, rcvr any) error {
	if err := s.rpc.RegisterName(name, rcvr); err != nil {
		return fmt.Errorf("rpc: register %q: %w", name, err)
	}
	return nil
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
// and the Raft layer, then waits for the server's goroutines, including
// RPC methods still running, until ctx ends. Raft connections already
// accepted belong to Raft and stay open.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.quit)
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
			case <-s.quit:
				return
			}
		}
		backoff = 0
		if !s.track(conn) {
			closeQuietly(conn)
			return
		}
		s.wg.Go(func() { s.handleConn(conn) })
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

// handleConn reads conn's first byte, within HandshakeTimeout, and
// serves the connection by it.
func (s *Server) handleConn(conn net.Conn) {
	var first [1]byte
	err := conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err == nil {
		_, err = io.ReadFull(conn, first[:])
	}
	if err == nil {
		err = conn.SetReadDeadline(time.Time{})
	}
	s.untrack(conn)
	if err != nil {
		s.refuse(conn, "no first byte", "err", err)
		return
	}
	switch first[0] {
	case RPCByte:
		s.serveSession(conn)
	case RaftByte:
		s.layer.handoff(conn, s.quit)
	default:
		s.refuse(conn, "unknown first byte", "byte", first[0])
	}
}

// refuse closes conn and logs why at debug level, at most once a minute.
func (s *Server) refuse(conn net.Conn, msg string, args ...any) {
	closeQuietly(conn)
	if ok, dropped := s.badConn.allow(time.Now()); ok {
		args = append(args, "peer", conn.RemoteAddr().String(), "dropped", dropped)
		s.logger.Debug("refused connection: "+msg, args...)
	}
}

// serveSession serves a yamux session over conn: each stream it accepts
// is served on its own goroutine, at most MaxStreamsPerConn at once.
func (s *Server) serveSession(conn net.Conn) {
	sess, err := yamux.Server(conn, s.yamux)
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

	// Streams over the limit are accepted (acknowledged) and closed at
	// once, so the caller fails fast with a transport error and tries
	// elsewhere. Leaving them unaccepted instead would block the caller's
	// OpenStream and, after yamux's StreamOpenTimeout, close its whole
	// session.
	slots := make(chan struct{}, s.cfg.MaxStreamsPerConn)
	for {
		stream, err := sess.AcceptStream()
		if err != nil { // the session is closed
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			s.refuse(stream, "too many streams", "limit", s.cfg.MaxStreamsPerConn)
			continue
		}
		s.wg.Go(func() {
			defer func() { <-slots }()
			s.serveStream(stream)
		})
	}
}

// serveStream serves net/rpc calls on one stream until it ends and the
// calls it carried have returned.
func (s *Server) serveStream(stream *yamux.Stream) {
	c := newStreamCodec(stream, s.cfg.MaxMessageSize)
	c.onWriteError = func(err error) {
		s.logger.Debug("cannot write response", "peer", stream.RemoteAddr().String(), "err", err)
	}
	s.rpc.ServeCodec(c)
}
