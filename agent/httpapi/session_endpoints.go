package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// Sessions is the servers' sessions (Consul's). A Catalog that also
// implements it gets the /v1/session endpoints; without it they answer
// 404. Errors: a *catalog.FieldError for a bad session (a 400 naming the
// field), permission errors as for the catalog.
type Sessions interface {
	// SessionCreate creates s in datacenter dc ("" for the agent's) and
	// returns its ID. A nil s.NodeChecks means the default (the node's
	// serfHealth check); an empty one, none.
	SessionCreate(ctx context.Context, dc string, s *catalog.Session) (string, error)
	// SessionDestroy destroys session id; one that does not exist is
	// not an error.
	SessionDestroy(ctx context.Context, dc, id string) error
	// SessionRenew restarts session id's TTL and returns it, nil when
	// it does not exist.
	SessionRenew(ctx context.Context, dc, id string) (*catalog.Session, error)
	// SessionInfo returns session id, nil when it does not exist.
	SessionInfo(ctx context.Context, opts QueryOptions, id string) (*catalog.Session, QueryMeta, error)
	// SessionList returns the sessions of node, every session when node
	// is "".
	SessionList(ctx context.Context, opts QueryOptions, node string) ([]*catalog.Session, QueryMeta, error)
}

// sessionJSON is a session as the endpoints give it: Consul's
// structs.Session, LockDelay in nanoseconds, Checks the deprecated union
// of NodeChecks and the service checks' IDs.
type sessionJSON struct {
	ID            string
	Name          string
	Node          string
	LockDelay     time.Duration
	Behavior      catalog.SessionBehavior
	TTL           string
	Checks        []string
	NodeChecks    []string
	ServiceChecks []catalog.ServiceCheck
	CreateIndex   uint64
	ModifyIndex   uint64
}

func toSessionJSON(s *catalog.Session) *sessionJSON {
	checks := append([]string{}, s.NodeChecks...)
	for _, c := range s.ServiceChecks {
		checks = append(checks, c.ID)
	}
	return &sessionJSON{
		ID: s.ID, Name: s.Name, Node: s.Node, LockDelay: s.LockDelay, Behavior: s.Behavior, TTL: s.TTL,
		Checks: checks, NodeChecks: nonNil(s.NodeChecks), ServiceChecks: s.ServiceChecks,
		CreateIndex: s.CreateIndex, ModifyIndex: s.ModifyIndex,
	}
}

func toSessionsJSON(all []*catalog.Session) []*sessionJSON {
	out := make([]*sessionJSON, 0, len(all))
	for _, s := range all {
		out = append(out, toSessionJSON(s))
	}
	return out
}

// sessionBody is the body of PUT /v1/session/create, Consul's.
type sessionBody struct {
	Name string
	Node string
	// Checks is Consul's older name for NodeChecks; both are taken.
	Checks        []string
	NodeChecks    []string
	ServiceChecks []catalog.ServiceCheck
	LockDelay     duration
	Behavior      catalog.SessionBehavior
	TTL           string
}

func (s *Server) sessions(r *http.Request) (Sessions, error) {
	ss, ok := s.catalog.(Sessions)
	if !ok {
		return nil, notFound("no endpoint %s: sessions are not served by this agent", r.URL.Path)
	}
	return ss, nil
}

// sessionCreate answers PUT /v1/session/create with {"ID": …}. An empty
// body creates a session with the defaults: this agent's node, its
// serfHealth check, a lock-delay of 15s, behavior release, no TTL.
// LockDelay is a duration string ("15s") or a number: of seconds below
// 1000, else of nanoseconds (Consul's rule).
func (s *Server) sessionCreate(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.sessions(r)
	if err != nil {
		return err
	}
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	var body sessionBody
	if r.ContentLength != 0 {
		if err := s.decodeBody(w, r, &body); err != nil {
			return err
		}
	}
	sess := &catalog.Session{
		Name: body.Name, Node: body.Node, ServiceChecks: body.ServiceChecks, Behavior: body.Behavior, TTL: body.TTL,
		LockDelay: catalog.DefaultLockDelay,
	}
	if sess.Node == "" {
		sess.Node = s.cfg.NodeName
	}
	if sess.Behavior == "" {
		sess.Behavior = catalog.SessionRelease
	}
	if len(body.LockDelay.raw) > 0 {
		d, err := body.LockDelay.parse("LockDelay")
		if err != nil {
			return err
		}
		if d > 0 && d < 1000 && body.LockDelay.raw[0] != '"' {
			d *= time.Second
		}
		sess.LockDelay = d
	}
	// Absent Checks and NodeChecks: the default. Either given (even
	// empty): exactly those.
	if body.Checks != nil || body.NodeChecks != nil {
		sess.NodeChecks = append(append([]string{}, body.Checks...), body.NodeChecks...)
	}
	id, err := ss.SessionCreate(r.Context(), dc, sess)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{ ID string }{id})
	return nil
}

// sessionDestroy answers PUT /v1/session/destroy/<id> with true.
func (s *Server) sessionDestroy(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.sessions(r)
	if err != nil {
		return err
	}
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	if err := ss.SessionDestroy(r.Context(), dc, r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

// sessionRenew answers PUT /v1/session/renew/<id> with the session in a
// list of one, or a 404 when it does not exist (Consul's answers).
func (s *Server) sessionRenew(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.sessions(r)
	if err != nil {
		return err
	}
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	sess, err := ss.SessionRenew(r.Context(), dc, id)
	if err != nil {
		return err
	}
	if sess == nil {
		return notFound("session %q not found", id)
	}
	writeJSON(w, http.StatusOK, []*sessionJSON{toSessionJSON(sess)})
	return nil
}

// sessionInfo answers GET /v1/session/info/<id>: the session in a list of
// one, an empty list when it does not exist.
func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.sessions(r)
	if err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	sess, meta, err := ss.SessionInfo(r.Context(), opts, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := []*sessionJSON{}
	if sess != nil {
		out = append(out, toSessionJSON(sess))
	}
	writeRead(w, r, meta, out)
	return nil
}

// sessionList answers GET /v1/session/list and /v1/session/node/<node>.
func (s *Server) sessionList(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.sessions(r)
	if err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	all, meta, err := ss.SessionList(r.Context(), opts, r.PathValue("node"))
	if err != nil {
		return err
	}
	writeRead(w, r, meta, toSessionsJSON(all))
	return nil
}
