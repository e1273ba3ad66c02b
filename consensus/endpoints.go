package consensus

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// CatalogConfig configures the Catalog endpoint.
type CatalogConfig struct {
	// Datacenter is the datacenter this server serves. A request naming
	// another one is forwarded there through Router. Required.
	Datacenter string
	// Router, when set, routes requests for other datacenters to their
	// servers (forward_dc.go). Its datacenter must be Datacenter. Nil (unit
	// tests of a server in no WAN pool) fails them with
	// ErrNoPathToDatacenter. Default nil.
	Router *Router
	// Blocking bounds the wait of blocking queries.
	// Default rpc.DefaultBlockingLimits() (5m, at most 10m, 1/16 jitter).
	Blocking rpc.BlockingLimits
	// LeaderWait is how long a request that needs the leader waits for one
	// to be known before it fails with ErrNoLeader. Default 2s: longer
	// than a quick election, short enough for a client to try elsewhere.
	LeaderWait time.Duration
	// ACL says whether requests are checked against their tokens.
	// Default off.
	ACL ACLConfig
	// Members, when set, finds the members of the LAN gossip pool: a
	// registration that would move a node held by a live member to another
	// address, or take a live member's node ID, is refused, so nobody
	// takes over a name by registering it (acl_catalog.go). Nil skips
	// the check (unit tests). Default nil.
	Members MemberFinder
	// ForwardTimeout bounds a request forwarded to the leader, on top of
	// the wait of a blocking query. Default 15s: more than the leader's
	// default ApplyTimeout (10s), so a slow write fails there, with its
	// reason, before the forward gives up on it.
	ForwardTimeout time.Duration
	// KVMaxValueSize is the largest key/value entry a write may carry, in
	// bytes, at most catalog.MaxKVValueSize. Default
	// catalog.DefaultKVMaxValueSize.
	KVMaxValueSize int
}

// DefaultCatalogConfig returns the defaults; Datacenter must still be set.
func DefaultCatalogConfig() CatalogConfig {
	return CatalogConfig{
		Blocking:       rpc.DefaultBlockingLimits(),
		LeaderWait:     2 * time.Second,
		ForwardTimeout: 15 * time.Second,
		KVMaxValueSize: catalog.DefaultKVMaxValueSize,
		ACL:            DefaultACLConfig(),
	}
}

// Validate reports every invalid field.
func (c CatalogConfig) Validate() error {
	var errs []error
	if c.Datacenter == "" {
		errs = append(errs, errors.New("consensus Datacenter: is required"))
	}
	if err := c.Blocking.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("consensus Blocking: %w", err))
	}
	if c.LeaderWait <= 0 {
		errs = append(errs, fmt.Errorf("consensus LeaderWait: must be positive, got %s", c.LeaderWait))
	}
	if c.ForwardTimeout <= 0 {
		errs = append(errs, fmt.Errorf("consensus ForwardTimeout: must be positive, got %s", c.ForwardTimeout))
	}
	if c.ACL.TokenMinExpirationTTL < 0 || c.ACL.TokenMaxExpirationTTL < c.ACL.TokenMinExpirationTTL {
		errs = append(errs, fmt.Errorf("consensus ACL: TokenMinExpirationTTL (%s) must not be negative nor above TokenMaxExpirationTTL (%s)", c.ACL.TokenMinExpirationTTL, c.ACL.TokenMaxExpirationTTL))
	}
	if c.Router != nil && !strings.EqualFold(c.Router.Datacenter(), c.Datacenter) {
		errs = append(errs, fmt.Errorf("consensus Router: routes for datacenter %q, this endpoint serves %q", c.Router.Datacenter(), c.Datacenter))
	}
	return errors.Join(errs...)
}

// Catalog is the RPC endpoint of the catalog: client agents send it every
// catalog read and write. A write is applied on the leader; on a follower it
// is forwarded to the leader. A read is answered by this server with
// AllowStale, and otherwise by the leader (forwarded to it when this server
// is not the leader); with RequireConsistent the leader first makes sure it
// still leads and has applied everything committed.
//
// A request naming another datacenter is forwarded, before any of this,
// to a live server of that datacenter, which answers it as its own
// (forward_dc.go); ListDatacenters says which datacenters there are.
//
// Its methods return errors plain; the rpc.Server encodes them with
// rpc.WireError, so that an invalid field reaches the caller as a
// *catalog.FieldError and a missing node as catalog.ErrNotFound, even
// through a forward to the leader.
//
// Register it on an rpc.Server under rpc.CatalogEndpoint. Its methods are
// called by the rpc.Server, each on a goroutine of its own (or the caller's,
// through rpc.Server.Call), with the caller's ctx: a blocking query, a
// forward to the leader or to another datacenter, the wait for a leader and
// a Raft apply all end when it does, or when Close is called, whichever is
// first. A forward's deadline is the caller's when that is sooner than
// ForwardTimeout (plus a blocking query's wait). Close ends the requests
// in flight, as the rpc.Server's Shutdown does through their ctx; call it
// when the endpoint stops being served, before the rpc.Server's Shutdown,
// which waits for them.
type Catalog struct {
	srv  *Server
	pool *rpc.Pool
	cfg  CatalogConfig
	acl  *aclResolver
	repl aclReplication // acl_replication.go

	// life is the endpoint's lifetime, not a request's: Close cancels it
	// to end the blocking queries and forwards in flight, each request's
	// own ctx being tied to it (requestContext).
	life   context.Context
	cancel context.CancelFunc
}

// NewCatalog returns the Catalog endpoint of s. pool carries requests
// forwarded to the leader.
func NewCatalog(s *Server, pool *rpc.Pool, cfg CatalogConfig) (*Catalog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	return &Catalog{srv: s, pool: pool, cfg: cfg, acl: newACLResolver(cfg.ACL, cfg.Datacenter, s.Store()), life: life, cancel: cancel}, nil
}

// Close ends the blocking queries and forwards in flight: each returns its
// latest result or an error at once. Requests arriving later are still
// answered, without blocking. Close may be called more than once.
func (c *Catalog) Close() { c.cancel() }

// errClosed is the cause of a request's ctx ending because the endpoint
// was closed.
var errClosed = errors.New("consensus endpoint closed")

// requestContext returns the ctx a request's work runs under: the caller's,
// ended also by Close (with cause errClosed). The returned func releases
// it; every method defers it.
func (c *Catalog) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.life, func() { cancel(errClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// Register registers a node, and optionally a service and checks on it,
// and returns once the write is committed and applied.
func (c *Catalog) Register(ctx context.Context, args *rpc.RegisterRequest, _ *struct{}) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardDC(ctx, rpc.MethodCatalogRegister, args.Datacenter, &args.FromDatacenter, true, args, &struct{}{}, 0); done {
		return err
	}
	reg := &args.Registration
	if reg.Datacenter == "" {
		reg.Datacenter = c.cfg.Datacenter
	} else if !strings.EqualFold(reg.Datacenter, c.cfg.Datacenter) {
		return &catalog.FieldError{Field: "Datacenter", Reason: fmt.Sprintf("a node of datacenter %q cannot be registered in %q", reg.Datacenter, c.cfg.Datacenter)}
	}
	if err := catalog.ValidateRegister(reg); err != nil {
		return err
	}
	if done, err := c.forward(ctx, rpc.MethodCatalogRegister, &args.Forwarded, args, &struct{}{}, 0); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	if err := c.authorizeRegister(authz, reg); err != nil {
		return err
	}
	if err := c.checkNodeOwner(reg); err != nil {
		return err
	}
	reg.CreateMissingNode = true
	return c.srv.Register(withWriteID(ctx, args.RequestID), reg)
}

// Deregister removes a service, a check or (with neither named) a node,
// and returns once the write is committed and applied.
func (c *Catalog) Deregister(ctx context.Context, args *rpc.DeregisterRequest, _ *struct{}) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardDC(ctx, rpc.MethodCatalogDeregister, args.Datacenter, &args.FromDatacenter, true, args, &struct{}{}, 0); done {
		return err
	}
	d := &args.Deregistration
	if err := validateDeregister(d); err != nil {
		return err
	}
	if done, err := c.forward(ctx, rpc.MethodCatalogDeregister, &args.Forwarded, args, &struct{}{}, 0); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	if err := c.authorizeDeregister(authz, d); err != nil {
		return err
	}
	return c.srv.Deregister(withWriteID(ctx, args.RequestID), d)
}

func validateDeregister(d *catalog.DeregisterRequest) error {
	if err := catalog.ValidateNodeName("Node", d.Node); err != nil {
		return err
	}
	if d.ServiceID != "" {
		if err := catalog.ValidateID("ServiceID", d.ServiceID); err != nil {
			return err
		}
	}
	if d.CheckID != "" {
		if err := catalog.ValidateID("CheckID", d.CheckID); err != nil {
			return err
		}
	}
	return nil
}

// ServiceInstances returns the instances of a service.
func (c *Catalog) ServiceInstances(ctx context.Context, args *rpc.ServiceInstancesRequest, reply *rpc.ServiceInstancesResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if err := validateLabel("Service", args.Service); err != nil {
		return err
	}
	if args.Tag != "" {
		if err := validateLabel("Tag", args.Tag); err != nil {
			return err
		}
	}
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogServiceInstances, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	return c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, all, err := c.srv.Store().ServiceInstances(ws, args.Service, args.Tag)
		if err != nil {
			return 0, err
		}
		kept := make([]catalog.ServiceInstance, 0, len(all))
		reply.ResultsFilteredByACLs = false
		for _, inst := range all {
			switch {
			case !instanceReadable(authz, inst):
				reply.ResultsFilteredByACLs = true
			case !(args.OnlyHealthy || args.OnlyPassing) || inst.Healthy(args.OnlyPassing):
				kept = append(kept, inst)
			}
		}
		reply.Instances = kept
		return idx, sortNear(c.srv.Store(), args.Near, kept, instanceNode) // near.go
	})
}

// Nodes returns every node.
func (c *Catalog) Nodes(ctx context.Context, args *rpc.NodesRequest, reply *rpc.NodesResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogNodes, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	return c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, nodes, err := c.srv.Store().Nodes(ws)
		reply.Nodes, reply.ResultsFilteredByACLs = nodes, false
		if authz != nil {
			reply.Nodes = nodes[:0:0]
			for _, n := range nodes {
				if authz.NodeRead(n.Node) {
					reply.Nodes = append(reply.Nodes, n)
				}
			}
			reply.ResultsFilteredByACLs = len(reply.Nodes) < len(nodes)
		}
		if err != nil {
			return idx, err
		}
		return idx, sortNear(c.srv.Store(), args.Near, reply.Nodes, nodeName) // near.go
	})
}

// Services returns every service name with its tags.
func (c *Catalog) Services(ctx context.Context, args *rpc.ServicesRequest, reply *rpc.ServicesResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogServices, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	if args.Instances {
		return c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
			return c.serviceNodes(ws, authz, reply)
		})
	}
	return c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, services, err := c.srv.Store().Services(ws)
		reply.Services, reply.ResultsFilteredByACLs = services, false
		if authz != nil {
			reply.Services = make(map[string][]string, len(services))
			for name, tags := range services {
				if authz.ServiceRead(name) {
					reply.Services[name] = tags
				}
			}
			reply.ResultsFilteredByACLs = len(reply.Services) < len(services)
		}
		return idx, err
	})
}

// serviceNodes answers a Services request that asks for Instances: the
// instances a may read (and no Services map).
func (c *Catalog) serviceNodes(ws catalog.WatchSet, a authorizer, reply *rpc.ServicesResponse) (uint64, error) {
	idx, all, err := c.srv.Store().ServiceNodes(ws)
	if err != nil {
		return 0, err
	}
	reply.Instances, reply.ResultsFilteredByACLs = all[:0:0], false
	for _, inst := range all {
		if instanceReadable(a, inst) {
			reply.Instances = append(reply.Instances, inst)
		} else {
			reply.ResultsFilteredByACLs = true
		}
	}
	return idx, nil
}

// NodeServices returns a node and the services on it.
func (c *Catalog) NodeServices(ctx context.Context, args *rpc.NodeServicesRequest, reply *rpc.NodeServicesResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if err := catalog.ValidateNodeName("Node", args.Node); err != nil {
		return err
	}
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogNodeServices, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	return c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		nodeIdx, node, err := c.srv.Store().Node(ws, args.Node)
		if err != nil {
			return 0, err
		}
		svcIdx, services, err := c.srv.Store().NodeServices(ws, args.Node)
		if err != nil {
			return 0, err
		}
		reply.Node, reply.Services, reply.ResultsFilteredByACLs = node, services, false
		if authz != nil {
			if !authz.NodeRead(args.Node) {
				reply.Node, reply.Services = nil, nil
				reply.ResultsFilteredByACLs = node != nil
				return max(nodeIdx, svcIdx), nil
			}
			reply.Services = services[:0:0]
			for _, s := range services {
				if authz.ServiceRead(s.Service) {
					reply.Services = append(reply.Services, s)
				}
			}
			reply.ResultsFilteredByACLs = len(reply.Services) < len(services)
		}
		return max(nodeIdx, svcIdx), nil
	})
}

// Reverse returns the nodes and services registered with an address, for
// PTR answers.
func (c *Catalog) Reverse(ctx context.Context, args *rpc.ReverseRequest, reply *rpc.ReverseResponse) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	addr, err := parseAddr("Addr", args.Addr)
	if err != nil {
		return err
	}
	if done, err := c.forwardRead(ctx, rpc.MethodCatalogReverse, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	return c.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		// Store.Reverse reports no index, so the answer carries the
		// store's: coarser (any write moves it, so a blocking query may
		// return unchanged data once), never wrong. It is read first, so
		// it is never newer than the data read: an index past the data
		// would make the next blocking query miss the write between.
		idx := c.srv.Store().Index()
		nodes, services, err := c.srv.Store().Reverse(ws, addr)
		if err != nil {
			return 0, err
		}
		reply.Nodes, reply.Services = nodes, services
		if authz != nil {
			reply.Nodes = slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return !authz.NodeRead(n) })
			reply.Services = slices.DeleteFunc(slices.Clone(services), func(s string) bool { return !authz.ServiceRead(s) })
		}
		return idx, nil
	})
}

// parseAddr parses an IP address as the catalog stores them: any spelling
// netip accepts, without a zone (no registered address has one).
func parseAddr(field, s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, &catalog.FieldError{Field: field, Reason: "is required"}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, &catalog.FieldError{Field: field, Reason: fmt.Sprintf("%q is not an IP address", s)}
	}
	return a, nil
}

func validateLabel(field, s string) error {
	if r := catalog.ValidLabel(s); r != "" {
		return &catalog.FieldError{Field: field, Reason: r}
	}
	return nil
}

// checkDatacenter refuses a request for a datacenter other than own, this
// server's, for the endpoints that answer only of their own datacenter
// (Status). Datacenter names compare case-insensitively, as the DNS
// names they appear in.
func checkDatacenter(own, dc string) error {
	if dc == "" || strings.EqualFold(dc, own) {
		return nil
	}
	return fmt.Errorf("datacenter %q (this is %q): %w", dc, own, ErrNoPathToDatacenter)
}

// query answers a read from this server's store, blocking as opts ask
// (until ctx ends at the latest), and says how current the answer is.
func (c *Catalog) query(ctx context.Context, opts rpc.QueryOptions, meta *rpc.QueryMeta, run func(ws catalog.WatchSet) (uint64, error)) error {
	// The leader's store has never reached the index the caller holds: it
	// comes from another history (from before a snapshot was restored, or
	// another cluster). Answer at once, as the change feed answers with a
	// Reset, so the caller starts over from this store's index instead of
	// waiting out its whole wait. A follower may merely be behind, and the
	// caller wants it to catch up first (the agents' caches ask for the
	// index the change feed reported), so it waits as usual.
	if opts.MinQueryIndex > c.srv.Store().LastIndex() && c.srv.IsLeader() {
		opts.MinQueryIndex = 0
	}
	if err := blockingQuery(ctx, c.cfg.Blocking, opts, meta, run); err != nil {
		return err
	}
	meta.KnownLeader = c.srv.Leader() != ""
	meta.LastContact = c.srv.LastContact()
	return nil
}

// forwardRead sends a read to another datacenter when it names one, else
// to the leader unless it may be answered here, after checking what every
// read must satisfy. When it returns done, the reply is filled in (or err
// says why not); otherwise the caller answers from its own store.
//
// A blocking read keeps the end of its wait across leader changes and
// across the servers of another datacenter: when the leader it was
// forwarded to is replaced, or the remote server it was sent to fails,
// the next one (or this server, if it took over) is asked for what is
// left of the wait, so the read ends about when it would have without the
// change, with the current index and data, as a wait that ran out does.
// Its q is shortened for that, and put back when the read was answered by
// a forward; when this server answers, q keeps what is left.
func (c *Catalog) forwardRead(ctx context.Context, method string, q *rpc.QueryOptions, forwarded *bool, args, reply any) (done bool, err error) {
	if err := q.Validate(); err != nil {
		return true, err
	}
	var wait time.Duration
	if q.IsBlocking() {
		wait = maxBlockingWait(*q, c.cfg.Blocking)
		ctx = withBlockingEnd(ctx, q, c.cfg.Blocking) // blocking.go
	}
	saved := *q
	if done, err := c.forwardDC(ctx, method, q.Datacenter, &q.FromDatacenter, false, args, reply, wait); done {
		*q = saved
		return true, err
	}
	if q.AllowStale {
		return false, nil
	}
	if done, err := c.forward(ctx, method, forwarded, args, reply, wait); done {
		*q = saved
		return true, err
	}
	if q.RequireConsistent {
		if err := c.consistentRead(ctx); err != nil {
			return true, err
		}
	}
	return false, nil
}

// maxBlockingWait is the longest opts.BlockingTimeout(l) can be: the
// capped wait plus the whole jitter.
func maxBlockingWait(opts rpc.QueryOptions, l rpc.BlockingLimits) time.Duration {
	jitter := l.JitterFraction
	l.JitterFraction = 0
	wait := opts.BlockingTimeout(l)
	if jitter > 0 {
		wait += wait / time.Duration(jitter)
	}
	return wait
}

// forward sends a request to the leader when this server is not the
// leader, waiting up to LeaderWait for one to be known, and gives the
// forward ForwardTimeout plus wait (a blocking query's) to finish, or
// less when ctx (the request's) ends sooner. done reports whether the
// request was forwarded or refused; when it is false this server is (or
// has just become) the leader and answers itself.
//
// A forward follows leadership: when Raft here sees the leader change
// while the forward waits (the leader went quiet, an election began), the
// forward is abandoned and sent to the new leader as soon as one is known,
// rather than waiting out its timeout on a leader that is gone. So is one
// that failed to reach the leader, or that reached a server no longer
// leading. A write is sent again only when that is safe: it is idempotent
// (rpc.Idempotent), or it never left this server; otherwise its outcome is
// unknown and the error wraps rpc.ErrUnknownOutcome.
//
// The forwarded mark is set on args for the hop and cleared when it
// returns: args may be the in-process caller's own (rpc.Server.Call), who
// may send them again.
//
// The leader's error comes back as it was sent (a *rpc.RemoteError), so the
// client sees the leader's words, and the rpc.Server's rpc.WireError
// encodes its field or sentinel again; a failure to reach the leader wraps
// rpc.ErrTransport. A request that was forwarded to this server already is
// refused with ErrNotLeader rather than sent on.
func (c *Catalog) forward(ctx context.Context, method string, forwarded *bool, args, reply any, wait time.Duration) (done bool, err error) {
	if c.srv.IsLeader() {
		return false, nil
	}
	if *forwarded {
		return true, fmt.Errorf("%s forwarded to a server that no longer leads: %w", method, ErrNotLeader)
	}
	_, write := args.(rpc.Write)
	_, idempotent := args.(rpc.Idempotent)
	// WithTimeout keeps ctx's deadline when it is the sooner: a forward
	// never outlives what its caller has left.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ForwardTimeout+wait)
	defer cancel()
	*forwarded = true
	defer func() { *forwarded = false }()
	for attempt := 1; ; attempt++ {
		leader, err := c.waitLeader(ctx)
		if err != nil {
			return true, err
		}
		if attempt > 1 {
			// A blocking read asks the next leader (or this server, now
			// leading) only for the wait it has left.
			keepBlockingEnd(ctx) // blocking.go
		}
		if leader == "" { // this server leads now
			return false, nil
		}
		err = c.forwardOnce(ctx, leader, method, args, reply)
		if err == nil {
			return true, nil
		}
		remote, isRemote := errors.AsType[*rpc.RemoteError](err)
		f := rpc.Classify(err)
		changed := errors.Is(err, errLeaderChanged)
		movedOn := changed || f == rpc.NotLeader || f == rpc.NoLeader
		// Only the leader takes the call, so of the remote answers only
		// those saying it leads no more, or stopped before answering (a
		// write it took has an unknown fate, as over a broken
		// connection), send it on; a busy leader stays the leader.
		switch {
		case isRemote && !movedOn && f != rpc.Stopping:
			return true, remote
		case !changed && (ctx.Err() != nil ||
			errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
			// The caller's time is up (a stream's deadline can fire a
			// moment before ctx's own timer): no second try.
			if write && !idempotent && f != rpc.Unsent {
				return true, fmt.Errorf("forward to leader %s: %w: %w", leader, rpc.ErrUnknownOutcome, err)
			}
			return true, fmt.Errorf("forward to leader %s: %w", leader, err)
		case write && !idempotent && !f.Unapplied():
			// Answered once the deadline the forward carried has passed:
			// the leader then never starts it, so the caller's "unknown"
			// settles with the answer (as the client door's does).
			<-ctx.Done()
			return true, fmt.Errorf("forward to leader %s: %w: %w", leader, rpc.ErrUnknownOutcome, err)
		case attempt == maxForwardAttempts:
			if isRemote {
				return true, remote
			}
			return true, fmt.Errorf("forward to leader %s: %w: %w", leader, rpc.ErrNoLeader, err)
		}
		if !changed && !c.waitLeaderChange(ctx, leader) && !movedOn {
			// The leader Raft here believes in cannot be reached, and
			// Raft has not seen it go within LeaderWait: say so as "no
			// leader", which a client takes to another server.
			return true, fmt.Errorf("forward to leader %s: %w: %w", leader, rpc.ErrNoLeader, err)
		}
		c.srv.logger.Debug("forward to the leader failed; forwarding to the leader now known", "peer", leader, "method", method, "err", err)
	}
}

// waitLeaderChange waits, up to LeaderWait or until ctx ends, for Raft here
// to see another leader than leader (or none), after a forward to it failed
// to reach it: a leader that crashed or was cut off is noticed within a
// heartbeat timeout. It reports whether the leader changed.
func (c *Catalog) waitLeaderChange(ctx context.Context, leader string) bool {
	t := time.NewTimer(c.leaderPatience(ctx))
	defer t.Stop()
	for {
		seen := c.srv.LeaderObserved()
		if c.srv.Leader() != leader {
			return true
		}
		select {
		case <-seen:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// maxForwardAttempts bounds how many leaders one request is forwarded to
// (within its timeout): more leader changes than that in one request's
// life means a cluster that cannot keep one.
const maxForwardAttempts = 4

// errLeaderChanged is the cause of a forward abandoned because Raft here
// saw the leader it went to replaced.
var errLeaderChanged = errors.New("the leader changed during the forward")

// forwardOnce forwards to leader, abandoning the call when Raft sees
// another leader (or none) before the answer comes.
func (c *Catalog) forwardOnce(ctx context.Context, leader, method string, args, reply any) error {
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			seen := c.srv.LeaderObserved()
			if l := c.srv.Leader(); l != leader {
				cancel(errLeaderChanged)
				return
			}
			select {
			case <-seen:
			case <-done:
				return
			}
		}
	}()
	var err error
	if _, write := args.(rpc.Write); write && c.cfg.Router != nil && c.cfg.Router.TakesBatches(leader) {
		// Writes forwarded together go as one call (rpc/batch.go), and
		// the leader's group commit takes them in one entry.
		err = c.pool.CallCoalesced(fctx, leader, method, args, reply)
	} else {
		err = c.pool.Call(fctx, leader, method, args, reply)
	}
	if err != nil && context.Cause(fctx) == errLeaderChanged {
		return fmt.Errorf("%w: %w", errLeaderChanged, err)
	}
	return err
}

// waitLeader returns the leader's address, or "" when this server is the
// leader, polling until one is known for up to LeaderWait, or until ctx
// ends. This server named as leader while it is not (it is stepping down)
// counts as unknown. Raft and RPC share the server port, so the Raft
// address of the leader is also its RPC address.
func (c *Catalog) waitLeader(ctx context.Context) (string, error) {
	const poll = 10 * time.Millisecond
	deadline := time.Now().Add(c.leaderPatience(ctx))
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if c.srv.IsLeader() {
			return "", nil
		}
		if l := c.srv.Leader(); l != "" && c.srv.LeaderID() != c.srv.ID() {
			return l, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("none known after %s: %w", c.leaderPatience(ctx), ErrNoLeader)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for one: %w: %w", ErrNoLeader, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// consistentRead makes a read on the leader linearizable: a barrier is
// committed by a quorum, which proves this server still leads, and
// returns only once the FSM has applied every entry before it, including
// those of earlier terms that a new leader may not have applied yet.
//
// Consul instead verifies leadership per read (VerifyLeader, no disk
// write) and runs one barrier when it takes office; that needs a
// readiness flag set by the leader loop, which Server does not have yet.
// ctx bounds the wait for Raft to take the barrier, as it does an apply's.
func (c *Catalog) consistentRead(ctx context.Context) error {
	timeout, err := c.srv.waitBound(ctx)
	if err != nil {
		return fmt.Errorf("consistent read: %w", err)
	}
	err = c.srv.raft.Barrier(timeout).Error()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("consistent read: %w: %w", ErrNotLeader, err)
	}
	return fmt.Errorf("consistent read: raft barrier: %w", err)
}
