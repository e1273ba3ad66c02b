package agent

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/pools"
	"github.com/cairndns/cairn/agent/tokens"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/buildinfo"
	"github.com/cairndns/cairn/rpc"
)

// startServer starts a server, the same way whatever the size of its
// datacenter (a -dev agent is a server expecting one server, with Raft in
// memory): the rpc server (Raft and RPC on one port), Raft over it, the
// endpoints, LAN and WAN gossip (agent/pools), and the owned loops that join
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
	// from this datacenter's servers, RPC only from members (pools.Peers).
	rc.Admit = a.peers.Admit
	rc.SourceAddr = pools.SourceAddr(a.cfg.BindAddr, a.advertise)
	rc.Forwarder = a.peers.IsServer
	rc.WriteRate, rc.WriteBurst = a.cfg.Limits.RPCRate, a.cfg.Limits.RPCMaxBurst
	rc.MaxConnsPerClient, rc.MaxCallsPerClient = a.cfg.Limits.RPCMaxConnsPerClient, a.cfg.Limits.RPCMaxCallsPerClient
	a.tls.SecureServerPort(&rc)
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
	a.door = door.WithToken(door.NewServer(rs), a.tokens.Func(tokens.Default))
	rpcAddr := rs.RaftLayer().Addr().String()
	if a.rpcPool, err = a.newRPCPool(); err != nil {
		return err
	}

	cc := consensus.DefaultConfig()
	cc.NodeID, cc.NodeName = a.cfg.NodeID, a.cfg.NodeName
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
	cc.GroupCommit = a.cfg.Performance.RaftGroupCommit
	cc.SealKeys = a.peers.GossipKeys
	if pdc := a.cfg.ACL.PrimaryDatacenter; pdc == "" || strings.EqualFold(pdc, a.cfg.Datacenter) {
		cc.InitialManagement = a.cfg.ACL.Tokens.InitialManagement // the primary's own, as Consul's
	}
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
	if a.endpoints, err = consensus.RegisterEndpoints(rs, srv, a.rpcPool, a.endpointsConfig(), a.logger); err != nil {
		return err
	}
	a.loops.Go(func() { a.endpoints.Coordinate.Run(loopCtx) })            // the leader's coordinate batches
	a.loops.Go(func() { a.endpoints.Catalog.RunACLReplication(loopCtx) }) // a secondary datacenter's leader

	lc := consensus.DefaultLeaderConfig()
	lc.Datacenter = a.cfg.Datacenter
	lc.ACLEnabled = a.cfg.ACL.Enabled
	lc.VerifyServer = a.tls.VerifyServer
	ap := a.cfg.Autopilot // what the leader stores when nothing is stored yet
	lc.Autopilot = rpc.AutopilotConfig{
		CleanupDeadServers: ap.CleanupDeadServers, LastContactThreshold: ap.LastContactThreshold,
		MaxTrailingLogs: uint64(max(ap.MaxTrailingLogs, 0)), MinQuorum: uint(max(ap.MinQuorum, 0)),
		ServerStabilizationTime: ap.ServerStabilizationTime,
	}
	lc.ServerServiceName = a.cfg.ServerServiceName
	lc.Caller, lc.Version = a.rpcPool, buildinfo.Version()
	if lc.DNSSECKey, err = a.dnssecLeaderKey(); err != nil {
		return err
	}
	lc.DNSSECAuto = a.cfg.DNSSEC.Auto
	pc, err := a.poolsConfig()
	if err != nil {
		return err
	}
	router := a.router
	pc.RouteWAN = func(ctx context.Context, wan *gossip.Pool) { router.Run(ctx, wan) }
	if a.pools, err = pools.NewServer(pc, rpcAddr, a.logger); err != nil {
		return err
	}
	a.gossip, a.wan = a.pools.LAN(), a.pools.WAN()
	if err := a.register(srv.Collectors(), a.gossip.Collectors(), a.wan.Collectors()); err != nil {
		return err
	}
	leader, err := consensus.NewLeader(lc, srv, a.gossip, a.logger)
	if err != nil {
		return err
	}
	a.leader = leader
	if err := a.register(leader.Collectors()); err != nil {
		return err
	}
	if err := a.endpoints.RegisterOperator(leader, a.gossip, a.wan); err != nil {
		return err
	}
	a.loops.Go(func() { leader.Run(loopCtx) })
	a.loops.Go(func() { a.pools.Run(loopCtx) })
	if expect := a.bootstrapExpect(); expect > 0 {
		bc := consensus.BootstrapConfig{
			Expect: expect, Datacenter: a.cfg.Datacenter, NodeName: a.cfg.NodeName,
			Members: a.gossip, Verify: a.tls.VerifyServer, Caller: a.rpcPool,
		}
		a.loops.Go(func() { srv.BootstrapWhenReady(loopCtx, bc, a.logger) })
	}
	a.logger.Info("server", "rpc", rpcAddr, "gossip", pools.Addr(a.gossip), "wan", pools.Addr(a.wan), "bootstrap_expect", a.bootstrapExpect())
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

// endpointsConfig is the server's endpoints' configuration.
func (a *Agent) endpointsConfig() consensus.EndpointsConfig {
	cat := consensus.DefaultCatalogConfig()
	cat.Datacenter = a.cfg.Datacenter
	cat.Router = a.router
	ac := a.cfg.ACL
	cat.ACL = consensus.DefaultACLConfig()
	cat.ACL.Enabled, cat.ACL.DefaultAllow = ac.Enabled, ac.DefaultPolicy == "allow"
	cat.ACL.TokenMinExpirationTTL, cat.ACL.TokenMaxExpirationTTL = ac.TokenMinExpirationTTL, ac.TokenMaxExpirationTTL
	cat.ACL.PrimaryDatacenter, cat.ACL.TokenReplication, cat.ACL.ReplicationToken = ac.PrimaryDatacenter, ac.EnableTokenReplication, ac.Tokens.Replication
	cat.ACL.DownPolicy, cat.ACL.TokenTTL, cat.ACL.TokenSecretsReadable = ac.DownPolicy, ac.TokenTTL, ac.TokensSecretReadable
	cat.Members = a.peers
	cat.KVMaxValueSize = a.cfg.Limits.KVMaxValueSize
	coord := consensus.DefaultCoordinateConfig()
	coord.UpdatePeriod = a.cfg.Coordinates.UpdatePeriod
	coord.BatchSize = a.cfg.Coordinates.UpdateBatchSize
	coord.MaxBatches = a.cfg.Coordinates.UpdateMaxBatches
	coord.WAN = a.peers.WAN() // the WAN pool starts after the endpoints
	return consensus.EndpointsConfig{Catalog: cat, Coordinate: coord, PreparedQuery: consensus.DefaultPreparedQueryConfig()}
}

// shutdownCluster stops what startServer or startClient started, after
// the loops: the Catalog endpoint's waits, gossip (leaving both pools
// gracefully), the rpc server and its pool. Raft is shut down by the
// caller.
func (a *Agent) shutdownCluster(ctx context.Context) []error {
	var errs []error
	a.role.closeWaits()
	if a.pools != nil {
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
		errs = append(errs, a.pools.Shutdown()...)
	}
	if err := a.role.stopRPC(ctx); err != nil {
		errs = append(errs, err)
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

// dnssecLeaderKey returns the key file's key as the leader stores it (SEC
// 1 DER), nil without a key file.
func (a *Agent) dnssecLeaderKey() ([]byte, error) {
	key, err := a.cfg.DNSSECKey()
	if err != nil || key == nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("dns_config.dnssec.key_file: %w", err)
	}
	return der, nil
}

var (
	_ consensus.MemberFinder   = (*pools.Peers)(nil)
	_ consensus.WANCoordinates = pools.WANView{}
)
