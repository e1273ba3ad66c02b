// Package rpctest helps tests that need an RPC server or pool: each is
// bound to a free loopback port, or closed, at the end of the test.
// Imported only by tests.
package rpctest

import (
	"context"
	"testing"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// StartServer starts an rpc.Server on 127.0.0.1:0 with services
// registered (name → receiver) and shuts it down when the test ends.
// Services with methods that block must return when the test ends too
// (Shutdown waits for them).
func StartServer(tb testing.TB, services map[string]any) *rpc.Server {
	tb.Helper()
	cfg := rpc.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	s, err := rpc.NewServer(cfg, nil)
	if err != nil {
		tb.Fatalf("rpctest: NewServer: %v", err)
	}
	for name, rcvr := range services {
		if err := s.Register(name, rcvr); err != nil {
			tb.Fatalf("rpctest: %v", err)
		}
	}
	if err := s.Start(); err != nil {
		tb.Fatalf("rpctest: Start: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			tb.Errorf("rpctest: Shutdown: %v", err)
		}
	})
	return s
}

// NewPool returns an rpc.Pool with the default configuration (a 2s dial
// timeout), closed when the test ends.
func NewPool(tb testing.TB) *rpc.Pool {
	tb.Helper()
	cfg := rpc.DefaultPoolConfig()
	cfg.DialTimeout = 2 * time.Second
	p, err := rpc.NewPool(cfg, nil)
	if err != nil {
		tb.Fatalf("rpctest: NewPool: %v", err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}
