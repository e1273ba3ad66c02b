package dnssource

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/rpc"
)

// Datacenters is the agent's view of the known datacenters, asked of a
// server at most once per datacentersTTL, so that a question for an
// unknown datacenter (NXDOMAIN) does not cost a call each time while a
// datacenter that just joined is seen within seconds.
type Datacenters struct {
	door    door.Door
	mu      sync.Mutex // serializes refreshes
	current atomic.Pointer[datacenterSet]
}

type datacenterSet struct {
	names   map[string]bool
	fetched time.Time
}

const datacentersTTL = 5 * time.Second

// listTimeout bounds List when the caller set no deadline.
const listTimeout = 5 * time.Second

// NewDatacenters returns the datacenters known to the servers d reaches.
func NewDatacenters(d door.Door) *Datacenters { return &Datacenters{door: d} }

// List asks a server of this datacenter which datacenters it knows (its
// own and those of its WAN pool).
func (l *Datacenters) List(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var reply rpc.DatacentersResponse
	if err := l.door.RPC(ctx, rpc.MethodCatalogListDatacenters, &rpc.DatacentersRequest{}, &reply); err != nil {
		return nil, err
	}
	return reply.Datacenters, nil
}

// Known reports whether dc is known, from the last list when it has dc or
// is recent, else after asking again. When no server answers, a
// datacenter is taken as known: its names then fail (SERVFAIL, or a stale
// answer) rather than being denied.
func (l *Datacenters) Known(ctx context.Context, dc string) bool {
	if cur := l.current.Load(); cur != nil && (cur.names[dc] || time.Since(cur.fetched) < datacentersTTL) {
		return cur.names[dc]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := l.current.Load(); cur != nil && time.Since(cur.fetched) < datacentersTTL {
		return cur.names[dc]
	}
	names, err := l.List(ctx)
	if err != nil {
		return true
	}
	set := &datacenterSet{names: make(map[string]bool, len(names)), fetched: time.Now()}
	for _, n := range names {
		set.names[strings.ToLower(n)] = true
	}
	l.current.Store(set)
	return set.names[dc]
}
