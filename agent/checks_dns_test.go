package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// put sends body to path on a's HTTP API and fails the test unless it
// answers 200.
func put(t *testing.T, a *agent.Agent, path, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+a.HTTPAddr().String()+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("PUT %s: %s %s", path, resp.Status, b.String())
	}
}

// target is an HTTP server on a fixed loopback address that can be
// stopped and started again, as a real service would be.
type target struct {
	t    *testing.T
	addr string
	srv  *http.Server
	done chan struct{}
}

func newTarget(t *testing.T) *target {
	tg := &target{t: t, addr: fmt.Sprintf("127.0.0.1:%d", agenttest.FreePort(t))}
	tg.start()
	t.Cleanup(tg.stop)
	return tg
}

func (tg *target) start() {
	ln, err := net.Listen("tcp", tg.addr)
	if err != nil {
		tg.t.Fatalf("target listen: %v", err)
	}
	tg.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})}
	tg.done = make(chan struct{})
	go func() {
		defer close(tg.done)
		if err := tg.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			tg.t.Errorf("target: %v", err)
		}
	}()
}

func (tg *target) stop() {
	if tg.srv == nil {
		return
	}
	_ = tg.srv.Close()
	<-tg.done
	tg.srv = nil
}

// TestChecksMoveInstancesInAndOutOfDNS is the end-to-end test: a
// service with an HTTP check on one client leaves the DNS answers of
// another client when its target stops, and comes back when it starts
// again; the same for a TTL check its application stops refreshing. Nobody
// touches the servers.
func TestChecksMoveInstancesInAndOutOfDNS(t *testing.T) {
	t.Parallel()
	c := agenttest.StartCluster(t, 3)
	leaderOf(t, c, []int{0, 1, 2}, 3)
	caCfg := agenttest.ClientConfig(t, "ca", c.GossipAddr(0))
	caCfg.AEInterval = time.Second
	ca := agenttest.Start(t, caCfg)
	cb := agenttest.Start(t, agenttest.ClientConfig(t, "cb", c.GossipAddr(1)))
	knowsLeader(t, ca)
	knowsLeader(t, cb)

	const interval, timeout = 200 * time.Millisecond, 100 * time.Millisecond
	tg := newTarget(t)
	put(t, ca, "/v1/agent/service/register", fmt.Sprintf(
		`{"Name":"web","Port":8080,"Check":{"HTTP":"http://%s/health","Interval":"%s","Timeout":"%s"}}`, tg.addr, interval, timeout))
	answersWith(t, cb, "web.service.dc1.cluster", "ca.node.dc1.cluster.")

	stopped := time.Now()
	tg.stop()
	answersWith(t, cb, "web.service.dc1.cluster")
	t.Logf("HTTP target stopped: gone from another agent's DNS after %s (interval %s, timeout %s)",
		time.Since(stopped).Round(time.Millisecond), interval, timeout)
	every := append([]*agent.Agent{ca}, c.Agents...)
	for _, a := range every {
		answersWith(t, a, "web.service.dc1.cluster")
	}
	started := time.Now()
	tg.start()
	answersWith(t, cb, "web.service.dc1.cluster", "ca.node.dc1.cluster.")
	t.Logf("HTTP target started: back after %s", time.Since(started).Round(time.Millisecond))
	for _, a := range every {
		answersWith(t, a, "web.service.dc1.cluster", "ca.node.dc1.cluster.")
	}

	// A TTL check: answered while the application reports, gone when it
	// stops for longer than the TTL, back when it reports again.
	put(t, ca, "/v1/agent/service/register", `{"Name":"api","Port":9090,"Check":{"CheckID":"api-ttl","TTL":"1s"}}`)
	put(t, ca, "/v1/agent/check/pass/api-ttl", "")
	answersWith(t, cb, "api.service.dc1.cluster", "ca.node.dc1.cluster.")
	silent := time.Now()
	answersWith(t, cb, "api.service.dc1.cluster")
	t.Logf("TTL 1s not refreshed: gone after %s", time.Since(silent).Round(time.Millisecond))
	put(t, ca, "/v1/agent/check/pass/api-ttl", "")
	answersWith(t, cb, "api.service.dc1.cluster", "ca.node.dc1.cluster.")

	// Maintenance mode takes web out without deregistering it.
	put(t, ca, "/v1/agent/service/maintenance/web?enable=true&reason=deploy", "")
	answersWith(t, cb, "web.service.dc1.cluster")
	put(t, ca, "/v1/agent/service/maintenance/web?enable=false", "")
	answersWith(t, cb, "web.service.dc1.cluster", "ca.node.dc1.cluster.")

	// Anti-entropy: web deleted from the catalog behind the agent's back
	// (straight through a server) is restored by the agent's next full
	// sync, with its check.
	createIndex := func() (uint64, error) {
		var entries []struct{ CreateIndex uint64 }
		if err := getJSON(cb, "/v1/catalog/service/web", &entries); err != nil {
			return 0, err
		}
		if len(entries) != 1 {
			return 0, fmt.Errorf("%d instances of web", len(entries))
		}
		return entries[0].CreateIndex, nil
	}
	before, err := createIndex()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := rpc.NewPool(rpc.DefaultPoolConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := &rpc.DeregisterRequest{Deregistration: catalog.DeregisterRequest{Node: "ca", ServiceID: "web"}}
	if err := pool.Call(ctx, c.RPCAddr(0), rpc.MethodCatalogDeregister, del, nil); err != nil {
		t.Fatalf("deregister web behind the agent's back: %v", err)
	}
	deleted := time.Now()
	waittest.For(t, 20*time.Second, "web registered anew", func() error {
		idx, err := createIndex()
		if err == nil && idx <= before {
			err = fmt.Errorf("web still created at %d, the registration deleted", idx)
		}
		return err
	})
	answersWith(t, cb, "web.service.dc1.cluster", "ca.node.dc1.cluster.")
	t.Logf("deleted behind the agent's back: restored after %s (ae_interval 1s)", time.Since(deleted).Round(time.Millisecond))
}
