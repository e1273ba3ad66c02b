package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestWipedServerRejoinsWithoutBootstrapping: a server whose raft
// directory was wiped (the operator's way out of a log it cannot read,
// issue 28) still sees its bootstrap_expect servers in gossip when it
// starts again, here while the others are still electing a leader after
// a restart of all three. It must not bootstrap a cluster of its own: it
// asks its peers, finds that they hold a Raft configuration, and waits for
// the leader, which sends it the log and the catalog; it ends a voter of
// the cluster the others kept, in their term.
func TestWipedServerRejoinsWithoutBootstrapping(t *testing.T) {
	t.Parallel()
	c := agenttest.StartCluster(t, 3)
	all := []int{0, 1, 2}
	leader := leaderOf(t, c, all, 3)
	ctx := context.Background()
	// An external registration: no agent's anti-entropy touches it.
	req := &catalog.RegisterRequest{Node: "ext-1", Address: "10.1.0.1",
		Service: &catalog.Service{ID: "web-1", Service: "web", Port: 8080, Weights: catalog.DefaultWeights}}
	if err := agent.RegisterInCatalog(ctx, c.Agents[leader], req); err != nil {
		t.Fatalf("register: %v", err)
	}
	wiped := (leader + 1) % 3
	waittest.For(t, 20*time.Second, "web on every server", func() error {
		for _, i := range all {
			if err := hasWeb(c.Agents[i]); err != nil {
				return fmt.Errorf("%s: %w", c.Configs[i].NodeName, err)
			}
		}
		return nil
	})

	// Every server crashes (a power cut, say); one of them cannot read its
	// log and its raft directory is wiped. The other two are started
	// first, then it: it sees all three in gossip while they are still
	// electing a leader.
	for _, i := range all {
		if err := agent.Crash(ctx, c.Agents[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(c.Configs[wiped].DataDir, "raft")); err != nil {
		t.Fatal(err)
	}
	name := c.Configs[wiped].NodeName
	for _, i := range []int{leader, (leader + 2) % 3, wiped} {
		c.Agents[i] = agenttest.Start(t, c.Configs[i])
	}
	a := c.Agents[wiped]

	// Until it hears from a leader, only a bootstrap of its own gives it a
	// Raft configuration: the leader's entries come with the leader.
	deadline := time.Now().Add(30 * time.Second)
	for agent.RaftLeader(a) == "" {
		if voters := agent.RaftVoters(a); len(voters) > 0 && agent.RaftLeader(a) == "" {
			t.Fatalf("%s formed a Raft configuration of its own (voters %v) before hearing from a leader: it bootstrapped", name, voters)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s heard from no leader in 30s", name)
		}
		time.Sleep(2 * time.Millisecond)
	}

	kept := []string{c.RPCAddr(leader), c.RPCAddr((leader + 2) % 3)}
	waittest.For(t, 30*time.Second, name+" back in the running cluster with its catalog", func() error {
		if l := agent.RaftLeader(a); !slices.Contains(kept, l) {
			return fmt.Errorf("%s follows %q, want one of the servers that kept their state %v", name, l, kept)
		}
		voters := agent.RaftVoters(a)
		slices.Sort(voters)
		if !slices.Equal(voters, []string{"s1", "s2", "s3"}) {
			return fmt.Errorf("%s's voters are %v", name, voters)
		}
		if got, want := agent.RaftTerm(a), agent.RaftTerm(c.Agents[(wiped+1)%3]); got != want {
			return fmt.Errorf("%s is in term %d, the cluster in %d", name, got, want)
		}
		return hasWeb(a)
	})
}

// hasWeb reports whether a's own catalog (a stale read, served by a
// server from its state) holds the web service.
func hasWeb(a *agent.Agent) error {
	var nodes []struct{ ServiceName string }
	if err := getJSON(a, "/v1/catalog/service/web?stale", &nodes); err != nil {
		return err
	}
	if len(nodes) == 0 {
		return fmt.Errorf("no web in its catalog")
	}
	return nil
}
