package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// A stream method answers one request with replies for as long as its
// caller listens: the change feed, which tells every agent what changed as
// changes commit. A blocking call asked again after every change would
// cost the server a new yamux stream (three more frames), a goroutine and
// a decoded request per change per agent: about 100 µs each, which at
// 1,000 agents and 10 changes a second is more than a core.
//
// On the wire a stream is a call whose response is many frames: the
// request frame, then one reply frame per send (a responseHeader with no
// Error, and the reply), then an error frame (Error set, no reply) when
// the method ends: its error, or ErrStreamEnded when it returned nil. A
// stream that ends without one broke. The caller ends a stream by closing
// it, which the server sees as its caller gone: the method's ctx ends.

// ErrStreamEnded is the end of a stream whose method returned nil. It
// crosses the wire.
var ErrStreamEnded = errors.New("rpc: the stream method ended")

// Stream is the caller's end of a stream method, over a connection
// (Pool.Stream) or in process (Server.Stream). Recv and Close may be
// called from different goroutines; Recv from one at a time.
type Stream interface {
	// Recv waits for the next reply, at most until ctx ends, and
	// decodes it into reply (a pointer of the method's reply type). An
	// error is final (every later Recv returns it; Close the stream):
	// a *RemoteError when the method ended (wrapping ErrStreamEnded when
	// it returned nil), an error wrapping ErrTransport when the
	// connection failed, ctx's error when ctx ended first.
	Recv(ctx context.Context, reply any) error
	// Close ends the stream; the method's ctx ends on the server. It
	// may be called more than once.
	Close() error
}

// streamMethod is one registered stream method.
type streamMethod struct {
	name  string
	args  reflect.Type // *A
	reply reflect.Type // *R
	need  Need
	run   func(ctx context.Context, args any, send func(reply any) error) error
}

// RegisterStream publishes fn on s as the stream method name
// ("Service.Method"). fn runs until it returns or its ctx ends (the caller
// closed the stream or went away, or the server shuts down); send writes
// one reply and returns an error once the caller cannot get it, which fn
// returns. A reply given to send belongs to the stream from then on (an
// in-process caller reads that very value). need is what its caller
// needs, as for Register.
func RegisterStream[A, R any](s *Server, name string, need Need, fn func(ctx context.Context, args *A, send func(*R) error) error) error {
	if err := checkNeed(name, need, reflect.TypeFor[*A]()); err != nil {
		return err
	}
	return s.methods.registerStream(&streamMethod{
		name:  name,
		args:  reflect.TypeFor[*A](),
		reply: reflect.TypeFor[*R](),
		need:  need,
		run: func(ctx context.Context, args any, send func(any) error) error {
			return fn(ctx, args.(*A), func(r *R) error { return send(r) })
		},
	})
}

// registerStream adds m to the table under its full name, which no method
// may have yet.
func (r *registry) registerStream(m *streamMethod) error {
	dot := strings.IndexByte(m.name, '.')
	if dot <= 0 || dot == len(m.name)-1 || strings.Count(m.name, ".") != 1 {
		return fmt.Errorf("stream method name %q: must be Service.Method", m.name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table.Load()
	if old != nil && (old.methods[m.name] != nil || old.streams[m.name] != nil) {
		return fmt.Errorf("method %q is already registered", m.name)
	}
	next := old.clone()
	next.streams[m.name] = m
	next.services[m.name[:dot]] = true
	r.table.Store(next)
	return nil
}

// lookupStream returns the stream method named name, or nil.
func (r *registry) lookupStream(name string) *streamMethod {
	if t := r.table.Load(); t != nil {
		return t.streams[name]
	}
	return nil
}

// serveStreamMethod serves a stream's request for m, whose header was
// read: it runs m, writing each reply as a frame, until m returns or the
// caller goes away, and ends with an error frame if m failed.
func (s *Server) serveStreamMethod(st stream, c *streamCodec, req requestHeader, m *streamMethod, deadline time.Time) {
	args := reflect.New(m.args.Elem()).Interface()
	if err := c.decode(args); err != nil {
		c.writeResponse(req, fmt.Errorf("rpc: %s: cannot decode arguments: %w", m.name, err), nil)
		return
	}
	if err := s.authorize(m.name, m.need, args); err != nil {
		c.writeResponse(req, err, nil)
		return
	}
	h := responseHeader{ServiceMethod: req.ServiceMethod, Seq: req.Seq}
	send := func(reply any) error { return c.writeFrame(h, reply) }
	err := s.runStreamCall(st, c, deadline, func(ctx context.Context) error {
		return s.invokeStream(ctx, m, args, send)
	})
	if err == nil {
		err = fmt.Errorf("%w: %s", ErrStreamEnded, m.name)
	}
	c.writeResponse(req, serverSideCancel(err), nil)
}

// invokeStream runs m with the metrics and the panic guard of invoke; a
// stream counts as a blocking query while it runs.
func (s *Server) invokeStream(ctx context.Context, m *streamMethod, args any, send func(any) error) error {
	g := s.metrics.blocking.WithLabelValues(m.name)
	g.Inc()
	defer g.Dec()
	err := s.guard(m.name, func() error { return m.run(ctx, args, send) })
	s.metrics.calls.WithLabelValues(m.name, resultOf(err)).Inc()
	return err
}

// Stream starts the stream method named method with args, in process:
// the method runs on its own goroutine, handing each reply to Recv, until
// Close (ctx's values reach it, not its end: a stream outlives the call
// that starts it). It fails with ErrServerClosed after Shutdown, and
// Shutdown ends the streams in flight and waits for their methods.
func (s *Server) Stream(ctx context.Context, method string, args any) (Stream, error) {
	if !s.enter() {
		return nil, ErrServerClosed
	}
	m := s.methods.lookupStream(method)
	if m == nil {
		s.wg.Done()
		_, err := s.methods.lookup(method)
		if err == nil {
			err = fmt.Errorf("rpc: %q is not a stream method", method)
		}
		return nil, fmt.Errorf("rpc %s: %w", method, asRemote(err))
	}
	if a := reflect.ValueOf(args); !a.IsValid() || a.Type() != m.args || a.IsNil() {
		s.wg.Done()
		return nil, fmt.Errorf("rpc %s: %w: args are %s, want a non-nil %s", method, ErrCodec, describe(args), m.args)
	}
	if err := s.authorize(m.name, m.need, args); err != nil {
		s.wg.Done()
		return nil, fmt.Errorf("rpc %s: %w", method, asRemote(err))
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.life, cancel)
	ls := &localStream{name: method, reply: m.reply, replies: make(chan any), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer s.wg.Done()
		err := s.invokeStream(ctx, m, args, func(r any) error {
			select {
			case ls.replies <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		stop()
		switch {
		case s.life.Err() != nil:
			err = ErrServerClosed
		case err == nil:
			err = asRemote(fmt.Errorf("%w: %s", ErrStreamEnded, m.name))
		case ctx.Err() != nil:
			err = context.Canceled // the caller closed the stream
		default:
			err = asRemote(serverSideCancel(err))
		}
		ls.err = fmt.Errorf("rpc %s: %w", method, err)
		cancel()
		close(ls.done)
	}()
	return ls, nil
}

// localStream is an in-process stream: the method's goroutine hands its
// replies over replies, and sets err before closing done.
type localStream struct {
	name    string
	reply   reflect.Type
	replies chan any
	done    chan struct{}
	err     error
	cancel  context.CancelFunc
}

func (ls *localStream) Recv(ctx context.Context, reply any) error {
	r := reflect.ValueOf(reply)
	if !r.IsValid() || r.Type() != ls.reply || r.IsNil() {
		return fmt.Errorf("rpc %s: %w: reply is %s, want a non-nil %s", ls.name, ErrCodec, describe(reply), ls.reply)
	}
	select {
	case got := <-ls.replies:
		r.Elem().Set(reflect.ValueOf(got).Elem())
		return nil
	case <-ls.done:
		return ls.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ls *localStream) Close() error {
	ls.cancel()
	return nil
}

// Stream starts the stream method named method on the server at addr (of
// the pool's datacenter) with args. ctx bounds the start (a dial, sending
// the request); the stream then lasts until Close, the method's end or
// the connection's, and each Recv takes a ctx of its own. The errors of
// starting it are Call's.
func (p *Pool) Stream(ctx context.Context, addr, method string, args any) (Stream, error) {
	return p.StreamDC(ctx, "", addr, method, args)
}

// StreamDC is Stream to a server of datacenter dc, as CallDC is Call.
func (p *Pool) StreamDC(ctx context.Context, dc, addr, method string, args any) (Stream, error) {
	if dc == "" {
		dc = p.cfg.Datacenter
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := poolKey{dc: strings.ToLower(dc), addr: addr}
	pc, err := p.session(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("rpc %s to %s: %w", method, addr, err)
	}
	st, err := pc.sess.OpenStream()
	if err != nil {
		p.drop(key, pc)
		return nil, fmt.Errorf("rpc %s to %s: %w", method, addr, notSentError(err))
	}
	cs := &clientStream{name: method, addr: addr, st: st,
		c: newStreamCodec(st, p.cfg.MaxReplySize, p.cfg.MaxMessageSize)}
	// The session shutting down (yamuxwake.go) wakes every read and
	// write of the stream for good; ctx ending, those of the start.
	cs.stop = pc.wake.add(st)
	deadline, _ := ctx.Deadline()
	_ = st.SetWriteDeadline(deadline)
	done := wakeWhenDone(ctx, st.SetWriteDeadline)
	err = cs.c.writeFrame(requestHeader{ServiceMethod: method, Seq: 1}, args)
	done()
	_ = st.SetWriteDeadline(time.Time{})
	if err != nil {
		_ = cs.Close()
		switch {
		case errors.Is(err, ErrCodec), errors.Is(err, ErrMessageTooLarge):
		case ctx.Err() != nil:
			err = ctx.Err()
		default:
			err = transportError(err)
		}
		return nil, fmt.Errorf("rpc %s to %s: %w", method, addr, err)
	}
	return cs, nil
}

// clientStream is the caller's end of a stream over a connection.
type clientStream struct {
	name, addr string
	st         *yamux.Stream
	c          *streamCodec
	stop       func() // removes st from its session's waker

	err       error // the first error of Recv: every later one returns it
	closeOnce sync.Once
}

func (cs *clientStream) Recv(ctx context.Context, reply any) error {
	if cs.err != nil {
		return cs.err
	}
	if err := cs.recv(ctx, reply); err != nil {
		cs.err = fmt.Errorf("rpc %s to %s: %w", cs.name, cs.addr, err)
		return cs.err
	}
	return nil
}

func (cs *clientStream) recv(ctx context.Context, reply any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// No read deadline is set from ctx's: ctx ends at its deadline, which
	// wakes the read as well. A deadline makes yamux start a timer on each
	// wait for data (two per frame), a tenth of the CPU of an agent
	// process following a busy feed.
	woke := wakeWhenDone(ctx, cs.st.SetReadDeadline)
	err := cs.c.readFrame()
	if woke() {
		// The deadline in the past stays: a Recv whose ctx ended ends
		// the stream, even if its frame came in at the same moment.
		return ctx.Err()
	}
	var h responseHeader
	switch {
	case err == io.EOF:
		return transportError(errors.New("the stream ended without its method's end"))
	case errors.Is(err, ErrMessageTooLarge):
		return err
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && deadlinePassed(ctx):
		return context.DeadlineExceeded
	case err != nil:
		return transportError(err)
	}
	if err := cs.c.dec.Decode(&h); err != nil {
		return fmt.Errorf("%w: malformed response header: %v", ErrCodec, err)
	}
	if h.Error != "" {
		return newRemoteError(h.Error)
	}
	if err := cs.c.decode(reply); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	return nil
}

func (cs *clientStream) Close() error {
	cs.closeOnce.Do(func() {
		cs.stop()
		closeQuietly(cs.st)
	})
	return nil
}

// wakeWhenDone sets a deadline in the past with set when ctx ends, which
// wakes a read or write blocked on the stream. The returned func undoes
// that, or waits for it to have happened and reports true, so that a
// wake-up cannot land after the next operation has set its own deadline.
func wakeWhenDone(ctx context.Context, set func(time.Time) error) (undo func() (woke bool)) {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = set(pastDeadline)
		close(done)
	})
	return func() bool {
		if stop() {
			return false
		}
		<-done
		return true
	}
}
