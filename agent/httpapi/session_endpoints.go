package httpapi

import (
	"net/http"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// sessionJSON is a session as the endpoints give it: Consul's
// structs.Session, LockDelay in nanoseconds. Consul's deprecated Checks is
// left out (null), as Consul leaves it when a session is created with
// NodeChecks, ServiceChecks or neither: a create that gives Checks has
// them taken as NodeChecks.
type sessionJSON struct {
	ID            string
	Name          string
	Node          string
	LockDelay     time.Duration
	Behavior      catalog.SessionBehavior
	TTL           string
	NodeChecks    []string
	ServiceChecks []catalog.ServiceCheck
	CreateIndex   uint64
	ModifyIndex   uint64
}

func toSessionJSON(s *catalog.Session) *sessionJSON {
	return &sessionJSON{
		ID: s.ID, Name: s.Name, Node: s.Node, LockDelay: s.LockDelay, Behavior: s.Behavior, TTL: s.TTL,
		NodeChecks: nonNil(s.NodeChecks), ServiceChecks: s.ServiceChecks,
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

// gossipCheckID is the ID of every node's gossip check, which a session
// is tied to by default (consensus.GossipCheckID, Consul's name).
const gossipCheckID = "serfHealth"

// sessionCreate answers PUT /v1/session/create with {"ID": …}. An empty
// body creates a session with the defaults: this agent's node, its
// serfHealth check, a lock-delay of 15s, behavior release, no TTL.
// LockDelay is a duration string ("15s") or a number: of seconds below
// 1000, else of nanoseconds (Consul's rule).
func (s *Server) sessionCreate(w http.ResponseWriter, r *http.Request) error {
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
	sess := catalog.Session{
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
	sess.NodeChecks = []string{gossipCheckID}
	if body.Checks != nil || body.NodeChecks != nil {
		sess.NodeChecks = append(append([]string{}, body.Checks...), body.NodeChecks...)
	}
	var reply rpc.SessionApplyResponse
	args := &rpc.SessionApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Op: catalog.SessionCreate, Session: sess}
	if err := s.door.RPC(r.Context(), rpc.MethodSessionApply, args, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{ ID string }{reply.ID})
	return nil
}

// sessionDestroy answers PUT /v1/session/destroy/<id> with true.
func (s *Server) sessionDestroy(w http.ResponseWriter, r *http.Request) error {
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	// A session that does not exist is not an error.
	args := &rpc.SessionApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Op: catalog.SessionDestroy,
		Session: catalog.Session{ID: r.PathValue("id")}}
	if err := s.door.RPC(r.Context(), rpc.MethodSessionApply, args, &rpc.SessionApplyResponse{}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

// sessionRenew answers PUT /v1/session/renew/<id> with the session in a
// list of one, or a 404 when it does not exist (Consul's answers).
func (s *Server) sessionRenew(w http.ResponseWriter, r *http.Request) error {
	dc, err := kvDatacenter(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	var reply rpc.SessionsResponse
	args := &rpc.SessionRenewRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, ID: id}
	if err := s.door.RPC(r.Context(), rpc.MethodSessionRenew, args, &reply); err != nil {
		return err
	}
	if len(reply.Sessions) == 0 {
		return notFound("session %q not found", id)
	}
	writeJSON(w, http.StatusOK, []*sessionJSON{toSessionJSON(reply.Sessions[0])})
	return nil
}

// sessionInfo answers GET /v1/session/info/<id>: the session in a list of
// one, an empty list when it does not exist.
func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.SessionsResponse
	if err := s.door.RPC(r.Context(), rpc.MethodSessionGet, &rpc.SessionGetRequest{QueryOptions: opts, ID: r.PathValue("id")}, &reply); err != nil {
		return err
	}
	out := []*sessionJSON{}
	if len(reply.Sessions) > 0 {
		out = append(out, toSessionJSON(reply.Sessions[0]))
	}
	writeRead(w, r, reply.QueryMeta, out)
	return nil
}

// sessionList answers GET /v1/session/list (every session) and
// /v1/session/node/<node> (the node's).
func (s *Server) sessionList(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.SessionsResponse
	if err := s.door.RPC(r.Context(), rpc.MethodSessionList, &rpc.SessionListRequest{QueryOptions: opts, Node: r.PathValue("node")}, &reply); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, toSessionsJSON(reply.Sessions))
	return nil
}
