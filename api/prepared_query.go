package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// PreparedQuery is the group of /v1/query endpoints: prepared queries,
// stored service lookups with failover to other datacenters.
type PreparedQuery struct{ c *Client }

// PreparedQuery returns the /v1/query endpoints.
func (c *Client) PreparedQuery() *PreparedQuery { return &PreparedQuery{c: c} }

// PreparedQueryDefinition is a prepared query as the agent takes and gives
// it (Consul's shape, without templates, sessions or tokens).
type PreparedQueryDefinition struct {
	// ID is chosen by the server on create; leave it empty then.
	ID string `json:",omitempty"`
	// Name is optional and unique; a DNS label, answered as
	// <name>.query.<domain>.
	Name    string
	Service ServiceQuery
	DNS     QueryDNSOptions
	// The indexes are set by the server and ignored when sent.
	CreateIndex uint64 `json:",omitempty"`
	ModifyIndex uint64 `json:",omitempty"`
}

// ServiceQuery says which instances a query answers with.
type ServiceQuery struct {
	// Service is the service's name, required.
	Service string
	// Tags each must be carried by an instance; "!tag" must not be.
	Tags []string `json:",omitempty"`
	// OnlyPassing leaves out instances with a warning check too.
	OnlyPassing bool
	Failover    QueryFailoverOptions
	// Near sorts the answer by the estimated round trip time from a
	// node, nearest first: a node name, or "_agent" for the agent that
	// executes the query. "" leaves it unsorted.
	Near string `json:",omitempty"`
}

// QueryFailoverOptions lists where to look when the local datacenter has
// no healthy instance: the NearestN nearest other datacenters, then
// Datacenters, in order.
type QueryFailoverOptions struct {
	NearestN    int
	Datacenters []string `json:",omitempty"`
}

// QueryDNSOptions holds a query's DNS settings.
type QueryDNSOptions struct {
	// TTL is the TTL of the query's DNS answers ("10s"); empty means the
	// service's.
	TTL string `json:",omitempty"`
}

// PreparedQueryExecuteResponse is the outcome of executing a query.
type PreparedQueryExecuteResponse struct {
	// Service is the service the query asks for.
	Service string
	// Nodes are the healthy matching instances.
	Nodes []ServiceEntry
	DNS   QueryDNSOptions
	// Datacenter is the datacenter that answered: the agent's, or the
	// failover datacenter whose instances these are.
	Datacenter string
	// Failovers is how many other datacenters were asked.
	Failovers int
}

// Create defines a query and returns its ID: POST /v1/query.
func (q *PreparedQuery) Create(ctx context.Context, def *PreparedQueryDefinition) (string, error) {
	var out struct{ ID string }
	if _, err := q.c.do(ctx, request{method: http.MethodPost, path: "/v1/query", body: def}, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// Update replaces the definition of the query with def.ID: PUT
// /v1/query/<id>.
func (q *PreparedQuery) Update(ctx context.Context, def *PreparedQueryDefinition) error {
	if def.ID == "" {
		return errors.New("prepared query update: ID is empty")
	}
	_, err := q.c.do(ctx, request{method: http.MethodPut, path: "/v1/query/" + url.PathEscape(def.ID), body: def}, nil)
	return err
}

// Get returns the query with the given ID (in a list of one, as Consul
// does): GET /v1/query/<id>.
func (q *PreparedQuery) Get(ctx context.Context, id string) ([]*PreparedQueryDefinition, *QueryMeta, error) {
	if id == "" {
		return nil, nil, errors.New("prepared query get: ID is empty")
	}
	var out []*PreparedQueryDefinition
	meta, err := q.c.do(ctx, request{method: http.MethodGet, path: "/v1/query/" + url.PathEscape(id)}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// List returns every query: GET /v1/query.
func (q *PreparedQuery) List(ctx context.Context) ([]*PreparedQueryDefinition, *QueryMeta, error) {
	var out []*PreparedQueryDefinition
	meta, err := q.c.do(ctx, request{method: http.MethodGet, path: "/v1/query"}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Delete removes the query with the given ID: DELETE /v1/query/<id>.
func (q *PreparedQuery) Delete(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("prepared query delete: ID is empty")
	}
	_, err := q.c.do(ctx, request{method: http.MethodDelete, path: "/v1/query/" + url.PathEscape(id)}, nil)
	return err
}

// Execute runs the query with the given ID or name, in datacenter dc (""
// for the agent's): GET /v1/query/<id or name>/execute[?dc=<dc>].
func (q *PreparedQuery) Execute(ctx context.Context, idOrName, dc string) (*PreparedQueryExecuteResponse, error) {
	if idOrName == "" {
		return nil, errors.New("prepared query execute: ID or name is empty")
	}
	var query url.Values
	if dc != "" {
		query = url.Values{"dc": {dc}}
	}
	var out PreparedQueryExecuteResponse
	if _, err := q.c.do(ctx, request{method: http.MethodGet, path: "/v1/query/" + url.PathEscape(idOrName) + "/execute", query: query}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
