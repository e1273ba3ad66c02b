package rpc

import (
	"net"
	"sync"
)

// This file holds the budget of one client on the server port: the
// connections it may hold (ServerConfig.MaxConnsPerClient) and the calls it
// may have in flight over them (MaxCallsPerClient), so that what a server
// spends on one address stays bounded however many connections it opens
// and however many blocking queries it sends. A client is an IP address.

// clientBudget counts the connections and calls of each client address.
// Its methods may be called from any goroutine. An address is kept only
// while it holds something, so the map is as large as what is open.
type clientBudget struct {
	maxConns, maxCalls int // 0: no cap

	mu   sync.Mutex
	used map[string]*clientUse
}

type clientUse struct{ conns, calls int }

func newClientBudget(maxConns, maxCalls int) *clientBudget {
	return &clientBudget{maxConns: maxConns, maxCalls: maxCalls, used: make(map[string]*clientUse)}
}

// budgetKey is the key of remote in the budget: its IP address (or, for
// an in-memory connection, its whole address), or "" for none, which is
// not budgeted.
func budgetKey(remote net.Addr) string {
	if remote == nil {
		return ""
	}
	return hostOf(remote)
}

// take counts one more connection (calls false) or call (calls true) of
// key, and reports whether it was within the cap; over it, nothing is
// counted. key "" is always within.
func (b *clientBudget) take(key string, calls bool) bool {
	if key == "" {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.used[key]
	if u == nil {
		u = &clientUse{}
		b.used[key] = u
	}
	n, limit := &u.conns, b.maxConns
	if calls {
		n, limit = &u.calls, b.maxCalls
	}
	if limit > 0 && *n >= limit {
		b.forgetIdle(key, u)
		return false
	}
	*n++
	return true
}

// give returns what take counted.
func (b *clientBudget) give(key string, calls bool) {
	if key == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.used[key]
	if u == nil { // not reached: give follows a take
		return
	}
	if calls {
		u.calls--
	} else {
		u.conns--
	}
	b.forgetIdle(key, u)
}

func (b *clientBudget) forgetIdle(key string, u *clientUse) {
	if u.conns <= 0 && u.calls <= 0 {
		delete(b.used, key)
	}
}
