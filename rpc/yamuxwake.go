package rpc

import (
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// yamux v0.1.2's Stream.Read and Stream.Write spin when their session is
// shut down while they wait: the closed shutdown channel wakes them, the
// stream's own state still says established until the session has closed
// every stream (which waits for its receive loop), and each turn goes
// round again (hashicorp/yamux#176, open). A client agent whose server
// connections failed under load spent a quarter of its CPU there, which
// made the load worse. A deadline in the past makes the next turn return
// instead, so every call and served stream gets one when its session
// shuts down; the pool gives it before it closes a session itself, so
// that its reads do not spin even for the moment the close takes (under
// load, the receive loop the close waits for may not run for a while).

// pastDeadline is the deadline that wakes a blocked read or write at once.
var pastDeadline = time.Unix(1, 0)

// deadliner is the part of a stream a sessionWaker needs.
type deadliner interface{ SetDeadline(time.Time) error }

// sessionWaker holds the open streams of one session, to give each a
// deadline in the past when the session shuts down, or before.
type sessionWaker struct {
	mu      sync.Mutex
	woken   bool
	streams map[deadliner]struct{}
}

// watchSession returns the waker of sess, which wakes its streams once
// sess has shut down; a goroutine waits for that, so every session must
// be closed at the end (the pool's drop and Close, and serveSession, do).
func watchSession(sess *yamux.Session) *sessionWaker {
	w := &sessionWaker{streams: make(map[deadliner]struct{})}
	go func() {
		<-sess.CloseChan()
		w.wake()
	}()
	return w
}

// add holds st until the returned func is called; a stream added after
// the wake-up is woken at once.
func (w *sessionWaker) add(st deadliner) (remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.woken {
		_ = st.SetDeadline(pastDeadline)
		return func() {}
	}
	w.streams[st] = struct{}{}
	return func() {
		w.mu.Lock()
		delete(w.streams, st)
		w.mu.Unlock()
	}
}

// wake gives every stream held, and every one added later, a deadline in
// the past. It is idempotent.
func (w *sessionWaker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.woken {
		return
	}
	w.woken = true
	for st := range w.streams {
		_ = st.SetDeadline(pastDeadline)
	}
	clear(w.streams)
}
