package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestADeadNodesNameIsNotTaken plays the holder of the gossip key (and of
// no token) who starts an agent, on another address and with another
// node ID, under the name of a node that died with its services
// registered: the name stays bound to the dead node's ID, so the catalog
// keeps the node's address and ID, and its services never resolve to the
// impostor. The impostor keeps trying past the time memberlist forgets a
// dead node (GossipToTheDead), when it alone would let the name go.
func TestADeadNodesNameIsNotTaken(t *testing.T) {
	t.Parallel()
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	scfg := aclServerConfig(t, "s1")
	scfg.EncryptKey = key
	s := agenttest.Start(t, scfg)
	waitManagement(t, s)
	ccfg := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(scfg))
	ccfg.EncryptKey = key
	ccfg.ACL.Enabled, ccfg.ACL.DefaultPolicy, ccfg.ACL.Tokens.Agent = true, "deny", mgmtSecret
	c := agenttest.Start(t, ccfg)
	waittest.For(t, aclTestWait, "c2's web in the catalog", func() error {
		if code, body := call(t, c, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}); code != 200 {
			return fmt.Errorf("register: %d %s", code, body)
		}
		return nil
	})
	type catalogNode struct {
		Node     struct{ ID, Address string }
		Services map[string]struct{ Port int }
	}
	var before catalogNode
	mustCall(t, s, mgmtSecret, "GET", "/v1/catalog/node/c2", nil, &before)
	if before.Node.ID == "" || before.Node.Address != "127.0.0.1" {
		t.Fatalf("c2 in the catalog: %+v", before)
	}

	if err := agent.Crash(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, aclTestWait, "c2 failed", func() error {
		var checks []healthCheck
		mustCall(t, s, mgmtSecret, "GET", "/v1/health/node/c2", nil, &checks)
		for _, ch := range checks {
			if ch.CheckID == "serfHealth" && ch.Status == "critical" {
				return nil
			}
		}
		return fmt.Errorf("checks %+v", checks)
	})
	failed := time.Now()

	rcfg := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(scfg))
	rcfg.BindAddr, rcfg.AdvertiseAddr = attackerIP, attackerIP
	rcfg.EncryptKey = key
	rcfg.ACL.Enabled, rcfg.ACL.DefaultPolicy = true, "deny"
	agenttest.Start(t, rcfg) // its own data dir: another node ID

	// memberlist forgets the dead node GossipToTheDead after it failed;
	// then only the binding of its name keeps the impostor out. Done once
	// the server refused the impostor after that point.
	lan, _ := agent.GossipTiming(s)
	forgotten := lan.GossipToTheDead + 5*time.Second
	var mark uint64
	marked := false
	var read time.Time
	waittest.For(t, forgotten+60*time.Second, "the impostor refused after the dead node is forgotten by memberlist", func() error {
		if time.Since(read) > 200*time.Millisecond {
			read = time.Now()
			var now catalogNode
			mustCall(t, s, mgmtSecret, "GET", "/v1/catalog/node/c2", nil, &now)
			if now.Node.Address != before.Node.Address || now.Node.ID != before.Node.ID {
				t.Fatalf("c2 taken over after %s: the catalog holds %+v, had %+v", time.Since(failed).Round(time.Second), now.Node, before.Node)
			}
		}
		switch {
		case !marked && time.Since(failed) > forgotten:
			mark, marked = agent.NameConflicts(s), true
		case marked && agent.NameConflicts(s) > mark:
			return nil
		}
		return fmt.Errorf("%s since c2 failed; refusals %d", time.Since(failed).Round(time.Second), agent.NameConflicts(s))
	})

	var after catalogNode
	mustCall(t, s, mgmtSecret, "GET", "/v1/catalog/node/c2", nil, &after)
	if after.Node != before.Node {
		t.Errorf("c2 in the catalog: got %+v, want %+v", after.Node, before.Node)
	}
	if web, ok := after.Services["web"]; !ok || web.Port != 80 {
		t.Errorf("c2's services: got %v, want web kept", after.Services)
	}
	var instances []struct{ Node, Address string }
	mustCall(t, s, mgmtSecret, "GET", "/v1/catalog/service/web", nil, &instances)
	for _, in := range instances {
		if in.Address == attackerIP {
			t.Errorf("web resolves to the impostor: %+v", instances)
		}
	}
	var members []struct {
		Name, Addr string
		Status     int
	}
	mustCall(t, s, mgmtSecret, "GET", "/v1/agent/members", nil, &members)
	for _, m := range members {
		if m.Name == "c2" && m.Addr == attackerIP {
			t.Errorf("the server's gossip took the impostor as c2: %+v", m)
		}
	}
}
