package agent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// TestUnknownWriteSettlesWithItsAnswer (issue 28, finding 2): a write a
// client agent answers 503 "may or may not have been applied" for is,
// from that answer on, applied or never applied. c1 writes v1 while its
// path to the servers is frozen (its request waits on the way, as behind
// a partition or at a server stopped with SIGSTOP) and answers 503; c2
// then writes v2, acknowledged; the path thaws and the old request
// reaches its server. That server refuses it as late, and the key keeps
// v2. Before the fix, c1 answered after 2s while its request kept the
// hold's 7s: the thawed request ran, over v2.
func TestUnknownWriteSettlesWithItsAnswer(t *testing.T) {
	t.Parallel()
	c := agenttest.StartCluster(t, 3)
	leaderOf(t, c, []int{0, 1, 2}, 3)
	freezers := make(map[string]*rpctest.Freezer)
	for i := range c.Agents {
		freezers[c.RPCAddr(i)] = rpctest.NewFreezer(t, c.RPCAddr(i))
	}
	cfg1 := agenttest.ClientConfig(t, "c1", c.GossipAddr(0))
	const hold = 3 * time.Second
	cfg1.Performance.RPCHoldTimeout = hold
	c1 := agenttest.StartPrepared(t, cfg1, func(a *agent.Agent) {
		agent.SetServerDial(a, func(ctx context.Context, addr string) (net.Conn, error) {
			if f := freezers[addr]; f != nil {
				addr = f.Addr()
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		})
	})
	c2 := agenttest.Start(t, agenttest.ClientConfig(t, "c2", c.GossipAddr(0)))
	put := func(a *agent.Agent, v string) (int, string) {
		code, body := call(t, a, "", "PUT", "/v1/kv/k", v)
		return code, string(body)
	}
	waittest.For(t, 20*time.Second, "a write through each client", func() error {
		for _, a := range []*agent.Agent{c1, c2} {
			if code, body := put(a, "v0"); code != http.StatusOK {
				return fmt.Errorf("status %d: %s", code, body)
			}
		}
		return nil
	})

	for _, f := range freezers {
		f.Freeze()
	}
	start := time.Now()
	code, body := put(c1, "v1")
	answered := time.Since(start)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "may or may not") {
		t.Fatalf("write through the frozen path: got %d %s, want 503 saying it may or may not have been applied", code, body)
	}
	t.Logf("503 after %s (hold %s)", answered.Round(time.Millisecond), hold)
	if code, body := put(c2, "v2"); code != http.StatusOK {
		t.Fatalf("write through c2: got %d %s", code, body)
	}
	// The held bytes first, the closes of c1's connections (it gave up
	// on them) after: the server reads the request as it may when the
	// close comes later (the closes reach it anyway once the test ends).
	for _, f := range freezers {
		f.ThawData()
	}
	const late = `cairn_rpc_late_requests_refused_total{method="KVS.Apply"}`
	waittest.For(t, 20*time.Second, "the held write refused as late by its server", func() error {
		var n float64
		for _, s := range c.Agents {
			n += serverSamples(t, s)[late]
		}
		if n < 1 {
			if got := readKey(t, c2); got != "v2" {
				return fmt.Errorf("key reads %q", got)
			}
			return fmt.Errorf("%s = 0", late)
		}
		return nil
	})
	if got := readKey(t, c2); got != "v2" {
		t.Errorf("key after the held write reached its server: got %q, want the acknowledged v2", got)
	}
}

// readKey reads k through a, consistently.
func readKey(t *testing.T, a *agent.Agent) string {
	t.Helper()
	code, body := call(t, a, "", "GET", "/v1/kv/k?raw&consistent", nil)
	if code != http.StatusOK {
		t.Fatalf("read k: status %d: %s", code, body)
	}
	return strings.Trim(string(body), `"`)
}
