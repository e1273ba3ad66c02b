package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairndns/cairn/agent/certs"
	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/agent/dnssource"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/events"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/agent/pools"
	"github.com/cairndns/cairn/agent/tokens"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/buildinfo"
	"github.com/cairndns/cairn/internal/diskfree"
	"github.com/cairndns/cairn/internal/fdlimit"
	"github.com/cairndns/cairn/internal/sdnotify"
	"github.com/cairndns/cairn/logstream"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/telemetry"
	"github.com/cairndns/cairn/zones"
)

// readyWait bounds how long Start waits for the first sync of a server
// that bootstraps alone (waitSynced).
const readyWait = 5 * time.Second

// Agent is one running cairn agent. Create it with New, Start it, and stop
// it with Shutdown; or use Run, which does all three.
type Agent struct {
	cfg       config.Config
	advertise string
	logger    *slog.Logger
	logs      *logstream.Hub // the logger's lines, for GET /v1/agent/monitor
	metrics   *telemetry.Registry
	tls       *certs.Set

	door        door.Door
	datacenters *dnssource.Datacenters
	local       *local.State
	http        *httpapi.Server
	dns         *resolver.Server
	dnsSrc      *dnssource.Source
	synced      chan struct{} // closed once this node's first full sync succeeded

	role    role
	rpcPool *rpc.Pool
	pools   *pools.Pools
	gossip  *gossip.Pool // the LAN pool
	wan     *gossip.Pool // a server's only
	// peers exists before the pools start: the server port's admission
	// and the Catalog endpoint's node-name check read it.
	peers  *pools.Peers
	events *events.Buffer // the user events gossip brought
	tokens *tokens.Store  // the agent's own ACL tokens, changed at runtime too
	// A server's parts (server.go).
	server    *consensus.Server
	rpcServer *rpc.Server
	endpoints *consensus.Endpoints
	leader    *consensus.Leader
	router    *consensus.Router
	// A client's (client.go).
	servers    *door.ServerList
	clientDoor *door.Client
	// Set by tests before Start (export_test.go).
	dialServer   func(ctx context.Context, addr string) (net.Conn, error)
	clockOffset  time.Duration // also config.ClockOffsetEnv
	testProtocol uint8         // config.ProtocolEnv: tests only
	nearRefresh  time.Duration

	left      chan struct{} // closed once the agent left through the API; Run then stops it
	leaveOnce sync.Once
	leaveDo   sync.Once // the graceful leave, once (API or Shutdown)
	leaveErr  error
	// skipLeave makes Shutdown skip the graceful leave: Stop sets it when
	// the reason says so, tests to stop as a killed process would.
	skipLeave bool

	reloading Reloading
	reloadMu  sync.Mutex     // guards reloading and running, and serializes reloads
	running   *config.Config // cfg with what reloads applied; nil: cfg

	stopLoops context.CancelFunc
	loops     sync.WaitGroup
	shutdown  sync.Once
}

// Run starts an agent and blocks until ctx ends, then shuts it down in
// order. Each value received on reload (nil: none; the CLI sends one on
// SIGHUP) reloads what can change without a restart, as PUT
// /v1/agent/reload does, the way rl says (Reload). It returns nil after a
// clean shutdown.
func Run(ctx context.Context, cfg config.Config, logger *slog.Logger, reload <-chan struct{}, rl Reloading) error {
	a, err := New(cfg, logger)
	if err != nil {
		return err
	}
	logger = slog.New(a.logs.Handler()) // Run's own lines reach the monitors too
	a.SetReloading(rl)
	if err := a.Start(ctx); err != nil {
		return err
	}
	systemd := sdnotify.FromEnv(logger) // nil unless run by systemd as Type=notify
	systemd.Notify(sdnotify.Ready)
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-a.left:
			break wait
		case <-reload:
			systemd.Notify(sdnotify.Reloading)
			if err := a.Reload(); err != nil {
				logger.Error("reload failed; keeping the configuration in use", "err", err)
			}
			systemd.Notify(sdnotify.Ready)
		}
	}
	systemd.Notify(sdnotify.Stopping)
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(sctx, context.Cause(ctx)); err != nil {
		return err
	}
	logger.Info("agent stopped")
	return nil
}

// New validates cfg and builds the agent's components without starting
// anything that listens.
func New(cfg config.Config, logger *slog.Logger) (*Agent, error) {
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	adv, err := cfg.Advertise()
	if err != nil {
		return nil, err
	}
	logs, err := logstream.New(logstream.DefaultConfig(), logger.Handler())
	if err != nil {
		return nil, fmt.Errorf("log stream: %w", err)
	}
	a := &Agent{
		cfg: cfg, advertise: adv, logs: logs,
		logger: slog.New(logs.Handler()).With("node", cfg.NodeName, "dc", cfg.Datacenter),
		left:   make(chan struct{}), synced: make(chan struct{}),
	}
	a.peers = pools.NewPeers(cfg.Datacenter)
	a.events = events.New(cfg.NodeName, a.logger)
	if a.tokens, err = tokens.New(cfg.ACL.TokenMap(), cfg.ACL.TokenFile(cfg.DataDir)); err != nil {
		return nil, err
	}
	if cfg.Server {
		a.role = serverRole{a}
	} else {
		a.role = clientRole{a}
	}
	if a.clockOffset, err = config.ClockOffsetFromEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	if a.clockOffset != 0 {
		a.logger.Warn("test-only clock offset in effect: this agent acts as if its wall clock were off by it; never in production",
			"offset", a.clockOffset, "env", config.ClockOffsetEnv)
	}
	if a.testProtocol, err = config.ProtocolFromEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	if a.testProtocol != 0 {
		a.logger.Warn("test-only protocol version in effect: this agent refuses, and is refused by, agents of other protocols; never in production",
			"protocol", a.testProtocol, "env", config.ProtocolEnv)
	}
	if a.tls, err = certs.New(cfg.TLS, cfg.Datacenter, cfg.Domain, cfg.Ports.DNSTLS >= 0); err != nil {
		return nil, err
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
	}
	if a.cfg.NodeID, err = cfg.ResolveNodeID(); err != nil {
		return nil, err
	}
	// Made first, so that what raft and memberlist emit from their start
	// on reaches it (go-metrics drops what comes before its sink).
	if a.metrics, err = telemetry.New(cfg.Telemetry, diskfree.Collector(a.cfg.DataDir), buildinfo.Collector()); err != nil {
		return nil, err
	}
	return a, nil
}

// Start brings the agent up: a server's Raft, endpoints and gossip, or a
// client's gossip and pool; this node's local state and its anti-entropy;
// then DNS and the HTTP API. A server that bootstraps alone (a -dev agent,
// the first server of a datacenter) is ready within moments, so Start
// waits for its first sync; others sync as soon as a leader is reachable.
// On error everything started is stopped.
func (a *Agent) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = errors.Join(err, a.Shutdown(sctx))
		}
	}()
	// The loops live until Shutdown, not until ctx (which bounds Start).
	loopCtx, stop := context.WithCancel(context.Background())
	a.stopLoops = stop
	a.tls.Watch(loopCtx, &a.loops, a.logger)
	if err := a.role.start(loopCtx); err != nil {
		return err
	}
	a.datacenters = dnssource.NewDatacenters(a.door)
	if err := a.startLocal(loopCtx); err != nil {
		return err
	}
	if !a.cfg.Coordinates.Disable {
		cs := &pools.CoordinateSync{
			LAN: a.gossip, Door: a.door, Token: a.tokens.AgentToken, Datacenter: a.cfg.Datacenter, Node: a.cfg.NodeName,
			SyncIntervalMin: a.cfg.Coordinates.SyncIntervalMin, Logger: a.logger,
		}
		a.loops.Go(func() { cs.Run(loopCtx) })
	}
	if a.cfg.Server && a.bootstrapExpect() == 1 {
		a.waitSynced(ctx)
	}
	// DNS before HTTP: a client that waits for the HTTP API to answer can
	// then rely on DNS answering too.
	if err := a.startDNS(); err != nil {
		return err
	}
	if err := a.startHTTP(); err != nil {
		return err
	}
	if a.cfg.Resolver.DNSSEC.Enabled {
		kf := dnssource.NewKeyFollower(dnssource.KeyFollowerConfig{
			Door: a.door, Token: a.tokens.AgentToken, Datacenter: a.cfg.Datacenter, Node: a.cfg.NodeName,
			Domain: a.cfg.Domain, Signer: a.dns, Logger: a.logger,
		})
		a.loops.Go(func() { kf.Run(loopCtx) })
	}
	a.logger.Info("agent started", "dns", a.dns.UDPAddr().String(), "http", addrOrOff(a.http.Addr()),
		"https", addrOrOff(a.http.HTTPSAddr()), "advertise", a.advertise, "data_dir", a.cfg.DataDir, "dev", a.cfg.Dev)
	a.loops.Go(func() { a.logMilestones(loopCtx) }) // milestones.go
	a.loops.Go(func() { diskfree.Watch(loopCtx, a.cfg.DataDir, uint64(a.cfg.Limits.DataDirMinFreeBytes), a.logger) })
	return nil
}

// waitSynced waits, up to readyWait, for this node's first sync: a server
// that bootstraps alone elects itself within moments, and whoever started
// it can then use it at once. One that cannot (restarted with peers in its
// Raft configuration that are down) starts all the same, later: its DNS
// keeps answering from the cache, and its first sync goes on retrying.
func (a *Agent) waitSynced(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	select {
	case <-a.synced:
	case <-wctx.Done():
		a.logger.Warn("starting before this node's first sync succeeded (no leader yet, or its writes are refused: see the warnings above)", "waited", readyWait)
	}
}

// startLocal loads this node's local state and starts its anti-entropy
// loop, whose first full sync retries until a leader takes it. The
// leader keeps a server's cairn service (consensus.ServerServiceID), as
// it keeps every node's gossip check: anti-entropy leaves both alone, so
// the agent token needs only node:write on its node.
func (a *Agent) startLocal(loopCtx context.Context) error {
	lc := local.DefaultConfig()
	lc.NodeName, lc.NodeID, lc.Address, lc.Datacenter = a.cfg.NodeName, a.cfg.NodeID, a.advertise, a.cfg.Datacenter
	lc.NodeMeta = a.cfg.NodeMeta
	lc.TaggedAddresses = local.TaggedAddresses(a.advertise, a.cfg.AdvertiseAddrWAN)
	lc.ServerChecks = []string{consensus.GossipCheckID, consensus.StorageCheckID}
	lc.ServerServices = []string{consensus.ServerServiceID}
	lc.CheckUpdateInterval = a.cfg.CheckUpdateInterval
	lc.SyncInterval = a.cfg.AEInterval
	lc.Checks = checks.Config{EnableScriptChecks: a.cfg.EnableScriptChecks}
	lc.ClusterSize = func() int { return len(a.gossip.Members()) }
	lc.DataDir = a.cfg.DataDir
	st, err := local.New(lc, local.NewRPCCatalog(a.door, a.cfg.Datacenter, a.tokens.AgentToken), a.logger)
	if err != nil {
		return err
	}
	if err := a.register(st.Collectors()); err != nil {
		return err
	}
	if err := st.SetConfigServices(configServices(a.cfg.Services)); err != nil {
		return fmt.Errorf("config services: %w", err)
	}
	a.local = st
	a.events.SetServices(st.Services)
	a.loops.Go(func() {
		if st.FirstSync(loopCtx) {
			close(a.synced)
		}
		st.Run(loopCtx)
	})
	return nil
}

func (a *Agent) startHTTP() error {
	hc := httpapi.DefaultConfig()
	hc.Addr, hc.UnixSocket = a.cfg.HTTPListen() // both "": HTTPS only, or no API at all
	hc.SocketUID, hc.SocketGID = a.cfg.UnixSockets.Owner()
	if mode, ok := a.cfg.UnixSockets.SocketMode(); ok {
		hc.SocketMode = os.FileMode(mode)
	}
	hc.Datacenter, hc.Domain = a.cfg.Datacenter, a.cfg.Domain
	hc.EnableScriptChecks = a.cfg.EnableScriptChecks
	hc.NodeName, hc.NodeID, hc.Server, hc.Version = a.cfg.NodeName, a.cfg.NodeID, a.cfg.Server, buildinfo.Version()
	hc.AllowedHosts, hc.ReadTimeout = a.cfg.HTTP.AllowedHosts, a.cfg.HTTP.ReadTimeout
	hc.MaxConnsPerClient, hc.MaxConns = a.cfg.Limits.HTTPMaxConnsPerClient, a.cfg.Limits.HTTPMaxConns
	if hc.MaxConns <= 0 {
		hc.MaxConns = fdlimit.HTTPConns(a.cfg.Resolver.MaxTCPConns)
	}
	hc.KVMaxValueSize = a.cfg.Limits.KVMaxValueSize
	hc.EnableDebug = a.cfg.EnableDebug
	hc.ACLsEnabled, hc.PrimaryDatacenter = a.cfg.ACL.Enabled, a.cfg.ACL.PrimaryDatacenter
	if a.cfg.Ports.HTTPS >= 0 {
		hc.HTTPSAddr = net.JoinHostPort(a.cfg.ClientAddr, strconv.Itoa(a.cfg.Ports.HTTPS))
		hc.TLS = a.tls.HTTPS.IncomingHTTPS()
		if a.cfg.TLS.HTTPS.VerifyIncoming {
			// Inherited from tls.defaults, this surprises operators who
			// meant it for the server port.
			a.logger.Info("HTTPS requires a client certificate of the CA (tls.https.verify_incoming, or tls.defaults'): browsers, curl and DNS over HTTPS clients without one are refused")
		}
	}
	deps := httpapi.Deps{
		Door: a.door, Local: a.local, Logger: a.logger,
		Cluster: &pools.Cluster{
			Pools: a.pools, Door: a.door, Datacenter: a.cfg.Datacenter, ClockSkew: a.rpcPool.ClockSkew,
			DatacenterList: a.datacenters.List, LeaveAgent: a.leaveAndStop, Logger: a.logger,
		},
		CachedInstances: a.dnsSrc.CachedReads(a.door, a.tokens.DNSToken, func() string { return a.tokens.Get(tokens.Default) }),
		AskDNS:          a.askDNS,
		ServeDNSWire:    a.dns.ServeWire, // DNS over HTTPS, on the HTTPS listener
		Metrics:         a.metrics,
		MetricName:      a.metrics.JSONName,
		Logs:            a.logs.Subscribe, // GET /v1/agent/monitor
		Stats:           a.selfStats,      // self.go
		Reload:          a.Reload,         // reload.go
		Events:          a.events,
		Tokens:          a.tokens,
	}
	if a.cfg.ACL.Enabled {
		deps.Authorizer = httpapi.NewTokenCache(a.door, a.cfg.ACL.TokenTTL).Authorizer
	}
	srv, err := httpapi.New(hc, deps)
	if err != nil {
		return err
	}
	if err := a.metrics.Register(srv.Collectors()...); err != nil {
		return err
	}
	a.http = srv
	return srv.Start()
}

// askDNS answers the web UI's DNS questions through the agent's own DNS
// server.
func (a *Agent) askDNS(name, qtype string) (httpapi.DNSReply, error) {
	r, err := a.dns.Ask(name, qtype)
	return httpapi.DNSReply{Rcode: r.Rcode, Answer: r.Answer, Extra: r.Extra}, err
}

func (a *Agent) startDNS() error {
	zs, rc := a.dnsConfig()
	var zoneList []*zones.Zone
	for _, zc := range zs {
		zone, err := zones.New(zc)
		if err != nil {
			return err
		}
		zoneList = append(zoneList, zone)
	}
	// The cache reads the servers with the DNS token (acl.tokens.dns):
	// its reads carry no token of their own, and the door would give
	// them the default one.
	src, err := dnssource.New(dnssource.Config{
		Cache: a.cfg.Cache, Datacenter: a.cfg.Datacenter, Node: a.cfg.NodeName,
		OnlyPassing: a.cfg.OnlyPassing, NearRefresh: a.nearRefresh,
	}, dnssource.Deps{Door: door.WithToken(a.door, a.tokens.DNSToken), Datacenters: a.datacenters, Logger: a.logger})
	if err != nil {
		return err
	}
	a.dnsSrc = src
	srv, err := resolver.New(rc, zoneList, src, a.logger.With("component", "dns"))
	if err != nil {
		return err
	}
	if err := a.register(src.Collectors(), srv.Collectors()); err != nil {
		return err
	}
	a.dns = srv
	return srv.Start()
}

// dnsConfig completes the configured zones' (the domain's, then the
// alternative domain's) and resolver's configurations with what the agent
// derives: the domains, the datacenter and the addresses.
func (a *Agent) dnsConfig() ([]zones.Config, resolver.Config) {
	zc := a.cfg.Zones
	zc.Domain, zc.Datacenter = a.cfg.Domain, a.cfg.Datacenter
	// The agent answers its zones itself, so it is the name server the
	// apex NS record names for whoever asks it.
	zc.NSAddress = a.advertise
	zs := []zones.Config{zc}
	if a.cfg.AltDomain != "" {
		alt := zc
		alt.Domain = a.cfg.AltDomain
		zs = append(zs, alt)
	}
	rc := a.cfg.Resolver
	rc.Addr = net.JoinHostPort(a.cfg.ClientAddr, strconv.Itoa(a.cfg.Ports.DNS))
	if a.cfg.Ports.DNSTLS >= 0 {
		rc.TLSAddr = net.JoinHostPort(a.cfg.ClientAddr, strconv.Itoa(a.cfg.Ports.DNSTLS))
		if a.tls.DNS != nil { // else resolver's validation names the missing certificate
			rc.TLS = a.tls.DNS.IncomingHTTPS() // a server's config: presents the certificate, asks for one only with verify_incoming
		}
	}
	return zs, rc
}

// NodeID is this agent's node ID (a UUID).
func (a *Agent) NodeID() string { return a.cfg.NodeID }

// DNSAddr is the bound DNS address (UDP; TCP uses the same port).
func (a *Agent) DNSAddr() net.Addr { return a.dns.UDPAddr() }

// HTTPAddr is the bound plain HTTP API address, nil with ports.http =
// -1.
func (a *Agent) HTTPAddr() net.Addr { return a.http.Addr() }

// addrOrOff is addr for a log line, "off" when nil.
func addrOrOff(addr net.Addr) string {
	if addr == nil {
		return "off"
	}
	return addr.String()
}

// DNSTLSAddr is the DNS over TLS address, nil without ports.dns_tls.
func (a *Agent) DNSTLSAddr() net.Addr { return a.dns.TLSAddr() }

// HTTPSAddr is the HTTPS API's address, nil without ports.https.
func (a *Agent) HTTPSAddr() net.Addr { return a.http.HTTPSAddr() }

// ErrInterrupted and ErrTerminated are why an agent stops when an operator
// sends it SIGINT or SIGTERM: the CLI cancels Run's ctx with them as the
// cause (context.WithCancelCause), and Stop takes them.
var (
	ErrInterrupted = errors.New("interrupted (SIGINT)")
	ErrTerminated  = errors.New("terminated (SIGTERM)")
)

// Stop shuts the agent down as Shutdown does, leaving the cluster
// gracefully first or not as the configuration says for why it stops, as
// Consul's agent decides: for ErrInterrupted unless
// skip_leave_on_interrupt, for ErrTerminated only with leave_on_terminate
// (by default a client leaves on both, a server on neither, so that
// restarting a server changes neither the Raft configuration nor the
// quorum). Any other reason, nil included, leaves, as Shutdown does. An
// agent that has left through the API stays left.
func (a *Agent) Stop(ctx context.Context, why error) error {
	leave := true
	switch {
	case errors.Is(why, ErrInterrupted):
		leave = a.cfg.LeavesOnInterrupt()
	case errors.Is(why, ErrTerminated):
		leave = a.cfg.LeavesOnTerminate()
	}
	if !leave {
		a.logger.Info("stopping without leaving the cluster", "reason", why)
		a.skipLeave = true
	}
	return a.Shutdown(ctx)
}

// Shutdown stops the agent in order — DNS listeners, HTTP API, background
// loops, the Catalog endpoint, gossip (leaving gracefully), the rpc server,
// then Raft (which closes its log) — and waits for each. It is safe to call
// more than once and on a partly started agent.
func (a *Agent) Shutdown(ctx context.Context) error {
	var errs []error
	a.shutdown.Do(func() {
		if a.dns != nil {
			errs = append(errs, a.dns.Shutdown(ctx))
		}
		if a.dnsSrc != nil {
			a.dnsSrc.Close() // its refreshes, which read the catalog
		}
		if a.http != nil {
			errs = append(errs, a.http.Shutdown(ctx))
		}
		if a.stopLoops != nil {
			a.stopLoops()
		}
		a.loops.Wait()
		if a.local != nil {
			a.local.Close() // the checks, which report to it
		}
		errs = append(errs, a.shutdownCluster(ctx)...)
		errs = append(errs, a.role.stopRaft())
	})
	return errors.Join(errs...)
}

// register adds the parts' series to the agent's registry.
func (a *Agent) register(groups ...[]prometheus.Collector) error {
	for _, cs := range groups {
		if err := a.metrics.Register(cs...); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}
