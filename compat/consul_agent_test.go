package compat_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// agentCluster is three servers and a client agent joined to them, with
// Consul's client for the first server and for the client agent.
type agentCluster struct {
	servers        *agenttest.Cluster
	client         *agent.Agent
	server, agentC *consul.Client
}

// newAgentCluster starts an agentCluster and waits until the client agent
// is in the catalog.
func newAgentCluster(t *testing.T) *agentCluster {
	t.Helper()
	c := &agentCluster{servers: agenttest.StartCluster(t, 3)}
	c.client = agenttest.Start(t, agenttest.ClientConfig(t, "c1", c.servers.GossipAddr(0), c.servers.GossipAddr(1), c.servers.GossipAddr(2)))
	var err error
	if c.server, err = consul.NewClient(&consul.Config{Address: c.servers.Agents[0].HTTPAddr().String()}); err != nil {
		t.Fatal(err)
	}
	if c.agentC, err = consul.NewClient(&consul.Config{Address: c.client.HTTPAddr().String()}); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "the client agent in the catalog", func() error {
		n, _, err := c.agentC.Catalog().Node("c1", nil)
		if err != nil {
			return err
		}
		if n == nil {
			return errors.New("no node c1 yet")
		}
		return nil
	})
	return c
}

// TestConsulClientMembers: what `consul members` (with -detailed and
// -wan) reads: every agent has a node ID, the same in /v1/agent/self, in
// its member's "id" tag and on its catalog node; members carry Consul's
// build, vsn, vsn_min and vsn_max tags; a client lists no WAN members.
func TestConsulClientMembers(t *testing.T) {
	t.Parallel()
	c := newAgentCluster(t)
	ids := map[string]string{"c1": c.client.NodeID()}
	for i, a := range c.servers.Agents {
		ids[fmt.Sprintf("s%d", i+1)] = a.NodeID()
	}
	for name, id := range ids {
		if len(id) != 36 {
			t.Errorf("%s: node ID %q, want a UUID", name, id)
		}
	}

	self, err := c.agentC.Agent().Self()
	if err != nil {
		t.Fatalf("Agent.Self: %v", err)
	}
	if got := self["Config"]["NodeID"]; got != ids["c1"] {
		t.Errorf("Self Config.NodeID: got %v, want %s", got, ids["c1"])
	}
	if got, _ := self["Member"]["Tags"].(map[string]any); got["id"] != ids["c1"] {
		t.Errorf("Self Member.Tags: got %v, want id %s", got, ids["c1"])
	}

	waittest.For(t, 30*time.Second, "every member in the client's LAN pool with Consul's tags", func() error {
		ms, err := c.agentC.Agent().Members(false)
		if err != nil {
			return err
		}
		if len(ms) != 4 {
			return fmt.Errorf("got %d members, want 4", len(ms))
		}
		for _, m := range ms {
			if m.Tags["id"] != ids[m.Name] {
				return fmt.Errorf("member %s: tag id %q, want %s", m.Name, m.Tags["id"], ids[m.Name])
			}
			build, rev, ok := strings.Cut(m.Tags["build"], ":")
			if !ok || build == "" || rev == "" {
				return fmt.Errorf("member %s: tag build %q, want <version>:<revision>", m.Name, m.Tags["build"])
			}
			if m.Tags["vsn"] == "" || m.Tags["vsn_min"] == "" || m.Tags["vsn_max"] == "" {
				return fmt.Errorf("member %s: tags %v, want vsn, vsn_min and vsn_max", m.Name, m.Tags)
			}
		}
		return nil
	})

	waittest.For(t, 30*time.Second, "every node in the catalog with its agent's node ID", func() error {
		nodes, _, err := c.agentC.Catalog().Nodes(nil)
		if err != nil {
			return err
		}
		seen := 0
		for _, n := range nodes {
			if want, ok := ids[n.Node]; ok {
				if n.ID != want {
					return fmt.Errorf("node %s: ID %q, want %s", n.Node, n.ID, want)
				}
				seen++
			}
		}
		if seen != len(ids) {
			return fmt.Errorf("got %d of the %d agents' nodes", seen, len(ids))
		}
		return nil
	})

	wan, err := c.agentC.Agent().Members(true)
	if err != nil || len(wan) != 0 {
		t.Errorf("client Members(wan): got %v, %v; want none and no error", wan, err)
	}
	waittest.For(t, 30*time.Second, "the servers in the WAN pool", func() error {
		wan, err := c.server.Agent().Members(true)
		if err == nil && len(wan) != 3 {
			err = fmt.Errorf("got %d members, want 3", len(wan))
		}
		return err
	})
}

// TestConsulClientInfo: /v1/agent/self has the Stats `consul info`
// prints: on a server agent, raft, serf_lan and serf_wan besides agent,
// build, consul and runtime; on a client, no raft. Every value is a
// string, as Consul's.
func TestConsulClientInfo(t *testing.T) {
	t.Parallel()
	c := newAgentCluster(t)
	for _, tc := range []struct {
		name    string
		client  *consul.Client
		want    map[string][]string
		missing []string
	}{
		{"server", c.server, map[string][]string{
			"agent":    {"services", "checks", "check_ttls", "check_monitors"},
			"build":    {"version", "revision"},
			"consul":   {"server", "leader", "leader_addr", "known_datacenters", "acl"},
			"raft":     {"state", "term", "last_log_index", "commit_index", "applied_index", "num_peers", "last_contact", "protocol_version"},
			"runtime":  {"goroutines", "cpu_count", "os", "arch", "version", "max_procs"},
			"serf_lan": {"members", "failed", "left", "health_score", "encrypted"},
			"serf_wan": {"members", "failed", "left", "health_score"},
		}, nil},
		{"client", c.agentC, map[string][]string{
			"agent":    {"services", "checks"},
			"consul":   {"server", "known_servers"},
			"runtime":  {"goroutines", "cpu_count", "os", "arch", "version"},
			"serf_lan": {"members", "failed", "left", "health_score"},
		}, []string{"raft", "serf_wan"}},
	} {
		self, err := tc.client.Agent().Self()
		if err != nil {
			t.Fatalf("%s: Agent.Self: %v", tc.name, err)
		}
		stats, ok := self["Stats"]
		if !ok {
			t.Fatalf("%s: Agent.Self has no Stats: %v", tc.name, self)
		}
		// The DNS domain, where Consul's tools (and cairn's UI) read it.
		if dom := self["DebugConfig"]["DNSDomain"]; dom != "cluster." {
			t.Errorf("%s: DebugConfig.DNSDomain: got %v, want cluster.", tc.name, dom)
		}
		for section, keys := range tc.want {
			sec, ok := stats[section].(map[string]any)
			if !ok {
				t.Errorf("%s: Stats.%s: got %T %v, want an object", tc.name, section, stats[section], stats[section])
				continue
			}
			for _, k := range keys {
				if v, ok := sec[k].(string); !ok || v == "" {
					t.Errorf("%s: Stats.%s.%s: got %#v, want a non-empty string", tc.name, section, k, sec[k])
				}
			}
		}
		for _, section := range tc.missing {
			if _, ok := stats[section]; ok {
				t.Errorf("%s: Stats.%s present, want none", tc.name, section)
			}
		}
	}
	self, _ := c.agentC.Agent().Self()
	if got := self["Stats"]["consul"].(map[string]any)["server"]; got != "false" {
		t.Errorf("client Stats.consul.server: got %v, want false", got)
	}
	waittest.For(t, 30*time.Second, "the client's serf_lan stats counting 4 members", func() error {
		self, err := c.agentC.Agent().Self()
		if err != nil {
			return err
		}
		if got := self["Stats"]["serf_lan"].(map[string]any)["members"]; got != "4" {
			return fmt.Errorf("serf_lan.members %v, want 4", got)
		}
		return nil
	})
	waittest.For(t, 30*time.Second, "the server's raft stats: 3 peers, a commit index", func() error {
		self, err := c.server.Agent().Self()
		if err != nil {
			return err
		}
		raft := self["Stats"]["raft"].(map[string]any)
		if raft["num_peers"] != "2" || raft["commit_index"] == "0" {
			return fmt.Errorf("raft stats %v, want num_peers 2 and a commit index", raft)
		}
		return nil
	})
}

// TestConsulClientRaftListPeers reads what `consul operator raft
// list-peers` reads: the Raft configuration, with its index and every
// server's fields, LastIndex (the Commit Index column) included, and
// (older CLIs) the autopilot health, matched to it by server ID.
func TestConsulClientRaftListPeers(t *testing.T) {
	t.Parallel()
	c := newAgentCluster(t)
	for _, tc := range []struct {
		name   string
		client *consul.Client
	}{{"server", c.server}, {"client", c.agentC}} {
		waittest.For(t, 30*time.Second, tc.name+": every server with a commit index", func() error {
			conf, err := tc.client.Operator().RaftGetConfiguration(nil)
			if err != nil {
				return err
			}
			// The Consul 1.22 CLI reads each server's LastIndex; older
			// ones the autopilot health's, matched by server ID.
			health, err := tc.client.Operator().AutopilotServerHealth(nil)
			if err != nil {
				return err
			}
			if conf.Index == 0 || len(conf.Servers) != 3 {
				return fmt.Errorf("configuration index %d with %d servers, want an index and 3", conf.Index, len(conf.Servers))
			}
			byID := map[string]consul.ServerHealth{}
			for _, h := range health.Servers {
				byID[h.ID] = h
			}
			leaders := 0
			for _, s := range conf.Servers {
				if s.Node == "" || s.ID == "" || s.Address == "" || s.ProtocolVersion != "3" || !s.Voter {
					return fmt.Errorf("server %+v, want Node, ID, Address, protocol 3, a voter", s)
				}
				if s.Leader {
					leaders++
				}
				h, ok := byID[s.ID]
				if !ok {
					return fmt.Errorf("server %s (%s): no autopilot health with its ID", s.Node, s.ID)
				}
				if h.LastIndex == 0 || s.LastIndex == 0 {
					return fmt.Errorf("server %s: LastIndex %d, autopilot's %d; want the Commit Index list-peers shows", s.Node, s.LastIndex, h.LastIndex)
				}
			}
			if leaders != 1 {
				return fmt.Errorf("%d leaders, want 1", leaders)
			}
			return nil
		})
	}
}
