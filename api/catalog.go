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
func (cat *Catalog) Services(ctx context.Context) (map[string][]string, *QueryMeta, error) {
	var out map[string][]string
	meta, err := cat.c.do(ctx, request{method: http.MethodGet, path: "/v1/catalog/services"}, &out)
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
func (cat *Catalog) Service(ctx context.Context, name, tag string) ([]*CatalogService, *QueryMeta, error) {
	if name == "" {
		return nil, nil, errors.New("catalog service: service name is empty")
	}
	var out []*CatalogService
	meta, err := cat.c.do(ctx, request{
		method: http.MethodGet,
		path:   "/v1/catalog/service/" + url.PathEscape(name),
		query:  tagQuery(tag),
	}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Nodes lists the nodes in the catalog: GET /v1/catalog/nodes.
func (cat *Catalog) Nodes(ctx context.Context) ([]*Node, *QueryMeta, error) {
	var out []*Node
	meta, err := cat.c.do(ctx, request{method: http.MethodGet, path: "/v1/catalog/nodes"}, &out)
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

func tagQuery(tag string) url.Values {
	if tag == "" {
		return nil
	}
	return url.Values{"tag": {tag}}
}
