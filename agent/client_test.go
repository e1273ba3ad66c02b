package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// srvTargets returns the SRV targets a's DNS answers for name, sorted;
// none when the answer is empty (NODATA or NXDOMAIN).
func srvTargets(a *agent.Agent, name string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeSRV)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, a.DNSAddr().String())
	if err != nil {
		return nil, err
	}
	if r.Rcode == dns.RcodeServerFailure {
		return nil, fmt.Errorf("SERVFAIL")
	}
	var out []string
	for _, rr := range r.Answer {
		if srv, ok := rr.(*dns.SRV); ok {
			out = append(out, srv.Target)
		}
	}
	slices.Sort(out)
	return out, nil
}

// answersWith waits until a's DNS answers name's SRV with exactly targets.
func answersWith(t *testing.T, a *agent.Agent, name string, targets ...string) {
	t.Helper()
	waittest.For(t, 20*time.Second, fmt.Sprintf("SRV %s → %v", name, targets), func() error {
		got, err := srvTargets(a, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, targets) {
			return fmt.Errorf("answers %v", got)
		}
		return nil
	})
}

// catalogNodes lists the node names in a's catalog.
func catalogNodes(a *agent.Agent) ([]string, error) {
	var nodes []struct{ Node string }
	if err := getJSON(a, "/v1/catalog/nodes", &nodes); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		out = append(out, n.Node)
	}
	return out, nil
}

// knowsLeader waits until a client has found a server in gossip and
// hears of a leader from it: until then its writes are not acknowledged.
func knowsLeader(t *testing.T, a *agent.Agent) {
	t.Helper()
	waittest.For(t, 20*time.Second, "a leader known to the client", func() error {
		var addr string
		if err := getJSON(a, "/v1/status/leader", &addr); err != nil {
			return err
		}
		if addr == "" {
			return fmt.Errorf("no leader known")
		}
		return nil
	})
}

// allMembers waits until a sees the five agents of TestClusterWithClients
// alive in gossip.
func allMembers(t *testing.T, a *agent.Agent) {
	t.Helper()
	waittest.For(t, 20*time.Second, "five alive members", func() error {
		members, err := client(t, a).Agent().Members(context.Background())
		if err != nil {
			return err
		}
		var got []string
		for _, m := range members {
			got = append(got, m.Name+"/"+m.Role+"/"+m.Status)
		}
		want := []string{"ca/client/alive", "cb/client/alive", "s1/server/alive", "s2/server/alive", "s3/server/alive"}
		if !slices.Equal(got, want) {
			return fmt.Errorf("members %v, want %v", got, want)
		}
		return nil
	})
}

// TestClusterWithClients is the cluster the issue describes: three servers
// and two clients. Clients find the servers in gossip alone; a service
// registered on one client is answered by the other's DNS; the leader is
// killed and the rest go on; the killed server restarts from its data dir
// with the catalog intact; a client that dies leaves DNS answers; a client
// that leaves is deregistered.
func TestClusterWithClients(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := agenttest.StartCluster(t, 3)
	leader := leaderOf(t, c, []int{0, 1, 2}, 3)

	ca := agenttest.Start(t, agenttest.ClientConfig(t, "ca", c.GossipAddr(1)))
	cb := agenttest.Start(t, agenttest.ClientConfig(t, "cb", c.GossipAddr(2)))
	ctx := context.Background()

	// Clients answer the status endpoints from a server.
	waittest.For(t, 20*time.Second, "client sees the leader", func() error {
		var addr string
		if err := getJSON(cb, "/v1/status/leader", &addr); err != nil {
			return err
		}
		if addr != c.RPCAddr(leader) {
			return fmt.Errorf("client sees leader %q, want %q", addr, c.RPCAddr(leader))
		}
		return nil
	})
	allMembers(t, cb)

	// A registration on client A reaches client B's DNS, pointing at A.
	if err := client(t, ca).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "web", Port: 8080}); err != nil {
		t.Fatalf("register on client ca: %v", err)
	}
	answersWith(t, cb, "web.service.dc1.cluster", "ca.node.dc1.cluster.")
	t.Logf("registered on one client, answered by the other after %s", time.Since(start).Round(time.Millisecond))

	// Kill the leader: the others elect a new one and writes go on through
	// the clients. (Once it has remembered the other members, so that it
	// can rejoin them below without being told where they are.)
	snapshot := filepath.Join(c.Configs[leader].DataDir, "gossip", "lan-members.json")
	waittest.For(t, 20*time.Second, "the leader's member snapshot", func() error {
		data, err := os.ReadFile(snapshot)
		if err != nil {
			return err
		}
		if n := strings.Count(string(data), ":"); n != 4 {
			return fmt.Errorf("%d members remembered: %s", n, data)
		}
		return nil
	})
	killed := time.Now()
	if err := agent.Crash(ctx, c.Agents[leader]); err != nil {
		t.Fatalf("crash leader: %v", err)
	}
	var rest []int
	for i := range 3 {
		if i != leader {
			rest = append(rest, i)
		}
	}
	newLeader := leaderOf(t, c, rest, 3) // a crashed server stays a voter
	t.Logf("leader %s killed; %s leads after %s", c.Configs[leader].NodeName, c.Configs[newLeader].NodeName,
		time.Since(killed).Round(time.Millisecond))
	waittest.For(t, 20*time.Second, "a write through a client after failover", func() error {
		return client(t, cb).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "api", Port: 9090})
	})
	answersWith(t, ca, "api.service.dc1.cluster", "cb.node.dc1.cluster.")

	// The killed server restarts from its data dir, told to join only
	// itself: it rejoins the members it remembers, with every write,
	// including the one made while it was down.
	cfg := c.Configs[leader]
	cfg.Join = []string{c.GossipAddr(leader)}
	c.Agents[leader] = agenttest.Start(t, cfg)
	leaderOf(t, c, []int{0, 1, 2}, 3)
	allMembers(t, c.Agents[leader]) // gossip too, not only Raft
	answersWith(t, c.Agents[leader], "web.service.dc1.cluster", "ca.node.dc1.cluster.")
	answersWith(t, c.Agents[leader], "api.service.dc1.cluster", "cb.node.dc1.cluster.")

	// Client A dies: its node's gossip check turns critical and its
	// service leaves the answers, while it stays in the catalog.
	died := time.Now()
	if err := agent.Crash(ctx, ca); err != nil {
		t.Fatalf("crash client: %v", err)
	}
	answersWith(t, cb, "web.service.dc1.cluster")
	t.Logf("dead client's service left DNS answers after %s", time.Since(died).Round(time.Millisecond))
	waittest.For(t, 10*time.Second, "ca's gossip check critical", func() error {
		var entries []struct {
			Node   struct{ Node string }
			Checks []struct{ CheckID, Status string }
		}
		if err := getJSON(cb, "/v1/health/service/web", &entries); err != nil {
			return err
		}
		for _, e := range entries {
			for _, ch := range e.Checks {
				if e.Node.Node == "ca" && ch.CheckID == "serfHealth" && ch.Status == "critical" {
					return nil
				}
			}
		}
		return fmt.Errorf("entries %+v", entries)
	})

	// Client B leaves through the API: it is deregistered, and the agent
	// signals its owner to stop.
	req, _ := http.NewRequest(http.MethodPut, "http://"+cb.HTTPAddr().String()+"/v1/agent/leave", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("leave: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("leave: status %s", resp.Status)
	}
	select {
	case <-cb.Left():
	case <-time.After(10 * time.Second):
		t.Fatal("Left not closed after the leave")
	}
	agenttest.Stop(t, cb)
	server := c.Agents[rest[0]]
	waittest.For(t, 20*time.Second, "cb deregistered", func() error {
		nodes, err := catalogNodes(server)
		if err != nil {
			return err
		}
		if slices.Contains(nodes, "cb") || !slices.Contains(nodes, "ca") {
			return fmt.Errorf("nodes %v: want ca (failed) kept and cb (left) gone", nodes)
		}
		return nil
	})
	answersWith(t, server, "api.service.dc1.cluster")
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// TestClientWritesThroughItsServersDeath: the server a client sends its
// calls to dies (kill -9); the next registration through the client
// succeeds at once, on another server, without the caller retrying.
func TestClientWritesThroughItsServersDeath(t *testing.T) {
	t.Parallel()
	cl := agenttest.StartCluster(t, 3)
	c := agenttest.Start(t, agenttest.ClientConfig(t, "c1", cl.GossipAddr(0), cl.GossipAddr(1), cl.GossipAddr(2)))
	waittest.For(t, 20*time.Second, "a first registration through the client", func() error {
		code, body := call(t, c, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80})
		if code != 200 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	used := agent.PreferredServer(c)
	for i, a := range cl.Agents {
		if cl.RPCAddr(i) == used {
			if err := agent.Crash(context.Background(), a); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, body := call(t, c, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 81})
	if code != 200 {
		t.Fatalf("register after the client's server %s died: got %d %s, want 200", used, code, body)
	}
	if now := agent.PreferredServer(c); now == used || now == "" {
		t.Errorf("the client still prefers %q after it died", now)
	}
}
