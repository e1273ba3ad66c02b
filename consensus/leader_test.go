package consensus_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/rpc"
)

var _ consensus.Membership = (*gossip.Pool)(nil)

// testLeaderConfig reconciles only on signals and leadership in tests
// (the hour-long interval never fires), so each test shows which one acted.
func testLeaderConfig() consensus.LeaderConfig {
	cfg := consensus.DefaultLeaderConfig()
	cfg.ReconcileInterval = time.Hour
	cfg.RemoveFailedServersAfter = 200 * time.Millisecond
	return cfg
}

// runLeader runs l in a goroutine until the returned stop is called or the
// test ends; stop waits for it.
func runLeader(t *testing.T, l *consensus.Leader) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.Run(ctx) })
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

func newLeader(t *testing.T, cfg consensus.LeaderConfig, s *consensus.Server, m consensus.Membership) *consensus.Leader {
	t.Helper()
	l, err := consensus.NewLeader(cfg, s, m, gossiptest.Logger())
	if err != nil {
		t.Fatalf("NewLeader: %v", err)
	}
	return l
}

// startSingleServer starts a bootstrapped single-server cluster in memory,
// as the dev agent runs it.
func startSingleServer(t *testing.T, id string) *consensus.Server {
	t.Helper()
	return startSingleServerWith(t, id, nil)
}

// startSingleServerWith is startSingleServer with tune applied to its
// configuration.
func startSingleServerWith(t *testing.T, id string, tune func(*consensus.Config)) *consensus.Server {
	t.Helper()
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	cfg := consensus.DefaultConfig()
	cfg.NodeID, cfg.Address, cfg.Bootstrap = id, "127.0.0.1:8300", true
	cfg.SingleServerTiming()
	if tune != nil {
		tune(&cfg)
	}
	s, err := consensus.New(cfg, store, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	consensustest.WaitFor(t, within, func() error {
		if !s.IsLeader() {
			return fmt.Errorf("%s does not lead", id)
		}
		return nil
	})
	return s
}

// gossipStatus returns the status of node's gossip check in store, "" when
// it has none, and "absent" when the node is not registered.
func gossipStatus(store *catalog.Store, node string) (catalog.HealthStatus, error) {
	_, n, err := store.Node(nil, node)
	if err != nil || n == nil {
		return "absent", err
	}
	_, checks, err := store.NodeChecks(nil, node)
	for _, c := range checks {
		if c.CheckID == consensus.GossipCheckID && c.ServiceID == "" {
			return c.Status, err
		}
	}
	return "", err
}

// waitGossip waits until every node of want has the gossip status given.
func waitGossip(t *testing.T, store *catalog.Store, want map[string]catalog.HealthStatus) {
	t.Helper()
	consensustest.WaitFor(t, within, func() error {
		for node, w := range want {
			got, err := gossipStatus(store, node)
			if err != nil {
				return err
			}
			if got != w {
				return fmt.Errorf("node %s: got gossip check %q, want %q", node, got, w)
			}
		}
		return nil
	})
}

// cairnInstances returns "node=addr:port" for each cairn service instance.
func cairnInstances(t *testing.T, store *catalog.Store) []string {
	t.Helper()
	_, inst, err := store.ServiceInstances(nil, consensus.ServerServiceID, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range inst {
		out = append(out, fmt.Sprintf("%s=%s", i.Node.Node, net.JoinHostPort(i.Address(), strconv.Itoa(i.Service.Port))))
	}
	return out
}

// waitVoters waits until s's configuration is exactly the voters ids.
func waitVoters(t *testing.T, s *consensus.Server, ids ...string) {
	t.Helper()
	slices.Sort(ids)
	consensustest.WaitFor(t, within, func() error {
		peers, err := s.Peers()
		if err != nil {
			return err
		}
		var got []string
		for _, p := range peers {
			if p.Voter {
				got = append(got, p.ID)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			return fmt.Errorf("got voters %v, want %v", got, ids)
		}
		return nil
	})
}

func TestLeaderConfigValidate(t *testing.T) {
	if err := consensus.DefaultLeaderConfig().Validate(); err != nil {
		t.Fatalf("DefaultLeaderConfig: got %v, want nil", err)
	}
	bad := consensus.LeaderConfig{Datacenter: "dc_1", Autopilot: rpc.AutopilotConfig{LastContactThreshold: -1}}
	err := bad.Validate()
	for _, field := range []string{"Datacenter", "ReconcileInterval", "RemoveFailedServersAfter", "MinVoters", "Autopilot", "HealthInterval", "ServerServiceName"} {
		if err == nil || !strings.Contains(err.Error(), "leader "+field) {
			t.Errorf("Validate: got %v, want an error naming %s", err, field)
		}
	}
}

// TestLeaderReconcilesMembers runs one server with two clients: members
// that joined before the leader started are registered at once (the
// reconcile on taking leadership), a client that stops gossiping turns
// critical and its services unhealthy, and one that leaves is
// deregistered.
func TestLeaderReconcilesMembers(t *testing.T) {
	s := startSingleServer(t, "srv1")
	sp := gossiptest.Start(t, gossiptest.LANConfig("srv1", "dc1", gossip.RoleServer))
	c1 := gossiptest.Start(t, gossiptest.LANConfig("c1", "dc1", gossip.RoleClient))
	c2 := gossiptest.Start(t, gossiptest.LANConfig("c2", "dc1", gossip.RoleClient))
	other := gossiptest.Start(t, gossiptest.LANConfig("x1", "dc2", gossip.RoleClient))
	gossiptest.Join(t, c1, sp)
	gossiptest.Join(t, c2, sp)
	gossiptest.WaitStatus(t, within, "c1", gossip.StatusAlive, sp)
	gossiptest.WaitStatus(t, within, "c2", gossip.StatusAlive, sp)
	if _, err := other.Join(context.Background(), []string{gossiptest.Addr(sp)}); err == nil {
		t.Fatal("a dc2 member joined the dc1 pool")
	}
	// Consume the joins' signal: only taking leadership triggers the
	// first reconcile (ReconcileInterval is an hour).
	select {
	case <-sp.Changes():
	default:
	}
	l := newLeader(t, testLeaderConfig(), s, sp)
	start := time.Now()
	runLeader(t, l)
	store := s.Store()
	waitGossip(t, store, map[string]catalog.HealthStatus{"srv1": "passing", "c1": "passing", "c2": "passing"})
	t.Logf("3 members registered %s after the leader started", time.Since(start).Round(time.Millisecond))
	// The 3 gossip checks, and the server's storage check on its cairn
	// service.
	if _, checks, err := store.ChecksInState(nil, catalog.HealthPassing); err != nil || len(checks) != 4 {
		t.Errorf("passing checks: got %d, err %v, want the 3 gossip checks and srv1's storage check", len(checks), err)
	} else {
		for _, c := range checks {
			if c.CheckID == consensus.StorageCheckID {
				if c.Node != "srv1" || c.ServiceID != consensus.ServerServiceID || c.Type != consensus.StorageCheckType {
					t.Errorf("storage check: got node %q, service %q, type %q; want srv1's, on %q, of type %q",
						c.Node, c.ServiceID, c.Type, consensus.ServerServiceID, consensus.StorageCheckType)
				}
				continue
			}
			if c.CheckID != consensus.GossipCheckID || c.Type != consensus.GossipCheckType || c.ServiceID != "" {
				t.Errorf("check %s/%s: got ID %q, type %q, service %q; want node-level %q of type %q",
					c.Node, c.CheckID, c.CheckID, c.Type, c.ServiceID, consensus.GossipCheckID, consensus.GossipCheckType)
			}
		}
	}
	// The leader keeps the cairn service of each server, on its RPC
	// address, and of no client.
	if got, want := cairnInstances(t, store), []string{"srv1=" + gossiptest.RPCAddr("srv1")}; !slices.Equal(got, want) {
		t.Errorf("cairn instances: got %v, want %v", got, want)
	}
	if _, nodes, _ := store.Nodes(nil); len(nodes) != 3 {
		t.Errorf("got %d catalog nodes, want 3", len(nodes))
	}

	// Reconciling a catalog that already matches writes nothing.
	before := store.Index()
	if err := l.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if after := store.Index(); after != before {
		t.Errorf("a reconcile without changes moved the index from %d to %d", before, after)
	}

	// A service on c1 leaves healthy answers when c1 stops gossiping.
	err := s.Register(context.Background(), &catalog.RegisterRequest{
		Node: "c1", Address: "127.0.0.1", Datacenter: "dc1", SkipNodeUpdate: true,
		Service: &catalog.Service{Service: "web", Port: 80},
	})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitGossip(t, store, map[string]catalog.HealthStatus{"c1": "critical", "c2": "passing"})
	t.Logf("c1 critical %s after its gossip stopped", time.Since(start).Round(time.Millisecond))
	_, inst, err := store.ServiceInstances(nil, "web", "")
	if err != nil || len(inst) != 1 || inst[0].Healthy(false) {
		t.Errorf("web on failed c1: got %+v, %v; want one unhealthy instance", inst, err)
	}

	if err := c2.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	waitGossip(t, store, map[string]catalog.HealthStatus{"c1": "critical", "c2": "absent", "srv1": "passing"})
}

// TestLeaderManagesServers runs three servers with their LAN pools and a
// client: a fourth server that joins gossip becomes a voter (a non-voter
// first, promoted by autopilot once stable) and is removed when it
// leaves; a new leader takes over the duties; a failed server is removed
// from Raft only as far as MinVoters allows.
func TestLeaderManagesServers(t *testing.T) {
	nodes := consensustest.StartCluster(t, 3)
	pools := map[*consensustest.Node]*gossip.Pool{}
	stops := map[*consensustest.Node]func(){}
	serverPool := func(n *consensustest.Node) *gossip.Pool {
		cfg := gossiptest.LANConfig(n.ID, "dc1", gossip.RoleServer)
		cfg.RPCAddr = n.Addr
		return gossiptest.Start(t, cfg)
	}
	for _, n := range nodes {
		pools[n] = serverPool(n)
	}
	client := gossiptest.Start(t, gossiptest.LANConfig("c1", "dc1", gossip.RoleClient))
	gossiptest.Join(t, pools[nodes[1]], pools[nodes[0]])
	gossiptest.Join(t, pools[nodes[2]], pools[nodes[0]])
	gossiptest.Join(t, client, pools[nodes[0]])
	for _, n := range nodes {
		stops[n] = runLeader(t, serveAutopilot(t, testAutopilotConfig(t), n, pools[n]))
	}
	leader := consensustest.WaitForLeader(t, nodes, within)
	all := map[string]catalog.HealthStatus{"s1": "passing", "s2": "passing", "s3": "passing", "c1": "passing"}
	waitGossip(t, leader.Store, all)

	// A fourth server joins gossip: the leader makes it a voter; it
	// leaves: the leader removes it from Raft and the catalog.
	s4 := consensustest.StartNode(t, "s4", t.TempDir(), "")
	p4 := serverPool(s4)
	serveAutopilot(t, testAutopilotConfig(t), s4, p4) // it answers the leader's RaftStats
	start := time.Now()
	gossiptest.Join(t, p4, pools[leader])
	waitVoters(t, leader.Server, "s1", "s2", "s3", "s4")
	t.Logf("s4 a voter %s after joining gossip", time.Since(start).Round(time.Millisecond))
	waitGossip(t, leader.Store, map[string]catalog.HealthStatus{"s4": "passing"})
	start = time.Now()
	if err := p4.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	waitVoters(t, leader.Server, "s1", "s2", "s3")
	waitGossip(t, leader.Store, map[string]catalog.HealthStatus{"s4": "absent"})
	t.Logf("s4 removed %s after leaving", time.Since(start).Round(time.Millisecond))

	// The old leader's duties stop with its Raft; the new leader repairs
	// a catalog that disagrees with gossip when it takes over.
	old := leader
	stops[old]()
	if err := old.Server.Deregister(context.Background(), &catalog.DeregisterRequest{Node: "c1"}); err != nil {
		t.Fatal(err)
	}
	old.Stop()
	leader = consensustest.WaitForLeader(t, nodes, within)
	waitGossip(t, leader.Store, all)

	// The old leader's gossip stops too: critical at once, and after
	// RemoveFailedServersAfter still a voter, as removing it would leave
	// fewer than MinVoters (3).
	if err := pools[old].Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitGossip(t, leader.Store, map[string]catalog.HealthStatus{old.ID: "critical"})
	var since time.Time
	for _, m := range pools[leader].Members() {
		if m.Node == old.ID {
			since = m.Since
		}
	}
	consensustest.WaitFor(t, within, func() error {
		if d := time.Since(since); d <= testLeaderConfig().RemoveFailedServersAfter {
			return fmt.Errorf("%s failed for %s only", old.ID, d)
		}
		return nil
	})
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := newLeader(t, testLeaderConfig(), leader.Server, pools[leader]).Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	waitVoters(t, leader.Server, ids...)

	// With MinVoters 2 the two alive voters may drop it.
	cfg := testLeaderConfig()
	cfg.MinVoters = 2
	if err := newLeader(t, cfg, leader.Server, pools[leader]).Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile with MinVoters 2: %v", err)
	}
	waitVoters(t, leader.Server, slices.DeleteFunc(ids, func(id string) bool { return id == old.ID })...)
}
