package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// autopilotWait bounds the waits of the autopilot tests: an election, a
// stabilization time and gossip's failure detection each take seconds.
const autopilotWait = 30 * time.Second

// raftSuffrage returns each server of the Raft configuration a knows,
// with whether it votes.
func raftSuffrage(t *testing.T, a *agent.Agent) (map[string]bool, error) {
	t.Helper()
	cfg, err := client(t, a).Operator().RaftConfiguration(context.Background())
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(cfg.Servers))
	for _, s := range cfg.Servers {
		out[s.Node] = s.Voter
	}
	return out, nil
}

// healthOf finds the server named name (its node name; its ID is its node
// ID) in h.
func healthOf(h *api.OperatorHealthReply, name string) (api.ServerHealth, bool) {
	i := slices.IndexFunc(h.Servers, func(s api.ServerHealth) bool { return s.Name == name })
	if i < 0 {
		return api.ServerHealth{}, false
	}
	return h.Servers[i], true
}

// TestAutopilot runs three servers and a client: the client reports the
// leader's view of the servers' health; an operator's configuration
// round-trips; a fourth server joins as a non-voter and votes once it has
// been stable for ServerStabilizationTime; a crashed server shows up
// unhealthy, and no further failure is tolerated.
func TestAutopilot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := agenttest.StartCluster(t, 3)
	leaderOf(t, c, []int{0, 1, 2}, 3)
	cl := agenttest.Start(t, agenttest.ClientConfig(t, "c1", c.GossipAddr(0)))
	op := client(t, cl).Operator()

	waittest.For(t, autopilotWait, "every server healthy, seen from the client", func() error {
		h, err := op.AutopilotServerHealth(ctx)
		if err != nil {
			return err
		}
		if !h.Healthy || h.FailureTolerance != 1 || len(h.Servers) != 3 {
			return fmt.Errorf("got %+v, want 3 healthy servers tolerating 1 failure", h)
		}
		leaders := 0
		for _, s := range h.Servers {
			if !s.Healthy || !s.Voter || s.SerfStatus != "alive" || s.LastIndex == 0 || s.Version == "" {
				return fmt.Errorf("server %+v: want a healthy voter, alive, with its log and version", s)
			}
			if s.Leader {
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("got %d leaders in %+v", leaders, h.Servers)
		}
		return nil
	})

	// The leader stored the servers' autopilot block (the defaults, but
	// for agenttest's short stabilization time); an operator changes the
	// stabilization time through the client.
	// The leader stores it in its reconcile, which may come after
	// autopilot's first health report.
	var conf *api.AutopilotConfiguration
	waittest.For(t, 10*time.Second, "the autopilot configuration stored", func() error {
		var err error
		if conf, err = op.AutopilotGetConfiguration(ctx); err == nil && conf.ModifyIndex == 0 {
			err = errors.New("not stored yet")
		}
		return err
	})
	if !conf.CleanupDeadServers || conf.LastContactThreshold != api.Duration(200*time.Millisecond) ||
		conf.MaxTrailingLogs != 250 || conf.ServerStabilizationTime != api.Duration(c.Configs[0].Autopilot.ServerStabilizationTime) || conf.ModifyIndex == 0 {
		t.Fatalf("initial configuration: got %+v, want the servers' autopilot block, stored", conf)
	}
	const stabilization = 2 * time.Second
	conf.ServerStabilizationTime, conf.MinQuorum = api.Duration(stabilization), 3
	if ok, err := op.AutopilotCASConfiguration(ctx, conf); err != nil || !ok {
		t.Fatalf("set-config: got %v, %v; want updated", ok, err)
	}
	if ok, err := op.AutopilotCASConfiguration(ctx, conf); err != nil || ok {
		t.Errorf("set-config with the index it replaced: got %v, %v; want not updated", ok, err)
	}
	// A stale read from any server sees it once that server has applied
	// the write.
	var got *api.AutopilotConfiguration
	waittest.For(t, 10*time.Second, "the new configuration on another server", func() error {
		var err error
		if got, err = client(t, c.Agents[1]).Operator().AutopilotGetConfiguration(ctx, &api.QueryOptions{AllowStale: true}); err == nil && got.ModifyIndex <= conf.ModifyIndex {
			err = fmt.Errorf("still at index %d", got.ModifyIndex)
		}
		return err
	})
	if got.ServerStabilizationTime != api.Duration(stabilization) || got.MinQuorum != 3 || got.ModifyIndex <= conf.ModifyIndex || got.CreateIndex != conf.CreateIndex {
		t.Errorf("read back through a server: got %+v, want the new values at a new index", got)
	}

	// A fourth server joins: a non-voter first, a voter once stable.
	s4 := agenttest.Start(t, agenttest.ServerConfig(t, "s4", 0, c.GossipAddr(0)))
	var added time.Time
	waittest.For(t, autopilotWait, "s4 added as a non-voter", func() error {
		servers, err := raftSuffrage(t, c.Agents[0])
		if err != nil {
			return err
		}
		voter, ok := servers["s4"]
		switch {
		case !ok:
			return errors.New("s4 not in the raft configuration yet")
		case voter:
			return errors.New("s4 is a voter already, before it was stable")
		}
		added = time.Now()
		return nil
	})
	waittest.For(t, autopilotWait, "s4 promoted to voter", func() error {
		servers, err := raftSuffrage(t, s4)
		if err != nil {
			return err
		}
		if !servers["s4"] {
			return fmt.Errorf("s4 not a voter yet: %v", servers)
		}
		return nil
	})
	h, err := op.AutopilotServerHealth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := healthOf(h, "s4"); !ok || !s.Voter || !s.Healthy || time.Since(s.StableSince) < stabilization {
		t.Errorf("s4 after its promotion: got %+v, want a healthy voter stable for at least %s", s, stabilization)
	}
	t.Logf("s4 a voter %s after it was seen as a non-voter", time.Since(added).Round(time.Millisecond))

	// A follower crashes: unhealthy, and the four voters (three healthy)
	// tolerate no further failure.
	victim := -1
	for i, a := range c.Agents {
		if agent.RaftLeader(a) != c.RPCAddr(i) {
			victim = i
			break
		}
	}
	name := c.Configs[victim].NodeName
	if err := agent.Crash(ctx, c.Agents[victim]); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, autopilotWait, name+" unhealthy", func() error {
		h, err := op.AutopilotServerHealth(ctx)
		if err != nil {
			return err
		}
		s, _ := healthOf(h, name)
		if h.Healthy || h.FailureTolerance != 0 || s.Healthy || !s.Voter {
			return fmt.Errorf("got %+v, want %s an unhealthy voter, no failure tolerated", h, name)
		}
		return nil
	})
	st, err := op.AutopilotState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victimState, s4State := st.Servers[c.Agents[victim].NodeID()], st.Servers[s4.NodeID()]
	if len(st.Voters) != 4 || victimState.Healthy || victimState.Name != name || s4State.Status != "voter" && s4State.Status != "leader" {
		t.Errorf("state: got %+v, want 4 voters, %s unhealthy", st, name)
	}
}

// TestLeaveKnobs: stopped by SIGTERM, a server does not leave (by
// default, leave_on_terminate is false for servers), so the others keep it
// in the Raft configuration and see it failed; a client does (true for
// clients), so it is gone from the catalog at once.
func TestLeaveKnobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := agenttest.StartCluster(t, 3)
	leader := leaderOf(t, c, []int{0, 1, 2}, 3)
	cl := agenttest.Start(t, agenttest.ClientConfig(t, "c1", c.GossipAddr(0)))
	catalogNode := func(node string) (*api.CatalogNode, error) {
		n, _, err := client(t, c.Agents[leader]).Catalog().Node(ctx, node)
		return n, err
	}
	waittest.For(t, autopilotWait, "c1 registered", func() error {
		n, err := catalogNode("c1")
		if err == nil && n == nil {
			err = errors.New("c1 not in the catalog yet")
		}
		return err
	})
	statusOf := func(node string) (int, error) {
		var members []struct {
			Name   string
			Status int
		}
		if err := getJSON(c.Agents[leader], "/v1/agent/members", &members); err != nil {
			return 0, err
		}
		for _, m := range members {
			if m.Name == node {
				return m.Status, nil
			}
		}
		return 0, nil
	}
	wantStatus := func(node string, want int) {
		t.Helper()
		waittest.For(t, autopilotWait, fmt.Sprintf("%s with status %d", node, want), func() error {
			got, err := statusOf(node)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%s has status %d, want %d", node, got, want)
			}
			return nil
		})
	}

	if err := cl.Stop(ctx, agent.ErrTerminated); err != nil {
		t.Fatal(err)
	}
	wantStatus("c1", 3) // left
	follower := (leader + 1) % 3
	name := c.Configs[follower].NodeName
	if err := c.Agents[follower].Stop(ctx, agent.ErrTerminated); err != nil {
		t.Fatal(err)
	}
	wantStatus(name, 4) // failed
	if err := agent.Reconcile(ctx, c.Agents[leader]); err != nil {
		t.Fatal(err)
	}
	if voters := agent.RaftVoters(c.Agents[leader]); !slices.Contains(voters, name) || len(voters) != 3 {
		t.Errorf("voters after %s stopped without leaving: got %v, want all three", name, voters)
	}
	waittest.For(t, autopilotWait, "c1 deregistered", func() error {
		n, err := catalogNode("c1")
		if err == nil && n != nil {
			err = errors.New("c1 still in the catalog")
		}
		return err
	})
}

// TestAutopilotConfigMatchesConsensus: the autopilot block's defaults are
// the servers' own, and the performance block's default commit timeout
// is consensus's.
func TestAutopilotConfigMatchesConsensus(t *testing.T) {
	t.Parallel()
	d := config.DefaultAutopilot()
	want := rpc.DefaultAutopilotConfig()
	got := rpc.AutopilotConfig{
		CleanupDeadServers: d.CleanupDeadServers, LastContactThreshold: d.LastContactThreshold,
		MaxTrailingLogs: uint64(d.MaxTrailingLogs), MinQuorum: uint(d.MinQuorum), ServerStabilizationTime: d.ServerStabilizationTime,
	}
	if got != want {
		t.Errorf("config.DefaultAutopilot(): got %+v, want consensus's %+v", got, want)
	}
	if p, c := config.DefaultPerformance(), consensus.DefaultConfig(); p.CommitTimeout != c.CommitTimeout || p.RaftMultiplier != 1 {
		t.Errorf("config.DefaultPerformance(): got %+v, want commit timeout %s and multiplier 1", p, c.CommitTimeout)
	}
}
