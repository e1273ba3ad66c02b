package agent

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// backend connects a server agent's consumers — local state, the HTTP API
// and the DNS resolver — to its in-process server, each through the
// interface that consumer declares. Client agents use rpcBackend instead.
type backend struct {
	server *consensus.Server // writes (unless writer is set) and leadership
	// writer, when set, takes the writes: on a clustering server they go
	// through the Catalog endpoint, which forwards them to the leader.
	writer catalogWriter
	store  *catalog.Store // reads: the server's own state store
	dc     string
	// onlyPassing leaves instances with warning checks out of DNS answers.
	onlyPassing bool
	// queries is the server's PreparedQuery endpoint, called in process
	// (queries.go).
	queries *consensus.PreparedQuery
}

var (
	_ local.Catalog   = (*backend)(nil)
	_ httpapi.Status  = (*backend)(nil)
	_ resolver.Source = (*backend)(nil)
)

// catalogBackend is everything the agent's consumers need of the catalog;
// backend and rpcBackend provide it. The HTTP API's reads, which take
// query options, go through httpReads (httpreads.go) instead.
type catalogBackend interface {
	local.Catalog
	httpapi.Status
	httpapi.Queries
	resolver.Source
}

// catalogWriter is the write half of the catalog.
type catalogWriter interface {
	Register(ctx context.Context, req *catalog.RegisterRequest) error
	Deregister(ctx context.Context, req *catalog.DeregisterRequest) error
}

func (b *backend) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	if b.writer != nil {
		return b.writer.Register(ctx, req)
	}
	return b.server.Register(ctx, req)
}

func (b *backend) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	if b.writer != nil {
		return b.writer.Deregister(ctx, req)
	}
	return b.server.Deregister(ctx, req)
}

// Peers returns the Raft addresses of the servers in the configuration.
func (b *backend) Peers() ([]string, error) {
	peers, err := b.server.Peers()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(peers))
	for _, p := range peers {
		out = append(out, p.Address)
	}
	return out, nil
}

// rpcWriter sends writes to a server's Catalog endpoint, which applies them
// on the leader (forwarding them there when it does not lead).
type rpcWriter struct {
	pool *rpc.Pool
	addr string // the server's RPC address
}

func (w *rpcWriter) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	if err := w.pool.Call(ctx, w.addr, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: *req}, nil); err != nil {
		return fmt.Errorf("register through %s: %w", w.addr, err)
	}
	return nil
}

func (w *rpcWriter) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	if err := w.pool.Call(ctx, w.addr, rpc.MethodCatalogDeregister, &rpc.DeregisterRequest{Deregistration: *req}, nil); err != nil {
		return fmt.Errorf("deregister through %s: %w", w.addr, err)
	}
	return nil
}

func (b *backend) NodeServices(_ context.Context, name string) (*catalog.Node, []*catalog.Service, error) {
	_, n, err := b.store.Node(nil, name)
	if err != nil {
		return nil, nil, err
	}
	_, svcs, err := b.store.NodeServices(nil, name)
	return n, svcs, err
}

func (b *backend) Nodes(context.Context) (uint64, []*catalog.Node, error) {
	return b.store.Nodes(nil)
}

func (b *backend) Services(context.Context) (uint64, map[string][]string, error) {
	return b.store.Services(nil)
}

func (b *backend) ServiceInstances(_ context.Context, name, tag string) (uint64, []catalog.ServiceInstance, error) {
	return b.store.ServiceInstances(nil, name, tag)
}

func (b *backend) Leader() string { return b.server.Leader() }

// Instances answers the resolver: the instances of the local
// datacenter. Other datacenters are unknown until the WAN pool exists.
func (b *backend) Instances(_ context.Context, dc, service, tag string) (*resolver.Instances, error) {
	if dc != b.dc {
		return nil, fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
	}
	_, all, err := b.store.ServiceInstances(nil, service, tag)
	if err != nil {
		return nil, err
	}
	return resolver.NewInstances(splitHealth(all, b.onlyPassing)), nil
}

// Node answers the resolver's node questions for the local datacenter.
func (b *backend) Node(_ context.Context, dc, name string) (*catalog.Node, error) {
	if dc != b.dc {
		return nil, fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
	}
	_, n, err := b.store.Node(nil, name)
	return n, err
}

// Reverse answers the resolver's PTR questions from the catalog's address
// index.
func (b *backend) Reverse(_ context.Context, addr netip.Addr) (nodes, services []string, err error) {
	return b.store.Reverse(nil, addr)
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
