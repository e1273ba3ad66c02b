package rpc

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// The first byte of every connection to the server port says what the
// rest of it carries. Zero is never valid, so a connection of zeros is
// refused.
const (
	// RPCByte starts a connection that carries a yamux session; each of
	// its streams carries msgpack RPC (see Pool).
	RPCByte byte = 0x01
	// RaftByte starts a connection that carries Raft's own byte stream,
	// handed as it is to Server.RaftLayer.
	RaftByte byte = 0x02
	// TLSByte starts a connection whose rest is a TLS session (Consul's
	// RPCTLS value); inside it, the first byte is RPCByte or RaftByte
	// again. A server without ServerConfig.TLS refuses it.
	TLSByte byte = 0x03
)

// kindName names a first byte for logs.
func kindName(b byte) string {
	switch b {
	case RPCByte:
		return "rpc"
	case RaftByte:
		return "raft"
	case TLSByte:
		return "tls"
	}
	return "unknown"
}

// yamuxConfig builds the yamux configuration of a session. yamux logs
// only about failing sessions (peers gone, keepalives missed), which is
// routine here, so its lines go to logger at debug level.
func yamuxConfig(keepAlive, writeTimeout time.Duration, logger *slog.Logger) *yamux.Config {
	c := yamux.DefaultConfig()
	c.KeepAliveInterval = keepAlive
	c.ConnectionWriteTimeout = writeTimeout
	c.LogOutput = nil
	c.Logger = slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
	return c
}

// sampler lets an event be logged at most once per interval, counting the
// ones left out, so a flood of bad connections makes one line a minute,
// not one each.
type sampler struct {
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

// allow reports whether the event may be logged now, and how many were
// left out since the last one that was.
func (s *sampler) allow(now time.Time) (ok bool, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() && now.Sub(s.last) < s.every {
		s.dropped++
		return false, 0
	}
	s.last, dropped, s.dropped = now, s.dropped, 0
	return true, dropped
}

// closeQuietly closes c where the close error tells nothing new.
func closeQuietly(c io.Closer) { _ = c.Close() }

// withServerName returns cfg, or a copy of it with ServerName set to the
// host of addr when it has none, as tls.Dial does: crypto/tls needs a name
// to verify (unless the config verifies in a callback of its own).
func withServerName(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg = cfg.Clone()
	cfg.ServerName = host
	return cfg
}
