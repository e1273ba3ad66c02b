package door

import (
	"sync"

	"github.com/cairndns/cairn/gossip"
)

// ServerList is where a client door sends its calls: the RPC addresses of
// the alive servers of a datacenter in the LAN pool. Gossip is the only
// source, so no server list needs configuring and a server that fails
// drops out of it within memberlist's failure detection. Every call
// asks, so the list is read from the pool again only after a member event
// (gossip.Pool.Version): reading all members for each call was a fifth of
// a client's CPU in a registration storm with 100 agents, and grows with
// the pool.
type ServerList struct {
	pool *gossip.Pool
	dc   string

	mu      sync.Mutex
	read    bool
	version uint64
	addrs   []string
}

// NewServerList returns the servers of datacenter dc in the LAN pool.
func NewServerList(pool *gossip.Pool, dc string) *ServerList {
	return &ServerList{pool: pool, dc: dc}
}

// Addrs returns the servers' RPC addresses. Callers must not modify the
// slice. It may be called from any goroutine.
func (l *ServerList) Addrs() []string {
	v := l.pool.Version()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.read && l.version == v {
		return l.addrs
	}
	var out []string
	for _, m := range l.pool.Members() {
		if m.IsServer() && m.Status == gossip.StatusAlive && m.Datacenter == l.dc && m.RPCAddr != "" {
			out = append(out, m.RPCAddr)
		}
	}
	l.read, l.version, l.addrs = true, v, out
	return out
}
