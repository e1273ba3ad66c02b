package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// ClockOffset is for tests only: the server acts as if its wall
	// clock were this far ahead (negative: behind) in what it tells
	// peers (its time in replies) and in reading the absolute deadlines
	// of callers of the previous release. Default 0.
	ClockOffset time.Duration
	// Addr is the host:port the server listens on for both Raft and RPC.
	// With port 0 a free port is picked (see Server.Addr).
	// Default "127.0.0.1:8300": Consul's server RPC port, local only
	// until the agent sets its bind address.
	Addr string
	// AdvertiseAddr is the host:port the Raft layer reports as its
	// address (Layer.Addr), which Raft hands to its peers: it must be
	// reachable from them, so not 0.0.0.0. Empty means the listener's
	// own address. Default empty.
	AdvertiseAddr string
	// HandshakeTimeout bounds how long a new connection may take to send
	// its first byte (RPCByte or RaftByte) before it is closed, so idle
	// or slow connections cannot pile up. Default 5s (Consul's
	// rpc_handshake_timeout).
	HandshakeTimeout time.Duration
	// MaxMessageSize caps one request read from a caller (header and
	// body together) in bytes. A caller announcing a larger one has its
	// stream closed. Default 8 MiB.
	MaxMessageSize int
	// MaxReplySize caps one reply this server writes, in bytes: a larger
	// one is answered with an error wrapping ErrMessageTooLarge instead.
	// It is apart from MaxMessageSize because a read of a large catalog
	// is legitimately big while a request is not: all 100,000 checks of
	// a catalog of 100,000 instances (GET /v1/health/state/any through a
	// client agent) are about 30 MB. Default 256 MiB.
	MaxReplySize int
	// MaxConnsPerClient caps the connections one client IP address may
	// hold to the port (Consul's rpc_max_conns_per_client): one over the
	// cap is closed as it is accepted, before a byte of it is read. A
	// connection counts from its accept until it ends, except that one
	// handed to Raft stops counting then: Raft's connections come only
	// from servers it admitted (Admit, RaftPeer) and Raft bounds its own
	// pool, so a peer server is never kept from Raft by its RPC
	// connections, nor the other way round. 0 means no cap. Default 100,
	// Consul's.
	MaxConnsPerClient int
	// MaxCallsPerClient caps the calls one client IP address may have
	// being served at once over all its connections: blocking queries,
	// which hold theirs for up to their wait, and stream methods (the
	// change feed) included. A call over the cap is answered at once with
	// an error wrapping ErrTooManyCalls, without being read or run. With
	// MaxConnsPerClient it bounds what one client costs the server,
	// however many connections it opens. 0 means no cap. Default 2048: a
	// client agent sends every call over one connection, and its HTTP
	// API lets one local address hold 200 blocking queries.
	MaxCallsPerClient int
	// KeepAliveInterval is how often an idle yamux session is pinged; a
	// session whose ping fails is closed. Default 30s (yamux's).
	KeepAliveInterval time.Duration
	// ConnectionWriteTimeout bounds one write to the connection; a
	// session whose write stalls longer is closed. Default 10s (yamux's).
	ConnectionWriteTimeout time.Duration

	// TLS, when set, lets a connection start with TLSByte: the server
	// runs a TLS handshake with this config (tlsutil's IncomingRPC),
	// within HandshakeTimeout, and reads RPCByte or RaftByte inside.
	// Nil refuses TLSByte. Default nil.
	TLS *tls.Config
	// RequireTLS refuses connections that start with RPCByte or RaftByte
	// (tlsutil's RequireTLS, Consul's verify_incoming). Needs TLS.
	// Default false.
	RequireTLS bool
	// RaftPeer, when set, decides whether a Raft connection comes from a
	// server that may join this server's Raft: it gets the connection's
	// TLS state, and a connection it says no to, or one not over TLS, is
	// refused. Built from tlsutil's PeerIsServer with the server's own
	// datacenter. Needs TLS. Default nil: no check.
	RaftPeer func(tls.ConnectionState) bool
	// RaftTLS, when set, makes Layer.Dial (Raft's outgoing connections)
	// use TLS with this config (tlsutil's OutgoingRPC for the server's
	// own datacenter). Default nil: plain.
	RaftTLS *tls.Config
	// SourceAddr is the IP Raft's outgoing connections (Layer.Dial) are
	// made from; empty lets the system choose. The agent sets its own
	// address, so that peers that admit connections by address (Admit)
	// see the one gossip knows it by, also where a host has several.
	// Default empty.
	SourceAddr string
	// Admit, when set, is asked about every RPC and Raft connection once
	// its first byte (the one inside TLS, if any) is read: remote is the
	// peer's address, kind RPCByte or RaftByte. An error refuses the
	// connection and is logged at debug level with it. It runs on the
	// connection's goroutine, before anything is served, and must not
	// block for long. Default nil: everyone is admitted.
	Admit func(remote net.Addr, kind byte) error

	// WriteRate limits the write calls (those whose arguments implement
	// Write) one client IP address may make over the port, per second;
	// a call over the limit fails with ErrRateLimited without running.
	// Reads, and calls through Server.Call, are never limited. 0 means no
	// limit. Default 0.
	WriteRate float64
	// WriteBurst is how many writes a client IP address may make at once
	// before WriteRate applies. Must be at least 1 when WriteRate is set.
	// Default 1000 (Consul's rpc_max_burst).
	WriteBurst int
	// Forwarder, when set, reports whether the client at remote is a
	// server (of this datacenter or another), whose calls are its
	// clients' calls forwarded, each limited where it entered: it must
	// not be limited again as one address, nor starved by its clients'
	// numbers. Such a client is exempt from WriteRate and from
	// MaxCallsPerClient (not from MaxConnsPerClient: it needs a few).
	// With RaftPeer set, the exemption from MaxCallsPerClient also needs
	// a certificate RaftPeer accepts, so that only this datacenter's
	// servers, proven by TLS, have it. Default nil: no client is exempt.
	Forwarder func(remote net.Addr) bool
}

// DefaultServerConfig returns the default server configuration.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Addr:                   "127.0.0.1:8300", // Consul's server RPC port, local only
		HandshakeTimeout:       5 * time.Second,  // Consul's rpc_handshake_timeout
		MaxMessageSize:         8 << 20,          // a large catalog archive fits; a hostile peer cannot make us hold more per stream
		MaxReplySize:           256 << 20,        // every check of a catalog of a million instances
		MaxConnsPerClient:      100,              // Consul's rpc_max_conns_per_client
		MaxCallsPerClient:      2048,             // ten times the blocking queries one address may hold through an agent's HTTP API
		KeepAliveInterval:      30 * time.Second, // yamux default
		ConnectionWriteTimeout: 10 * time.Second, // yamux default
		WriteBurst:             1000,             // Consul's rpc_max_burst
		// AdvertiseAddr: empty, the listener's address.
		// TLS, RaftTLS, RaftPeer, Admit: nil, plain and open to all.
		// WriteRate: 0, no limit.
	}
}

// Validate reports every invalid field of c, each error naming its field.
func (c ServerConfig) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("rpc: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if err := checkHostPort(c.Addr); err != nil {
		bad("Addr", "%v", err)
	}
	if c.AdvertiseAddr != "" {
		if err := checkHostPort(c.AdvertiseAddr); err != nil {
			bad("AdvertiseAddr", "%v", err)
		}
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"HandshakeTimeout", c.HandshakeTimeout}, {"KeepAliveInterval", c.KeepAliveInterval},
		{"ConnectionWriteTimeout", c.ConnectionWriteTimeout}} {
		if d.d <= 0 {
			bad(d.field, "must be positive, got %s", d.d)
		}
	}
	if c.MaxMessageSize < minMessageSize {
		bad("MaxMessageSize", "must be at least %d, got %d", minMessageSize, c.MaxMessageSize)
	}
	if c.MaxReplySize < minMessageSize {
		bad("MaxReplySize", "must be at least %d, got %d", minMessageSize, c.MaxReplySize)
	}
	if c.MaxConnsPerClient < 0 {
		bad("MaxConnsPerClient", "must be 0 (no cap) or positive, got %d", c.MaxConnsPerClient)
	}
	if c.MaxCallsPerClient < 0 {
		bad("MaxCallsPerClient", "must be 0 (no cap) or positive, got %d", c.MaxCallsPerClient)
	}
	if c.SourceAddr != "" && net.ParseIP(c.SourceAddr) == nil {
		bad("SourceAddr", "%q is not an IP address", c.SourceAddr)
	}
	if c.RequireTLS && c.TLS == nil {
		bad("RequireTLS", "needs TLS, or every connection is refused")
	}
	if c.RaftPeer != nil && c.TLS == nil {
		bad("RaftPeer", "needs TLS, or every Raft connection is refused")
	}
	if c.WriteRate < 0 || math.IsNaN(c.WriteRate) {
		bad("WriteRate", "must be 0 (no limit) or positive, got %v", c.WriteRate)
	}
	if c.WriteRate > 0 && c.WriteBurst < 1 {
		bad("WriteBurst", "must be at least 1 with a WriteRate, got %d", c.WriteBurst)
	}
	return errors.Join(errs...)
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// ClockOffset is for tests only: the pool acts as if its wall clock
	// were this far ahead (negative: behind) in the absolute deadline it
	// sends servers of the previous release and in measuring servers'
	// clocks (skew.go). Default 0.
	ClockOffset time.Duration
	// DialTimeout bounds dialing a server and starting the session.
	// Default 10s (Consul's).
	DialTimeout time.Duration
	// MaxMessageSize caps one request the pool sends: a larger one is
	// not sent (ErrMessageTooLarge). Default 8 MiB, as a server's
	// ServerConfig.MaxMessageSize, which would refuse it.
	MaxMessageSize int
	// MaxReplySize caps one reply the pool reads: a server announcing a
	// larger one has the stream closed (ErrMessageTooLarge). Default
	// 256 MiB, as a server's ServerConfig.MaxReplySize.
	MaxReplySize int
	// KeepAliveInterval is how often an idle session is pinged; a session
	// whose ping fails is closed and the next call redials. Default 30s.
	KeepAliveInterval time.Duration
	// ConnectionWriteTimeout bounds one write to the connection.
	// Default 10s.
	ConnectionWriteTimeout time.Duration
	// Dial opens the TCP connection to a server; the pool then writes
	// RPCByte (after TLS, with TLS) and starts a yamux session over it.
	// Nil means a net.Dialer ("tcp"). A hook for tests. Default nil.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// TLS, when set, returns the config for dialing a server of
	// datacenter dc (tlsutil's OutgoingRPC), or nil for a plain
	// connection. The pool then writes TLSByte, runs the handshake
	// within DialTimeout, and writes RPCByte inside. dc is Datacenter for
	// Call and the one named for CallDC. A config without ServerName
	// gets the host of the address. Default nil: plain.
	TLS func(dc string) *tls.Config
	// Datacenter is the datacenter of the servers Call dials: the one
	// TLS is asked for. Needed with TLS. Default empty.
	Datacenter string
	// SourceAddr is the IP connections are made from (with the default
	// Dial), as ServerConfig.SourceAddr. Default empty: the system's
	// choice.
	SourceAddr string
}

// DefaultPoolConfig returns the default pool configuration.
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{
		DialTimeout:            10 * time.Second, // Consul's
		MaxMessageSize:         8 << 20,          // as DefaultServerConfig
		MaxReplySize:           256 << 20,        // as DefaultServerConfig
		KeepAliveInterval:      30 * time.Second, // yamux default
		ConnectionWriteTimeout: 10 * time.Second, // yamux default
		// Dial: nil, a plain net.Dialer.
		// TLS: nil, plain connections; Datacenter: empty.
	}
}

// Validate reports every invalid field of c, each error naming its field.
func (c PoolConfig) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("rpc: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"DialTimeout", c.DialTimeout}, {"KeepAliveInterval", c.KeepAliveInterval},
		{"ConnectionWriteTimeout", c.ConnectionWriteTimeout}} {
		if d.d <= 0 {
			bad(d.field, "must be positive, got %s", d.d)
		}
	}
	if c.MaxMessageSize < minMessageSize {
		bad("MaxMessageSize", "must be at least %d, got %d", minMessageSize, c.MaxMessageSize)
	}
	if c.MaxReplySize < minMessageSize {
		bad("MaxReplySize", "must be at least %d, got %d", minMessageSize, c.MaxReplySize)
	}
	if c.SourceAddr != "" && net.ParseIP(c.SourceAddr) == nil {
		bad("SourceAddr", "%q is not an IP address", c.SourceAddr)
	}
	if c.TLS != nil && c.Datacenter == "" {
		bad("Datacenter", "must be set with TLS: it names the servers Call verifies")
	}
	return errors.Join(errs...)
}

// minMessageSize is the smallest MaxMessageSize accepted: room for a
// header and a small body.
const minMessageSize = 1024

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number between 0 and 65535", addr, port)
	}
	return nil
}
