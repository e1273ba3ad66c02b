package compat_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// newDevClient starts a dev agent (a server of one) and returns Consul's
// client for it once it has a leader.
func newDevClient(t *testing.T) *consul.Client {
	t.Helper()
	a := agenttest.Start(t, agenttest.Config(t))
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "a leader", func() error {
		l, err := c.Status().Leader()
		if err != nil {
			return err
		}
		if l == "" {
			return fmt.Errorf("no leader yet")
		}
		return nil
	})
	return c
}

// TestConsulClientAutopilotPartialConfig sets the configuration Terraform
// and Consul's own tests send when they set one field: the rest zero
// (consul/api sends absent durations as null). Consul stores it as sent,
// zeros included, and so does cairn; the only server, the leader, stays
// healthy under a zero LastContactThreshold.
func TestConsulClientAutopilotPartialConfig(t *testing.T) {
	t.Parallel()
	c := newDevClient(t)
	op := c.Operator()
	before, err := op.AutopilotGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !before.CleanupDeadServers {
		t.Fatalf("default configuration %+v, want CleanupDeadServers", before)
	}
	if err := op.AutopilotSetConfiguration(&consul.AutopilotConfiguration{CleanupDeadServers: false}, nil); err != nil {
		t.Fatalf("set {CleanupDeadServers: false}: %v, want it taken as Consul takes it", err)
	}
	got, err := op.AutopilotGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.CleanupDeadServers || got.LastContactThreshold.Duration() != 0 || got.ServerStabilizationTime.Duration() != 0 || got.MaxTrailingLogs != 0 {
		t.Errorf("after a partial set: got %+v (%s, %s), want every field as sent: false and zeros", got, got.LastContactThreshold, got.ServerStabilizationTime)
	}
	ok, err := op.AutopilotCASConfiguration(&consul.AutopilotConfiguration{CleanupDeadServers: true, ModifyIndex: got.ModifyIndex}, nil)
	if err != nil || !ok {
		t.Fatalf("partial CAS at the current index: %v, %v; want updated", ok, err)
	}
	waittest.For(t, 30*time.Second, "the leader healthy under a zero LastContactThreshold", func() error {
		h, err := op.AutopilotServerHealth(nil)
		if err != nil {
			return err
		}
		if !h.Healthy || len(h.Servers) != 1 || !h.Servers[0].Healthy {
			return fmt.Errorf("health %+v, want the one server healthy", h)
		}
		return nil
	})
}

// TestConsulClientServerServiceName: with server_service_name "consul" the
// servers are found as Consul's are, by the catalog, by health (passing)
// and in the list of services, where "cairn" no longer is.
func TestConsulClientServerServiceName(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.ServerServiceName = "consul"
	a := agenttest.Start(t, cfg)
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "the servers as service consul", func() error {
		svcs, meta, err := c.Catalog().Service("consul", "", nil)
		if err != nil {
			return err
		}
		if len(svcs) != 1 || meta.LastIndex == 0 || svcs[0].Datacenter != "dc1" || svcs[0].ServicePort == 0 {
			return fmt.Errorf("catalog service consul: %d instances (index %d), want the server on its RPC port", len(svcs), meta.LastIndex)
		}
		entries, _, err := c.Health().Service("consul", "", true, nil)
		if err != nil {
			return err
		}
		if len(entries) != 1 {
			return fmt.Errorf("passing instances of consul: got %d, want 1", len(entries))
		}
		names, _, err := c.Catalog().Services(nil)
		if err != nil {
			return err
		}
		if _, ok := names["consul"]; !ok {
			return fmt.Errorf("services %v: want consul", names)
		}
		if _, ok := names["cairn"]; ok {
			return fmt.Errorf("services %v: want no cairn", names)
		}
		return nil
	})
}

// TestConsulClientRaftPeers: the servers' Raft IDs are their node IDs, as
// Consul's (testutil's WaitForVoting and `consul operator raft` rely on
// it), in the Raft configuration and in autopilot's state; leadership
// moves to the server named by ID; a server is removed by ID or address,
// and an unknown one is a 404.
func TestConsulClientRaftPeers(t *testing.T) {
	t.Parallel()
	c := agenttest.StartCluster(t, 3)
	client, err := consul.NewClient(&consul.Config{Address: c.Agents[0].HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	op := client.Operator()
	names := map[string]string{} // node ID → node name
	for i, a := range c.Agents {
		names[a.NodeID()] = c.Configs[i].NodeName
	}
	leaderOf := func(cfg *consul.RaftConfiguration) string {
		for _, s := range cfg.Servers {
			if s.Leader {
				return s.ID
			}
		}
		return ""
	}
	var conf *consul.RaftConfiguration
	waittest.For(t, 60*time.Second, "three voters by node ID", func() error {
		conf, err = op.RaftGetConfiguration(nil)
		if err != nil {
			return err
		}
		voters := 0
		for _, s := range conf.Servers {
			if name, ok := names[s.ID]; !ok || s.Node != name {
				return fmt.Errorf("server %+v: want a node ID as ID and its node name as Node", s)
			}
			if s.Voter {
				voters++
			}
		}
		if voters != 3 || leaderOf(conf) == "" {
			return fmt.Errorf("%d voters (leader %q), want 3 and a leader", voters, leaderOf(conf))
		}
		st, err := op.AutopilotState(nil)
		if err != nil {
			return err
		}
		for id, name := range names {
			if s, ok := st.Servers[id]; !ok || s.Name != name || s.ID != id {
				return fmt.Errorf("autopilot state %v: want %s keyed by its node ID %s", st.Servers, name, id)
			}
		}
		return nil
	})

	var target string
	for id := range names {
		if id != leaderOf(conf) {
			target = id
			break
		}
	}
	res, err := op.RaftLeaderTransfer(target, nil)
	if err != nil || !res.Success {
		t.Fatalf("transfer leadership to %s: %+v, %v", names[target], res, err)
	}
	waittest.For(t, 30*time.Second, names[target]+" leading", func() error {
		conf, err = op.RaftGetConfiguration(nil)
		if err != nil {
			return err
		}
		if got := leaderOf(conf); got != target {
			return fmt.Errorf("leader %q, want %s", got, target)
		}
		return nil
	})

	if err := op.RaftRemovePeerByID("00000000-0000-0000-0000-000000000000", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("remove an unknown peer: got %v, want a 404", err)
	}
	var victim *consul.RaftServer
	for _, s := range conf.Servers {
		if !s.Leader {
			victim = s
			break
		}
	}
	if err := op.RaftRemovePeerByAddress(victim.Address, nil); err != nil {
		t.Fatalf("remove %s by address: %v", victim.Node, err)
	}
	conf, err = op.RaftGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The victim is still alive in gossip, so the leader may already have
	// added it back, as a non-voter for autopilot to promote (as Consul's
	// does): it must at least have lost its vote.
	for _, s := range conf.Servers {
		if s.ID == victim.ID && s.Voter {
			t.Errorf("configuration %+v still holds %s as a voter", *s, victim.Node)
		}
	}
}

// TestConsulClientTxnLockWithoutSession: a lock without a session fails
// as its operation, not the request: 409 with every operation's error in
// Consul's words, and nothing applied.
func TestConsulClientTxnLockWithoutSession(t *testing.T) {
	t.Parallel()
	c := newDevClient(t)
	ok, resp, _, err := c.KV().Txn(consul.KVTxnOps{
		{Verb: consul.KVLock, Key: "locked", Value: []byte("v")},
		{Verb: consul.KVGet, Key: "locked"},
	}, nil)
	if err != nil || ok {
		t.Fatalf("txn: got ok %v, %v; want a rolled-back transaction (409), no error", ok, err)
	}
	if resp == nil || len(resp.Errors) != 2 || len(resp.Results) != 0 ||
		resp.Errors[0].OpIndex != 0 || !strings.Contains(resp.Errors[0].What, "missing session") ||
		resp.Errors[1].OpIndex != 1 || !strings.Contains(resp.Errors[1].What, "doesn't exist") {
		t.Fatalf("txn: got %+v, want op 0 missing session, op 1 doesn't exist", resp)
	}
	if p, _, err := c.KV().Get("locked", nil); err != nil || p != nil {
		t.Errorf("key after the failed txn: got %+v, %v; want none", p, err)
	}
}
