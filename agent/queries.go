package agent

import (
	"context"
	"errors"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/rpc"
)

// startQueries builds the server's PreparedQuery endpoint and registers it
// on rs. A clustering server has its Catalog endpoint already; a single
// server (rs nil) serves no RPC, so it gets a Catalog endpoint and a pool
// used only in process: it always leads, so nothing is ever forwarded
// through them, but the endpoint rides on them all the same. Shutdown
// closes both (shutdownCluster).
func (a *Agent) startQueries(srv *consensus.Server, rs *rpc.Server) (*consensus.PreparedQuery, error) {
	if a.catalogEP == nil {
		var err error
		if a.rpcPool, err = rpc.NewPool(rpc.DefaultPoolConfig(), a.logger); err != nil {
			return nil, err
		}
		cc := consensus.DefaultCatalogConfig()
		cc.Datacenter = a.cfg.Datacenter
		if a.catalogEP, err = consensus.NewCatalog(srv, a.rpcPool, cc); err != nil {
			return nil, err
		}
	}
	// NearestN fails over to the datacenters the WAN pool's router knows;
	// a single in-memory server has none and knows no other.
	pcfg := consensus.DefaultPreparedQueryConfig()
	if a.router != nil {
		pcfg.Datacenters = a.router.Datacenters
	}
	pq, err := consensus.NewPreparedQuery(a.catalogEP, pcfg)
	if err != nil {
		return nil, err
	}
	if rs != nil {
		if err := rs.Register(rpc.PreparedQueryEndpoint, pq); err != nil {
			return nil, err
		}
	}
	return pq, nil
}

// dnsQueryResult turns an execution's outcome into what the resolver's
// Source returns: no such query is no result, not an error.
func dnsQueryResult(res *catalog.QueryResult, err error) (*catalog.QueryResult, error) {
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil
	}
	return res, err
}

func (b *backend) ApplyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error) {
	return b.queries.ApplyQuery(ctx, op, q)
}

func (b *backend) Queries(ctx context.Context, id string) (uint64, []*catalog.PreparedQuery, error) {
	return b.queries.Queries(ctx, id)
}

// ExecuteQuery answers the HTTP API from the leader's state, so that a
// query just defined is found.
func (b *backend) ExecuteQuery(ctx context.Context, dc, idOrName string) (*catalog.QueryResult, error) {
	return b.queries.ExecuteQuery(ctx, dc, idOrName, false)
}

// PreparedQuery answers the resolver from this server's own state.
func (b *backend) PreparedQuery(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error) {
	return dnsQueryResult(b.queries.ExecuteQuery(ctx, dc, nameOrID, true))
}

func (b *rpcBackend) ApplyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error) {
	var reply rpc.PreparedQueryApplyResponse
	args := &rpc.PreparedQueryApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: b.dc}, Op: op, Query: *q}
	if err := b.call(ctx, rpc.MethodPreparedQueryApply, true, args, &reply); err != nil {
		return "", err
	}
	return reply.ID, nil
}

// Queries reads from the leader (not stale, unlike the other reads), so
// that a query just defined through this agent is found.
func (b *rpcBackend) Queries(ctx context.Context, id string) (uint64, []*catalog.PreparedQuery, error) {
	var reply rpc.PreparedQueriesResponse
	opts := rpc.QueryOptions{Datacenter: b.dc}
	var err error
	if id != "" {
		err = b.call(ctx, rpc.MethodPreparedQueryGet, false, &rpc.PreparedQueryGetRequest{QueryOptions: opts, QueryID: id}, &reply)
	} else {
		err = b.call(ctx, rpc.MethodPreparedQueryList, false, &rpc.PreparedQueryListRequest{QueryOptions: opts}, &reply)
	}
	if err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Queries, nil
}

// ExecuteQuery answers the HTTP API, from the leader as Queries does.
func (b *rpcBackend) ExecuteQuery(ctx context.Context, dc, idOrName string) (*catalog.QueryResult, error) {
	return b.execute(ctx, dc, idOrName, false)
}

// PreparedQuery answers the resolver: a stale read, any server answering.
func (b *rpcBackend) PreparedQuery(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error) {
	return dnsQueryResult(b.execute(ctx, dc, nameOrID, true))
}

func (b *rpcBackend) execute(ctx context.Context, dc, idOrName string, stale bool) (*catalog.QueryResult, error) {
	if dc == "" {
		dc = b.dc
	}
	var reply rpc.PreparedQueryExecuteResponse
	args := &rpc.PreparedQueryExecuteRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: stale}, QueryIDOrName: idOrName}
	if err := b.call(ctx, rpc.MethodPreparedQueryExecute, false, args, &reply); err != nil {
		return nil, err
	}
	return &reply.Result, nil
}
