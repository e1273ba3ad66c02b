package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
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
