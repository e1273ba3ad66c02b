package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// rcodeOf asks a's DNS for name's SRV records and returns the rcode.
func rcodeOf(t *testing.T, a *agent.Agent, name string) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeSRV)
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, a.DNSAddr().String())
	if err != nil {
		t.Fatalf("SRV %s: %v", name, err)
	}
	return r.Rcode
}

// TestCacheServesStaleWhileServersAreDown: with every server down, a
// client keeps answering the names it has cached, answers SERVFAIL (fast)
// for a name it never saw, and once the servers are back its cache
// catches up with changes without any restart.
func TestCacheServesStaleWhileServersAreDown(t *testing.T) {
	t.Parallel()
	c := agenttest.StartCluster(t, 3)
	leaderOf(t, c, []int{0, 1, 2}, 3)
	cb := agenttest.Start(t, agenttest.ClientConfig(t, "cb", c.GossipAddr(0), c.GossipAddr(1), c.GossipAddr(2)))
	ctx := context.Background()
	// Until gossip has told the client of a server its writes fail (and
	// are kept for anti-entropy); wait for an acknowledged one.
	waittest.For(t, 20*time.Second, "a registration through the client", func() error {
		return client(t, cb).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "web", Port: 8080})
	})
	answersWith(t, cb, "web.service.dc1.cluster", "cb.node.dc1.cluster.")

	for i := range c.Agents {
		if err := agent.Crash(ctx, c.Agents[i]); err != nil {
			t.Fatalf("crash s%d: %v", i+1, err)
		}
	}
	// The cached name keeps answering, question after question, while
	// the refreshes fail; a name never asked for fails fast.
	for i := range 20 {
		got, err := srvTargets(cb, "web.service.dc1.cluster")
		if err != nil || len(got) != 1 {
			t.Fatalf("cached name with the servers down (try %d): got %v, %v; want the cached answer", i, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	if rc := rcodeOf(t, cb, "never-seen.service.dc1.cluster"); rc != dns.RcodeServerFailure {
		t.Errorf("unseen name with the servers down: got %s, want SERVFAIL", dns.RcodeToString[rc])
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("SERVFAIL for an unseen name took %s, want it within the fetch timeout", d)
	}

	// The servers come back from their data dirs; the cache catches up.
	for i, cfg := range c.Configs {
		c.Agents[i] = agenttest.Start(t, cfg)
	}
	leaderOf(t, c, []int{0, 1, 2}, 3)
	waittest.For(t, 60*time.Second, "a write through the client after the outage", func() error {
		return client(t, cb).Agent().ServiceDeregister(ctx, "web")
	})
	answersWith(t, cb, "web.service.dc1.cluster")
	if err := client(t, cb).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "api", Port: 9090}); err != nil {
		t.Fatal(err)
	}
	answersWith(t, cb, "api.service.dc1.cluster", "cb.node.dc1.cluster.")
	waittest.For(t, 10*time.Second, "the unseen name answered NXDOMAIN once the servers are back", func() error {
		if rc := rcodeOf(t, cb, "never-seen.service.dc1.cluster"); rc != dns.RcodeNameError {
			return fmt.Errorf("rcode %s, want NXDOMAIN", dns.RcodeToString[rc])
		}
		return nil
	})
}
