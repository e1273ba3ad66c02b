package consensus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// The catalog entries the leader writes for gossip members.
const (
	// GossipCheckID is the node-level check the leader keeps for every LAN
	// member: passing while the member is alive, critical once it failed.
	// A catalog node carrying it is managed by the leader, which
	// deregisters it when the member leaves or is forgotten by gossip.
	// Its ID and name are Consul's, where tools and dashboards look for
	// them. (Catalogs written before it had this name carry a check
	// "gossip", which each node's anti-entropy removes as one it does not
	// know.)
	GossipCheckID = catalog.SerfCheckID
	// GossipCheckType is the Type of that check.
	GossipCheckType = "gossip"
	// ServerServiceID is the ID of the service the leader keeps on every
	// server's node, on its RPC port, so <name>.service.<domain> finds the
	// servers (LeaderConfig.ServerServiceName): as Consul's leader keeps
	// the consul service, so that a server's agent token needs no
	// service:write on it. With the gossip check, it is what agents'
	// anti-entropy leaves alone. The ID stays whatever the name, so the
	// storage check keeps one owner.
	ServerServiceID = catalog.ServerServiceID

	// StorageCheckID is the check the leader keeps on every server's
	// cairn service: critical while autopilot finds that the server
	// cannot write its Raft log, stable store or snapshots (a full disk:
	// Server.StorageStatus), passing otherwise. It takes the server out
	// of cairn.service answers, not the node's other services.
	StorageCheckID = catalog.RaftStorageCheckID
	// StorageCheckType is the Type of that check.
	StorageCheckType = "raft"

	gossipCheckName = "Serf Health Status"
	outputAlive     = "Agent alive and reachable"
	outputFailed    = "Agent not live or unreachable"

	storageCheckName     = "Raft Storage"
	outputStorageOK      = "Raft log and snapshots are writable"
	outputStorageFailing = "Raft storage cannot be written: this server takes no part in writes (see its log and cairn_raft_storage_healthy)"
)

// Membership is what the leader needs of the LAN gossip pool: a snapshot of
// its members and a level-triggered signal that they changed (Changes may
// coalesce many events into one value). gossip.Pool satisfies it. The
// leader is the signal's only consumer.
type Membership interface {
	Members() []gossip.Member
	Changes() <-chan struct{}
}

// LeaderConfig configures the leader's duties.
type LeaderConfig struct {
	// Datacenter is this server's datacenter: members of another one are
	// ignored and registered nodes are put in this one. Default "dc1".
	Datacenter string
	// ReconcileInterval is how often the leader reconciles every member
	// even when gossip reports no change (a change can be lost with a
	// failed write or a leadership change). Default 60s.
	ReconcileInterval time.Duration
	// RemoveFailedServersAfter is how long a server must have been failed
	// (gossip's Member.Since), or unknown to gossip while in the Raft
	// configuration, before the leader removes it from the configuration
	// (when autopilot's CleanupDeadServers allows).
	// Default 10m: long enough to ride out a reboot or a short partition,
	// short enough that a dead server does not weaken the quorum for
	// days. Consul's autopilot removes dead servers after a similar few
	// minutes. The gossip pool's RetainDead must be at least this long for
	// Since to be known; a server gossip has forgotten is timed from when
	// this leader first found it missing.
	RemoveFailedServersAfter time.Duration
	// MinVoters is the fewest voters the leader keeps when removing failed
	// servers (unless autopilot's MinQuorum sets another): it never
	// removes one that would leave fewer, nor one while fewer than a
	// majority of the current voters are alive. Servers that leave
	// gracefully are removed regardless. Default 3.
	MinVoters int
	// Autopilot is the autopilot configuration the leader stores in Raft
	// when none is stored yet (the agent's autopilot block); once one is,
	// that one applies, and operators change it through the Operator
	// endpoint. Default rpc.DefaultAutopilotConfig().
	Autopilot rpc.AutopilotConfig
	// HealthInterval is how often the leader asks the servers for their
	// Raft stats, to judge their health and promote the stable
	// non-voters (autopilot.go), and how long each may take to answer;
	// the leader asks more often when a fifth of ServerStabilizationTime
	// is shorter. Default 2s, Consul's server_health_interval.
	HealthInterval time.Duration
	// Caller carries those requests to the other servers (the agent sets
	// its rpc pool). Nil: the leader cannot ask them, so it judges every
	// other server unhealthy and promotes none (unit tests of membership
	// alone). Default nil.
	Caller Caller
	// Version is this server's cairn version, reported in its health.
	// Default "".
	Version string
	// ACLEnabled makes the leader create what ACLs need when it takes
	// office (the management policy, the anonymous token) and the
	// server's Config.InitialManagement token. Default off.
	ACLEnabled bool
	// VerifyServer, when set, is asked before a server gossip reports is
	// made a voter: an error keeps it out of the Raft configuration (and
	// is logged, once a minute). The agent sets it with TLS on, to check
	// over a TLS handshake that the member holds a server certificate of
	// this datacenter, so that joining the gossip pool with the server
	// role is not enough to become a voter. Default nil: no check.
	VerifyServer func(ctx context.Context, m gossip.Member) error
	// DNSSECKey is the DNSSEC key the leader stores in Raft, replacing
	// any other (an ECDSA P-256 key, SEC 1 DER: the agent reads it from
	// dns_config.dnssec.key_file). Default nil.
	DNSSECKey []byte
	// DNSSECAuto makes the leader create a DNSSEC key when none is
	// stored (dns_config.dnssec.auto). Default off.
	DNSSECAuto bool
	// ServerServiceName is the name of the service the leader keeps on
	// every server's node (server_service_name): "consul" lets tools that
	// look the servers up as Consul's find them. A leader with another
	// name renames it on every server. Default "cairn".
	ServerServiceName string
}

// DefaultLeaderConfig returns a LeaderConfig with every default set.
func DefaultLeaderConfig() LeaderConfig {
	return LeaderConfig{
		Datacenter:               "dc1",
		ReconcileInterval:        60 * time.Second,
		RemoveFailedServersAfter: 10 * time.Minute,
		MinVoters:                3,
		Autopilot:                rpc.DefaultAutopilotConfig(),
		HealthInterval:           2 * time.Second,
		ServerServiceName:        catalog.ServerServiceID,
	}
}

// Validate reports every invalid field.
func (c LeaderConfig) Validate() error {
	var errs []error
	if r := catalog.ValidLabel(c.Datacenter); r != "" {
		errs = append(errs, fmt.Errorf("leader Datacenter: %s", r))
	}
	if c.ReconcileInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("leader ReconcileInterval: must be at least 10ms, got %s", c.ReconcileInterval))
	}
	if c.RemoveFailedServersAfter <= 0 {
		errs = append(errs, fmt.Errorf("leader RemoveFailedServersAfter: must be positive, got %s", c.RemoveFailedServersAfter))
	}
	if r := catalog.ValidLabel(c.ServerServiceName); r != "" {
		errs = append(errs, fmt.Errorf("leader ServerServiceName: %s", r))
	}
	if c.MinVoters < 1 {
		errs = append(errs, fmt.Errorf("leader MinVoters: must be at least 1, got %d", c.MinVoters))
	}
	if c.DNSSECKey != nil {
		if err := checkDNSSECKey(c.DNSSECKey); err != nil {
			errs = append(errs, fmt.Errorf("leader DNSSECKey: %w", err))
		}
	}
	if err := c.Autopilot.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("leader Autopilot: %w", err))
	}
	if c.HealthInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("leader HealthInterval: must be at least 10ms, got %s", c.HealthInterval))
	}
	return errors.Join(errs...)
}

// Leader carries out a server's leader duties while it leads: it turns LAN
// gossip membership into node registrations with a serfHealth check, keeps
// the cairn service on every server's node, and grows and shrinks the Raft
// configuration as servers join, leave and fail: a server joining a
// running cluster comes in as a non-voter, which autopilot (autopilot.go)
// promotes once it has been healthy for ServerStabilizationTime.
type Leader struct {
	s      *Server
	m      Membership
	cfg    LeaderConfig
	logger *slog.Logger

	// mu serializes reconciles (Run's and Reconcile's callers') and guards
	// the fields below.
	mu sync.Mutex
	// barrierFor is the leadership signal of the term in which a barrier
	// last succeeded: reads of the store are current once it equals the
	// present signal.
	barrierFor <-chan struct{}
	// missingSince is when this leader first found a Raft peer unknown to
	// gossip, by peer ID.
	missingSince map[string]time.Time

	// warnMu guards warned, when each distinct warning was last logged.
	warnMu sync.Mutex
	warned map[string]time.Time

	// ap is autopilot's view of the servers' health (autopilot.go).
	ap autopilotState
	// storageChanged signals (buffered, one) that autopilot found
	// another set of servers unable to write their Raft storage: the
	// reconcile updates their storage checks.
	storageChanged chan struct{}
}

// Retry and log pacing.
const (
	retryMin  = 500 * time.Millisecond // first retry after a failed reconcile
	warnEvery = time.Minute            // one log line per distinct warning per minute
)

// NewLeader returns the leader duties of s over the LAN pool m. logger may
// be nil. Nothing runs until Run.
func NewLeader(cfg LeaderConfig, s *Server, m Membership, logger *slog.Logger) (*Leader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Leader{
		s: s, m: m, cfg: cfg,
		logger:         logger.With("component", "leader"),
		missingSince:   make(map[string]time.Time),
		warned:         make(map[string]time.Time),
		storageChanged: make(chan struct{}, 1),
	}, nil
}

// Run performs the leader duties whenever this server leads, until ctx
// ends. It is the only reader of the pool's Changes signal. While leading
// it reconciles once on taking leadership, on every Changes signal, after
// a snapshot restore (Server.Restored), every ReconcileInterval, and
// after a failed reconcile with a backoff (from 500ms, doubling, up to
// ReconcileInterval); when leadership is lost it stops writing and waits
// to lead again. Errors are logged (each distinct one at most once a
// minute), never returned. Run it on one goroutine at
// a time, owned by the caller, and stop it (cancel ctx, wait) before
// shutting down the Server.
func (l *Leader) Run(ctx context.Context) {
	for {
		changed := l.s.LeadershipChanged()
		if l.s.IsLeader() {
			l.logger.Info("leader duties started")
			l.lead(ctx, changed)
			l.logger.Info("leader duties stopped")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// lead reconciles until ctx ends or leadership changes (changed closes),
// with autopilot and the session TTL timers running beside it for as
// long.
func (l *Leader) lead(ctx context.Context, changed <-chan struct{}) {
	// The next term's reconcile decides again whether to batch writes
	// (allowBatches); until then each is its own entry.
	defer l.s.batchWrites.Store(false)
	apCtx, stopAutopilot := context.WithCancel(ctx)
	var autopilot sync.WaitGroup
	autopilot.Go(func() { l.runAutopilot(apCtx, changed) })
	autopilot.Go(func() { l.runSessionTTLs(apCtx) }) // session_ttl.go
	defer func() {
		stopAutopilot()
		autopilot.Wait()
	}()
	tick := time.NewTicker(l.cfg.ReconcileInterval)
	defer tick.Stop()
	retry := time.NewTimer(0) // the reconcile on taking leadership
	defer retry.Stop()
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			return
		case <-l.m.Changes():
		case <-l.s.Restored():
			// A restored snapshot may lack this datacenter's own members
			// (it may come from another cluster): put them back now.
		case <-l.storageChanged:
		case <-tick.C:
		case <-retry.C:
		}
		err := l.Reconcile(ctx)
		if err == nil {
			backoff = 0
			retry.Stop()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, retryMin), l.cfg.ReconcileInterval)
		l.warn(err.Error(), "reconcile failed; retrying", "err", err, "retry_in", backoff)
		retry.Reset(backoff)
	}
}

// Reconcile brings the catalog and the Raft configuration in line with the
// current gossip membership once, now. It returns an error wrapping
// ErrNotLeader on a server that does not lead; other errors are joined from
// every member that could not be reconciled (the others were). Run calls
// it; tests and operators may too, concurrently with Run.
func (l *Leader) Reconcile(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.barrier(ctx); err != nil {
		return err
	}
	if l.cfg.ACLEnabled {
		if err := l.s.initACL(ctx); err != nil {
			return fmt.Errorf("initialise ACLs: %w", err)
		}
		if err := l.s.reapExpiredTokens(ctx, time.Now()); err != nil {
			return err
		}
	}
	if err := l.s.initAutopilot(ctx, l.cfg.Autopilot); err != nil {
		return err
	}
	if err := l.s.initDNSSEC(ctx, l.cfg.DNSSECKey, l.cfg.DNSSECAuto); err != nil { // dnssec.go
		return err
	}
	l.allowBatches()
	members := l.m.Members()
	local := members[:0:0]
	for _, m := range members {
		if m.Datacenter == l.cfg.Datacenter {
			local = append(local, m)
		}
	}
	var errs []error
	for _, m := range local {
		if err := l.reconcileMember(ctx, m); err != nil {
			if errors.Is(err, ErrNotLeader) || ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	if err := l.reapNodes(ctx, local); err != nil {
		if errors.Is(err, ErrNotLeader) || ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	if err := l.reconcileServers(ctx, local); err != nil {
		errs = append(errs, err)
	}
	l.pruneWarnings()
	return errors.Join(errs...)
}

// barrier makes sure, once per leadership term, that every entry committed
// before it has been applied to the store: a new leader's store may trail
// its log, and the reconcile compares against the store before writing.
func (l *Leader) barrier(ctx context.Context) error {
	term := l.s.LeadershipChanged()
	if !l.s.IsLeader() {
		return fmt.Errorf("leader duties: %w", ErrNotLeader)
	}
	if l.barrierFor == term {
		return nil
	}
	timeout, err := l.s.waitBound(ctx)
	if err != nil {
		return err
	}
	if err := raftError(l.s.raft.Barrier(timeout).Error()); err != nil {
		return fmt.Errorf("raft barrier: %w", err)
	}
	l.barrierFor = term
	return nil
}

// reconcileMember registers, marks critical or deregisters one member's
// node, writing only when the catalog differs.
func (l *Leader) reconcileMember(ctx context.Context, m gossip.Member) error {
	if err := catalog.ValidateNodeName("Node", m.Node); err != nil {
		l.warn("invalid:"+m.Node, "ignoring gossip member with an invalid node name", "node", m.Node, "err", err)
		return nil
	}
	store := l.s.Store()
	_, node, err := store.Node(nil, m.Node)
	if err != nil {
		return err
	}
	switch m.Status {
	case gossip.StatusAlive:
		return l.registerAlive(ctx, m, node)
	case gossip.StatusFailed:
		return l.registerFailed(ctx, m, node)
	case gossip.StatusLeft:
		if node == nil || m.Node == l.s.nodeName() {
			// This server leaving: a follower that leads next deregisters it.
			return nil
		}
		l.logger.Info("deregistering node that left", "node", m.Node)
		return l.s.Deregister(ctx, &catalog.DeregisterRequest{Datacenter: l.cfg.Datacenter, Node: m.Node})
	}
	return nil
}

func (l *Leader) registerAlive(ctx context.Context, m gossip.Member, node *catalog.Node) error {
	if node != nil && node.ID != "" && (m.ID != "" && !strings.EqualFold(node.ID, m.ID) || m.ID == "" && node.Address != m.Addr.String()) {
		// A node name is bound to its node ID: gossip admits a member of
		// another ID under it only once it forgot the old one (failed
		// past reconnect_timeout; gossip.Pool.heldName). That node is
		// reaped first, so its services never move to the newcomer's
		// address. While gossip knows the old ID (a live node, and a
		// name differing in case only), the node is left alone. A member
		// gossiping no ID (an older agent) is taken for the node only at
		// its address.
		if l.knowsID(node.ID) {
			l.warn("conflict:"+m.Node, "node name conflict: a member of another node ID claims a node gossip still knows; the node is kept",
				"node", node.Node, "id", node.ID, "member", m.Name, "member_id", m.ID, "addr", m.Addr)
			return nil
		}
		l.logger.Warn("deregistering a node whose name a member of another node ID now holds",
			"node", m.Node, "old_id", node.ID, "id", m.ID, "old_addr", node.Address, "addr", m.Addr)
		if err := l.s.Deregister(ctx, &catalog.DeregisterRequest{Datacenter: l.cfg.Datacenter, Node: node.Node}); err != nil {
			return err
		}
		node = nil
	}
	addr := m.Addr.String()
	check := &catalog.Check{CheckID: GossipCheckID, Name: gossipCheckName, Type: GossipCheckType, Status: catalog.HealthPassing, Output: outputAlive}
	nodeOK := node != nil && node.Node == m.Node && node.Address == addr && node.Datacenter == l.cfg.Datacenter &&
		(m.ID == "" || node.ID == m.ID)
	checkOK, err := l.hasCheck(m.Node, check)
	if err != nil {
		return err
	}
	svc, svcOK, err := l.serverServiceState(m)
	if err != nil {
		return err
	}
	var checks []*catalog.Check
	if svc != nil {
		storage, storageOK, err := l.storageCheckState(m.Node, svcOK)
		if err != nil {
			return err
		}
		if !storageOK {
			checks = append(checks, storage)
		}
	}
	if svc == nil && !svcOK {
		// No longer a server (restarted as a client): its cairn service
		// would send clients to a port that serves no RPC.
		l.logger.Info("removing the cairn service of a node that is no longer a server", "node", m.Node)
		if err := l.s.Deregister(ctx, &catalog.DeregisterRequest{Datacenter: l.cfg.Datacenter, Node: m.Node, ServiceID: ServerServiceID}); err != nil {
			return err
		}
		svcOK = true
	}
	if nodeOK && checkOK && svcOK && len(checks) == 0 {
		return nil
	}
	checks = append([]*catalog.Check{check}, checks...)
	// The node ID is the one the member gossips, as Consul's leader
	// registers it (an older member gossips none: its node keeps its own).
	req := &catalog.RegisterRequest{
		Datacenter: l.cfg.Datacenter, ID: m.ID, Node: m.Node, Address: addr,
		Checks: checks,
	}
	if !svcOK {
		req.Service = svc
	}
	switch {
	case nodeOK:
		req.SkipNodeUpdate = true
	case node == nil:
		// Created if still missing when the write applies, but left as
		// it is if the agent registered its node meanwhile: overwriting
		// that row would drop its metadata and tagged addresses until
		// the agent's next full sync.
		req.SkipNodeUpdate = true
	case node != nil:
		// Keep what the agent registered about its node; only the
		// address, datacenter and ID are gossip's.
		req.NodeMeta, req.TaggedAddresses = node.Meta, node.TaggedAddresses
		if m.ID == "" {
			req.ID = node.ID
		}
	}
	return l.s.Register(ctx, req)
}

// serverServiceState returns the cairn service member m's node should
// carry (nil for a client) and whether it carries exactly that (for a
// client: whether it carries none).
func (l *Leader) serverServiceState(m gossip.Member) (*catalog.Service, bool, error) {
	_, svcs, err := l.s.Store().NodeServices(nil, m.Node)
	if err != nil {
		return nil, false, err
	}
	i := slices.IndexFunc(svcs, func(s *catalog.Service) bool { return s.ID == ServerServiceID })
	if !m.IsServer() {
		return nil, i < 0, nil
	}
	want := serverService(m, l.cfg.ServerServiceName)
	return want, i >= 0 && svcs[i].SameAs(want), nil
}

// serverService is the service named name of server member m: on its RPC
// port, at its RPC host when that differs from the node's address.
func serverService(m gossip.Member, name string) *catalog.Service {
	svc := &catalog.Service{ID: ServerServiceID, Service: name}
	if host, port, err := net.SplitHostPort(m.RPCAddr); err == nil {
		svc.Port, _ = strconv.Atoi(port)
		if host != m.Addr.String() {
			svc.Address = host
		}
	}
	_ = catalog.NormalizeService(svc) // a valid name: compared as stored
	return svc
}

// knowsID reports whether gossip has a member of node ID id, of any
// status.
func (l *Leader) knowsID(id string) bool {
	return slices.ContainsFunc(l.m.Members(), func(m gossip.Member) bool { return strings.EqualFold(m.ID, id) })
}

func (l *Leader) registerFailed(ctx context.Context, m gossip.Member, node *catalog.Node) error {
	check := &catalog.Check{CheckID: GossipCheckID, Name: gossipCheckName, Type: GossipCheckType, Status: catalog.HealthCritical, Output: outputFailed}
	if node != nil {
		ok, err := l.hasCheck(m.Node, check)
		if err != nil || ok {
			return err
		}
	}
	l.logger.Info("marking failed node critical", "node", m.Node)
	// A node already registered keeps its row (its address may be more
	// current than a failed member's); an unknown one is registered so
	// that its failure is on record.
	return l.s.Register(ctx, &catalog.RegisterRequest{
		Datacenter: l.cfg.Datacenter, Node: m.Node, Address: m.Addr.String(),
		Checks: []*catalog.Check{check}, SkipNodeUpdate: true,
	})
}

// storageCheckState returns the storage check server node's cairn
// service should carry and whether it carries it already. Before
// autopilot's first report of the term a check already there is kept as
// it is, and a missing one is made passing. svcOK says whether the cairn
// service is in the catalog as it should be (else it is registered with
// the check, which it then does not carry yet).
func (l *Leader) storageCheckState(node string, svcOK bool) (*catalog.Check, bool, error) {
	want := &catalog.Check{CheckID: StorageCheckID, Name: storageCheckName, Type: StorageCheckType,
		ServiceID: ServerServiceID, ServiceName: l.cfg.ServerServiceName, Status: catalog.HealthPassing, Output: outputStorageOK}
	l.ap.mu.Lock()
	report := l.ap.report
	l.ap.mu.Unlock()
	if report != nil && slices.Contains(storageFailing(report), node) {
		want.Status, want.Output = catalog.HealthCritical, outputStorageFailing
	}
	if !svcOK {
		return want, false, nil
	}
	_, checks, err := l.s.Store().NodeChecks(nil, node)
	if err != nil {
		return nil, false, err
	}
	i := slices.IndexFunc(checks, func(c *catalog.Check) bool { return c.CheckID == StorageCheckID && c.ServiceID == ServerServiceID })
	if i >= 0 && report == nil {
		return want, true, nil
	}
	return want, i >= 0 && sameCheck(checks[i], want), nil
}

// sameCheck reports whether the catalog's check c is what the leader
// writes as want.
func sameCheck(c, want *catalog.Check) bool {
	return c.Name == want.Name && c.Status == want.Status && c.Output == want.Output && c.Type == want.Type && c.Notes == ""
}

// hasCheck reports whether node carries a node-level check equal to want.
func (l *Leader) hasCheck(node string, want *catalog.Check) (bool, error) {
	_, checks, err := l.s.Store().NodeChecks(nil, node)
	if err != nil {
		return false, err
	}
	for _, c := range checks {
		if c.CheckID == want.CheckID && c.ServiceID == "" {
			return c.Name == want.Name && c.Status == want.Status && c.Output == want.Output && c.Type == want.Type && c.Notes == "", nil
		}
	}
	return false, nil
}

// reapNodes deregisters catalog nodes of this datacenter that carry the
// gossip check but that gossip no longer knows at all: members it failed
// or saw leave and then forgot (after its RetainDead). A pool that knows
// only this server has not joined anyone yet (a restarted server); it
// reaps nothing rather than empty the catalog.
func (l *Leader) reapNodes(ctx context.Context, members []gossip.Member) error {
	if len(members) <= 1 {
		return nil
	}
	known := make(map[string]bool, len(members))
	for _, m := range members {
		known[strings.ToLower(m.Node)] = true
	}
	_, nodes, err := l.s.Store().Nodes(nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nodes {
		if known[strings.ToLower(n.Node)] || n.Datacenter != l.cfg.Datacenter || strings.EqualFold(n.Node, l.s.nodeName()) {
			continue
		}
		_, checks, err := l.s.Store().NodeChecks(nil, n.Node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !slices.ContainsFunc(checks, func(c *catalog.Check) bool { return c.CheckID == GossipCheckID && c.ServiceID == "" }) {
			continue // registered without an agent: not gossip's to remove
		}
		l.logger.Info("deregistering node gossip no longer knows", "node", n.Node)
		if err := l.s.Deregister(ctx, &catalog.DeregisterRequest{Datacenter: l.cfg.Datacenter, Node: n.Node}); err != nil {
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// warn logs msg with args unless the warning key was logged within
// warnEvery. Safe for concurrent use.
func (l *Leader) warn(key, msg string, args ...any) {
	l.warnMu.Lock()
	at, ok := l.warned[key]
	now := time.Now()
	if ok && now.Sub(at) < warnEvery {
		l.warnMu.Unlock()
		return
	}
	l.warned[key] = now
	l.warnMu.Unlock()
	l.logger.Warn(msg, args...)
}

// pruneWarnings forgets warnings older than warnEvery, so the set stays
// as small as the problems of the last minute.
func (l *Leader) pruneWarnings() {
	l.warnMu.Lock()
	defer l.warnMu.Unlock()
	now := time.Now()
	for k, at := range l.warned {
		if now.Sub(at) >= warnEvery {
			delete(l.warned, k)
		}
	}
}
