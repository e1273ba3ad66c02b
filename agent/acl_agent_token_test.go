package agent_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// TestServerReadyWithConsulsAgentPolicy: a server joining a secured
// cluster with an agent token holding only Consul's recommended agent
// policy (node:write on its name, service_prefix "" read) becomes ready,
// and cairn.service names it: the leader keeps the servers' cairn
// service, so the agent token needs no service:write on it.
func TestServerReadyWithConsulsAgentPolicy(t *testing.T) {
	t.Parallel()
	const agentSecret = "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"
	ca := tlsutiltest.NewCA(t)
	s1cfg := secured(t, agenttest.ServerConfig(t, "s1", 1), ca)
	s1cfg.ACL.Tokens.DNS = mgmtSecret
	s1 := agenttest.Start(t, s1cfg)
	waitManagement(t, s1)
	mustCall(t, s1, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{"Name": "agent-s2", "Rules": `node "s2" { policy = "write" }
service_prefix "" { policy = "read" }`}, nil)
	mustCall(t, s1, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{
		"SecretID": agentSecret, "Policies": []map[string]string{{"Name": "agent-s2"}}}, nil)

	s2cfg := secured(t, agenttest.ServerConfig(t, "s2", 0, agenttest.GossipAddr(s1cfg)), ca)
	s2cfg.ACL.Tokens.Agent = agentSecret
	s2 := agenttest.Start(t, s2cfg)
	waittest.For(t, aclTestWait, "s2's first sync", func() error {
		if !agent.Synced(s2) {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	answersWith(t, s1, "cairn.service.cluster", "s1.node.dc1.cluster.", "s2.node.dc1.cluster.")

	// The agent cannot take the servers' service for its own.
	code, body := call(t, s2, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"ID": "cairn", "Name": "cairn", "Port": 1})
	if code != http.StatusBadRequest {
		t.Errorf("register the cairn service through an agent: got %d %s, want 400", code, body)
	}
}
