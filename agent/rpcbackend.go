package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// errNoServers is returned, wrapped, by every rpcBackend call made while
// no server of the datacenter is known.
var errNoServers = errors.New("no cairn servers known; is the agent joined to a cluster?")

// rpcBackend is the backend of a client agent: it connects the agent's
// consumers — local state, the HTTP API and the DNS resolver — to the
// servers of its datacenter over RPC, through the Catalog endpoint.
//
// Calls go to one server, picked at random from servers() and kept while
// it is among them and answers: reads from one server see its state move
// forward only, where reads spread over servers could see a write and then
// miss it on a server that has not applied it yet. Clients spread over the
// servers by each picking at random. A read that
// fails with rpc.ErrTransport (the server could not be reached, or the
// connection broke) is tried once more, on another server when there is
// one; a write only when it was never sent (see call); an error the server
// returned (*rpc.RemoteError) is final.
//
// Reads are sent with AllowStale: any server answers from its own state,
// without forwarding to the leader, so DNS and the HTTP API keep answering
// while there is no leader, and reads spread over all servers. The answer
// may be behind the leader by the server's replication lag. Writes go to
// any server too: a follower forwards them to the leader.
//
// Its methods may be called from any goroutine.
type rpcBackend struct {
	pool *rpc.Pool
	// servers returns the RPC addresses of the live servers of this
	// datacenter (from gossip). It is called once per call, and may be
	// called from any goroutine.
	servers func() []string
	dc      string
	// onlyPassing leaves instances with warning checks out of DNS answers.
	onlyPassing bool
	logger      *slog.Logger
	// randN returns a number in [0, n); nil means math/rand/v2.IntN. A
	// hook for tests, to pick servers in a known order.
	randN func(n int) int
	// preferred is the server calls go to first (see call); "" before
	// the first call. mu guards it.
	mu        sync.Mutex
	preferred string
}

var (
	_ local.Catalog   = (*rpcBackend)(nil)
	_ httpapi.Status  = (*rpcBackend)(nil)
	_ resolver.Source = (*rpcBackend)(nil)
)

// newRPCBackend returns a backend calling the servers that servers()
// returns through pool, for an agent of datacenter dc. logger may be nil.
func newRPCBackend(pool *rpc.Pool, servers func() []string, dc string, onlyPassing bool, logger *slog.Logger) *rpcBackend {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &rpcBackend{
		pool:        pool,
		servers:     servers,
		dc:          dc,
		onlyPassing: onlyPassing,
		logger:      logger.With("component", "rpc-backend"),
	}
}

// call calls method on a random server, and once more on another one when
// the first call fails with rpc.ErrTransport. A write (write set) is
// retried only when its request was never sent (rpc.ErrNotSent): after a
// connection broke mid-call the server may have applied it, and the caller
// gets an error saying so rather than a second attempt that could hide it.
// With a single server known the retry goes to that server again, which
// helps when the pool's session to it had broken (the pool dials a new
// one).
func (b *rpcBackend) call(ctx context.Context, method string, write bool, args, reply any) error {
	servers := b.servers()
	n := len(servers)
	if n == 0 {
		return fmt.Errorf("%s: %w", method, errNoServers)
	}
	randN := b.randN
	if randN == nil {
		randN = rand.IntN
	}
	b.mu.Lock()
	first := slices.Index(servers, b.preferred)
	if first < 0 {
		first = randN(n)
		b.preferred = servers[first]
	}
	b.mu.Unlock()
	err := b.pool.Call(ctx, servers[first], method, args, reply)
	if err == nil || !errors.Is(err, rpc.ErrTransport) {
		return err
	}
	next := first
	if n > 1 {
		next = (first + 1 + randN(n-1)) % n // any server but the first
	}
	// Whatever becomes of this call, later ones try another server.
	b.mu.Lock()
	if b.preferred == servers[first] {
		b.preferred = servers[next]
	}
	b.mu.Unlock()
	if write && !errors.Is(err, rpc.ErrNotSent) {
		return fmt.Errorf("%w: %w", errFateUnknown, err)
	}
	b.logger.Debug("rpc to server failed, retrying", "peer", servers[first], "retry", servers[next], "err", err)
	return b.pool.Call(ctx, servers[next], method, args, reply)
}

// errFateUnknown is wrapped by a write's error when the connection to the
// server broke after the request was sent.
var errFateUnknown = errors.New("the connection to the server broke after the write was sent; it may or may not have been applied")

// query returns the options of every read: stale reads of this agent's
// datacenter.
func (b *rpcBackend) query() rpc.QueryOptions {
	return rpc.QueryOptions{Datacenter: b.dc, AllowStale: true}
}

func (b *rpcBackend) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: b.dc}, Registration: *req}
	return b.call(ctx, rpc.MethodCatalogRegister, true, args, nil)
}

func (b *rpcBackend) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	args := &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: b.dc}, Deregistration: *req}
	return b.call(ctx, rpc.MethodCatalogDeregister, true, args, nil)
}

func (b *rpcBackend) NodeServices(ctx context.Context, name string) (*catalog.Node, []*catalog.Service, error) {
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: b.query(), Node: name}
	if err := b.call(ctx, rpc.MethodCatalogNodeServices, false, args, &reply); err != nil {
		return nil, nil, err
	}
	return reply.Node, reply.Services, nil
}

func (b *rpcBackend) Nodes(ctx context.Context) (uint64, []*catalog.Node, error) {
	var reply rpc.NodesResponse
	if err := b.call(ctx, rpc.MethodCatalogNodes, false, &rpc.NodesRequest{QueryOptions: b.query()}, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Nodes, nil
}

func (b *rpcBackend) Services(ctx context.Context) (uint64, map[string][]string, error) {
	var reply rpc.ServicesResponse
	if err := b.call(ctx, rpc.MethodCatalogServices, false, &rpc.ServicesRequest{QueryOptions: b.query()}, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Services, nil
}

func (b *rpcBackend) ServiceInstances(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, error) {
	var reply rpc.ServiceInstancesResponse
	args := &rpc.ServiceInstancesRequest{QueryOptions: b.query(), Service: name, Tag: tag}
	if err := b.call(ctx, rpc.MethodCatalogServiceInstances, false, args, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Instances, nil
}

// Instances answers the resolver: the instances of the local datacenter,
// all of them, split here by health (the server's OnlyHealthy filter
// would drop the unhealthy ones the resolver may still answer with).
// Other datacenters are unknown until the WAN pool exists. A service or
// tag that is not a valid label is no such service, answered without a
// call (the server would refuse it with an error).
func (b *rpcBackend) Instances(ctx context.Context, dc, service, tag string) (*resolver.Instances, error) {
	if dc != b.dc {
		return nil, fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
	}
	if catalog.ValidLabel(service) != "" || (tag != "" && catalog.ValidLabel(tag) != "") {
		return nil, nil
	}
	_, all, err := b.ServiceInstances(ctx, service, tag)
	if err != nil {
		return nil, err
	}
	return resolver.NewInstances(splitHealth(all, b.onlyPassing)), nil
}

// Node answers the resolver's node questions for the local datacenter.
// The Catalog endpoint has no call for a node alone, so it asks for the
// node with its services and drops them. A name that is not a valid node
// name is no such node, answered without a call.
func (b *rpcBackend) Node(ctx context.Context, dc, name string) (*catalog.Node, error) {
	if dc != b.dc {
		return nil, fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
	}
	if catalog.ValidateNodeName("Node", name) != nil {
		return nil, nil
	}
	n, _, err := b.NodeServices(ctx, name)
	return n, err
}

// Reverse answers the resolver's PTR questions through the servers'
// address index.
func (b *rpcBackend) Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error) {
	var reply rpc.ReverseResponse
	args := &rpc.ReverseRequest{QueryOptions: b.query(), Addr: addr.String()}
	if err := b.call(ctx, rpc.MethodCatalogReverse, false, args, &reply); err != nil {
		return nil, nil, err
	}
	return reply.Nodes, reply.Services, nil
}

// Datacenters returns the datacenters a server of this agent's datacenter
// knows (its own and those of its WAN pool).
func (b *rpcBackend) Datacenters(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.DatacentersResponse
	if err := b.call(ctx, rpc.MethodCatalogListDatacenters, false, &rpc.DatacentersRequest{}, &reply); err != nil {
		return nil, err
	}
	return reply.Datacenters, nil
}

// statusTimeout bounds the Status calls behind Leader and Peers, whose
// callers (the HTTP status endpoints) take no context.
const statusTimeout = 5 * time.Second

// Leader returns the leader's address as a server sees it, or "" when
// none is known or no server answered.
func (b *rpcBackend) Leader() string {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	var reply rpc.LeaderResponse
	if err := b.call(ctx, rpc.MethodStatusLeader, false, &rpc.StatusRequest{QueryOptions: b.query()}, &reply); err != nil {
		b.logger.Debug("no leader known", "err", err)
		return ""
	}
	return reply.Leader
}

// Peers returns the Raft addresses of the servers of the datacenter.
func (b *rpcBackend) Peers() ([]string, error) {
	cfg, err := b.RaftConfiguration(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		out = append(out, s.Address)
	}
	return out, nil
}

// RaftConfiguration returns the Raft configuration a server holds.
func (b *rpcBackend) RaftConfiguration(ctx context.Context) (*rpc.RaftConfigurationResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.RaftConfigurationResponse
	if err := b.call(ctx, rpc.MethodStatusRaftConfiguration, false, &rpc.StatusRequest{QueryOptions: b.query()}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}
