package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestNodesFiveSecondsOff (issue 28, finding 5): with a server 5s ahead,
// a client 5s behind and a client 5s ahead, every client resolves and
// writes, and the server ahead is healthy to autopilot. Before requests
// carried the time left, the client behind had every request refused as
// late (SERVFAIL on every lookup), and the server ahead refused the
// leader's stats requests, so autopilot never saw it healthy.
func TestNodesFiveSecondsOff(t *testing.T) {
	t.Parallel()
	const off = 5 * time.Second
	first := agenttest.ServerConfig(t, "s1", 3)
	for i, offset := range []time.Duration{0, 0, off} {
		cfg := first
		if i > 0 {
			cfg = agenttest.ServerConfig(t, fmt.Sprintf("s%d", i+1), 3, agenttest.GossipAddr(first))
		}
		agenttest.StartPrepared(t, cfg, func(a *agent.Agent) { agent.SetClockOffset(a, offset) })
	}
	clients := map[string]*agent.Agent{}
	for name, offset := range map[string]time.Duration{"behind": -off, "ahead": off} {
		cfg := agenttest.ClientConfig(t, name, agenttest.GossipAddr(first))
		clients[name] = agenttest.StartPrepared(t, cfg, func(a *agent.Agent) { agent.SetClockOffset(a, offset) })
	}
	for name, a := range clients {
		waittest.For(t, 30*time.Second, "a write through the client "+name, func() error {
			if code, body := call(t, a, "", "PUT", "/v1/kv/"+name, "v"); code != http.StatusOK {
				return fmt.Errorf("status %d: %s", code, body)
			}
			return nil
		})
		resolves(t, a, "cairn.service.cluster")
	}
	op := client(t, clients["behind"]).Operator()
	waittest.For(t, autopilotWait, "every server healthy, the one 5s ahead too", func() error {
		h, err := op.AutopilotServerHealth(context.Background())
		if err != nil {
			return err
		}
		if !h.Healthy || len(h.Servers) != 3 {
			return fmt.Errorf("got %+v, want 3 healthy servers", h)
		}
		for _, s := range h.Servers {
			if !s.Healthy {
				return fmt.Errorf("server %s unhealthy: %+v", s.Name, s)
			}
		}
		return nil
	})
}

// TestClockSkewShown (issue 28, finding 5: "the only trace is a
// rate-limited warning"): with one server 5s ahead, autopilot's health
// and the leader's members list show each server's clock skew from the
// leader's, measured from RPC replies.
func TestClockSkewShown(t *testing.T) {
	t.Parallel()
	const off = 5 * time.Second
	offsets := map[string]time.Duration{"s1": 0, "s2": 0, "s3": off}
	first := agenttest.ServerConfig(t, "s1", 3)
	servers := map[string]*agent.Agent{}
	for _, name := range []string{"s1", "s2", "s3"} {
		cfg := first
		if name != "s1" {
			cfg = agenttest.ServerConfig(t, name, 3, agenttest.GossipAddr(first))
		}
		servers[name] = agenttest.StartPrepared(t, cfg, func(a *agent.Agent) { agent.SetClockOffset(a, offsets[name]) })
	}
	// Within half a round trip, and the pool measures only calls back
	// within 250ms; half a second leaves room on a loaded machine.
	near := func(got *api.Duration, want time.Duration) bool {
		return got != nil && (time.Duration(*got)-want).Abs() < 500*time.Millisecond
	}
	var leader string
	waittest.For(t, autopilotWait, "autopilot health showing each server's clock skew from the leader's", func() error {
		h, err := client(t, servers["s1"]).Operator().AutopilotServerHealth(context.Background())
		if err != nil {
			return err
		}
		for _, s := range h.Servers {
			if s.Leader {
				leader = s.Name
			}
		}
		if leader == "" || len(h.Servers) != 3 {
			return fmt.Errorf("got %+v, want 3 servers and a leader", h)
		}
		for _, s := range h.Servers {
			if want := offsets[s.Name] - offsets[leader]; !near(s.ClockSkew, want) {
				return fmt.Errorf("server %s (leader %s): got ClockSkew %v, want about %v", s.Name, leader, s.ClockSkew, want)
			}
		}
		return nil
	})
	// The leader's pool has called every other server (autopilot's
	// stats requests), so its members list shows their skew too.
	waittest.For(t, autopilotWait, "the leader's members showing the other servers' clock skew", func() error {
		members, err := client(t, servers[leader]).Agent().Members(context.Background())
		if err != nil {
			return err
		}
		if len(members) != 3 {
			return fmt.Errorf("got %+v, want 3 members", members)
		}
		for _, m := range members {
			if m.Name == leader {
				continue // its pool does not call itself
			}
			if want := offsets[m.Name] - offsets[leader]; !near(m.ClockSkew, want) {
				return fmt.Errorf("member %s on leader %s: got ClockSkew %v, want about %v", m.Name, leader, m.ClockSkew, want)
			}
		}
		return nil
	})
}
