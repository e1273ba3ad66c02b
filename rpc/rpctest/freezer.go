package rpctest

import (
	"context"
	"net"
	"sync"
	"testing"
)

// Freezer is a TCP proxy on 127.0.0.1 in front of a server that can be
// frozen: it then keeps every connection open and forwards nothing either
// way, as a server stopped with SIGSTOP, or a partition TCP waits out,
// does. Thawed, it delivers what it held, in order, closes included.
type Freezer struct {
	addr string
	mu   sync.Mutex
	// data and closes are closed while bytes, and the closes of
	// connections, go through; replaced by Freeze.
	data, closes chan struct{}
}

// NewFreezer starts a thawed proxy to backend; it stops when the test
// ends.
func NewFreezer(tb testing.TB, backend string) *Freezer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &Freezer{addr: ln.Addr().String(), data: make(chan struct{}), closes: make(chan struct{})}
	close(f.data)
	close(f.closes)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() { cancel(); _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", backend)
			if err != nil {
				_ = in.Close()
				continue
			}
			wg.Go(func() { f.pipe(ctx, in, out) })
			wg.Go(func() { f.pipe(ctx, out, in) })
		}
	})
	return f
}

// Addr is the proxy's address, to dial instead of the backend's.
func (f *Freezer) Addr() string { return f.addr }

// Freeze holds everything from now on until Thaw.
func (f *Freezer) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = reopen(f.data)
	f.closes = reopen(f.closes)
}

// Thaw delivers what was held and forwards again.
func (f *Freezer) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	shut(f.data)
	shut(f.closes)
}

// ThawData delivers the bytes held and forwards bytes again, but still
// holds the closes of connections, until Thaw: the server then reads
// what it was sent with the connection still open, as it may when the
// close comes later, and a test sees what it does with it.
func (f *Freezer) ThawData() {
	f.mu.Lock()
	defer f.mu.Unlock()
	shut(f.data)
}

// reopen returns gate if it holds traffic already, else a new gate that
// does. A gate lets traffic through once closed.
func reopen(gate chan struct{}) chan struct{} {
	select {
	case <-gate:
		return make(chan struct{})
	default: // held already
		return gate
	}
}

// shut lets traffic through gate (closes it), unless it does already.
func shut(gate chan struct{}) {
	select {
	case <-gate:
	default:
		close(gate)
	}
}

// pipe copies src to dst, holding each chunk (and the close at the end)
// while the proxy is frozen, until either side closes or ctx ends.
func (f *Freezer) pipe(ctx context.Context, src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	stop := context.AfterFunc(ctx, func() { _ = src.Close() })
	defer stop()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !f.wait(ctx, func() chan struct{} { return f.data }) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			f.wait(ctx, func() chan struct{} { return f.closes })
			return
		}
	}
}

// wait waits until the gate gate returns is open, false if ctx ended
// first.
func (f *Freezer) wait(ctx context.Context, gate func() chan struct{}) bool {
	f.mu.Lock()
	g := gate()
	f.mu.Unlock()
	select {
	case <-g:
		return true
	case <-ctx.Done():
		return false
	}
}
