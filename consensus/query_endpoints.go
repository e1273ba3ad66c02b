package consensus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// RemoteQueryExecutor runs a prepared query against another datacenter's
// catalog, without failover: how the PreparedQuery endpoint fails over.
// It is called from endpoint goroutines, several at once, and should give
// up when ctx ends (the request's, bounded by FailoverTimeout). An error (a datacenter that cannot be reached wraps
// ErrNoPathToDatacenter) makes the endpoint try the next datacenter.
type RemoteQueryExecutor interface {
	ExecuteRemote(ctx context.Context, dc string, q *catalog.PreparedQuery) (*catalog.QueryResult, error)
}

// PreparedQueryConfig configures the PreparedQuery endpoint.
type PreparedQueryConfig struct {
	// Datacenters returns the datacenters this server knows, nearest
	// first (alphabetical will do until distances are known), with or
	// without its own: a query's Failover.NearestN takes the first N
	// others. Called once per failover. Nil knows no other datacenter,
	// so NearestN fails over nowhere (Failover.Datacenters are still
	// tried). Default nil; a server in a WAN pool sets its router's.
	Datacenters func() []string
	// Remote runs a query in a failover datacenter. Nil sends the
	// endpoint's own ExecuteRemote with that Datacenter, which the
	// Catalog endpoint's forwarding takes there (and which fails with
	// ErrNoPathToDatacenter while this server cannot route to it).
	// Default nil; tests inject one.
	Remote RemoteQueryExecutor
	// FailoverTimeout bounds the attempt on each failover datacenter, so
	// one that hangs costs that much before the next is tried. Default
	// 5s: well above a WAN round trip, below a DNS client's patience.
	FailoverTimeout time.Duration
}

// DefaultPreparedQueryConfig returns the defaults documented on
// PreparedQueryConfig.
func DefaultPreparedQueryConfig() PreparedQueryConfig {
	return PreparedQueryConfig{FailoverTimeout: 5 * time.Second}
}

// Validate reports every invalid field.
func (c PreparedQueryConfig) Validate() error {
	if c.FailoverTimeout <= 0 {
		return fmt.Errorf("consensus FailoverTimeout: must be positive, got %s", c.FailoverTimeout)
	}
	return nil
}

// PreparedQuery is the RPC endpoint of prepared queries (Consul's): their
// definitions are written through Raft like catalog writes, and executing
// one reads the local catalog and, when it has no healthy instance, asks
// the failover datacenters in order.
//
// It rides on a Catalog endpoint of the same server, sharing its
// datacenter, its forwarding to the leader (and, where the Catalog has it,
// to other datacenters), its blocking limits and its lifetime: closing the
// Catalog ends this endpoint's forwards too. Register it on an rpc.Server
// under rpc.PreparedQueryEndpoint. Its RPC methods are called as the
// Catalog's are, with the caller's ctx bounding their forwards, Raft
// applies and failover; the rpc.Server encodes their errors with
// rpc.WireError (callers in the same process go through rpc.Server.Call).
type PreparedQuery struct {
	cat    *Catalog
	cfg    PreparedQueryConfig
	remote RemoteQueryExecutor
}

// NewPreparedQuery returns the PreparedQuery endpoint riding on cat.
func NewPreparedQuery(cat *Catalog, cfg PreparedQueryConfig) (*PreparedQuery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &PreparedQuery{cat: cat, cfg: cfg, remote: cfg.Remote}
	if p.remote == nil {
		p.remote = viaEndpoint{p}
	}
	return p, nil
}

// Apply creates, updates or deletes a query and returns once the write is
// committed and applied. A create gets its ID from the leader.
func (p *PreparedQuery) Apply(ctx context.Context, args *rpc.PreparedQueryApplyRequest, reply *rpc.PreparedQueryApplyResponse) error {
	ctx, release := p.cat.requestContext(ctx)
	defer release()
	return p.apply(ctx, args, reply)
}

// Get returns one query by ID.
func (p *PreparedQuery) Get(ctx context.Context, args *rpc.PreparedQueryGetRequest, reply *rpc.PreparedQueriesResponse) error {
	ctx, release := p.cat.requestContext(ctx)
	defer release()
	return p.get(ctx, args, reply)
}

// List returns every query.
func (p *PreparedQuery) List(ctx context.Context, args *rpc.PreparedQueryListRequest, reply *rpc.PreparedQueriesResponse) error {
	ctx, release := p.cat.requestContext(ctx)
	defer release()
	return p.list(ctx, args, reply)
}

// Execute runs a query by ID or name, failing over as it says.
func (p *PreparedQuery) Execute(ctx context.Context, args *rpc.PreparedQueryExecuteRequest, reply *rpc.PreparedQueryExecuteResponse) error {
	ctx, release := p.cat.requestContext(ctx)
	defer release()
	return p.execute(ctx, args, reply)
}

// ExecuteRemote runs the query carried in the request against this
// datacenter's catalog, without failover.
func (p *PreparedQuery) ExecuteRemote(ctx context.Context, args *rpc.PreparedQueryExecuteRemoteRequest, reply *rpc.PreparedQueryExecuteResponse) error {
	ctx, release := p.cat.requestContext(ctx)
	defer release()
	return p.executeRemote(ctx, args, reply)
}

// The lower-case methods below do the work of the RPC methods above (and
// executeRemote that of failover, viaEndpoint); ctx is the request's,
// tied to the endpoint's lifetime already (requestContext).

func (p *PreparedQuery) apply(ctx context.Context, args *rpc.PreparedQueryApplyRequest, reply *rpc.PreparedQueryApplyResponse) error {
	if done, err := p.cat.forwardDC(ctx, rpc.MethodPreparedQueryApply, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	q := &args.Query
	switch args.Op {
	case catalog.QueryCreate:
		if q.ID != "" {
			return &catalog.FieldError{Field: "ID", Reason: "is chosen by the server; leave it empty to create a query"}
		}
	case catalog.QueryUpdate, catalog.QueryDelete:
		if !catalog.IsQueryID(q.ID) {
			return &catalog.FieldError{Field: "ID", Reason: fmt.Sprintf("%q is not a query ID (a UUID)", q.ID)}
		}
	default:
		return &catalog.FieldError{Field: "Op", Reason: fmt.Sprintf("must be create, update or delete, got %q", args.Op)}
	}
	if args.Op != catalog.QueryDelete {
		if err := catalog.NormalizeQuery(q); err != nil {
			return err
		}
	}
	if done, err := p.cat.forward(ctx, rpc.MethodPreparedQueryApply, &args.Forwarded, args, reply, 0); done {
		return err
	}
	if err := p.authorizeApply(args); err != nil {
		return err
	}
	// The ID is chosen here, on the leader, and not by the FSM, which
	// must apply the log the same way on every server.
	if args.Op == catalog.QueryCreate {
		id, err := newQueryID()
		if err != nil {
			return err
		}
		q.ID = id
	}
	if err := p.cat.srv.ApplyQuery(ctx, &catalog.QueryRequest{Op: args.Op, Query: q}); err != nil {
		return err
	}
	reply.ID = q.ID
	return nil
}

func (p *PreparedQuery) get(ctx context.Context, args *rpc.PreparedQueryGetRequest, reply *rpc.PreparedQueriesResponse) error {
	if !catalog.IsQueryID(args.QueryID) {
		return &catalog.FieldError{Field: "QueryID", Reason: fmt.Sprintf("%q is not a query ID (a UUID)", args.QueryID)}
	}
	if done, err := p.cat.forwardRead(ctx, rpc.MethodPreparedQueryGet, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := p.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return p.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, q, err := p.cat.srv.Store().Query(ws, args.QueryID)
		if err != nil {
			return 0, err
		}
		if q == nil {
			return 0, fmt.Errorf("query %q: %w", args.QueryID, catalog.ErrNotFound)
		}
		if !queryRead(authz, q.Name) {
			return 0, denied("query", "read", q.Name)
		}
		reply.Queries = redactQueries(authz, []*catalog.PreparedQuery{q})
		return idx, nil
	})
}

func (p *PreparedQuery) list(ctx context.Context, args *rpc.PreparedQueryListRequest, reply *rpc.PreparedQueriesResponse) error {
	if done, err := p.cat.forwardRead(ctx, rpc.MethodPreparedQueryList, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := p.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return p.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, qs, err := p.cat.srv.Store().Queries(ws)
		reply.Queries, reply.ResultsFilteredByACLs = qs, false
		if authz != nil {
			reply.Queries = slices.DeleteFunc(slices.Clone(qs), func(q *catalog.PreparedQuery) bool { return !authz.QueryRead(q.Name) })
			reply.ResultsFilteredByACLs = len(reply.Queries) < len(qs)
		}
		reply.Queries = redactQueries(authz, reply.Queries)
		return idx, err
	})
}

func (p *PreparedQuery) execute(ctx context.Context, args *rpc.PreparedQueryExecuteRequest, reply *rpc.PreparedQueryExecuteResponse) error {
	if args.QueryIDOrName == "" {
		return &catalog.FieldError{Field: "QueryIDOrName", Reason: "is required"}
	}
	// Answered at once: a blocking execute would have to watch every
	// failover datacenter too.
	args.MinQueryIndex = 0
	if done, err := p.cat.forwardRead(ctx, rpc.MethodPreparedQueryExecute, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := p.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	// The answer holds only instances the caller may read, wherever
	// they come from.
	defer func() { reply.Result.Nodes = readableInstances(authz, reply.Result.Nodes) }()
	var q *catalog.PreparedQuery
	err = p.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		qidx, found, err := p.cat.srv.Store().ResolveQuery(ws, args.QueryIDOrName)
		if err != nil {
			return 0, err
		}
		if found == nil {
			return 0, fmt.Errorf("query %q: %w", args.QueryIDOrName, catalog.ErrNotFound)
		}
		q = found
		idx, err := p.runLocal(ws, q, args.Agent, &reply.Result)
		return max(qidx, idx), err
	})
	if err != nil {
		return err
	}
	if len(reply.Result.Nodes) == 0 {
		// The other datacenters answer as the caller's token may read.
		return p.failover(acl.ContextWithToken(ctx, args.Token), q, &reply.Result)
	}
	return nil
}

func (p *PreparedQuery) executeRemote(ctx context.Context, args *rpc.PreparedQueryExecuteRemoteRequest, reply *rpc.PreparedQueryExecuteResponse) error {
	q := args.Query
	if err := catalog.NormalizeQuery(&q); err != nil {
		var fe *catalog.FieldError
		if errors.As(err, &fe) {
			fe.Field = "Query." + fe.Field
		}
		return err
	}
	args.MinQueryIndex = 0
	if done, err := p.cat.forwardRead(ctx, rpc.MethodPreparedQueryExecuteRemote, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := p.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return p.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		// Another datacenter's nodes are not near the agent asking.
		idx, err := p.runLocal(ws, &q, "", &reply.Result)
		reply.Result.Nodes = readableInstances(authz, reply.Result.Nodes)
		return idx, err
	})
}

// runLocal fills res with q's answer from this server's store and returns
// the index of what it read. agent is the node a Service.Near of "_agent"
// sorts from ("": such a query is not sorted).
func (p *PreparedQuery) runLocal(ws catalog.WatchSet, q *catalog.PreparedQuery, agent string, res *catalog.QueryResult) (uint64, error) {
	idx, all, err := p.cat.srv.Store().ServiceInstances(ws, q.Service.Service, "")
	if err != nil {
		return 0, err
	}
	*res = catalog.QueryResult{
		Service:    q.Service.Service,
		Nodes:      q.Service.Filter(all),
		DNS:        q.DNS,
		Datacenter: strings.ToLower(p.cat.cfg.Datacenter),
	}
	near := q.Service.Near
	if near == catalog.QueryNearAgent {
		near = agent
	}
	if near != "" {
		res.Ordered = true
		return idx, sortNear(p.cat.srv.Store(), near, res.Nodes, instanceNode) // near.go
	}
	return idx, nil
}

// failover asks q's failover datacenters in order, and takes the first
// answer with instances. A datacenter that fails is skipped: failing over
// exists for datacenters that are down. When none has an instance and a
// known datacenter (one of the WAN pool's) failed, the error says so: an
// empty answer would claim that no instance exists (a resolver caches
// that as NXDOMAIN) when the truth is unknown, so DNS answers SERVFAIL
// and the client asks again. A datacenter nobody knows is only skipped.
// Each attempt is bounded by FailoverTimeout and by ctx; once ctx has
// ended, the datacenters left are not tried.
func (p *PreparedQuery) failover(ctx context.Context, q *catalog.PreparedQuery, res *catalog.QueryResult) error {
	known := map[string]bool{}
	if p.cfg.Datacenters != nil {
		for _, dc := range p.cfg.Datacenters() {
			known[strings.ToLower(dc)] = true
		}
	}
	var errs []error
	// The query's stored token stays in its datacenter.
	sent := *q
	sent.Token = ""
	for _, dc := range p.failoverDatacenters(q) {
		if ctx.Err() != nil {
			return fmt.Errorf("query %q: failover: %w", q.ID, context.Cause(ctx))
		}
		res.Failovers++
		dcCtx, cancel := context.WithTimeout(ctx, p.cfg.FailoverTimeout)
		remote, err := p.remote.ExecuteRemote(dcCtx, dc, &sent)
		cancel()
		if err != nil {
			// Debug: this runs per execution, so per DNS question.
			p.cat.srv.logger.Debug("prepared query failover failed", "query", q.ID, "dc", dc, "err", err)
			if known[dc] {
				errs = append(errs, err)
			}
			continue
		}
		if len(remote.Nodes) > 0 {
			res.Nodes, res.Datacenter = remote.Nodes, dc
			return nil
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("query %q: no healthy instance here, and %d failover datacenter(s) could not be asked: %w", q.ID, len(errs), errors.Join(errs...))
	}
	return nil
}

// failoverDatacenters lists the datacenters q fails over to, each once,
// never this one: the NearestN first known others, then Datacenters.
func (p *PreparedQuery) failoverDatacenters(q *catalog.PreparedQuery) []string {
	f := q.Service.Failover
	seen := map[string]bool{strings.ToLower(p.cat.cfg.Datacenter): true}
	var out []string
	add := func(dc string) {
		dc = strings.ToLower(dc)
		if !seen[dc] {
			seen[dc] = true
			out = append(out, dc)
		}
	}
	if f.NearestN > 0 && p.cfg.Datacenters != nil {
		for _, dc := range p.cfg.Datacenters() {
			if len(out) == f.NearestN {
				break
			}
			add(dc)
		}
	}
	for _, dc := range f.Datacenters {
		add(dc)
	}
	for _, t := range f.Targets {
		add(t.Datacenter)
	}
	return out
}

// redactQueries hides the queries' tokens from a reader without acl:write
// (Consul's rule); with ACLs off (authz nil) they are shown. qs is not
// modified.
func redactQueries(authz authorizer, qs []*catalog.PreparedQuery) []*catalog.PreparedQuery {
	if authz == nil || authz.ACLWrite() {
		return qs
	}
	out := make([]*catalog.PreparedQuery, len(qs))
	for i, q := range qs {
		out[i] = q.Redacted()
	}
	return out
}

// viaEndpoint is the default RemoteQueryExecutor: the endpoint's own
// ExecuteRemote with the datacenter set, as a client would send it, so
// that the Catalog's routing to other datacenters takes it there. Its
// forward is bounded by ctx (the request's, within FailoverTimeout) and
// the Catalog's ForwardTimeout, whichever ends first.
type viaEndpoint struct{ p *PreparedQuery }

func (v viaEndpoint) ExecuteRemote(ctx context.Context, dc string, q *catalog.PreparedQuery) (*catalog.QueryResult, error) {
	args := &rpc.PreparedQueryExecuteRemoteRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: true, Token: acl.TokenFromContext(ctx)}, Query: *q}
	var reply rpc.PreparedQueryExecuteResponse
	if err := v.p.executeRemote(ctx, args, &reply); err != nil {
		return nil, fmt.Errorf("execute query %q in datacenter %s: %w", q.ID, dc, err)
	}
	return &reply.Result, nil
}

// authorizeApply checks a prepared query write on the leader: query:write
// on its name (on "" for a query without one), and on the name it had for
// an update or a delete.
func (p *PreparedQuery) authorizeApply(args *rpc.PreparedQueryApplyRequest) error {
	authz, err := p.cat.authorize(args.Token)
	if err != nil || authz == nil {
		return err
	}
	if args.Op != catalog.QueryDelete && !authz.QueryWrite(args.Query.Name) {
		return denied("query", "write", args.Query.Name)
	}
	if args.Op == catalog.QueryCreate {
		return nil
	}
	_, old, err := p.cat.srv.Store().Query(nil, args.Query.ID)
	if err != nil {
		return err
	}
	if old != nil && !authz.QueryWrite(old.Name) {
		return denied("query", "write", old.Name)
	}
	return nil
}

// readableInstances returns the instances authz may read: all of them when
// it is nil (ACLs off), else a new slice.
func readableInstances(authz authorizer, all []catalog.ServiceInstance) []catalog.ServiceInstance {
	if authz == nil {
		return all
	}
	out := make([]catalog.ServiceInstance, 0, len(all))
	for _, inst := range all {
		if instanceReadable(authz, inst) {
			out = append(out, inst)
		}
	}
	return out
}

// ApplyQuery commits a prepared query write and returns once it is
// applied.
func (s *Server) ApplyQuery(ctx context.Context, req *catalog.QueryRequest) error {
	if err := s.apply(ctx, cmdQuery, req); err != nil {
		return fmt.Errorf("%s prepared query %q: %w", req.Op, req.Query.ID, err)
	}
	return nil
}

// newQueryID returns a random (version 4) UUID.
func newQueryID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate query ID: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
