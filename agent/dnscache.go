package agent

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// blockingReader is what the DNS cache fetches through: blocking reads of
// the catalog of datacenter dc (minIndex 0 is a plain read; otherwise the
// read returns when the data's index moves past minIndex, or after wait).
// A server reads its own state store for its own datacenter; a client,
// and a server for another datacenter, asks a server over RPC (which
// forwards a request for another datacenter to one of its servers).
type blockingReader interface {
	serviceInstancesAt(ctx context.Context, dc, service, tag string, minIndex uint64, wait time.Duration) (uint64, []catalog.ServiceInstance, error)
	nodeAt(ctx context.Context, dc, name string, minIndex uint64, wait time.Duration) (uint64, *catalog.Node, error)
	// changesAt is the catalog's change feed (catalog.Store.ChangesSince),
	// blocking the same way.
	changesAt(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (catalog.Changes, error)
}

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

// dnsSource is the resolver's Source on every agent: service and node
// questions are answered from the agent's cache, which fills on a miss
// and then keeps its entries fresh by following the catalog's change feed
// (one blocking call per datacenter for all three caches, refetching the
// names it reports), so a repeated
// question costs no RPC and no catalog read, and keeps answering from its
// last entry while the servers are unreachable (serve-stale). Reverse
// lookups, rare, go to the backend each time.
type dnsSource struct {
	dc          string
	onlyPassing bool
	reader      blockingReader
	reverse     func(ctx context.Context, addr netip.Addr) (nodes, services []string, err error)
	// known reports whether dc is a datacenter of the WAN pool: a name in
	// an unknown one does not exist (NXDOMAIN), one in a known datacenter
	// that cannot be reached is a server failure (SERVFAIL). Nil: only
	// the local datacenter exists.
	known     func(ctx context.Context, dc string) bool
	instances *cache.Cache[*resolver.Instances]
	nodes     *cache.Cache[*catalog.Node]
	// query executes a prepared query for DNS (the backend's
	// PreparedQuery), set by the agent; see PreparedQuery.
	query func(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error)
	// queries caches prepared query answers; queryService maps a query
	// key to the lowercased service its query looks up, so that the feed
	// refetches an answer when that service changes.
	queries      *cache.Cache[*catalog.QueryResult]
	queryService sync.Map
	hub          *cache.Hub // follows the feeds for the three caches
}

var _ resolver.Source = (*dnsSource)(nil)

func newDNSSource(cfg cache.Config, dc string, onlyPassing bool, r blockingReader,
	reverse func(context.Context, netip.Addr) ([]string, []string, error), logger *slog.Logger) (*dnsSource, error) {
	s := &dnsSource{dc: dc, onlyPassing: onlyPassing, reader: r, reverse: reverse}
	var err error
	logger = logger.With("component", "cache")
	// One hub for the three caches: one change feed call per datacenter.
	if s.hub, err = cache.NewHub(s.feed, cfg, logger); err != nil {
		return nil, err
	}
	cfg.Hub = s.hub
	if s.instances, err = cache.New(cfg, s.fetchInstances, logger); err != nil {
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
		if r := v.(*catalog.QueryResult); r != nil && r.Failovers > 0 {
			return failoverRefresh
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

func (s *dnsSource) fetchInstances(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*resolver.Instances, uint64, error) {
	idx, all, err := s.reader.serviceInstancesAt(ctx, key.Datacenter, key.Name, key.Tag, minIndex, wait)
	if err != nil {
		return nil, 0, err
	}
	return resolver.NewInstances(splitHealth(all, s.onlyPassing)), idx, nil
}

func (s *dnsSource) fetchNode(ctx context.Context, key cache.Key, minIndex uint64, wait time.Duration) (*catalog.Node, uint64, error) {
	idx, n, err := s.reader.nodeAt(ctx, key.Datacenter, key.Name, minIndex, wait)
	return n, idx, err
}

// feed is the caches' Feed: the catalog's changes, told as which keys
// they touch. Names in keys are lowercased (by zones, and here for HTTP
// ?cached reads that keep the path's case), as the change log's are.
func (s *dnsSource) feed(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	c, err := s.reader.changesAt(ctx, dc, minIndex, wait)
	if err != nil {
		return 0, nil, false, err
	}
	services, nodes, queries := setOf(c.Services), setOf(c.Nodes), setOf(c.Queries)
	changed := func(k cache.Key) bool {
		switch k.Kind {
		case kindService:
			return services[strings.ToLower(k.Name)]
		case kindNode:
			return nodes[strings.ToLower(k.Name)]
		case kindQuery:
			if queries[strings.ToLower(k.Name)] {
				return true
			}
			svc, ok := s.queryService.Load(k)
			return ok && services[svc.(string)]
		}
		return true
	}
	return c.Index, changed, c.Reset, nil
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Instances answers from the cache; names that cannot be in the catalog
// are no such service without taking a cache entry.
func (s *dnsSource) Instances(ctx context.Context, dc, service, tag string) (*resolver.Instances, error) {
	if err := s.checkDatacenter(ctx, dc); err != nil {
		return nil, err
	}
	if catalog.ValidLabel(service) != "" || (tag != "" && catalog.ValidLabel(tag) != "") {
		return nil, nil
	}
	e, info, err := s.instances.Get(ctx, cache.Key{Kind: kindService, Datacenter: dc, Name: service, Tag: tag})
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
	if dc == s.dc || s.known != nil && s.known(ctx, dc) {
		return nil
	}
	return fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
}

// datacenterList is a client agent's view of the known datacenters, asked
// of a server at most once per datacenterListTTL, so that a question for an
// unknown datacenter (NXDOMAIN) does not cost a round trip each time while
// a datacenter that just joined is seen within seconds.
type datacenterList struct {
	list    func(ctx context.Context) ([]string, error)
	mu      sync.Mutex // serializes refreshes
	current atomic.Pointer[datacenterSet]
}

type datacenterSet struct {
	names   map[string]bool
	fetched time.Time
}

const datacenterListTTL = 5 * time.Second

func newDatacenterList(list func(ctx context.Context) ([]string, error)) *datacenterList {
	return &datacenterList{list: list}
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

// Reverse asks the backend.
func (s *dnsSource) Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error) {
	return s.reverse(ctx, addr)
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

// fetchQuery executes a prepared query (none: a nil result) and notes the
// service it looks up for the feed.
func (s *dnsSource) fetchQuery(ctx context.Context, key cache.Key, _ uint64, _ time.Duration) (*catalog.QueryResult, uint64, error) {
	dc := key.Datacenter
	if dc == s.dc {
		dc = ""
	}
	res, err := s.query(ctx, dc, key.Name)
	if err != nil {
		return nil, 0, err
	}
	if res != nil {
		s.queryService.Store(key, strings.ToLower(res.Service))
	}
	return res, 0, nil
}

// storeReader reads a server's own state store for its own datacenter,
// blocking on its watches, and goes through remote (its own Catalog
// endpoint, which forwards them) for other datacenters.
type storeReader struct {
	store  *catalog.Store
	dc     string
	remote blockingReader
}

func (r storeReader) serviceInstancesAt(ctx context.Context, dc, service, tag string, minIndex uint64, wait time.Duration) (uint64, []catalog.ServiceInstance, error) {
	if dc != r.dc {
		return r.remote.serviceInstancesAt(ctx, dc, service, tag, minIndex, wait)
	}
	return blockingRead(ctx, minIndex, wait, func(ws catalog.WatchSet) (uint64, []catalog.ServiceInstance, error) {
		return r.store.ServiceInstances(ws, service, tag)
	})
}

func (r storeReader) nodeAt(ctx context.Context, dc, name string, minIndex uint64, wait time.Duration) (uint64, *catalog.Node, error) {
	if dc != r.dc {
		return r.remote.nodeAt(ctx, dc, name, minIndex, wait)
	}
	return blockingRead(ctx, minIndex, wait, func(ws catalog.WatchSet) (uint64, *catalog.Node, error) {
		return r.store.Node(ws, name)
	})
}

func (r storeReader) changesAt(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (catalog.Changes, error) {
	if dc != r.dc {
		return r.remote.changesAt(ctx, dc, minIndex, wait)
	}
	var c catalog.Changes
	_, _, err := blockingRead(ctx, minIndex, wait, func(ws catalog.WatchSet) (uint64, struct{}, error) {
		c = r.store.ChangesSince(ws, minIndex)
		if c.Reset {
			return minIndex + 1, struct{}{}, nil // any index past minIndex ends the wait
		}
		return c.Index, struct{}{}, nil
	})
	return c, err
}

// blockingRead runs read until its index passes minIndex (at once when
// minIndex is 0), waiting on the read's watches between runs, for at most
// wait; then it returns the last read.
func blockingRead[T any](ctx context.Context, minIndex uint64, wait time.Duration, read func(catalog.WatchSet) (uint64, T, error)) (uint64, T, error) {
	deadline := time.Now().Add(wait)
	for {
		ws := catalog.NewWatchSet()
		idx, v, err := read(ws)
		if err != nil || minIndex == 0 || idx > minIndex || !time.Now().Before(deadline) {
			return idx, v, err
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		werr := ws.WatchCtx(wctx)
		cancel()
		if werr != nil && ctx.Err() != nil {
			var zero T
			return 0, zero, ctx.Err()
		}
	}
}

// rpcReader is the blockingReader over RPC: stale blocking reads sent
// through call, to a client's servers or to a server's own endpoint.
type rpcReader struct {
	call func(ctx context.Context, method string, args, reply any) error
}

func readOptions(dc string, minIndex uint64, wait time.Duration) rpc.QueryOptions {
	return rpc.QueryOptions{Datacenter: dc, AllowStale: true, MinQueryIndex: minIndex, MaxQueryTime: wait}
}

// serviceInstancesAt is a blocking stale read of a service's instances.
func (r rpcReader) serviceInstancesAt(ctx context.Context, dc, service, tag string, minIndex uint64, wait time.Duration) (uint64, []catalog.ServiceInstance, error) {
	var reply rpc.ServiceInstancesResponse
	args := &rpc.ServiceInstancesRequest{QueryOptions: readOptions(dc, minIndex, wait), Service: service, Tag: tag}
	if err := r.call(ctx, rpc.MethodCatalogServiceInstances, args, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Instances, nil
}

// nodeAt is a blocking stale read of a node (through NodeServices, the
// endpoint's call that returns a node).
func (r rpcReader) nodeAt(ctx context.Context, dc, name string, minIndex uint64, wait time.Duration) (uint64, *catalog.Node, error) {
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: readOptions(dc, minIndex, wait), Node: name}
	if err := r.call(ctx, rpc.MethodCatalogNodeServices, args, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Node, nil
}

// changesAt is a blocking stale read of the change feed.
func (r rpcReader) changesAt(ctx context.Context, dc string, minIndex uint64, wait time.Duration) (catalog.Changes, error) {
	var reply rpc.ChangesResponse
	if err := r.call(ctx, rpc.MethodCatalogChanges, &rpc.ChangesRequest{QueryOptions: readOptions(dc, minIndex, wait)}, &reply); err != nil {
		return catalog.Changes{}, err
	}
	return reply.Changes, nil
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

// httpCatalog is the catalog the HTTP API reads: the agent's backend, and
// its DNS cache for ?cached reads.
type httpCatalog struct {
	catalogBackend
	src *dnsSource
}

var _ httpapi.CachedCatalog = httpCatalog{}

func (c httpCatalog) CachedServiceInstances(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	return c.src.cachedInstances(ctx, name, tag)
}
