package agent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestForgedRaftHeartbeatIsRefused plays a neighbour on the network who
// sends a server one AppendEntries heartbeat of a leader that does not
// exist, in term 1,000,000: a server must not take it (it would step down
// to follow "rogue", fail writes until the next election, and jump its
// term). Without TLS, Raft is taken only from the servers of the
// datacenter in its gossip pool.
// attackerIP is the address the attacks come from: on loopback, but not
// the address of any agent of the tests.
const attackerIP = "127.0.0.66"

func TestForgedRaftHeartbeatIsRefused(t *testing.T) {
	t.Parallel()
	cl := agenttest.StartCluster(t, 3)
	leader := leaderAgent(t, cl)
	before := agent.RaftTerm(leader)
	for i := range cl.Agents {
		resp, err := consensustest.ForgeHeartbeat(attackerIP, cl.RPCAddr(i), 1_000_000)
		if err == nil {
			t.Errorf("server %d answered the forged heartbeat: %+v", i, resp)
		}
	}
	for i, a := range cl.Agents {
		if term := agent.RaftTerm(a); term >= 1_000_000 {
			t.Errorf("server %d took the forged term: %d", i, term)
		}
	}
	if after := agent.RaftTerm(leader); after != before {
		t.Errorf("leader's term moved from %d to %d", before, after)
	}
}

// TestNodeNameTakeoverIsRefused plays a second agent started with the node
// name of a live one, on another address: gossip keeps the member it knew
// and the newcomer learns of the conflict (it logs it as an error); the
// servers refuse its writes; the catalog's node keeps its address and its
// services.
func TestNodeNameTakeoverIsRefused(t *testing.T) {
	t.Parallel()
	scfg := agenttest.ServerConfig(t, "s1", 1)
	s := agenttest.Start(t, scfg)
	c2 := agenttest.Start(t, agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(scfg)))
	waittest.For(t, 15*time.Second, "c2's web in the catalog", func() error {
		if code, body := call(t, c2, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}); code != http.StatusOK {
			return fmt.Errorf("register: %d %s", code, body)
		}
		return nil
	})

	rcfg := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(scfg))
	rcfg.BindAddr, rcfg.AdvertiseAddr = "127.0.0.2", "127.0.0.2"
	rogue := agenttest.Start(t, rcfg)
	waittest.For(t, 15*time.Second, "the impostor to learn of the conflict", func() error {
		if n := agent.NameConflicts(rogue); n == 0 {
			return fmt.Errorf("no name conflict seen yet")
		}
		return nil
	})
	if code, body := call(t, rogue, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 9999}); code == 200 {
		t.Fatalf("the impostor's registration: got 200 %s, want it refused", body)
	}
	var node struct {
		Node     struct{ Address string }
		Services map[string]struct{ Port int }
	}
	mustCall(t, s, "", "GET", "/v1/catalog/node/c2", nil, &node)
	if node.Node.Address != "127.0.0.1" {
		t.Errorf("c2's address in the catalog: got %s, want 127.0.0.1", node.Node.Address)
	}
	if web, ok := node.Services["web"]; !ok || web.Port != 80 {
		t.Errorf("c2's web: got %+v, want port 80 kept", node.Services)
	}
}

// TestRegistrationOfALiveMembersNameIsRefused: a write naming a node that
// a live member holds, with another address, is refused by the servers
// with the reason, whoever sends it.
func TestRegistrationOfALiveMembersNameIsRefused(t *testing.T) {
	t.Parallel()
	s := agenttest.Start(t, agenttest.Config(t))
	reg := map[string]any{"Node": "test", "Address": "10.9.9.9", "Service": map[string]any{"Service": "web", "Port": 80}}
	code, body := call(t, s, "", "PUT", "/v1/catalog/register", reg)
	if code != 400 || !strings.Contains(string(body), "held by a live member") {
		t.Fatalf("register node test elsewhere: got %d %s, want 400 naming the live member", code, body)
	}
}

// TestHTTPAttacksAreRefused plays a hostile web page and hostile clients
// against a secured agent: a DNS-rebound Host header, a cross-origin
// text/plain POST (CSRF), a body sent a byte at a time, a filter built to
// cost the parser, and anonymous writes. Each is refused, and the agent
// answers its real clients afterwards.
func TestHTTPAttacksAreRefused(t *testing.T) {
	t.Parallel()
	cfg := aclServerConfig(t, "s1")
	cfg.HTTP.ReadTimeout = 500 * time.Millisecond
	s := agenttest.Start(t, cfg)
	waitManagement(t, s)
	base := "http://" + s.HTTPAddr().String()

	send := func(method, path, host, origin, ctype, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("X-Consul-Token", mgmtSecret) // even a valid token does not help a forged request
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := send("GET", "/v1/catalog/services", "evil.example:8500", "", "", ""); code != http.StatusForbidden {
		t.Errorf("rebound Host header: got %d %s, want 403", code, body)
	}
	query := `{"Name":"csrf","Service":{"Service":"web"}}`
	if code, body := send("POST", "/v1/query", s.HTTPAddr().String(), "http://evil.example", "text/plain", query); code != http.StatusForbidden {
		t.Errorf("cross-origin POST: got %d %s, want 403", code, body)
	}
	var queries []map[string]any
	mustCall(t, s, mgmtSecret, "GET", "/v1/query", nil, &queries)
	if len(queries) != 0 {
		t.Errorf("a refused cross-origin POST created %v", queries)
	}

	costly := "/v1/health/service/web?filter=" + url.QueryEscape(strings.Repeat("(", 64)+"Service.Service == web")
	start := time.Now()
	if code, body := send("GET", costly, s.HTTPAddr().String(), "", "", ""); code != http.StatusBadRequest || !strings.Contains(body, "filter") {
		t.Errorf("costly filter: got %d %s, want 400 naming filter", code, body)
	}
	t.Logf("costly filter refused in %s", time.Since(start))

	// A body that never ends: the agent closes the connection once the
	// read timeout has passed, whatever the client still sends.
	conn, err := net.Dial("tcp", s.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /v1/agent/service/register HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\nX-Consul-Token: %s\r\n\r\n{", s.HTTPAddr(), mgmtSecret)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_, _ = io.Copy(io.Discard, conn)
	}()
	waittest.For(t, 5*time.Second, "the agent to close the slow body's connection", func() error {
		_, _ = conn.Write([]byte(" ")) // one byte at a time, as a slow client does
		select {
		case <-closed:
			return nil
		default:
			return fmt.Errorf("still open")
		}
	})

	// Anonymous writes are refused; real clients are served.
	if code, _ := call(t, s, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}); code != http.StatusForbidden {
		t.Errorf("anonymous register: got %d, want 403", code)
	}
	mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}, nil)
}

// TestRogueServerWithoutTheGossipKeyIsKeptOut plays a neighbour starting
// an agent with -server and a join address against a cluster with a gossip
// key: without the key it cannot join the pool, so it never becomes a
// voter nor a server anyone sends requests to.
func TestRogueServerWithoutTheGossipKeyIsKeptOut(t *testing.T) {
	t.Parallel()
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	scfg := agenttest.ServerConfig(t, "s1", 1)
	scfg.EncryptKey = key
	s := agenttest.Start(t, scfg)
	rcfg := agenttest.ServerConfig(t, "rogue", 0)
	rcfg.BindAddr, rcfg.AdvertiseAddr = "127.0.0.3", "127.0.0.3"
	rogue := agenttest.Start(t, rcfg)
	code, body := call(t, rogue, "", "PUT", "/v1/agent/join/"+agenttest.GossipAddr(scfg), nil)
	if code == http.StatusOK {
		t.Fatalf("the rogue joined a pool it has no key for: %s", body)
	}
	if err := agent.Reconcile(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if voters := agent.RaftVoters(s); len(voters) != 1 || voters[0] != "s1" {
		t.Fatalf("voters: got %v, want s1 only", voters)
	}
	var members []struct{ Name string }
	mustCall(t, s, "", "GET", "/v1/agent/members", nil, &members)
	if len(members) != 1 {
		t.Fatalf("members: got %v, want s1 only", members)
	}
}
