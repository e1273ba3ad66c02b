package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// TestTwoDatacentersDNS: dc1's client and server answer names of dc2 from
// their caches, follow dc2's changes, deny unknown datacenters and names
// dc1 does not have, and once every dc2 server is gone keep answering the
// dc2 names they have cached while a dc2 name never asked fails fast with
// SERVFAIL and dc1's names are untouched.
func TestTwoDatacentersDNS(t *testing.T) {
	t.Parallel()
	d := startTwoDCs(t)
	dc2Srv := d.dc2.RPCAddr(0)
	waittest.For(t, 30*time.Second, "web registered in dc2", func() error {
		return d.call(dc2Srv, rpc.MethodCatalogRegister, register("dc2", "web-1", "10.2.0.1", "web"), nil)
	})
	dc1Server := d.dc1.Agents[0]
	for _, a := range []*agent.Agent{d.client, dc1Server} {
		answersWith(t, a, "web.service.dc2.cluster", "web-1.node.dc2.cluster.")
		r := query(t, a, "udp", "web.service.dc2.cluster", dns.TypeA)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.2.0.1" {
			t.Errorf("A web.service.dc2 from %s: %v, want 10.2.0.1", a.DNSAddr(), r.Answer)
		}
		if rc := rcodeOf(t, a, "web.service.cluster"); rc != dns.RcodeNameError {
			t.Errorf("web in dc1 (it is only in dc2) from %s: %s, want NXDOMAIN", a.DNSAddr(), dns.RcodeToString[rc])
		}
		if rc := rcodeOf(t, a, "web.service.dc9.cluster"); rc != dns.RcodeNameError {
			t.Errorf("an unknown datacenter from %s: %s, want NXDOMAIN", a.DNSAddr(), dns.RcodeToString[rc])
		}
	}

	// A change in dc2 reaches dc1's cached answer (through the dc2 feed
	// the cache follows across the WAN).
	if err := d.call(dc2Srv, rpc.MethodCatalogRegister, register("dc2", "web-2", "10.2.0.2", "web"), nil); err != nil {
		t.Fatal(err)
	}
	answersWith(t, d.client, "web.service.dc2.cluster", "web-1.node.dc2.cluster.", "web-2.node.dc2.cluster.")

	for i, a := range d.dc2.Agents {
		if err := agent.Crash(context.Background(), a); err != nil {
			t.Fatalf("crash dc2 s%d: %v", i+1, err)
		}
	}
	// The cached dc2 name keeps answering (serve-stale), an unseen one
	// fails fast, and dc1's own names do not notice.
	for i := range 10 {
		got, err := srvTargets(d.client, "web.service.dc2.cluster")
		if err != nil || len(got) != 2 {
			t.Fatalf("cached dc2 name with dc2 down (try %d): %v, %v; want the cached answer", i, got, err)
		}
	}
	start := time.Now()
	if rc := rcodeOf(t, d.client, "api.service.dc2.cluster"); rc != dns.RcodeServerFailure {
		t.Errorf("an unseen dc2 name with dc2 down: %s, want SERVFAIL", dns.RcodeToString[rc])
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("SERVFAIL took %s, want it within the fetch timeout", took)
	}
	waittest.For(t, 10*time.Second, "dc1 names answered with dc2 down", func() error {
		if rc := rcodeOf(t, d.client, "c1.node.dc1.cluster"); rc != dns.RcodeSuccess {
			return fmt.Errorf("c1.node.dc1: %s", dns.RcodeToString[rc])
		}
		return nil
	})
}

// registerWithCheck registers service on node in dc with one service check
// in status.
func registerWithCheck(dc, node, addr, service string, status catalog.HealthStatus) *rpc.RegisterRequest {
	r := register(dc, node, addr, service)
	r.Registration.Checks = []*catalog.Check{{CheckID: "alive", Name: "alive", ServiceID: service, Status: status}}
	return r
}

// TestPreparedQueryFailsOverToAnotherDatacenter: a query defined in dc1
// with dc2 as its failover answers from dc1 while dc1 has a healthy
// instance, from dc2 through the same DNS name once dc1's is critical,
// and from dc1 again once it recovers.
func TestPreparedQueryFailsOverToAnotherDatacenter(t *testing.T) {
	t.Parallel()
	d := startTwoDCs(t)
	dc1Srv, dc2Srv := d.dc1.RPCAddr(0), d.dc2.RPCAddr(0)
	waittest.For(t, 30*time.Second, "pq registered in both datacenters", func() error {
		if err := d.call(dc1Srv, rpc.MethodCatalogRegister, registerWithCheck("dc1", "pq-1", "10.1.0.1", "pq", catalog.HealthPassing), nil); err != nil {
			return err
		}
		return d.call(dc2Srv, rpc.MethodCatalogRegister, registerWithCheck("dc2", "pq-2", "10.2.0.1", "pq", catalog.HealthPassing), nil)
	})
	ctx := context.Background()
	_, err := apiClient(t, d.client).PreparedQuery().Create(ctx, &api.PreparedQueryDefinition{
		Name:    "pq",
		Service: api.ServiceQuery{Service: "pq", Failover: api.QueryFailoverOptions{Datacenters: []string{"dc2"}}},
	})
	if err != nil {
		t.Fatalf("create the query: %v", err)
	}

	answersWith(t, d.client, "pq.query.cluster", "pq-1.node.dc1.cluster.")
	if err := d.call(dc1Srv, rpc.MethodCatalogRegister, registerWithCheck("dc1", "pq-1", "10.1.0.1", "pq", catalog.HealthCritical), nil); err != nil {
		t.Fatal(err)
	}
	answersWith(t, d.client, "pq.query.cluster", "pq-2.node.dc2.cluster.")
	waittest.For(t, 10*time.Second, "A pq.query answered with dc2's address", func() error {
		r := query(t, d.client, "udp", "pq.query.cluster", dns.TypeA)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.2.0.1" {
			return fmt.Errorf("%s %v, want dc2's 10.2.0.1", dns.RcodeToString[r.Rcode], r.Answer)
		}
		return nil
	})
	res, err := apiClient(t, d.client).PreparedQuery().Execute(ctx, "pq", "")
	if err != nil || res.Datacenter != "dc2" || res.Failovers != 1 || len(res.Nodes) != 1 {
		t.Errorf("execute after failover: %+v, %v; want one dc2 instance after one failover", res, err)
	}
	if err := d.call(dc1Srv, rpc.MethodCatalogRegister, registerWithCheck("dc1", "pq-1", "10.1.0.1", "pq", catalog.HealthPassing), nil); err != nil {
		t.Fatal(err)
	}
	answersWith(t, d.client, "pq.query.cluster", "pq-1.node.dc1.cluster.")
}
