package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// Health is the group of /v1/health endpoints: service instances with the
// state of their checks.
type Health struct{ c *Client }

// Service lists the instances of the named service with their node and
// checks: GET /v1/health/service/<name>[?tag=<tag>&passing=1]. With tag,
// only instances carrying it; with passingOnly, only instances whose checks
// all pass. q, when given, sets the read's options (blocking, filter, ...).
func (h *Health) Service(ctx context.Context, name, tag string, passingOnly bool, q ...*QueryOptions) ([]*ServiceEntry, *QueryMeta, error) {
	if name == "" {
		return nil, nil, errors.New("health service: service name is empty")
	}
	query := tagQuery(tag)
	if passingOnly {
		if query == nil {
			query = url.Values{}
		}
		query.Set("passing", "1")
	}
	var out []*ServiceEntry
	meta, err := h.c.do(ctx, request{
		method: http.MethodGet,
		path:   "/v1/health/service/" + url.PathEscape(name),
		query:  firstOptions(q).values(query),
	}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Node lists every check on the named node, its own and its services':
// GET /v1/health/node/<node>.
func (h *Health) Node(ctx context.Context, node string, q ...*QueryOptions) (HealthChecks, *QueryMeta, error) {
	if node == "" {
		return nil, nil, errors.New("health node: node name is empty")
	}
	return h.checks(ctx, "/v1/health/node/"+url.PathEscape(node), firstOptions(q))
}

// Checks lists the checks of every instance of the named service:
// GET /v1/health/checks/<service>.
func (h *Health) Checks(ctx context.Context, service string, q ...*QueryOptions) (HealthChecks, *QueryMeta, error) {
	if service == "" {
		return nil, nil, errors.New("health checks: service name is empty")
	}
	return h.checks(ctx, "/v1/health/checks/"+url.PathEscape(service), firstOptions(q))
}

// State lists every check in the datacenter in the given state:
// HealthPassing, HealthWarning, HealthCritical, HealthMaintenance, or
// HealthAny for all of them. GET /v1/health/state/<state>.
func (h *Health) State(ctx context.Context, state string, q ...*QueryOptions) (HealthChecks, *QueryMeta, error) {
	switch state {
	case HealthPassing, HealthWarning, HealthCritical, HealthMaintenance, HealthAny:
	default:
		return nil, nil, fmt.Errorf("health state: state %q: want passing, warning, critical, maintenance or any", state)
	}
	return h.checks(ctx, "/v1/health/state/"+state, firstOptions(q))
}

func (h *Health) checks(ctx context.Context, path string, q *QueryOptions) (HealthChecks, *QueryMeta, error) {
	var out HealthChecks
	meta, err := h.c.do(ctx, request{method: http.MethodGet, path: path, query: q.values(nil)}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Status is the group of /v1/status endpoints.
type Status struct{ c *Client }

// Leader returns the RPC address of the datacenter's Raft leader, or "" when
// there is none: GET /v1/status/leader.
func (s *Status) Leader(ctx context.Context) (string, error) {
	var leader string
	if _, err := s.c.do(ctx, request{method: http.MethodGet, path: "/v1/status/leader"}, &leader); err != nil {
		return "", err
	}
	return leader, nil
}
