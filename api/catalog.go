package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Catalog is the group of /v1/catalog endpoints: the datacenter's catalog
// of nodes and services.
type Catalog struct{ c *Client }

// Services lists every service name in the catalog with the union of its
// instances' tags: GET /v1/catalog/services.
func (cat *Catalog) Services(ctx context.Context, q ...*QueryOptions) (map[string][]string, *QueryMeta, error) {
	var out map[string][]string
	meta, err := cat.c.do(ctx, request{method: http.MethodGet, path: "/v1/catalog/services", query: firstOptions(q).values(nil)}, &out)
	if err != nil {
		return nil, nil, err
	}
	if out == nil {
		out = map[string][]string{}
	}
	return out, meta, nil
}

// Service lists the instances of the named service, only those carrying
// tag when tag is not empty: GET /v1/catalog/service/<name>[?tag=<tag>].
// q, when given, sets the read's options (blocking, filter, ...).
func (cat *Catalog) Service(ctx context.Context, name, tag string, q ...*QueryOptions) ([]*CatalogService, *QueryMeta, error) {
	if name == "" {
		return nil, nil, errors.New("catalog service: service name is empty")
	}
	var out []*CatalogService
	meta, err := cat.c.do(ctx, request{
		method: http.MethodGet,
		path:   "/v1/catalog/service/" + url.PathEscape(name),
		query:  firstOptions(q).values(tagQuery(tag)),
	}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Nodes lists the nodes in the catalog: GET /v1/catalog/nodes.
func (cat *Catalog) Nodes(ctx context.Context, q ...*QueryOptions) ([]*Node, *QueryMeta, error) {
	var out []*Node
	meta, err := cat.c.do(ctx, request{method: http.MethodGet, path: "/v1/catalog/nodes", query: firstOptions(q).values(nil)}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Datacenters lists the datacenters the agent knows, sorted: its own and
// those whose servers are in its servers' WAN pool (GET
// /v1/catalog/datacenters).
func (cat *Catalog) Datacenters(ctx context.Context) ([]string, error) {
	var out []string
	if _, err := cat.c.do(ctx, request{method: http.MethodGet, path: "/v1/catalog/datacenters"}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// Node returns a node and its services keyed by ID, or nil when the
// catalog has no such node: GET /v1/catalog/node/<node>.
func (cat *Catalog) Node(ctx context.Context, node string, q ...*QueryOptions) (*CatalogNode, *QueryMeta, error) {
	if node == "" {
		return nil, nil, errors.New("catalog node: node name is empty")
	}
	var out *CatalogNode
	meta, err := cat.c.do(ctx, request{
		method: http.MethodGet,
		path:   "/v1/catalog/node/" + url.PathEscape(node),
		query:  firstOptions(q).values(nil),
	}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Register writes a node, and optionally a service and checks on it,
// straight to the catalog, bypassing any agent's local state: PUT
// /v1/catalog/register. Services registered this way are not checked by
// any agent and stay until deregistered the same way.
func (cat *Catalog) Register(ctx context.Context, reg *CatalogRegistration) error {
	_, err := cat.c.do(ctx, request{method: http.MethodPut, path: "/v1/catalog/register", body: reg}, nil)
	return err
}

// Deregister removes a node (with its services and checks), a service or
// a check from the catalog: PUT /v1/catalog/deregister.
func (cat *Catalog) Deregister(ctx context.Context, dereg *CatalogDeregistration) error {
	_, err := cat.c.do(ctx, request{method: http.MethodPut, path: "/v1/catalog/deregister", body: dereg}, nil)
	return err
}

func tagQuery(tag string) url.Values {
	if tag == "" {
		return nil
	}
	return url.Values{"tag": {tag}}
}
