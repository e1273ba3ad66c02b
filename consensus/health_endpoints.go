package consensus

import (
	"context"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// This file holds the Catalog endpoint's reads of checks, behind the HTTP
// API's /v1/health endpoints. Like every read they are answered by the
// leader, or by this server with AllowStale, and may block.

// NodeChecks returns every check of a node: its own and its services'.
func (c *Catalog) NodeChecks(ctx context.Context, args *rpc.NodeChecksRequest, reply *rpc.ChecksResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if err := catalog.ValidateNodeName("Node", args.Node); err != nil {
		return err
	}
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogNodeChecks, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	return c.readChecks(ctx, args.QueryOptions, reply, func(ws catalog.WatchSet) (uint64, []*catalog.Check, error) {
		return c.srv.Store().NodeChecks(ws, args.Node)
	})
}

// ServiceChecks returns the service-level checks of every instance of a
// service.
func (c *Catalog) ServiceChecks(ctx context.Context, args *rpc.ServiceChecksRequest, reply *rpc.ChecksResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if err := validateLabel("Service", args.Service); err != nil {
		return err
	}
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogServiceChecks, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	return c.readChecks(ctx, args.QueryOptions, reply, func(ws catalog.WatchSet) (uint64, []*catalog.Check, error) {
		return c.srv.Store().ServiceChecks(ws, args.Service)
	})
}

// ChecksInState returns every check in a state, or every check for "any".
func (c *Catalog) ChecksInState(ctx context.Context, args *rpc.ChecksInStateRequest, reply *rpc.ChecksResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if err := catalog.ValidateHealthState("State", args.State); err != nil {
		return err
	}
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogChecksInState, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	return c.readChecks(ctx, args.QueryOptions, reply, func(ws catalog.WatchSet) (uint64, []*catalog.Check, error) {
		return c.srv.Store().ChecksInState(ws, catalog.HealthStatus(args.State))
	})
}

// readChecks answers a read of checks with those the request's token may
// read.
func (c *Catalog) readChecks(ctx context.Context, opts rpc.QueryOptions, reply *rpc.ChecksResponse, read func(catalog.WatchSet) (uint64, []*catalog.Check, error)) error {
	authz, err := c.authorize(opts.Token)
	if err != nil {
		return err
	}
	return c.query(ctx, opts, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, checks, err := read(ws)
		reply.Checks = filterChecks(authz, checks)
		reply.ResultsFilteredByACLs = len(reply.Checks) < len(checks)
		return idx, err
	})
}
