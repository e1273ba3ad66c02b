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
)

// backend connects the agent's consumers — local state, the HTTP API and the
// DNS resolver — to the in-process server, each through the interface that
// consumer declares. When client agents and RPC arrive, an RPC-backed
// implementation takes its place, and the DNS side moves behind the cache.
type backend struct {
	server *consensus.Server // writes and leadership
	store  *catalog.Store    // reads: the server's own state store
	dc     string
	// onlyPassing leaves instances with warning checks out of DNS answers.
	onlyPassing bool
}

var (
	_ local.Catalog   = (*backend)(nil)
	_ httpapi.Catalog = (*backend)(nil)
	_ httpapi.Status  = (*backend)(nil)
	_ resolver.Source = (*backend)(nil)
)

func (b *backend) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	return b.server.Register(ctx, req)
}

func (b *backend) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	return b.server.Deregister(ctx, req)
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
func (b *backend) Instances(_ context.Context, dc, service, tag string) (healthy, unhealthy []catalog.ServiceInstance, err error) {
	if dc != b.dc {
		return nil, nil, fmt.Errorf("datacenter %q: %w", dc, resolver.ErrUnknownDatacenter)
	}
	_, all, err := b.store.ServiceInstances(nil, service, tag)
	if err != nil {
		return nil, nil, err
	}
	for _, in := range all {
		if in.Healthy(b.onlyPassing) {
			healthy = append(healthy, in)
		} else {
			unhealthy = append(unhealthy, in)
		}
	}
	return healthy, unhealthy, nil
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
