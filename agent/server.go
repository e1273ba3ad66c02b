package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/cairndns/cairn/rpc"
)

// bootstrapPoll is how often a server waiting for -bootstrap-expect peers
// looks at the gossip membership. The leader loop is the only reader of the
// pool's change signal, so the watcher polls the snapshot instead.
const bootstrapPoll = 200 * time.Millisecond

// startServer starts a server, the same way whatever the size of its
// datacenter (a -dev agent is a server expecting one server, with Raft in
// memory): the rpc server (Raft and RPC on one port), Raft over it, the
// endpoints, LAN and WAN gossip (wan.go), and the owned loops that join
// the pools, bootstrap Raft once bootstrapExpect servers are seen, keep the
// router current and carry out the leader's duties. The agent's door is
// the rpc server, called in process. It returns without waiting for a
// leader, which exists only after bootstrap; loops run until loopCtx ends.
func (a *Agent) startServer(loopCtx context.Context) error {
	port := strconv.Itoa(a.cfg.Ports.Server)
	rc := rpc.DefaultServerConfig()
	rc.Addr = net.JoinHostPort(a.cfg.BindAddr, port)
	rc.ClockOffset = a.clockOffset
	if a.cfg.Ports.Server != 0 {
		rc.AdvertiseAddr = net.JoinHostPort(a.advertise, port)
	} else if a.advertise != a.cfg.BindAddr {
		return &config.FieldError{Field: "ports.server", Reason: "0 (a free port) needs advertise_addr equal to bind_addr"}
	}
	// Until TLS says who a peer is, a peer is who gossip says: Raft only
	// from this datacenter's servers, RPC only from members (peers.go).
	rc.Admit = a.peers.admit
	rc.SourceAddr = sourceAddr(a.cfg.BindAddr, a.advertise)
	rc.Forwarder = a.peers.isServer
	rc.WriteRate, rc.WriteBurst = a.cfg.Limits.RPCRate, a.cfg.Limits.RPCMaxBurst
	rc.MaxConnsPerClient, rc.MaxCallsPerClient = a.cfg.Limits.RPCMaxConnsPerClient, a.cfg.Limits.RPCMaxCallsPerClient
	a.secureServerPort(&rc) // tls.go
	rs, err := rpc.NewServer(rc, a.logger)
	if err != nil {
		return err
	}
	if err := a.metrics.Register(rs.Collectors()...); err != nil {
		return err
	}
	if err := rs.Start(); err != nil {
		return err
	}
	a.rpcServer = rs
	a.door = tokenDoor{door: serverDoor{rs}, fallback: a.cfg.ACL.Tokens.Default}
	rpcAddr := rs.RaftLayer().Addr().String()
	if a.rpcPool, err = a.newRPCPool(); err != nil {
		return err
	}

	cc := consensus.DefaultConfig()
	cc.NodeID = a.cfg.NodeName
	cc.Layer = rs.RaftLayer()
	cc.DataDir = a.cfg.DataDir
	cc.LogSegmentSize = a.cfg.RaftLogStore.WALSegmentSizeMB << 20
	cc.SnapshotThreshold = uint64(a.cfg.RaftSnapshotThreshold) // validated positive
	cc.SnapshotInterval = a.cfg.RaftSnapshotInterval
	cc.TrailingLogs = uint64(a.cfg.RaftTrailingLogs) // validated not negative
	if a.cfg.Dev {
		cc.SingleServerTiming()
	}
	cc.ScaleRaftTimers(a.cfg.Performance.RaftMultiplier)
	cc.CommitTimeout = a.cfg.Performance.CommitTimeout
	cc.SealKeys = a.gossipKeys // dnssec.go
	cc.InitialManagement = a.cfg.ACL.Tokens.InitialManagement
	store, err := catalog.NewStore()
	if err != nil {
		return err
	}
	srv, err := consensus.New(cc, store, a.logger)
	if err != nil {
		return err
	}
	a.server = srv
	if a.router, err = consensus.NewRouter(a.cfg.Datacenter, a.logger); err != nil {
		return err
	}
	if err := a.registerEndpoints(rs, srv); err != nil {
		return err
	}
	a.loops.Go(func() { a.coordinateEP.Run(loopCtx) }) // the leader's coordinate batches

	lc := consensus.DefaultLeaderConfig()
	lc.Datacenter = a.cfg.Datacenter
	lc.ACLEnabled = a.cfg.ACL.Enabled
	lc.VerifyServer = a.verifyServer
	lc.Autopilot = autopilotConfig(a.cfg.Autopilot) // autopilot.go
	lc.Caller, lc.Version = a.rpcPool, agentVersion()
	if lc.DNSSECKey, err = a.dnssecLeaderKey(); err != nil { // dnssec.go
		return err
	}
	lc.DNSSECAuto = a.cfg.DNSSEC.Auto
	// The WAN pool first: its port goes into this server's LAN metadata,
	// where the other servers of this datacenter find it (floodWAN).
	if err := a.startWAN(loopCtx, rpcAddr); err != nil {
		return err
	}
	if err := a.startGossip(gossip.RoleServer, rpcAddr); err != nil {
		return err
	}
	a.loops.Go(func() { a.floodWAN(loopCtx) })
	leader, err := consensus.NewLeader(lc, srv, a.gossip, a.logger)
	if err != nil {
		return err
	}
	a.leader = leader
	// The Operator endpoint reports the leader duties' view of the
	// servers, so it is registered once they exist; the Keyring endpoint
	// changes the pools, so once they do.
	operator, err := consensus.NewOperator(a.catalogEP, leader)
	if err == nil {
		err = rs.Register(rpc.OperatorEndpoint, operator)
	}
	if err != nil {
		return err
	}
	keyring, err := consensus.NewKeyring(a.catalogEP, a.gossip, a.wan)
	if err == nil {
		err = rs.Register(rpc.KeyringEndpoint, keyring)
	}
	if err != nil {
		return err
	}
	a.loops.Go(func() { leader.Run(loopCtx) })
	a.startJoin(loopCtx, a.gossip, gossip.LAN, a.cfg.Join, lanSnapshotFile)
	if expect := a.bootstrapExpect(); expect > 0 {
		a.loops.Go(func() { a.bootstrapWatch(loopCtx, expect) })
	}
	a.logger.Info("server", "rpc", rpcAddr, "gossip", a.gossipAddr(), "wan", poolAddr(a.wan), "bootstrap_expect", a.bootstrapExpect())
	return nil
}

// bootstrapExpect is how many servers this one waits for before
// bootstrapping Raft: as configured, or 1 for a server with no join (the
// first server of its datacenter); 0 for a server that joins an existing
// cluster and waits for its leader to add it, as in Consul.
func (a *Agent) bootstrapExpect() int {
	if a.cfg.BootstrapExpect == 0 && len(a.cfg.Join) == 0 {
		return 1
	}
	return a.cfg.BootstrapExpect
}

// registerEndpoints builds the server's RPC endpoints on srv and registers
// them on rs, where the door and other agents call them.
func (a *Agent) registerEndpoints(rs *rpc.Server, srv *consensus.Server) error {
	catCfg := consensus.DefaultCatalogConfig()
	catCfg.Datacenter = a.cfg.Datacenter
	catCfg.Router = a.router
	catCfg.ACL = consensus.ACLConfig{
		Enabled: a.cfg.ACL.Enabled, DefaultAllow: a.cfg.ACL.DefaultPolicy == "allow",
		TokenMinExpirationTTL: a.cfg.ACL.TokenMinExpirationTTL, TokenMaxExpirationTTL: a.cfg.ACL.TokenMaxExpirationTTL,
	}
	catCfg.Members = lanMembers{&a.peers}
	catCfg.KVMaxValueSize = a.cfg.Limits.KVMaxValueSize
	var err error
	if a.catalogEP, err = consensus.NewCatalog(srv, a.rpcPool, catCfg); err != nil {
		return err
	}
	if a.coordinateEP, err = a.newCoordinateEndpoint(); err != nil { // coordinates.go
		return err
	}
	status, err := consensus.NewStatus(srv, a.cfg.Datacenter)
	if err != nil {
		return err
	}
	// NearestN fails over to the datacenters the WAN pool's router knows,
	// nearest first by the servers' WAN coordinates.
	pcfg := consensus.DefaultPreparedQueryConfig()
	pcfg.Datacenters = func() []string { return a.coordinateEP.NearestDatacenters(a.router.Datacenters()) }
	pq, err := consensus.NewPreparedQuery(a.catalogEP, pcfg)
	if err != nil {
		return err
	}
	for name, ep := range map[string]any{
		rpc.SnapshotEndpoint:      consensus.NewSnapshot(a.catalogEP),
		rpc.StatusEndpoint:        status,
		rpc.PreparedQueryEndpoint: pq,
		rpc.ACLEndpoint:           consensus.NewACL(a.catalogEP),
		rpc.KVSEndpoint:           consensus.NewKVS(a.catalogEP),
		rpc.TxnEndpoint:           consensus.NewTxn(a.catalogEP),
		rpc.SessionEndpoint:       consensus.NewSession(a.catalogEP),
		rpc.CoordinateEndpoint:    a.coordinateEP,
	} {
		if err := rs.Register(name, ep); err != nil {
			return err
		}
	}
	return a.catalogEP.Publish(rs)
}

// startJoin starts the loops that join a pool (through configured and the
// members remembered in the snapshot file) and keep its member snapshot.
func (a *Agent) startJoin(loopCtx context.Context, p *gossip.Pool, kind gossip.Kind, configured []string, file string) {
	path := a.memberSnapshotPath(file)
	if addrs := a.joinAddrs(configured, path); len(addrs) > 0 {
		a.loops.Go(func() { a.joinLoop(loopCtx, p, kind, addrs) })
	}
	if path != "" {
		a.loops.Go(func() { a.memberSnapshotLoop(loopCtx, p, path) })
	}
}

// joinLoop joins pool p through addrs until another member is found,
// RetryMax attempts were made, or ctx ends. Agents started together race
// (the first attempt often reaches a server not yet up), so the first
// retries come quickly: after min(1s, RetryInterval), doubling up to
// RetryInterval. Joining only itself (its own address among addrs, the
// others down) does not count: the agent would sit alone, so it keeps
// trying.
func (a *Agent) joinLoop(ctx context.Context, p *gossip.Pool, kind gossip.Kind, addrs []string) {
	pool := kind.String()
	wait := min(firstJoinRetry, a.cfg.RetryInterval)
	for attempt := 1; ; attempt++ {
		n, err := p.Join(ctx, addrs)
		if err == nil && len(otherMembers(p)) == 0 {
			err = errors.New("only this agent answered")
		}
		if err == nil {
			a.logger.Info("joined the cluster", "pool", pool, "answered", n, "attempt", attempt)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if a.cfg.RetryMax > 0 && attempt >= a.cfg.RetryMax {
			a.logger.Error("giving up joining the cluster", "pool", pool, "attempts", attempt, "err", err)
			return
		}
		a.logger.Warn("join failed, will retry", "pool", pool, "attempt", attempt, "retry_in", wait, "err", err)
		if !clock.Sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, a.cfg.RetryInterval)
	}
}

// firstJoinRetry is the wait before the first retry of a join.
const firstJoinRetry = time.Second

// bootstrapWatch waits until expect alive servers of this datacenter are
// in gossip, then bootstraps Raft with them. A server that already has
// Raft state, that already knows a leader (it joined a running cluster),
// or one of whose peers has a Raft configuration (a server whose raft
// directory was wiped, among servers of a running cluster) does not: the
// leader adds it as a voter instead. A peer that cannot be asked
// postpones the bootstrap, as in Consul: bootstrapping a second cluster
// next to a running one could overwrite that one's log.
func (a *Agent) bootstrapWatch(ctx context.Context, expect int) {
	t := time.NewTicker(bootstrapPoll)
	defer t.Stop()
	for {
		if a.server.Leader() != "" {
			return
		}
		var servers []consensus.Peer
		for _, m := range a.gossip.Members() {
			if m.IsServer() && m.Status == gossip.StatusAlive && m.Datacenter == a.cfg.Datacenter {
				if m.Node != a.cfg.NodeName {
					if err := a.verifyServer(ctx, m); err != nil {
						a.logger.Debug("not bootstrapping with a server that failed verification", "peer", m.Node, "err", err)
						continue
					}
				}
				servers = append(servers, consensus.Peer{ID: m.Node, Address: m.RPCAddr, Voter: true})
			}
		}
		if len(servers) >= expect {
			if peers, err := a.server.Peers(); err == nil && len(peers) > 0 {
				a.logger.Info("raft already has a configuration; not bootstrapping", "peers", len(peers))
				return
			}
			holder, err := a.clusterHolder(ctx, servers)
			switch {
			case err != nil:
				a.logger.Warn("not bootstrapping yet: could not ask every server whether a cluster exists", "err", err)
			case holder != "":
				a.logger.Info("a server already has a raft configuration; not bootstrapping, waiting for the leader to add this server", "peer", holder)
				return
			default:
				if err := a.server.BootstrapCluster(servers); err != nil {
					a.logger.Error("bootstrap failed", "servers", len(servers), "err", err)
				} else {
					a.logger.Info("bootstrapped the cluster", "servers", len(servers))
				}
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// clusterHolder asks every server of servers but this one for its Raft
// configuration and returns the name of the first that has one (a cluster
// exists), or "" when none has; an error when one could not be asked.
func (a *Agent) clusterHolder(ctx context.Context, servers []consensus.Peer) (string, error) {
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: a.cfg.Datacenter, AllowStale: true}}
	for _, p := range servers {
		if p.ID == a.cfg.NodeName {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, bootstrapAskTimeout)
		var reply rpc.RaftConfigurationResponse
		err := a.rpcPool.Call(cctx, p.Address, rpc.MethodStatusRaftConfiguration, args, &reply)
		cancel()
		if err != nil {
			return "", fmt.Errorf("ask server %s for its raft configuration: %w", p.ID, err)
		}
		if len(reply.Servers) > 0 {
			return p.ID, nil
		}
	}
	return "", nil
}

// bootstrapAskTimeout bounds each question clusterHolder asks.
const bootstrapAskTimeout = 5 * time.Second

// firstSync pushes this node to the catalog until it succeeds or ctx ends
// (no write can succeed until a leader is elected and, on a client, a
// server is found), then closes synced.
func (a *Agent) firstSync(ctx context.Context) {
	wait := 100 * time.Millisecond
	warned := false
	for attempt := 1; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, startTimeout)
		err := a.local.SyncFull(sctx)
		cancel()
		if err == nil {
			close(a.synced)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if !warned && (errors.Is(err, rpc.ErrPermissionDenied) || errors.Is(err, rpc.ErrACLNotFound)) {
			// Retrying will not help until an operator acts: say so once.
			warned = true
			a.logger.Warn("the servers refuse this node's registration; set acl.tokens.agent to a token with node:write on this node (and service:write on its services)", "err", err)
		}
		a.logger.Debug("first sync failed, will retry", "attempt", attempt, "err", err)
		if !clock.Sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// shutdownCluster stops what startServer or startClient started, after
// the loops: the Catalog endpoint's waits, gossip (leaving both pools
// gracefully), the rpc server and its pool. Raft is shut down by the
// caller.
func (a *Agent) shutdownCluster(ctx context.Context) []error {
	var errs []error
	if a.catalogEP != nil {
		a.catalogEP.Close()
	}
	if a.gossip != nil {
		if !a.skipLeave {
			// A leave that cannot finish (no quorum to take this server
			// out of Raft) must not spend the time the rest of the
			// shutdown needs.
			leaveCtx, cancel := reserve(ctx, shutdownReserve)
			if err := a.leave(leaveCtx); err != nil {
				a.logger.Warn("leaving the cluster", "err", err)
			}
			cancel()
		}
		errs = append(errs, a.gossip.Shutdown())
	}
	if a.wan != nil {
		errs = append(errs, a.wan.Shutdown())
	}
	if a.rpcServer != nil {
		if err := a.rpcServer.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("rpc server shutdown: %w", err))
		}
	}
	if a.rpcPool != nil {
		errs = append(errs, a.rpcPool.Close())
	}
	return errs
}

// shutdownReserve is the part of a shutdown's time kept for the steps
// after the graceful leave.
const shutdownReserve = 2 * time.Second

// reserve returns a ctx that ends keep before ctx's deadline (at once if
// less than keep is left), or ctx itself, cancellable, without one.
func reserve(ctx context.Context, keep time.Duration) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-keep))
}
