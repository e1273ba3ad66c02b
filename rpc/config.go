package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// ServerConfig configures a Server.
type ServerConfig struct {
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
	// MaxMessageSize caps one RPC message (request or reply, header and
	// body together) in bytes, in both directions. A peer announcing a
	// larger message has its stream closed. Default 8 MiB.
	MaxMessageSize int
	// MaxStreamsPerConn caps the RPC streams one connection may have
	// being served at once; a stream over the cap is closed at once (the
	// caller gets ErrTransport). Every blocking query holds a stream for
	// up to its wait, so this is also a client's cap on concurrent
	// blocking queries to one server. Default 2048.
	MaxStreamsPerConn int
	// KeepAliveInterval is how often an idle yamux session is pinged; a
	// session whose ping fails is closed. Default 30s (yamux's).
	KeepAliveInterval time.Duration
	// ConnectionWriteTimeout bounds one write to the connection; a
	// session whose write stalls longer is closed. Default 10s (yamux's).
	ConnectionWriteTimeout time.Duration
}

// DefaultServerConfig returns the default server configuration.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Addr:                   "127.0.0.1:8300", // Consul's server RPC port, local only
		HandshakeTimeout:       5 * time.Second,  // Consul's rpc_handshake_timeout
		MaxMessageSize:         8 << 20,          // a large catalog dump fits; a hostile peer cannot make us hold more per stream
		MaxStreamsPerConn:      2048,             // room for a client agent's blocking queries
		KeepAliveInterval:      30 * time.Second, // yamux default
		ConnectionWriteTimeout: 10 * time.Second, // yamux default
		// AdvertiseAddr: empty, the listener's address.
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
	if c.MaxStreamsPerConn <= 0 {
		bad("MaxStreamsPerConn", "must be positive, got %d", c.MaxStreamsPerConn)
	}
	return errors.Join(errs...)
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// DialTimeout bounds dialing a server and starting the session.
	// Default 10s (Consul's).
	DialTimeout time.Duration
	// MaxMessageSize caps one message in either direction, as
	// ServerConfig.MaxMessageSize does. Default 8 MiB.
	MaxMessageSize int
	// KeepAliveInterval is how often an idle session is pinged; a session
	// whose ping fails is closed and the next call redials. Default 30s.
	KeepAliveInterval time.Duration
	// ConnectionWriteTimeout bounds one write to the connection.
	// Default 10s.
	ConnectionWriteTimeout time.Duration
	// Dial opens the TCP connection to a server; the pool then writes
	// RPCByte and starts a yamux session over it. Nil means a net.Dialer
	// ("tcp"). A hook for tests and, later, TLS. Default nil.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// DefaultPoolConfig returns the default pool configuration.
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{
		DialTimeout:            10 * time.Second, // Consul's
		MaxMessageSize:         8 << 20,          // as DefaultServerConfig
		KeepAliveInterval:      30 * time.Second, // yamux default
		ConnectionWriteTimeout: 10 * time.Second, // yamux default
		// Dial: nil, a plain net.Dialer.
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
