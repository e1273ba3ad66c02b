package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Session is the /v1/session endpoints: sessions, which hold locks on keys
// (KV.Acquire), with the shapes of Consul's api.Session (each method
// taking a context first).
type Session struct{ c *Client }

// Session returns the /v1/session endpoints.
func (c *Client) Session() *Session { return &Session{c: c} }

// Session behaviors: what ending a session does to the keys it locks.
const (
	SessionBehaviorRelease = "release"
	SessionBehaviorDelete  = "delete"
)

// ServiceCheck names a service-level check a session is tied to.
type ServiceCheck struct {
	ID        string
	Namespace string `json:",omitempty"`
}

// SessionEntry is one session.
type SessionEntry struct {
	CreateIndex uint64
	ModifyIndex uint64
	ID          string
	Name        string
	// Node is the session's node ("" on create: the agent's).
	Node string
	// LockDelay is how long a key the session locked stays unlockable
	// after the session ends (0 on create: 15s).
	LockDelay time.Duration
	// Behavior is SessionBehaviorRelease (the default) or
	// SessionBehaviorDelete.
	Behavior string
	// TTL, such as "30s", is how long the session lives without a
	// Renew; "" for none.
	TTL string
	// Checks is the older name of NodeChecks, taken on create; reads
	// leave it nil, as Consul's.
	Checks []string
	// NodeChecks and ServiceChecks are the checks the session is tied
	// to: one turning critical ends it. Both nil on create: the node's
	// serfHealth check.
	NodeChecks    []string
	ServiceChecks []ServiceCheck
}

// Create creates a session and returns its ID: PUT /v1/session/create.
// A nil se takes every default.
func (s *Session) Create(ctx context.Context, se *SessionEntry, w *WriteOptions) (string, error) {
	body := map[string]any{}
	if se != nil {
		if se.Name != "" {
			body["Name"] = se.Name
		}
		if se.Node != "" {
			body["Node"] = se.Node
		}
		if se.LockDelay != 0 {
			body["LockDelay"] = se.LockDelay.String()
		}
		if se.Checks != nil {
			body["Checks"] = se.Checks
		}
		if se.NodeChecks != nil {
			body["NodeChecks"] = se.NodeChecks
		}
		if se.ServiceChecks != nil {
			body["ServiceChecks"] = se.ServiceChecks
		}
		if se.Behavior != "" {
			body["Behavior"] = se.Behavior
		}
		if se.TTL != "" {
			body["TTL"] = se.TTL
		}
	}
	var out struct{ ID string }
	if _, err := s.c.do(ctx, request{method: http.MethodPut, path: "/v1/session/create", query: w.values(nil), body: body}, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// Destroy destroys a session, releasing or deleting its keys: PUT
// /v1/session/destroy/<id>. One that does not exist is not an error.
func (s *Session) Destroy(ctx context.Context, id string, w *WriteOptions) error {
	if id == "" {
		return errors.New("session destroy: id is empty")
	}
	var ok bool
	_, err := s.c.do(ctx, request{method: http.MethodPut, path: "/v1/session/destroy/" + url.PathEscape(id), query: w.values(nil)}, &ok)
	return err
}

// Renew restarts a session's TTL and returns the session, nil when it no
// longer exists: PUT /v1/session/renew/<id>.
func (s *Session) Renew(ctx context.Context, id string, w *WriteOptions) (*SessionEntry, error) {
	if id == "" {
		return nil, errors.New("session renew: id is empty")
	}
	var out []*SessionEntry
	_, err := s.c.do(ctx, request{method: http.MethodPut, path: "/v1/session/renew/" + url.PathEscape(id), query: w.values(nil), notFoundOK: true}, &out)
	if errors.Is(err, errNotFound) || err == nil && len(out) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// Info returns a session, nil when it does not exist: GET
// /v1/session/info/<id>.
func (s *Session) Info(ctx context.Context, id string, q *QueryOptions) (*SessionEntry, *QueryMeta, error) {
	if id == "" {
		return nil, nil, errors.New("session info: id is empty")
	}
	out, meta, err := s.list(ctx, "/v1/session/info/"+url.PathEscape(id), q)
	if err != nil || len(out) == 0 {
		return nil, meta, err
	}
	return out[0], meta, nil
}

// Node returns the sessions of a node: GET /v1/session/node/<node>.
func (s *Session) Node(ctx context.Context, node string, q *QueryOptions) ([]*SessionEntry, *QueryMeta, error) {
	if node == "" {
		return nil, nil, errors.New("session node: node is empty")
	}
	return s.list(ctx, "/v1/session/node/"+url.PathEscape(node), q)
}

// List returns every session: GET /v1/session/list.
func (s *Session) List(ctx context.Context, q *QueryOptions) ([]*SessionEntry, *QueryMeta, error) {
	return s.list(ctx, "/v1/session/list", q)
}

func (s *Session) list(ctx context.Context, path string, q *QueryOptions) ([]*SessionEntry, *QueryMeta, error) {
	var out []*SessionEntry
	meta, err := s.c.do(ctx, request{method: http.MethodGet, path: path, query: q.values(nil)}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}
