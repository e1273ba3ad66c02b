package consensus

import (
	"context"
	"fmt"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Session is the RPC endpoint of sessions (Consul's Session): creates and
// destroys go through Raft, reads are blocking queries, and renews reach
// the leader, which keeps the TTL timers (session_ttl.go).
//
// It rides on a Catalog endpoint of the same server, as KVS does. Register
// it on an rpc.Server under rpc.SessionEndpoint.
//
// With ACLs on, a create, destroy or renew needs session:write on the
// session's node, and reads answer only the sessions whose node the token
// may read (session:read).
type Session struct {
	cat *Catalog
}

// NewSession returns the Session endpoint riding on cat.
func NewSession(cat *Catalog) *Session { return &Session{cat: cat} }

// Apply creates or destroys a session once committed; reply.ID is the
// session's ID. A create's ID is chosen here, on the leader; Behavior ""
// is release. Destroying a session that does not exist is not an error.
func (e *Session) Apply(ctx context.Context, args *rpc.SessionApplyRequest, reply *rpc.SessionApplyResponse) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if done, err := e.cat.forwardDC(ctx, rpc.MethodSessionApply, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	req := &catalog.SessionRequest{Op: args.Op, Session: args.Session}
	switch req.Op {
	case catalog.SessionCreate:
		if req.Session.Behavior == "" {
			req.Session.Behavior = catalog.SessionRelease
		}
		// The ID is the leader's to choose: validate all else first.
		req.Session.ID = "pending"
		if err := catalog.ValidateSession(&req.Session); err != nil {
			return err
		}
	case catalog.SessionDestroy:
		if req.Session.ID == "" {
			return &catalog.FieldError{Field: "ID", Reason: "is required"}
		}
	default:
		return &catalog.FieldError{Field: "Op", Reason: fmt.Sprintf("must be create or destroy, got %q", req.Op)}
	}
	if done, err := e.cat.forward(ctx, rpc.MethodSessionApply, &args.Forwarded, args, reply, 0); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	if req.Op == catalog.SessionCreate {
		if authz != nil && !authz.SessionWrite(req.Session.Node) {
			return denied("session", "write", req.Session.Node)
		}
		if req.Session.ID, err = acl.NewID(); err != nil {
			return err
		}
	} else {
		_, sess, err := e.cat.srv.Store().SessionGet(nil, req.Session.ID)
		if err != nil {
			return err
		}
		if sess != nil && authz != nil && !authz.SessionWrite(sess.Node) {
			return denied("session", "write", sess.Node)
		}
	}
	if err := e.cat.srv.ApplySession(ctx, req); err != nil {
		return err
	}
	reply.ID = req.Session.ID
	return nil
}

// Get returns one session: none when it does not exist or the token may
// not read it.
func (e *Session) Get(ctx context.Context, args *rpc.SessionGetRequest, reply *rpc.SessionsResponse) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if args.ID == "" {
		return &catalog.FieldError{Field: "ID", Reason: "is required"}
	}
	if done, err := e.cat.forwardRead(ctx, rpc.MethodSessionGet, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return e.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, sess, err := e.cat.srv.Store().SessionGet(ws, args.ID)
		reply.Sessions, reply.ResultsFilteredByACLs = nil, false
		if sess != nil {
			reply.Sessions = filterSessions(authz, []*catalog.Session{sess}, &reply.QueryMeta)
		}
		return idx, err
	})
}

// List returns the sessions of a node, or every session, that the token
// may read.
func (e *Session) List(ctx context.Context, args *rpc.SessionListRequest, reply *rpc.SessionsResponse) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if done, err := e.cat.forwardRead(ctx, rpc.MethodSessionList, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return e.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, all, err := e.cat.srv.Store().SessionList(ws, args.Node)
		reply.ResultsFilteredByACLs = false
		reply.Sessions = filterSessions(authz, all, &reply.QueryMeta)
		return idx, err
	})
}

// filterSessions returns the sessions authz may read, noting in meta when
// it left some out.
func filterSessions(authz authorizer, all []*catalog.Session, meta *rpc.QueryMeta) []*catalog.Session {
	if authz == nil {
		return all
	}
	out := make([]*catalog.Session, 0, len(all))
	for _, s := range all {
		if authz.SessionRead(s.Node) {
			out = append(out, s)
		}
	}
	meta.ResultsFilteredByACLs = len(out) < len(all)
	return out
}

// Renew restarts a session's TTL on the leader and returns the session:
// none when it does not exist.
func (e *Session) Renew(ctx context.Context, args *rpc.SessionRenewRequest, reply *rpc.SessionsResponse) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if done, err := e.cat.forwardDC(ctx, rpc.MethodSessionRenew, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	if args.ID == "" {
		return &catalog.FieldError{Field: "ID", Reason: "is required"}
	}
	if done, err := e.cat.forward(ctx, rpc.MethodSessionRenew, &args.Forwarded, args, reply, 0); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	// The leader applied every create it took before answering it, so
	// its store holds the session (a new leader's may trail for a moment,
	// as Consul's does).
	idx, sess, err := e.cat.srv.Store().SessionGet(nil, args.ID)
	if err != nil || sess == nil {
		reply.Index = idx
		return err
	}
	if authz != nil && !authz.SessionWrite(sess.Node) {
		return denied("session", "write", sess.Node)
	}
	e.cat.srv.ttls.reset(sess.ID, sess.TTLDuration(), time.Now())
	reply.Index, reply.KnownLeader = idx, true
	reply.Sessions = []*catalog.Session{sess}
	return nil
}

// ApplySession writes req through Raft. On the leader it starts a new
// session's TTL timer, or forgets a destroyed one's. It does not validate
// req: the Session endpoint does (catalog.ValidateSession).
func (s *Server) ApplySession(ctx context.Context, req *catalog.SessionRequest) error {
	if err := s.apply(ctx, cmdSession, req); err != nil {
		return fmt.Errorf("%s session %q: %w", req.Op, req.Session.ID, err)
	}
	if req.Op == catalog.SessionCreate {
		s.ttls.reset(req.Session.ID, req.Session.TTLDuration(), time.Now())
	} else {
		s.ttls.remove(req.Session.ID)
	}
	return nil
}
