package consensus

import (
	"context"
	"slices"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Changes returns which names changed after args.MinQueryIndex, blocking
// like any read until something does: the one call each agent's cache
// keeps open per datacenter, instead of one blocking query per cached
// name. A Reset (the change log cannot answer for that index) is returned
// at once.
func (c *Catalog) Changes(ctx context.Context, args *rpc.ChangesRequest, reply *rpc.ChangesResponse) (err error) {
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogChanges, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	err = c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		reply.Changes = c.srv.Store().ChangesSince(ws, args.MinQueryIndex)
		if authz != nil {
			// Names the token may not read are not told: their
			// caches hold nothing to refetch anyway.
			ch := &reply.Changes
			ch.Services = slices.DeleteFunc(ch.Services, func(s string) bool { return !authz.ServiceRead(s) })
			ch.Nodes = slices.DeleteFunc(ch.Nodes, func(n string) bool { return !authz.NodeRead(n) })
			ch.Queries = slices.DeleteFunc(ch.Queries, func(q string) bool { return !authz.QueryRead(q) })
		}
		if reply.Changes.Reset && args.MinQueryIndex > reply.Changes.Index && !c.srv.IsLeader() {
			// A follower behind the index the caller already holds
			// (it read from a server further ahead) waits to catch up
			// rather than tell it to start over: a Reset would make
			// the caller refetch everything from this server, and take
			// answers older than those it has.
			return args.MinQueryIndex, nil
		}
		if reply.Changes.Reset {
			// Any index past the one asked about ends the wait.
			return args.MinQueryIndex + 1, nil
		}
		return reply.Changes.Index, nil
	})
	reply.Index = max(reply.Changes.Index, 1)
	return err
}
