package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

func client(t *testing.T, a *agent.Agent) *api.Client {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func query(t *testing.T, a *agent.Agent, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, a.DNSAddr().String())
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return r
}

func TestRegisterThenResolve(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	ctx := context.Background()
	err := client(t, a).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{
		Name: "web", Port: 8080, Tags: []string{"v1"},
	})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := query(t, a, network, "web.service.dc1.cluster", dns.TypeSRV)
			if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
				t.Fatalf("got rcode %s aa=%v answers %v, want one authoritative SRV", dns.RcodeToString[r.Rcode], r.Authoritative, r.Answer)
			}
			srv, ok := r.Answer[0].(*dns.SRV)
			if !ok || srv.Port != 8080 || srv.Target != "test.node.dc1.cluster." || srv.Priority != 1 || srv.Weight != 1 {
				t.Fatalf("got %v, want SRV 1 1 8080 test.node.dc1.cluster.", r.Answer[0])
			}
			if len(r.Extra) != 1 || r.Extra[0].(*dns.A).A.String() != "127.0.0.1" || r.Extra[0].Header().Name != srv.Target {
				t.Fatalf("got extra %v, want the target's A 127.0.0.1", r.Extra)
			}

			r = query(t, a, network, "web.service.cluster", dns.TypeA)
			if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "127.0.0.1" {
				t.Fatalf("A without dc: got %v, want 127.0.0.1", r.Answer)
			}
			r = query(t, a, network, "v1.web.service.cluster", dns.TypeSRV)
			if len(r.Answer) != 1 {
				t.Fatalf("tag v1: got %v, want one SRV", r.Answer)
			}
			r = query(t, a, network, "test.node.cluster", dns.TypeA)
			if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "127.0.0.1" {
				t.Fatalf("node A: got %v, want 127.0.0.1", r.Answer)
			}
		})
	}
}

func TestUnknownNamesAreNXDomainWithSOA(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	for _, name := range []string{"nope.service.cluster", "v2.nope.service.dc1.cluster", "nobody.node.cluster", "what.cluster"} {
		r := query(t, a, "udp", name, dns.TypeA)
		if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
			t.Errorf("%s: got rcode %s ns %v, want NXDOMAIN with the SOA", name, dns.RcodeToString[r.Rcode], r.Ns)
		}
	}
}

func TestDeregisterRemovesFromDNS(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	ctx := context.Background()
	c := client(t, a)
	if err := c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "db", ID: "db-1", Port: 5432}); err != nil {
		t.Fatal(err)
	}
	if r := query(t, a, "udp", "db.service.cluster", dns.TypeSRV); len(r.Answer) != 1 {
		t.Fatalf("before deregister: got %v, want one SRV", r.Answer)
	}
	if err := c.Agent().ServiceDeregister(ctx, "db-1"); err != nil {
		t.Fatal(err)
	}
	// The cache hears of the change through the change feed, within
	// milliseconds.
	waittest.For(t, 5*time.Second, "NXDOMAIN after deregister", func() error {
		if r := query(t, a, "udp", "db.service.cluster", dns.TypeSRV); r.Rcode != dns.RcodeNameError {
			return fmt.Errorf("got %s %v", dns.RcodeToString[r.Rcode], r.Answer)
		}
		return nil
	})
}

// TestRestartWithDataDirKeepsCatalog restarts an agent on the same data
// directory and expects both the Raft-held catalog and the agent's own
// services back without registering again.
func TestRestartWithDataDirKeepsCatalog(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Dev, cfg.Server = false, true // a server of a datacenter of one, its Raft log on disk
	cfg.DataDir = t.TempDir()
	a := agenttest.Start(t, cfg)
	ctx := context.Background()
	if err := client(t, a).Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "cache", Port: 6379}); err != nil {
		t.Fatal(err)
	}
	agenttest.Stop(t, a)

	a = agenttest.Start(t, cfg)
	c := client(t, a)
	svcs, _, err := c.Catalog().Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := svcs["cache"]; !ok {
		t.Fatalf("catalog after restart: got %v, want cache", svcs)
	}
	local, err := c.Agent().Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := local["cache"]; s == nil || s.Port != 6379 {
		t.Fatalf("agent services after restart: got %v, want cache:6379", local)
	}
	r := query(t, a, "udp", "cache.service.cluster", dns.TypeSRV)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.SRV).Port != 6379 {
		t.Fatalf("DNS after restart: got %v, want SRV port 6379", r.Answer)
	}
}

func TestAgentRegistersItsOwnNode(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	nodes, _, err := client(t, a).Catalog().Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Node)
	}
	if !slices.Equal(names, []string{"test"}) || nodes[0].Address != "127.0.0.1" || nodes[0].Datacenter != "dc1" {
		t.Fatalf("got nodes %+v, want only test at 127.0.0.1 in dc1", nodes)
	}
}

func TestBadRegistrationLeavesCatalogAlone(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	ctx := context.Background()
	c := client(t, a)
	if err := c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{ID: "web", Name: "web", Port: 80}); err != nil {
		t.Fatal(err)
	}
	err := c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{ID: "web", Name: "web", Port: 80, Tags: []string{"not a label"}})
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 400 || se.Field != "Tags[0]" {
		t.Fatalf("got %v, want a 400 naming Tags[0]", err)
	}
	svcs, _, err := c.Catalog().Service(ctx, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 || svcs[0].ServicePort != 80 || len(svcs[0].ServiceTags) != 0 {
		t.Fatalf("got %+v, want the first registration untouched", svcs)
	}
}

// TestMixedCaseDatacenter checks that a datacenter configured in upper case
// answers for its lowercase DNS names, implied or explicit.
func TestMixedCaseDatacenter(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Datacenter = "DC-East"
	a := agenttest.Start(t, cfg)
	if err := client(t, a).Agent().ServiceRegister(context.Background(), &api.AgentServiceRegistration{Name: "web", Port: 80}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web.service.cluster", "web.service.dc-east.cluster", "WEB.service.DC-EAST.cluster"} {
		r := query(t, a, "udp", name, dns.TypeSRV)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.SRV).Target != "test.node.dc-east.cluster." {
			t.Errorf("%s: got %s %v, want one SRV to test.node.dc-east.cluster.", name, dns.RcodeToString[r.Rcode], r.Answer)
		}
	}
}
