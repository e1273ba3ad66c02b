// Package dnssource is what an agent's DNS server answers from (the
// resolver's Source): service, node and prepared query answers kept in
// the agent's caches, filled through the door on a miss and kept fresh
// by following each datacenter's change feed (feed.go); the "near"
// datacenter's entries sorted by network coordinates (near.go); the
// known datacenters (datacenters.go); and the follower that keeps the
// resolver signing with the datacenter's DNSSEC key (dnssec.go).
//
// It reads the servers only through an agent/door.Door.
package dnssource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// The kinds of cache key.
const (
	kindService = "service"
	kindNode    = "node"
	kindQuery   = "query"
)

// failoverRefresh is how old a prepared query's answer may get when it
// depended on other datacenters (it failed over, or tried to): the feed
// the entry follows is its own datacenter's, which does not see theirs.
const failoverRefresh = 2 * time.Second

// Source is the resolver's Source on every agent: service, node and
// prepared query questions are answered from the agent's cache, which
// fills on a miss through the door and then keeps its entries fresh by
// following the catalog's change feed (one stream per datacenter for all
// three caches, refetching the names it reports; feed.go), so a repeated
// question costs no RPC and no catalog read, and keeps answering from its
// last entry while the servers are unreachable (serve-stale). Reverse
// lookups, rare, go through the door each time.
type Source struct {
	dc          string
	node        string // this agent's node, which "near" answers are sorted from
	onlyPassing bool
	door        door.Door
	datacenters *Datacenters
	instances   *cache.Cache[*resolver.Instances]
	nodes       *cache.Cache[*catalog.Node]
	// queries caches prepared query answers; the feed refetches one when
	// it names the query or the service the cached answer is of.
	queries *cache.Cache[*catalog.QueryResult]
	hub     *cache.Hub // follows the feeds for the three caches
	// nearRefresh is how often "near" answers are sorted again (near.go).
	nearRefresh time.Duration
}

// Config is what a Source answers for.
type Config struct {
	// Cache bounds and paces the caches (the cache block).
	Cache cache.Config
	// Datacenter is the agent's; Node its node, which "near" answers are
	// sorted from and prepared queries' Near "_agent" means.
	Datacenter, Node string
	// OnlyPassing leaves instances with a warning out of answers.
	OnlyPassing bool
	// NearRefresh is how often a "near" entry is sorted again while the
	// feed names no change to its service; 0 means 15s (near.go).
	NearRefresh time.Duration
}

// Deps are the parts a Source reads through.
type Deps struct {
	// Door reaches the servers, with the token the caches read with
	// (acl.tokens.dns): its reads carry no token of their own.
	Door door.Door
	// Datacenters tells whether a datacenter is known to the WAN pool: a
	// name in an unknown one does not exist (NXDOMAIN), one in a known
	// datacenter that cannot be reached is a server failure (SERVFAIL).
	Datacenters *Datacenters
	Logger      *slog.Logger
}

var _ resolver.Source = (*Source)(nil)

// New builds the caches, empty: they fill as questions come. Close stops
// them.
func New(c Config, deps Deps) (*Source, error) {
	s := &Source{dc: c.Datacenter, node: c.Node, onlyPassing: c.OnlyPassing, door: deps.Door, datacenters: deps.Datacenters}
	s.nearRefresh = cmp.Or(c.NearRefresh, defaultNearRefresh)
	cfg := c.Cache
	var err error
	logger := deps.Logger.With("component", "cache")
	// One hub for the three caches: one change feed per datacenter.
	if s.hub, err = cache.NewHub(s.follow, cfg, logger); err != nil {
		return nil, err
	}
	cfg.Hub = s.hub
	if s.instances, err = cache.New(s.nearConfig(cfg), s.fetchInstances, logger); err != nil {
		s.hub.Close()
		return nil, err
	}
	if s.nodes, err = cache.New(cfg, s.fetchNode, logger); err != nil {
		s.instances.Close()
		s.hub.Close()
		return nil, err
	}
	qcfg := cfg
	qcfg.RefreshAfter = func(v any) time.Duration {
		r := v.(*catalog.QueryResult)
		switch {
		case r != nil && r.Failovers > 0:
			return failoverRefresh
		case r != nil && r.Ordered:
			return s.nearRefresh // sorted by coordinates (near.go)
		}
		return 0
	}
	if s.queries, err = cache.New(qcfg, s.fetchQuery, logger); err != nil {
		s.instances.Close()
		s.nodes.Close()
		s.hub.Close()
		return nil, err
	}
	return s, nil
}

// Close stops every entry's refresh.
func (s *Source) Close() {
	s.instances.Close()
	s.nodes.Close()
	s.queries.Close()
	s.hub.Close()
}

// Stats sums the caches' counters.
func (s *Source) Stats() cache.Stats {
	var sum cache.Stats
	for _, c := range []cache.Stats{s.instances.Stats(), s.nodes.Stats(), s.queries.Stats()} {
		sum.Hits += c.Hits
		sum.Misses += c.Misses
		sum.StaleAnswers += c.StaleAnswers
		sum.Entries += c.Entries
		sum.Evictions += c.Evictions
		sum.RefreshErrors += c.RefreshErrors
	}
	return sum
}

// readOptions are the options of the cache's reads: stale (any server
// answers, so DNS keeps answering without a leader) and blocking.
func readOptions(dc string, minIndex uint64, wait time.Duration) rpc.QueryOptions {
	return rpc.QueryOptions{Datacenter: dc, AllowStale: true, MinQueryIndex: minIndex, MaxQueryTime: wait}
}

// fetchInstances reads every instance of a service (the server's
// OnlyHealthy filter would drop the unhealthy ones the resolver may still
// answer with) and splits them by health.
func (s *Source) fetchInstances(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*resolver.Instances, uint64, error) {
	var reply rpc.ServiceInstancesResponse
	args := &rpc.ServiceInstancesRequest{QueryOptions: readOptions(key.Datacenter, minIndex, wait), Service: key.Name, Tag: key.Tag}
	near := key.Filter == filterNear
	if near {
		args.Near = s.node // the server sorts: it holds the coordinates
	}
	if err := s.door.RPC(ctx, rpc.MethodCatalogServiceInstances, args, &reply); err != nil {
		return nil, 0, err
	}
	set := resolver.NewInstances(splitHealth(reply.Instances, s.onlyPassing))
	set.Ordered = near
	return set, reply.Index, nil
}

// fetchNode reads a node (through NodeServices, the endpoint's call that
// returns a node).
func (s *Source) fetchNode(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*catalog.Node, uint64, error) {
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: readOptions(key.Datacenter, minIndex, wait), Node: key.Name}
	if err := s.door.RPC(ctx, rpc.MethodCatalogNodeServices, args, &reply); err != nil {
		return nil, 0, err
	}
	return reply.Node, reply.Index, nil
}

// splitHealth splits instances into those DNS answers with and those it
// leaves out (a critical or maintenance check, or a warning with
// onlyPassing).
func splitHealth(all []catalog.ServiceInstance, onlyPassing bool) (healthy, unhealthy []catalog.ServiceInstance) {
	for _, in := range all {
		if in.Healthy(onlyPassing) {
			healthy = append(healthy, in)
		} else {
			unhealthy = append(unhealthy, in)
		}
	}
	return healthy, unhealthy
}

// Instances answers from the cache; names that cannot be in the catalog
// are no such service without taking a cache entry.
func (s *Source) Instances(ctx context.Context, dc, service, tag string) (*resolver.Instances, error) {
	key := cache.Key{Kind: kindService, Datacenter: dc, Name: service, Tag: tag}
	if dc == nearDatacenter {
		// The local datacenter's instances, nearest first (near.go).
		key.Datacenter, key.Filter = s.dc, filterNear
	} else if err := s.checkDatacenter(ctx, dc); err != nil {
		return nil, err
	}
	if catalog.ValidLabel(service) != "" || (tag != "" && catalog.ValidLabel(tag) != "") {
		return nil, nil
	}
	e, info, err := s.instances.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if info.Stale {
		return e.Value.Staled(), nil
	}
	return e.Value, nil
}

// Node answers from the cache.
func (s *Source) Node(ctx context.Context, dc, name string) (*catalog.Node, error) {
	if dc == nearDatacenter {
		dc = s.dc // the SRV targets of a "near" answer (near.go)
	}
	if err := s.checkDatacenter(ctx, dc); err != nil {
		return nil, err
	}
	if catalog.ValidateNodeName("Node", name) != nil {
		return nil, nil
	}
	e, _, err := s.nodes.Get(ctx, cache.Key{Kind: kindNode, Datacenter: dc, Name: name})
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// checkDatacenter returns ErrUnknownDatacenter for a datacenter that is
// neither the local one nor known to the WAN pool. Names arrive
// lowercased from zones, as the router reports datacenters.
func (s *Source) checkDatacenter(ctx context.Context, dc string) error {
	if dc == s.dc || s.datacenters.Known(ctx, dc) {
		return nil
	}
	return fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
}

// Reverse asks a server's address index.
func (s *Source) Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error) {
	var reply rpc.ReverseResponse
	args := &rpc.ReverseRequest{QueryOptions: rpc.QueryOptions{Datacenter: s.dc, AllowStale: true}, Addr: addr.String()}
	if err := s.door.RPC(ctx, rpc.MethodCatalogReverse, args, &reply); err != nil {
		return nil, nil, err
	}
	return reply.Nodes, reply.Services, nil
}

// PreparedQuery answers from the cache: an execution on a server fills
// an entry, which is refetched when the feed names the query or its
// service, and every failoverRefresh while it depends on other
// datacenters. A datacenter nobody knows, and a name no query can have,
// are no such name.
func (s *Source) PreparedQuery(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error) {
	if dc == "" {
		dc = s.dc
	}
	if err := s.checkDatacenter(ctx, dc); err != nil {
		return nil, err
	}
	if catalog.ValidLabel(nameOrID) != "" {
		return nil, nil
	}
	e, _, err := s.queries.Get(ctx, cache.Key{Kind: kindQuery, Datacenter: dc, Name: strings.ToLower(nameOrID)})
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// fetchQuery executes a prepared query (none: a nil result).
func (s *Source) fetchQuery(ctx context.Context, key cache.Key, _ uint64, _ time.Duration) (*catalog.QueryResult, uint64, error) {
	dc := key.Datacenter
	if dc == s.dc {
		dc = ""
	}
	var reply rpc.PreparedQueryExecuteResponse
	args := &rpc.PreparedQueryExecuteRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: true}, QueryIDOrName: key.Name, Agent: s.node}
	err := s.door.RPC(ctx, rpc.MethodPreparedQueryExecute, args, &reply)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, 0, nil // no such query: no result, not an error
	}
	if err != nil {
		return nil, 0, err
	}
	return &reply.Result, 0, nil
}

// cachedInstances answers ?cached HTTP reads from the same entries DNS
// uses: every instance of the entry (both health halves), sorted by node
// then service ID as the catalog sorts them.
func (s *Source) cachedInstances(ctx context.Context, service, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	e, info, err := s.instances.Get(ctx, cache.Key{Kind: kindService, Datacenter: s.dc, Name: service, Tag: tag})
	if errors.Is(err, cache.ErrFeedFailing) {
		// The servers could not be followed for longer than max_stale:
		// the HTTP API's "no server answered" (a 503), not a 500.
		return 0, nil, false, 0, fmt.Errorf("%w: %w", rpc.ErrTransport, err)
	}
	if err != nil {
		return 0, nil, false, 0, err
	}
	all := make([]catalog.ServiceInstance, 0, len(e.Value.Healthy)+len(e.Value.Unhealthy))
	all = append(append(all, e.Value.Healthy...), e.Value.Unhealthy...)
	slices.SortFunc(all, func(a, b catalog.ServiceInstance) int {
		return cmp.Or(cmp.Compare(a.Node.Node, b.Node.Node), cmp.Compare(a.Service.ID, b.Service.ID))
	})
	return e.Index, all, info.Hit, info.Age, nil
}

// Collectors returns the DNS cache's series (the caches summed), for the
// agent's registry.
func (s *Source) Collectors() []prometheus.Collector {
	return []prometheus.Collector{cache.NewCollector(s.Stats)}
}

// CachedReads answers the HTTP API's ?cached service reads
// (httpapi.Deps.CachedInstances). The cache holds what dnsToken may read,
// so a read made with another token (defaultToken() when it carries none)
// is answered by the servers through d instead, as a stale read, and
// reported a miss.
func (s *Source) CachedReads(d door.Door, dnsToken, defaultToken func() string) func(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	return func(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
		tok := acl.TokenFromContext(ctx)
		if tok == "" {
			tok = defaultToken()
		}
		if tok != dnsToken() {
			var reply rpc.ServiceInstancesResponse
			args := &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}, Service: name, Tag: tag}
			err := d.RPC(ctx, rpc.MethodCatalogServiceInstances, args, &reply)
			return reply.Index, reply.Instances, false, 0, err
		}
		return s.cachedInstances(ctx, name, tag)
	}
}
