package agent_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// TestServerPortBudgetPerClient is finding 7 of issue 27: a holder of a
// certificate from the CA, with no token, opens 1,000 connections to a
// server's port from one address (every connection over TLS, as the
// secure setup requires) and as many blocking queries as it can over
// them. The server holds at most limits.rpc_max_conns_per_client of its
// connections and limits.rpc_max_calls_per_client of its queries, refuses
// the rest with ErrTooManyCalls, and a client agent on another address
// still gets answers.
func TestServerPortBudgetPerClient(t *testing.T) {
	t.Parallel()
	const maxConns, maxCalls = 20, 200
	const conns, queries = 1000, 1000

	ca := tlsutiltest.NewCA(t)
	scfg := withTLS(t, agenttest.ServerConfig(t, "s1", 1), ca, true, "dc1")
	scfg.Limits.RPCMaxConnsPerClient, scfg.Limits.RPCMaxCallsPerClient = maxConns, maxCalls
	s := agenttest.Start(t, scfg)
	c1 := agenttest.Start(t, withTLS(t, agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg)), ca, false, "dc1"))
	mustCall(t, c1, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}, nil)
	waitService(t, c1, "web")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(scfg.Ports.Server))
	before := serverSamples(t, s)

	// The attacker: a client certificate of the CA, no token, one address.
	tlsc := ca.Configurator(t, false, "dc1")
	ctx, stop := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	t.Cleanup(func() { stop(); calls.Wait() }) // before the pools close and the agents stop
	live := openSessions(t, addr, tlsc.OutgoingRPC, conns)
	if len(live) > maxConns {
		t.Errorf("connections from the attacker's address served: got %d of %d, want at most %d", len(live), conns, maxConns)
	}
	if len(live) == 0 {
		t.Fatal("no connection from the attacker's address served at all")
	}

	var index rpc.ServicesResponse
	if err := live[0].Call(ctx, addr, rpc.MethodCatalogServices, &rpc.ServicesRequest{}, &index); err != nil {
		t.Fatalf("a read from the attacker: %v", err)
	}
	var refused, other atomic.Int64
	for i := range queries {
		p := live[i%len(live)]
		calls.Go(func() {
			args := &rpc.ServicesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: index.Index, MaxQueryTime: 10 * time.Minute}}
			err := p.Call(ctx, addr, rpc.MethodCatalogServices, args, &rpc.ServicesResponse{})
			switch {
			case errors.Is(err, rpc.ErrTooManyCalls):
				refused.Add(1)
			case ctx.Err() == nil:
				other.Add(1)
			}
		})
	}
	const held = `cairn_rpc_blocking_queries{method="Catalog.Services"}`
	var after map[string]float64
	waittest.For(t, 60*time.Second, "every blocking query held or refused", func() error {
		after = serverSamples(t, s)
		if n := after[held] + float64(refused.Load()+other.Load()); n < queries {
			return fmt.Errorf("%v of %d held or refused", n, queries)
		}
		return nil
	})
	if after[held] > maxCalls {
		t.Errorf("blocking queries the server holds: got %v, want at most %d", after[held], maxCalls)
	}
	if n := refused.Load(); n < queries-maxCalls {
		t.Errorf("queries refused with ErrTooManyCalls: got %d, want at least %d (other errors: %d)", n, queries-maxCalls, other.Load())
	}
	// The attacker's connections and c1's session, no more.
	if n := after["cairn_rpc_connections"]; n > maxConns+1 {
		t.Errorf("cairn_rpc_connections: got %v, want at most %d", n, maxConns+1)
	}
	t.Logf("server process (attacker and c1 in it too): goroutines %v → %v, heap in use %.1f → %.1f MB",
		before["go_goroutines"], after["go_goroutines"],
		before["go_memstats_heap_inuse_bytes"]/1e6, after["go_memstats_heap_inuse_bytes"]/1e6)

	// A client agent on another address is still answered, reads and
	// writes.
	mustCall(t, c1, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "api", "Port": 81}, nil)
	waitService(t, c1, "api")
}

// openSessions opens n RPC sessions (one pool each) to the server port at
// addr from 127.0.0.66 over TLS, at most 50 at a time, and returns the
// pools whose session the server serves (a ping answered). The pools are
// closed when the test ends.
func openSessions(t *testing.T, addr string, tlsFor func(string) *tls.Config, n int) []*rpc.Pool {
	t.Helper()
	var mu sync.Mutex
	var live []*rpc.Pool
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for range n {
		cfg := rpc.DefaultPoolConfig()
		cfg.DialTimeout, cfg.SourceAddr = 10*time.Second, attackerIP
		cfg.TLS, cfg.Datacenter = tlsFor, "dc1"
		p, err := rpc.NewPool(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if p.Probe(ctx, addr) == nil {
				mu.Lock()
				live = append(live, p)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return live
}

// serverSamples scrapes a's metrics.
func serverSamples(t *testing.T, a *agent.Agent) map[string]float64 {
	t.Helper()
	body, _ := get(t, a, "/v1/agent/metrics?format=prometheus")
	samples, err := parsePrometheus(body)
	if err != nil {
		t.Fatal(err)
	}
	return samples
}

// waitService waits until a's catalog lists the service name.
func waitService(t *testing.T, a *agent.Agent, name string) {
	t.Helper()
	waittest.For(t, tlsWait, name+" in the catalog", func() error {
		code, body := call(t, a, "", "GET", "/v1/catalog/services", nil)
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		if !strings.Contains(string(body), `"`+name+`"`) {
			return fmt.Errorf("not listed: %s", body)
		}
		return nil
	})
}
