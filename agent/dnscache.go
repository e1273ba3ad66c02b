package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// dnsSource is the resolver's Source on every agent: service, node and
// prepared query questions are answered from the agent's cache, which
// fills on a miss through the door and then keeps its entries fresh by
// following the catalog's change feed (one stream per datacenter for all
// three caches, refetching the names it reports; feed.go), so a repeated
// question costs no RPC and no catalog read, and keeps answering from its
// last entry while the servers are unreachable (serve-stale). Reverse
// lookups, rare, go through the door each time.
type dnsSource struct {
	dc          string
	onlyPassing bool
	door        door
	// datacenters tells whether a datacenter is known to the WAN pool: a
	// name in an unknown one does not exist (NXDOMAIN), one in a known
	// datacenter that cannot be reached is a server failure (SERVFAIL).
	datacenters *datacenterList
	instances   *cache.Cache[*resolver.Instances]
	nodes       *cache.Cache[*catalog.Node]
	// queries caches prepared query answers; the feed refetches one when
	// it names the query or the service the cached answer is of.
	queries *cache.Cache[*catalog.QueryResult]
	hub     *cache.Hub // follows the feeds for the three caches
	// node is this agent's node, which "near" answers are sorted from,
	// and nearRefresh how often they are sorted again (dnsnear.go).
	node        string
	nearRefresh atomic.Int64 // a time.Duration
}

var _ resolver.Source = (*dnsSource)(nil)

func newDNSSource(cfg cache.Config, dc string, onlyPassing bool, d door, dcs *datacenterList, logger *slog.Logger) (*dnsSource, error) {
	s := &dnsSource{dc: dc, onlyPassing: onlyPassing, door: d, datacenters: dcs}
	s.nearRefresh.Store(int64(defaultNearRefresh))
	var err error
	logger = logger.With("component", "cache")
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
			return time.Duration(s.nearRefresh.Load()) // sorted by coordinates (dnsnear.go)
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
func (s *dnsSource) Close() {
	s.instances.Close()
	s.nodes.Close()
	s.queries.Close()
	s.hub.Close()
}

// Stats sums the caches' counters.
func (s *dnsSource) Stats() cache.Stats {
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
func (s *dnsSource) fetchInstances(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*resolver.Instances, uint64, error) {
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
func (s *dnsSource) fetchNode(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*catalog.Node, uint64, error) {
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
func (s *dnsSource) Instances(ctx context.Context, dc, service, tag string) (*resolver.Instances, error) {
	key := cache.Key{Kind: kindService, Datacenter: dc, Name: service, Tag: tag}
	if dc == nearDatacenter {
		// The local datacenter's instances, nearest first (dnsnear.go).
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
func (s *dnsSource) Node(ctx context.Context, dc, name string) (*catalog.Node, error) {
	if dc == nearDatacenter {
		dc = s.dc // the SRV targets of a "near" answer (dnsnear.go)
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
func (s *dnsSource) checkDatacenter(ctx context.Context, dc string) error {
	if dc == s.dc || s.datacenters.known(ctx, dc) {
		return nil
	}
	return fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
}

// datacenterList is the agent's view of the known datacenters, asked of a
// server at most once per datacenterListTTL, so that a question for an
// unknown datacenter (NXDOMAIN) does not cost a call each time while a
// datacenter that just joined is seen within seconds.
type datacenterList struct {
	door    door
	mu      sync.Mutex // serializes refreshes
	current atomic.Pointer[datacenterSet]
}

type datacenterSet struct {
	names   map[string]bool
	fetched time.Time
}

const datacenterListTTL = 5 * time.Second

func newDatacenterList(d door) *datacenterList { return &datacenterList{door: d} }

// list asks a server of this datacenter which datacenters it knows (its
// own and those of its WAN pool).
func (l *datacenterList) list(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.DatacentersResponse
	if err := l.door.RPC(ctx, rpc.MethodCatalogListDatacenters, &rpc.DatacentersRequest{}, &reply); err != nil {
		return nil, err
	}
	return reply.Datacenters, nil
}

// known reports whether dc is known, from the last list when it has dc or
// is recent, else after asking again. When no server answers, a
// datacenter is taken as known: its names then fail (SERVFAIL, or a stale
// answer) rather than being denied.
func (l *datacenterList) known(ctx context.Context, dc string) bool {
	if cur := l.current.Load(); cur != nil && (cur.names[dc] || time.Since(cur.fetched) < datacenterListTTL) {
		return cur.names[dc]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := l.current.Load(); cur != nil && time.Since(cur.fetched) < datacenterListTTL {
		return cur.names[dc]
	}
	names, err := l.list(ctx)
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

// Reverse asks a server's address index.
func (s *dnsSource) Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error) {
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
func (s *dnsSource) PreparedQuery(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error) {
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
func (s *dnsSource) fetchQuery(ctx context.Context, key cache.Key, _ uint64, _ time.Duration) (*catalog.QueryResult, uint64, error) {
	dc := key.Datacenter
	if dc == s.dc {
		dc = ""
	}
	res, err := executeQuery(ctx, s.door, dc, key.Name, s.node, true)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, 0, nil // no such query: no result, not an error
	}
	if err != nil {
		return nil, 0, err
	}
	return res, 0, nil
}

// cachedInstances answers ?cached HTTP reads from the same entries DNS
// uses: every instance of the entry (both health halves), sorted by node
// then service ID as the catalog sorts them.
func (s *dnsSource) cachedInstances(ctx context.Context, service, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	e, info, err := s.instances.Get(ctx, cache.Key{Kind: kindService, Datacenter: s.dc, Name: service, Tag: tag})
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
