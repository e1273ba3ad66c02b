package consensus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cairndns/cairn/gossip"
)

// Router knows, from the WAN pool, which datacenters exist and which of
// their servers are alive, so that a server can forward a request for
// another datacenter to one of that datacenter's servers.
//
// Its view is a snapshot rebuilt from the pool's members on every change
// signal (Run) and read without locks: a request being routed never waits
// for gossip, and gossip never waits for a request.
//
// A datacenter is known while at least one of its servers is alive or
// failed in the pool (a failed server may come back; the pool forgets it
// after its RetainDead). One whose servers all left is forgotten at once.
// The local datacenter is always known. Datacenter names compare
// case-insensitively, as the DNS names they appear in, and are reported
// lowercase.
//
// Router methods are safe for concurrent use.
type Router struct {
	dc     string // the local datacenter, lowercase
	logger *slog.Logger
	view   atomic.Pointer[routes]
	// randN returns a number in [0, n); a hook for tests, set before use.
	randN func(n int) int
}

// routes is one snapshot of the WAN pool, never changed once stored.
type routes struct {
	// servers maps a known datacenter to the RPC addresses of its alive
	// servers, sorted; empty (but present) when none is alive.
	servers map[string][]string
	// names are the known datacenters, sorted.
	names []string
	// batches holds the RPC addresses of the local datacenter's servers
	// that take forwarded writes in batches (gossip.FeatureBatchedForwards).
	batches map[string]bool
}

// NewRouter returns the router of a server of datacenter dc. Until its
// first Update it knows dc alone (with no server to route to: requests for
// the local datacenter are never routed). logger may be nil.
func NewRouter(dc string, logger *slog.Logger) (*Router, error) {
	if dc == "" {
		return nil, errors.New("consensus Router: datacenter is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{dc: strings.ToLower(dc), logger: logger.With("component", "router"), randN: rand.IntN}
	r.view.Store(&routes{servers: map[string][]string{r.dc: nil}, names: []string{r.dc}})
	return r, nil
}

// TakesBatches reports whether the server of the local datacenter at
// addr (its RPC address) takes forwarded writes in batches
// (rpc.Pool.CallCoalesced).
func (r *Router) TakesBatches(addr string) bool { return r.view.Load().batches[addr] }

// Datacenter returns the local datacenter.
func (r *Router) Datacenter() string { return r.dc }

// Run keeps the router current with m (the WAN pool) until ctx ends:
// it reads the members once, then again after each change signal. It
// must be m's only consumer of Changes.
func (r *Router) Run(ctx context.Context, m Membership) {
	changes := m.Changes()
	for {
		r.Update(m.Members())
		select {
		case <-ctx.Done():
			return
		case <-changes:
		}
	}
}

// Update replaces the router's view with one built from members, a
// snapshot of the WAN pool. Members that are not servers, or that name no
// RPC address, are ignored (the pool refuses them anyway).
func (r *Router) Update(members []gossip.Member) {
	next := &routes{servers: map[string][]string{r.dc: nil}, batches: map[string]bool{}}
	for _, m := range members {
		if !m.IsServer() || m.RPCAddr == "" || m.Datacenter == "" || m.Status == gossip.StatusLeft {
			continue
		}
		dc := strings.ToLower(m.Datacenter)
		if dc == r.dc && m.Features.Has(gossip.FeatureBatchedForwards) {
			next.batches[m.RPCAddr] = true
		}
		addrs := next.servers[dc]
		if m.Status == gossip.StatusAlive {
			addrs = append(addrs, m.RPCAddr)
		}
		next.servers[dc] = addrs
	}
	for _, addrs := range next.servers {
		slices.Sort(addrs)
	}
	next.names = slices.Sorted(maps.Keys(next.servers))
	prev := r.view.Swap(next)
	r.logChanges(prev, next)
}

// logChanges logs the datacenters that appeared, disappeared, lost their
// last live server or got one back: what an operator needs to explain a
// "no path to datacenter".
func (r *Router) logChanges(prev, next *routes) {
	for _, dc := range next.names {
		if dc == r.dc {
			continue
		}
		was, known := prev.servers[dc]
		now := next.servers[dc]
		switch {
		case !known:
			r.logger.Info("datacenter joined the WAN pool", "dc", dc, "servers", len(now))
		case len(was) > 0 && len(now) == 0:
			r.logger.Warn("datacenter has no live server; its requests fail", "dc", dc)
		case len(was) == 0 && len(now) > 0:
			r.logger.Info("datacenter reachable again", "dc", dc, "servers", len(now))
		}
	}
	for _, dc := range prev.names {
		if _, ok := next.servers[dc]; !ok {
			r.logger.Info("datacenter left the WAN pool", "dc", dc)
		}
	}
}

// Datacenters returns the known datacenters, sorted, the local one
// included.
func (r *Router) Datacenters() []string {
	return slices.Clone(r.view.Load().names)
}

// Servers returns the RPC addresses of the alive servers of dc, sorted,
// or none when dc is unknown or has none alive.
func (r *Router) Servers(dc string) []string {
	return slices.Clone(r.view.Load().servers[strings.ToLower(dc)])
}

// Known reports whether dc is a known datacenter.
func (r *Router) Known(dc string) bool {
	_, ok := r.view.Load().servers[strings.ToLower(dc)]
	return ok
}

// route returns the alive servers of dc in a random order, in which a
// request tries them: the first at random, spreading the requests of
// many servers over the other datacenter's servers, the next ones when
// a hop fails. The error, when dc has no alive server, wraps
// ErrNoPathToDatacenter, and rpc.ErrUnknownDatacenter too when dc is not
// known at all.
func (r *Router) route(dc string) ([]string, error) {
	dc = strings.ToLower(dc)
	v := r.view.Load()
	addrs, known := v.servers[dc]
	if len(addrs) == 0 {
		if !known {
			return nil, fmt.Errorf("%w %q: not a datacenter of the WAN pool (known: %s)", ErrUnknownDatacenter, dc, strings.Join(v.names, ", "))
		}
		return nil, fmt.Errorf("%w %s: none of its servers is alive", ErrNoPathToDatacenter, dc)
	}
	out := slices.Clone(addrs)
	for i := len(out) - 1; i > 0; i-- {
		j := r.randN(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
