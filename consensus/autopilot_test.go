package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// testAutopilotConfig is testLeaderConfig with autopilot able to ask the
// other servers for their stats, and a short stabilization.
func testAutopilotConfig(t *testing.T) consensus.LeaderConfig {
	cfg := testLeaderConfig()
	cfg.Caller = rpctest.NewPool(t)
	cfg.HealthInterval = 500 * time.Millisecond
	cfg.Autopilot.ServerStabilizationTime = 500 * time.Millisecond
	cfg.Version = "1.2.3"
	return cfg
}

// serveAutopilot returns n's leader duties under cfg over the LAN pool m,
// not yet running, and serves its Operator endpoint on n's rpc server,
// which the other servers' leaders ask for n's Raft stats.
func serveAutopilot(t *testing.T, cfg consensus.LeaderConfig, n *consensustest.Node, m consensus.Membership) *consensus.Leader {
	t.Helper()
	return serveOperator(t, cfg, consensus.ACLConfig{}, n, m)
}

func serveOperator(t *testing.T, cfg consensus.LeaderConfig, acl consensus.ACLConfig, n *consensustest.Node, m consensus.Membership) *consensus.Leader {
	t.Helper()
	l := newLeader(t, cfg, n.Server, m)
	catCfg := consensus.DefaultCatalogConfig()
	catCfg.Datacenter, catCfg.ACL = "dc1", acl
	cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), catCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cat.Close)
	op, err := consensus.NewOperator(cat, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.RPC.Register(rpc.OperatorEndpoint, op); err != nil {
		t.Fatal(err)
	}
	return l
}

// autopilotCluster is three bootstrapped servers, each with its LAN pool,
// its leader duties running under cfg and its Operator endpoint served.
type autopilotCluster struct {
	nodes []*consensustest.Node
	pools map[*consensustest.Node]*gossip.Pool
	stops map[*consensustest.Node]func()
}

func startAutopilotCluster(t *testing.T, cfg consensus.LeaderConfig) *autopilotCluster {
	t.Helper()
	c := &autopilotCluster{nodes: consensustest.StartCluster(t, 3), pools: map[*consensustest.Node]*gossip.Pool{}, stops: map[*consensustest.Node]func(){}}
	for _, n := range c.nodes {
		c.pools[n] = serverPool(t, n)
	}
	for _, n := range c.nodes[1:] {
		gossiptest.Join(t, c.pools[n], c.pools[c.nodes[0]])
	}
	for _, n := range c.nodes {
		c.stops[n] = runLeader(t, serveAutopilot(t, cfg, n, c.pools[n]))
	}
	return c
}

// serverPool starts n's LAN pool, carrying its RPC address.
func serverPool(t *testing.T, n *consensustest.Node) *gossip.Pool {
	cfg := gossiptest.LANConfig(n.ID, "dc1", gossip.RoleServer)
	cfg.RPCAddr = n.Addr
	return gossiptest.Start(t, cfg)
}

// health asks n's Operator endpoint, through p, for the servers' health.
func health(t *testing.T, p *rpc.Pool, n *consensustest.Node) (*rpc.ServerHealthResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var reply rpc.ServerHealthResponse
	err := p.Call(ctx, n.Addr, rpc.MethodOperatorServerHealth, &rpc.ServerHealthRequest{}, &reply)
	return &reply, err
}

func serverOf(h *rpc.ServerHealthResponse, id string) (rpc.ServerHealth, bool) {
	for _, s := range h.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return rpc.ServerHealth{}, false
}

// TestAutopilotPromotesStableServer: a fourth server joining a running
// cluster is added as a non-voter and made a voter only once it has been
// healthy for ServerStabilizationTime.
func TestAutopilotPromotesStableServer(t *testing.T) {
	cfg := testAutopilotConfig(t)
	const stabilization = 1500 * time.Millisecond
	cfg.Autopilot.ServerStabilizationTime = stabilization
	c := startAutopilotCluster(t, cfg)
	leader := consensustest.WaitForLeader(t, c.nodes, within)
	waitVoters(t, leader.Server, "s1", "s2", "s3")

	s4 := consensustest.StartNode(t, "s4", t.TempDir(), "")
	p4 := serverPool(t, s4)
	serveAutopilot(t, cfg, s4, p4)
	gossiptest.Join(t, p4, c.pools[leader])
	consensustest.WaitFor(t, within, func() error {
		peers, err := leader.Server.Peers()
		if err != nil {
			return err
		}
		for _, p := range peers {
			if p.ID == "s4" {
				if p.Voter {
					return errors.New("s4 is a voter already, before its stabilization time")
				}
				return nil
			}
		}
		return errors.New("s4 not in the configuration yet")
	})
	waitVoters(t, leader.Server, "s1", "s2", "s3", "s4")

	p := rpctest.NewPool(t)
	h, err := health(t, p, leader)
	if err != nil {
		t.Fatalf("ServerHealth: %v", err)
	}
	s, ok := serverOf(h, "s4")
	switch {
	case !ok:
		t.Fatalf("health lists no s4: %+v", h.Servers)
	case !s.Voter || !s.Healthy || s.Version != "1.2.3":
		t.Errorf("s4's health: got %+v, want a healthy voter of version 1.2.3", s)
	case time.Since(s.StableSince) < stabilization:
		t.Errorf("s4 promoted %s after it became healthy, want at least %s", time.Since(s.StableSince), stabilization)
	}
}

// TestAutopilotHealth asks a follower for the servers' health: it is the
// leader's, with every server healthy and one failure tolerated; once a
// server stops, it is unhealthy and none is tolerated.
func TestAutopilotHealth(t *testing.T) {
	c := startAutopilotCluster(t, testAutopilotConfig(t))
	leader := consensustest.WaitForLeader(t, c.nodes, within)
	var follower, victim *consensustest.Node
	for _, n := range c.nodes {
		switch {
		case n == leader:
		case follower == nil:
			follower = n
		default:
			victim = n
		}
	}
	p := rpctest.NewPool(t)
	consensustest.WaitFor(t, within, func() error {
		h, err := health(t, p, follower)
		if err != nil {
			return err
		}
		if !h.Healthy || h.FailureTolerance != 1 || len(h.Servers) != 3 {
			return fmt.Errorf("got %+v, want 3 servers, healthy, tolerating 1 failure", h)
		}
		for _, s := range h.Servers {
			if s.Leader != (s.ID == leader.ID) || !s.Voter || s.SerfStatus != "alive" || s.LastIndex == 0 || s.LastTerm == 0 {
				return fmt.Errorf("server %+v: want an alive voter with its log, the leader flagged", s)
			}
		}
		return nil
	})

	c.stops[victim]()
	victim.Stop()
	if err := c.pools[victim].Shutdown(); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, within, func() error {
		h, err := health(t, p, leader)
		if err != nil {
			return err
		}
		s, _ := serverOf(h, victim.ID)
		if h.Healthy || h.FailureTolerance != 0 || s.Healthy || s.LastContact != -1 {
			return fmt.Errorf("got %+v, want %s unhealthy, its stats unknown, and no failure tolerated", h, victim.ID)
		}
		return nil
	})
}

// TestAutopilotConfiguration: the leader stores its own configuration when
// none is; an operator's replaces it through any server, a CAS with a
// stale index changes nothing, a bad value is refused naming its field,
// and what was stored outlives a snapshot and a restart.
func TestAutopilotConfiguration(t *testing.T) {
	cfg := testAutopilotConfig(t)
	cfg.Autopilot.MaxTrailingLogs = 99
	c := startAutopilotCluster(t, cfg)
	leader := consensustest.WaitForLeader(t, c.nodes, within)
	p := rpctest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var follower *consensustest.Node
	for _, n := range c.nodes {
		if n != leader {
			follower = n
		}
	}
	get := func(n *consensustest.Node) rpc.AutopilotConfig {
		t.Helper()
		var reply rpc.AutopilotConfigResponse
		if err := p.Call(ctx, n.Addr, rpc.MethodOperatorAutopilotGetConfiguration, &rpc.AutopilotGetConfigRequest{}, &reply); err != nil {
			t.Fatalf("get on %s: %v", n.ID, err)
		}
		if reply.Index != reply.Config.ModifyIndex {
			t.Errorf("get: index %d, want the ModifyIndex %d", reply.Index, reply.Config.ModifyIndex)
		}
		return reply.Config
	}
	consensustest.WaitFor(t, within, func() error {
		if leader.Server.AutopilotConfig() == nil {
			return errors.New("the leader stored no configuration yet")
		}
		return nil
	})
	first := get(follower)
	if first.MaxTrailingLogs != 99 || !first.CleanupDeadServers || first.CreateIndex == 0 || first.ModifyIndex != first.CreateIndex {
		t.Fatalf("initial configuration: got %+v, want the leader's own, stored once", first)
	}

	set := func(n *consensustest.Node, cfg rpc.AutopilotConfig, cas bool) (bool, error) {
		var reply rpc.AutopilotSetConfigResponse
		err := p.Call(ctx, n.Addr, rpc.MethodOperatorAutopilotSetConfiguration, &rpc.AutopilotSetConfigRequest{Config: cfg, CAS: cas}, &reply)
		return reply.Updated, err
	}
	next := first
	next.CleanupDeadServers, next.LastContactThreshold, next.MinQuorum = false, time.Second, 5
	if ok, err := set(follower, next, true); err != nil || !ok {
		t.Fatalf("CAS set through a follower: got %v, %v; want updated", ok, err)
	}
	got := get(leader)
	if got.CleanupDeadServers || got.LastContactThreshold != time.Second || got.MinQuorum != 5 ||
		got.CreateIndex != first.CreateIndex || got.ModifyIndex <= first.ModifyIndex {
		t.Fatalf("after set: got %+v, want the new values, a new ModifyIndex, the same CreateIndex", got)
	}
	if ok, err := set(leader, next, true); err != nil || ok {
		t.Errorf("CAS with a stale index: got %v, %v; want not updated", ok, err)
	}
	bad := got
	bad.LastContactThreshold = -time.Second
	_, err := set(follower, bad, false)
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "LastContactThreshold" {
		t.Errorf("bad threshold: got %v, want a field error naming LastContactThreshold", err)
	}

	// A follower (restarting the leader would race its shutdown against
	// the new leader's heartbeats) restores it from its snapshot.
	consensustest.WaitFor(t, within, func() error {
		if ap := follower.Server.AutopilotConfig(); ap == nil || ap.ModifyIndex != got.ModifyIndex {
			return fmt.Errorf("%s has %+v, want ModifyIndex %d", follower.ID, ap, got.ModifyIndex)
		}
		return nil
	})
	if err := follower.Server.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.stops[follower]()
	follower.Restart()
	consensustest.WaitFor(t, within, func() error {
		ap := follower.Server.AutopilotConfig()
		if ap == nil || ap.ModifyIndex != got.ModifyIndex || ap.MinQuorum != 5 {
			return fmt.Errorf("after a restart: got %+v, want ModifyIndex %d", ap, got.ModifyIndex)
		}
		return nil
	})
}

// TestOperatorEndpointChecksTokens: with ACLs on and the default policy
// deny, a request without a token may neither read autopilot's
// configuration nor the servers' health, nor set it, nor read the DNSSEC
// key.
func TestOperatorEndpointChecksTokens(t *testing.T) {
	n := consensustest.StartCluster(t, 1)[0]
	pool := serverPool(t, n)
	cfg := testAutopilotConfig(t)
	cfg.ACLEnabled = true
	runLeader(t, serveOperator(t, cfg, consensus.ACLConfig{Enabled: true}, n, pool))
	p := rpctest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for _, call := range []struct {
		method      string
		args, reply any
		want        string
	}{
		{rpc.MethodOperatorAutopilotGetConfiguration, &rpc.AutopilotGetConfigRequest{}, &rpc.AutopilotConfigResponse{}, "operator:read"},
		{rpc.MethodOperatorServerHealth, &rpc.ServerHealthRequest{}, &rpc.ServerHealthResponse{}, "operator:read"},
		{rpc.MethodOperatorAutopilotSetConfiguration, &rpc.AutopilotSetConfigRequest{Config: rpc.DefaultAutopilotConfig()}, &rpc.AutopilotSetConfigResponse{}, "operator:write"},
		{rpc.MethodOperatorDNSSECKey, &rpc.DNSSECKeyRequest{Node: "agent1"}, &rpc.DNSSECKeyResponse{}, "node:write"},
	} {
		err := p.Call(ctx, n.Addr, call.method, call.args, call.reply)
		if !errors.Is(err, rpc.ErrPermissionDenied) || !strings.Contains(err.Error(), call.want) {
			t.Errorf("%s without a token: got %v, want permission denied for %s", call.method, err, call.want)
		}
	}
	var stats rpc.RaftStatsResponse
	if err := p.Call(ctx, n.Addr, rpc.MethodOperatorRaftStats, &rpc.RaftStatsRequest{}, &stats); err != nil || stats.LastContact != 0 || stats.Version != "1.2.3" {
		t.Errorf("RaftStats of the leader: got %+v, %v; want its own stats, with no token needed", stats, err)
	}
}

// TestCleanupDeadServersOff: with CleanupDeadServers off, a server failed
// for longer than RemoveFailedServersAfter stays in the configuration.
func TestCleanupDeadServersOff(t *testing.T) {
	cfg := testAutopilotConfig(t)
	cfg.MinVoters = 1
	cfg.Autopilot.CleanupDeadServers = false
	c := startAutopilotCluster(t, cfg)
	leader := consensustest.WaitForLeader(t, c.nodes, within)
	var victim *consensustest.Node
	for _, n := range c.nodes {
		if n != leader {
			victim = n
		}
	}
	c.stops[victim]()
	victim.Stop()
	if err := c.pools[victim].Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitGossip(t, leader.Store, map[string]catalog.HealthStatus{victim.ID: "critical"})
	var since time.Time
	for _, m := range c.pools[leader].Members() {
		if m.Node == victim.ID {
			since = m.Since
		}
	}
	consensustest.WaitFor(t, within, func() error {
		if d := time.Since(since); d <= cfg.RemoveFailedServersAfter {
			return fmt.Errorf("%s failed for %s only", victim.ID, d)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := newLeader(t, cfg, leader.Server, c.pools[leader]).Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	waitVoters(t, leader.Server, "s1", "s2", "s3")
}
