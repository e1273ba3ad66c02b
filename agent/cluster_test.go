package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// getJSON decodes the JSON answer of GET path on a's HTTP API into v.
func getJSON(a *agent.Agent, path string, v any) error {
	resp, err := http.Get("http://" + a.HTTPAddr().String() + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// leaderOf waits until every agent of idx agrees on one leader with all
// want Raft servers, every one a voter, and returns the leader's index in c.
func leaderOf(t *testing.T, c *agenttest.Cluster, idx []int, want int) int {
	t.Helper()
	leader := -1
	waittest.For(t, 20*time.Second, "a leader known to all", func() error {
		var first string
		for _, i := range idx {
			var addr string
			if err := getJSON(c.Agents[i], "/v1/status/leader", &addr); err != nil {
				return err
			}
			if addr == "" || first != "" && addr != first {
				return fmt.Errorf("%s sees leader %q, want %q", c.Configs[i].NodeName, addr, first)
			}
			first = addr
			var conf struct {
				Servers []struct {
					ID    string
					Voter bool
				}
			}
			if err := getJSON(c.Agents[i], "/v1/operator/raft/configuration", &conf); err != nil {
				return err
			}
			voters := 0
			for _, s := range conf.Servers {
				if s.Voter {
					voters++
				}
			}
			if len(conf.Servers) != want || voters != want {
				return fmt.Errorf("%s lists raft servers %+v, want %d voters", c.Configs[i].NodeName, conf.Servers, want)
			}
		}
		for _, i := range idx {
			if c.RPCAddr(i) == first {
				leader = i
				return nil
			}
		}
		return fmt.Errorf("leader %q is none of the agents", first)
	})
	return leader
}

// resolves waits until name has an SRV answer on a's DNS.
func resolves(t *testing.T, a *agent.Agent, name string) {
	t.Helper()
	waittest.For(t, 10*time.Second, "SRV "+name, func() error {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeSRV)
		r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, a.DNSAddr().String())
		if err != nil {
			return err
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			return fmt.Errorf("rcode %s, %d answers", dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		return nil
	})
}

func TestClusterOfThreeServers(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := agenttest.StartCluster(t, 3)
	all := []int{0, 1, 2}
	leader := leaderOf(t, c, all, 3)
	t.Logf("leader %s elected after %s", c.Configs[leader].NodeName, time.Since(start).Round(time.Millisecond))

	// Every server's node is in the catalog with its gossip check.
	waittest.For(t, 10*time.Second, "three nodes with a passing gossip check", func() error {
		var entries []struct {
			Node   struct{ Node string }
			Checks []struct{ CheckID, Status string }
		}
		if err := getJSON(c.Agents[2], "/v1/health/service/cairn", &entries); err != nil {
			return err
		}
		var nodes []string
		for _, e := range entries {
			for _, ch := range e.Checks {
				if ch.CheckID == "serfHealth" && ch.Status == "passing" {
					nodes = append(nodes, e.Node.Node)
				}
			}
		}
		slices.Sort(nodes)
		if !slices.Equal(nodes, []string{"s1", "s2", "s3"}) {
			return fmt.Errorf("nodes with a passing gossip check: %v", nodes)
		}
		return nil
	})

	// A write through a follower, forwarded to the leader, reaches every
	// server's DNS.
	ctx := context.Background()
	follower := (leader + 1) % 3
	if err := client(t, c.Agents[follower]).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "web", Port: 8080}); err != nil {
		t.Fatalf("register through follower %s: %v", c.Configs[follower].NodeName, err)
	}
	for _, a := range c.Agents {
		resolves(t, a, "web.service.dc1.cluster")
	}
	t.Logf("registered and resolved after %s", time.Since(start).Round(time.Millisecond))

	// Losing the leader (which leaves gracefully, so its node is
	// deregistered): the two others elect a new one, drop it from the
	// peers, and writes go on; the follower's service stays.
	stopped := time.Now()
	agenttest.Stop(t, c.Agents[leader])
	var rest []int
	for _, i := range all {
		if i != leader {
			rest = append(rest, i)
		}
	}
	leaderOf(t, c, rest, 2)
	t.Logf("new leader %s after the old one stopped", time.Since(stopped).Round(time.Millisecond))
	survivor := c.Agents[rest[0]]
	if err := client(t, survivor).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "api", Port: 9090}); err != nil {
		t.Fatalf("register after failover: %v", err)
	}
	resolves(t, c.Agents[rest[1]], "api.service.dc1.cluster")
	resolves(t, c.Agents[rest[1]], "web.service.dc1.cluster")

	// A server joining after the bootstrap (no -bootstrap-expect) is made
	// a voter by the leader and catches up on the catalog.
	cfg := agenttest.ServerConfig(t, "s4", 0, c.GossipAddr(rest[0]))
	c.Configs = append(c.Configs, cfg)
	c.Agents = append(c.Agents, agenttest.Start(t, cfg))
	leaderOf(t, c, append(rest, 3), 3)
	resolves(t, c.Agents[3], "api.service.dc1.cluster")
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// TestServerWithoutQuorumStillStarts: a server that bootstrapped alone
// and was later joined by a second voter is restarted while the other is
// down. It cannot elect a leader, but it starts all the same: its DNS and
// HTTP API answer, as any agent cut off from its servers does.
func TestServerWithoutQuorumStillStarts(t *testing.T) {
	t.Parallel()
	cfg1 := agenttest.ServerConfig(t, "s1", 0)
	c := &agenttest.Cluster{Configs: []config.Config{cfg1}}
	c.Agents = []*agent.Agent{agenttest.Start(t, cfg1)}
	cfg2 := agenttest.ServerConfig(t, "s2", 0, c.GossipAddr(0))
	c.Configs = append(c.Configs, cfg2)
	c.Agents = append(c.Agents, agenttest.Start(t, cfg2))
	leaderOf(t, c, []int{0, 1}, 2)
	for _, a := range c.Agents {
		if err := agent.Crash(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	a := agenttest.Start(t, cfg1)                        // fails the test if Start fails
	query(t, a, "udp", "s1.node.dc1.cluster", dns.TypeA) // fails the test without an answer
	var leader string
	if err := getJSON(a, "/v1/status/leader", &leader); err != nil || leader != "" {
		t.Errorf("leader without a quorum: got %q, %v; want none known", leader, err)
	}
}
