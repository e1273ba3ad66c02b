package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// topology is a datacenter the behaviour table runs against: the agent
// the table talks to, and the node names of its servers and of every
// agent.
type topology struct {
	name  string
	start func(t *testing.T) (a *agent.Agent, node string, servers, members []string)
}

var topologies = []topology{
	{"dev agent", func(t *testing.T) (*agent.Agent, string, []string, []string) {
		a := agenttest.Start(t, agenttest.Config(t))
		return a, "test", []string{"test"}, []string{"test"}
	}},
	{"one server and a client", func(t *testing.T) (*agent.Agent, string, []string, []string) {
		scfg := agenttest.ServerConfig(t, "s1", 1)
		agenttest.Start(t, scfg)
		c := agenttest.Start(t, agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg)))
		return c, "c1", []string{"s1"}, []string{"c1", "s1"}
	}},
	{"three servers and a client", func(t *testing.T) (*agent.Agent, string, []string, []string) {
		cl := agenttest.StartCluster(t, 3)
		c := agenttest.Start(t, agenttest.ClientConfig(t, "c1", cl.GossipAddr(0), cl.GossipAddr(1), cl.GossipAddr(2)))
		return c, "c1", []string{"s1", "s2", "s3"}, []string{"c1", "s1", "s2", "s3"}
	}},
}

// TestSameBehaviourOnEveryTopology runs one table of behaviours against a
// dev agent, a one-server datacenter with a client, and a three-server
// datacenter with a client: every server runs the same code, so each
// behaviour gives the same answer on each.
func TestSameBehaviourOnEveryTopology(t *testing.T) {
	t.Parallel()
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			a, node, servers, members := top.start(t)
			knowsLeader(t, a)
			c := client(t, a)
			ctx := context.Background()
			target := node + ".node.dc1.cluster."

			t.Run("join", func(t *testing.T) {
				waittest.For(t, 20*time.Second, "every agent alive in gossip", func() error {
					ms, err := c.Agent().Members(ctx)
					if err != nil {
						return err
					}
					var got []string
					for _, m := range ms {
						if m.Status == "alive" {
							got = append(got, m.Name)
						}
					}
					slices.Sort(got)
					if !slices.Equal(got, members) {
						return fmt.Errorf("alive members %v, want %v", got, members)
					}
					return nil
				})
			})
			t.Run("register and DNS", func(t *testing.T) {
				waittest.For(t, 20*time.Second, "an acknowledged registration", func() error {
					return c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "web", Port: 8080})
				})
				answersWith(t, a, "web.service.cluster", target)
				r := query(t, a, "udp", "web.service.dc1.cluster", dns.TypeA)
				if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "127.0.0.1" {
					t.Errorf("A web.service.dc1.cluster: got %v, want 127.0.0.1", r.Answer)
				}
			})
			t.Run("health", func(t *testing.T) {
				err := c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{
					ID: "web2", Name: "web", Port: 8081, Check: &api.AgentServiceCheck{CheckID: "web2-ttl", TTL: "1m", Status: "critical"},
				})
				if err != nil {
					t.Fatal(err)
				}
				waittest.For(t, 20*time.Second, "web2 in the catalog", func() error {
					entries, _, err := c.Health().Service(ctx, "web", "", false)
					if err != nil || len(entries) != 2 {
						return fmt.Errorf("got %d instances of web, err %v, want 2", len(entries), err)
					}
					return nil
				})
				answersWith(t, a, "web.service.cluster", target) // the critical one left out
				if err := c.Agent().PassTTL(ctx, "web2-ttl", ""); err != nil {
					t.Fatal(err)
				}
				answersWith(t, a, "web.service.cluster", target, target)
			})
			t.Run("deregister validation", func(t *testing.T) {
				err := c.Catalog().Deregister(ctx, &api.CatalogDeregistration{Node: node, ServiceID: "bad id!"})
				var se *api.StatusError
				if !errors.As(err, &se) || se.Code != 400 {
					t.Errorf("deregister ServiceID \"bad id!\": got %v, want a 400", err)
				}
			})
			t.Run("node check", func(t *testing.T) {
				waittest.For(t, 20*time.Second, "the gossip check of every agent passing", func() error {
					for _, n := range members {
						checks, _, err := c.Health().Node(ctx, n)
						if err != nil {
							return err
						}
						if !slices.ContainsFunc(checks, func(ch *api.HealthCheck) bool { return ch.CheckID == "serfHealth" && ch.Status == "passing" }) {
							return fmt.Errorf("node %s has checks %v, want gossip passing", n, checks)
						}
					}
					return nil
				})
			})
			t.Run("cairn service", func(t *testing.T) {
				var want []string
				for _, s := range servers {
					want = append(want, s+".node.dc1.cluster.")
				}
				answersWith(t, a, "cairn.service.cluster", want...)
			})
			t.Run("snapshot", func(t *testing.T) {
				rc, meta, err := c.Snapshot().Save(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				archive, err := io.ReadAll(rc)
				if err != nil || len(archive) == 0 || meta.LastIndex == 0 {
					t.Errorf("snapshot: got %d bytes at index %d, err %v, want an archive", len(archive), meta.LastIndex, err)
				}
			})
			t.Run("prepared query", func(t *testing.T) {
				_, err := c.PreparedQuery().Create(ctx, &api.PreparedQueryDefinition{Name: "webq", Service: api.ServiceQuery{Service: "web"}})
				if err != nil {
					t.Fatal(err)
				}
				answersWith(t, a, "webq.query.cluster", target, target)
			})
			t.Run("server port", func(t *testing.T) {
				// Every server listens for RPC where cairn.service says.
				r := query(t, a, "udp", "cairn.service.cluster", dns.TypeSRV)
				for _, rr := range r.Answer {
					srv := rr.(*dns.SRV)
					conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", srv.Port), time.Second)
					if err != nil {
						t.Errorf("server %s: RPC port %d: %v", srv.Target, srv.Port, err)
						continue
					}
					_ = conn.Close()
				}
			})
		})
	}
}

// TestServerServiceDoesNotFlap: on an idle three-server cluster whose
// anti-entropy runs every second, the cairn service (each server's own)
// stays as it is: neither the leader nor anti-entropy undoes what the
// other wrote. Blocking reads of it through several anti-entropy rounds
// of every server see the same three registrations (same create and
// modify indexes) whenever they return.
func TestServerServiceDoesNotFlap(t *testing.T) {
	t.Parallel()
	cfgs := agenttest.DatacenterConfigs(t, "dc1", 3)
	for i := range cfgs {
		cfgs[i].AEInterval = time.Second
	}
	cl := agenttest.StartConfigs(t, cfgs)
	a := cl.Agents[0]
	c := client(t, a)
	ctx := context.Background()
	answersWith(t, a, "cairn.service.cluster", "s1.node.dc1.cluster.", "s2.node.dc1.cluster.", "s3.node.dc1.cluster.")
	registrations := func(q *api.QueryOptions) (string, uint64) {
		t.Helper()
		svcs, meta, err := c.Catalog().Service(ctx, "cairn", "", q)
		if err != nil {
			t.Fatal(err)
		}
		var regs []string
		for _, s := range svcs {
			regs = append(regs, fmt.Sprintf("%s@%d/%d", s.Node, s.CreateIndex, s.ModifyIndex))
		}
		slices.Sort(regs)
		return strings.Join(regs, " "), meta.LastIndex
	}
	want, index := registrations(nil)
	// At least two anti-entropy rounds of each server (1s, each delayed by
	// up to a quarter at random).
	deadline := time.Now().Add(3 * time.Second)
	for left := time.Until(deadline); left > 0; left = time.Until(deadline) {
		got, next := registrations(&api.QueryOptions{WaitIndex: index, WaitTime: left})
		if got != want {
			t.Fatalf("cairn service changed at index %d: got %s, want %s", next, got, want)
		}
		index = next
	}
}
