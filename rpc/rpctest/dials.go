package rpctest

import (
	"context"
	"net"
	"slices"
	"sync"
)

// DialLog records the addresses a pool dials, in order: set a pool's
// PoolConfig.Dial to its Dial. Safe for concurrent use.
type DialLog struct {
	mu    sync.Mutex
	addrs []string
}

// Dial records addr and dials it over TCP.
func (d *DialLog) Dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

// Addrs returns the addresses dialed so far, in order.
func (d *DialLog) Addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}
