package consensus

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// Network transport settings, as Consul's: a few pooled connections per
// peer, and a generous I/O deadline (InstallSnapshot scales it with the
// snapshot's size).
//
// One RPC in flight per follower turns off raft's pipelined replication.
// Its pipeline can deadlock (hashicorp/raft#612): when a follower answers
// an append with failure (as one that cannot write its log does), raft
// stops reading the pipeline's results while its sender still waits to
// hand the next request to the decoder, which waits to hand over the last
// result; no deadline covers either wait, and the leader's replication to
// that follower stops for good. Synchronous appends run under
// transportTimeout's read and write deadlines, and raft's own measurements
// (hashicorp/raft#541) found pipelining gains little.
const (
	transportMaxPool         = 3
	transportTimeout         = 10 * time.Second
	transportMaxRPCsInFlight = 1
)

// streamLayer adapts the rpc server's Raft layer to raft.StreamLayer: Dial
// takes a raft.ServerAddress. It also owns the connections it accepts:
// raft's NetworkTransport closes neither them nor its listener's goroutines'
// connections on Close, so a handler blocked reading an idle peer
// connection would outlive Raft. Close closes the layer (ending raft's
// accept loop) and every accepted connection still open.
//
// raft calls Accept from its accept loop and Dial from its replication and
// RPC goroutines; Close from Server.Shutdown. All may run concurrently.
type streamLayer struct {
	layer *rpc.Layer

	mu     sync.Mutex
	closed bool
	conns  map[*acceptedConn]struct{}
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func newStreamLayer(l *rpc.Layer) *streamLayer {
	return &streamLayer{layer: l, conns: make(map[*acceptedConn]struct{})}
}

// Accept returns the next Raft connection from a peer. After Close it
// returns an error wrapping net.ErrClosed.
func (l *streamLayer) Accept() (net.Conn, error) {
	c, err := l.layer.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, fmt.Errorf("consensus: raft layer: %w", net.ErrClosed)
	}
	ac := &acceptedConn{Conn: c, owner: l}
	l.conns[ac] = struct{}{}
	return ac, nil
}

// Close closes the rpc layer and every accepted connection. Idempotent.
func (l *streamLayer) Close() error {
	_ = l.layer.Close()
	l.mu.Lock()
	conns := l.conns
	l.closed, l.conns = true, nil
	l.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	return nil
}

// Addr is the rpc server's advertised address, which is this server's
// Raft address.
func (l *streamLayer) Addr() net.Addr { return l.layer.Addr() }

// Dial opens a Raft connection to the server port at address.
func (l *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.layer.Dial(string(address), timeout)
}

func (l *streamLayer) forget(c *acceptedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
}

// acceptedConn is a connection handed to raft, removed from its owner's
// set when raft closes it.
type acceptedConn struct {
	net.Conn
	owner *streamLayer
}

func (c *acceptedConn) Close() error {
	c.owner.forget(c)
	return c.Conn.Close()
}

// newNetworkTransport builds raft's TCP transport over the rpc layer.
func newNetworkTransport(l *rpc.Layer, rc *raft.Config) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          newStreamLayer(l),
		MaxPool:         transportMaxPool,
		MaxRPCsInFlight: transportMaxRPCsInFlight,
		Timeout:         transportTimeout,
		Logger:          rc.Logger.Named("transport"),
	})
}

// closeTransport closes the network transport, if any, and releases its
// pooled outbound connections. Idempotent.
func (s *Server) closeTransport() {
	if s.netTrans == nil {
		return
	}
	_ = s.netTrans.Close()
	s.netTrans.CloseStreams()
}
