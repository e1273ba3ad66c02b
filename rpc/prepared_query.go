package rpc

import "github.com/cairndns/cairn/catalog"

// This file holds the wire types of the PreparedQuery endpoint, which
// package consensus serves, beside the Catalog endpoint's (catalog.go) and
// for the same reason. Fields are only ever added.

// PreparedQueryEndpoint is the name the PreparedQuery endpoint is
// registered under on the Server.
const PreparedQueryEndpoint = "PreparedQuery"

// The methods of the PreparedQuery endpoint, as Pool.Call names them.
const (
	// MethodPreparedQueryApply creates, updates or deletes a query
	// (PreparedQueryApplyRequest → PreparedQueryApplyResponse).
	MethodPreparedQueryApply = PreparedQueryEndpoint + ".Apply"
	// MethodPreparedQueryGet reads one query by ID
	// (PreparedQueryGetRequest → PreparedQueriesResponse).
	MethodPreparedQueryGet = PreparedQueryEndpoint + ".Get"
	// MethodPreparedQueryList reads every query
	// (PreparedQueryListRequest → PreparedQueriesResponse).
	MethodPreparedQueryList = PreparedQueryEndpoint + ".List"
	// MethodPreparedQueryExecute runs a query, by ID or name, with
	// failover (PreparedQueryExecuteRequest → PreparedQueryExecuteResponse).
	MethodPreparedQueryExecute = PreparedQueryEndpoint + ".Execute"
	// MethodPreparedQueryExecuteRemote runs a query definition carried in
	// the request against the answering datacenter's catalog only, without
	// failover: what a server of another datacenter sends when failing over
	// (PreparedQueryExecuteRemoteRequest → PreparedQueryExecuteResponse).
	MethodPreparedQueryExecuteRemote = PreparedQueryEndpoint + ".ExecuteRemote"
)

// PreparedQueryApplyRequest creates (Op catalog.QueryCreate, Query.ID
// empty: the leader chooses it), updates (Query.ID set) or deletes (only
// Query.ID read) a prepared query.
type PreparedQueryApplyRequest struct {
	WriteRequest
	Op        catalog.QueryOp
	Query     catalog.PreparedQuery
	Forwarded bool
}

// PreparedQueryApplyResponse holds the ID of the query written.
type PreparedQueryApplyResponse struct {
	ID string
}

// PreparedQueryGetRequest asks for one query by ID.
type PreparedQueryGetRequest struct {
	QueryOptions
	QueryID   string // required, a UUID
	Forwarded bool
}

// PreparedQueryListRequest asks for every query of the datacenter.
type PreparedQueryListRequest struct {
	QueryOptions
	Forwarded bool
}

// PreparedQueriesResponse holds queries sorted by ID: one for Get, which
// fails with catalog.ErrNotFound rather than answer none.
type PreparedQueriesResponse struct {
	QueryMeta
	Queries []*catalog.PreparedQuery
}

// PreparedQueryExecuteRequest runs the query whose ID or name is
// QueryIDOrName in the datacenter QueryOptions.Datacenter names (the
// answering server's when empty). Blocking options are ignored: a query
// is answered at once.
type PreparedQueryExecuteRequest struct {
	QueryOptions
	QueryIDOrName string
	Forwarded     bool
	// Agent is the node of the agent executing the query, from which a
	// query's Service.Near "_agent" sorts. "" leaves such a query unsorted.
	Agent string
}

// PreparedQueryExecuteRemoteRequest runs Query (a definition from another
// datacenter's catalog) in the datacenter QueryOptions.Datacenter names.
type PreparedQueryExecuteRemoteRequest struct {
	QueryOptions
	Query     catalog.PreparedQuery
	Forwarded bool
}

// PreparedQueryExecuteResponse is the outcome of a query. QueryMeta.Index
// is the highest index of the answering datacenter's data read.
type PreparedQueryExecuteResponse struct {
	QueryMeta
	Result catalog.QueryResult
}
