package rpc

import (
	"context"
	"time"

	"github.com/hashicorp/yamux"
)

// yamux v0.1.2's Stream.Read and Stream.Write spin when their session is
// shut down while they wait: the closed shutdown channel wakes them, the
// stream's own state still says established until the session has closed
// every stream (which waits for its receive loop), and each turn makes a
// new timer (hashicorp/yamux#176, open). A client agent whose server
// connections failed under load spent a quarter of its CPU there, which
// made the load worse. A deadline in the past makes the next turn return
// instead, so every call and served stream gets one as soon as its
// session shuts down.

// sessionDone returns a context canceled once sess has shut down; a
// goroutine waits for that, so every session must be closed at the end
// (the pool's drop and Close, and serveSession, do).
func sessionDone(sess *yamux.Session) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-sess.CloseChan()
		cancel()
	}()
	return ctx
}

// wakeOnDone sets a deadline in the past on st when done ends, so that
// st's blocked reads and writes return; stop undoes the arrangement.
func wakeOnDone(done context.Context, st interface{ SetDeadline(time.Time) error }) (stop func() bool) {
	return context.AfterFunc(done, func() { _ = st.SetDeadline(time.Unix(1, 0)) })
}
