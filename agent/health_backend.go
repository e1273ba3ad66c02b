package agent

import (
	"context"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// This file holds the reads of checks behind the HTTP API's /v1/health
// endpoints, on both backends. The two answer alike: the checks sorted by
// node, then check ID, with the checks table's index; and a node, service
// or state that cannot be named is refused with the *catalog.FieldError the
// Catalog endpoint returns ("Node", "Service", "State"), for a 400, where
// the server's own store would just find nothing.

// NodeChecks returns every check of a node: its own and its services'.
func (b *backend) NodeChecks(_ context.Context, node string) (uint64, []*catalog.Check, error) {
	if err := catalog.ValidateNodeName("Node", node); err != nil {
		return 0, nil, err
	}
	return b.store.NodeChecks(nil, node)
}

// ServiceChecks returns the service-level checks of every instance of a
// service.
func (b *backend) ServiceChecks(_ context.Context, service string) (uint64, []*catalog.Check, error) {
	if r := catalog.ValidLabel(service); r != "" {
		return 0, nil, &catalog.FieldError{Field: "Service", Reason: r}
	}
	return b.store.ServiceChecks(nil, service)
}

// ChecksInState returns every check in state (passing, warning, critical,
// maintenance), or every check for "any".
func (b *backend) ChecksInState(_ context.Context, state string) (uint64, []*catalog.Check, error) {
	if err := catalog.ValidateHealthState("State", state); err != nil {
		return 0, nil, err
	}
	return b.store.ChecksInState(nil, catalog.HealthStatus(state))
}

// NodeChecks returns every check of a node: its own and its services'.
func (b *rpcBackend) NodeChecks(ctx context.Context, node string) (uint64, []*catalog.Check, error) {
	args := &rpc.NodeChecksRequest{QueryOptions: b.query(), Node: node}
	return b.checks(ctx, rpc.MethodCatalogNodeChecks, args)
}

// ServiceChecks returns the service-level checks of every instance of a
// service.
func (b *rpcBackend) ServiceChecks(ctx context.Context, service string) (uint64, []*catalog.Check, error) {
	args := &rpc.ServiceChecksRequest{QueryOptions: b.query(), Service: service}
	return b.checks(ctx, rpc.MethodCatalogServiceChecks, args)
}

// ChecksInState returns every check in state (passing, warning, critical,
// maintenance), or every check for "any".
func (b *rpcBackend) ChecksInState(ctx context.Context, state string) (uint64, []*catalog.Check, error) {
	args := &rpc.ChecksInStateRequest{QueryOptions: b.query(), State: state}
	return b.checks(ctx, rpc.MethodCatalogChecksInState, args)
}

// checks makes a read answered with an rpc.ChecksResponse.
func (b *rpcBackend) checks(ctx context.Context, method string, args any) (uint64, []*catalog.Check, error) {
	var reply rpc.ChecksResponse
	if err := b.call(ctx, method, false, args, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Checks, nil
}
