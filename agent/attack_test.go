package agent_test

import (
	"fmt"
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
// name of a live one, on another address: the catalog's node keeps its
// address and its services, and the newcomer is told why its writes fail.
func TestNodeNameTakeoverIsRefused(t *testing.T) {
	t.Parallel()
	scfg := agenttest.ServerConfig(t, "s1", 1)
	s := agenttest.Start(t, scfg)
	c2 := agenttest.Start(t, agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(scfg)))
	mustCall(t, c2, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}, nil)

	rcfg := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(scfg))
	rcfg.BindAddr, rcfg.AdvertiseAddr = "127.0.0.2", "127.0.0.2"
	rogue := agenttest.Start(t, rcfg)
	var last string
	waittest.For(t, 15*time.Second, "the impostor to be refused with a reason", func() error {
		code, body := call(t, rogue, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 9999})
		last = fmt.Sprintf("%d %s", code, body)
		if code >= 400 && strings.Contains(string(body), "held by a live member") {
			return nil
		}
		return fmt.Errorf("impostor's register: %s", last)
	})
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
