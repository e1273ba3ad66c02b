package compat_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	consul "github.com/hashicorp/consul/api"
)

// newConsulClient starts a dev agent and returns Consul's client for it.
func newConsulClient(t *testing.T) *consul.Client {
	t.Helper()
	a := agenttest.Start(t, agenttest.Config(t))
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConsulClientDiscovery walks Consul's client through a service's life
// on a cairn agent: register with a TTL check, list and filter through the
// catalog and health endpoints, wait in a blocking query for a second
// instance, pass the TTL check, deregister.
func TestConsulClientDiscovery(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	ag, cat, health := c.Agent(), c.Catalog(), c.Health()

	self, err := ag.Self()
	if err != nil {
		t.Fatalf("Agent.Self: %v", err)
	}
	if got := self["Config"]["NodeName"]; got != "test" {
		t.Errorf("Self Config.NodeName: got %v, want test", got)
	}
	if got := self["Config"]["Datacenter"]; got != "dc1" {
		t.Errorf("Self Config.Datacenter: got %v, want dc1", got)
	}
	if name, err := ag.NodeName(); err != nil || name != "test" {
		t.Errorf("Agent.NodeName: got %q, %v; want test", name, err)
	}

	reg := &consul.AgentServiceRegistration{
		ID: "web1", Name: "web", Tags: []string{"v1", "primary"}, Port: 8080, Address: "127.0.0.1",
		Meta:  map[string]string{"version": "1"},
		Check: &consul.AgentServiceCheck{CheckID: "web1-ttl", Name: "web1 alive", TTL: "30s"},
	}
	if err := ag.ServiceRegister(reg); err != nil {
		t.Fatalf("ServiceRegister: %v", err)
	}

	svc, _, err := ag.Service("web1", nil)
	if err != nil {
		t.Fatalf("Agent.Service: %v", err)
	}
	if svc.ID != "web1" || svc.Service != "web" || svc.Port != 8080 || svc.Address != "127.0.0.1" || !slices.Equal(svc.Tags, []string{"v1", "primary"}) {
		t.Errorf("Agent.Service: got %+v", svc)
	}
	if _, _, err := ag.Service("nosuch", nil); err == nil {
		t.Error("Agent.Service(nosuch): got no error, want a 404")
	} else if se, ok := err.(consul.StatusError); !ok || se.Code != 404 {
		t.Errorf("Agent.Service(nosuch): got %v, want a StatusError 404", err)
	}

	// The catalog: every field the client reads, with ?tag and ?filter.
	insts, meta, err := cat.Service("web", "", nil)
	if err != nil {
		t.Fatalf("Catalog.Service: %v", err)
	}
	if len(insts) != 1 {
		t.Fatalf("Catalog.Service: got %d instances, want 1", len(insts))
	}
	in := insts[0]
	if in.Node != "test" || in.Datacenter != "dc1" || in.ServiceID != "web1" || in.ServiceName != "web" ||
		in.ServicePort != 8080 || in.ServiceAddress != "127.0.0.1" || in.ServiceMeta["version"] != "1" ||
		!slices.Equal(in.ServiceTags, []string{"v1", "primary"}) || in.Address == "" || in.ModifyIndex == 0 {
		t.Errorf("Catalog.Service: got %+v", in)
	}
	if meta.LastIndex == 0 || !meta.KnownLeader {
		t.Errorf("Catalog.Service meta: got %+v, want an index and a known leader", meta)
	}
	for _, tc := range []struct {
		tag, filter string
		want        int
	}{
		{"v1", "", 1},
		{"v2", "", 0},
		{"", `ServiceMeta.version == "1"`, 1},
		{"", `ServiceMeta.version == "2"`, 0},
		{"primary", `Node == "test" and ServicePort == 8080`, 1},
	} {
		got, _, err := cat.Service("web", tc.tag, &consul.QueryOptions{Filter: tc.filter})
		if err != nil {
			t.Fatalf("Catalog.Service tag %q filter %q: %v", tc.tag, tc.filter, err)
		}
		if len(got) != tc.want {
			t.Errorf("Catalog.Service tag %q filter %q: got %d instances, want %d", tc.tag, tc.filter, len(got), tc.want)
		}
	}
	if _, _, err := cat.Service("web", "", &consul.QueryOptions{Filter: "Service.Tags ==="}); err == nil {
		t.Error("Catalog.Service with a malformed filter: got no error, want a 400")
	}

	// The node and its services.
	node, _, err := cat.Node("test", nil)
	if err != nil {
		t.Fatalf("Catalog.Node: %v", err)
	}
	if node == nil || node.Node.Node != "test" || node.Node.Datacenter != "dc1" || node.Services["web1"] == nil || node.Services["web1"].Port != 8080 {
		t.Errorf("Catalog.Node: got %+v", node)
	}
	list, _, err := cat.NodeServiceList("test", &consul.QueryOptions{Filter: `Service == "web"`})
	if err != nil {
		t.Fatalf("Catalog.NodeServiceList: %v", err)
	}
	if list == nil || list.Node.Node != "test" || len(list.Services) != 1 || list.Services[0].ID != "web1" {
		t.Errorf("Catalog.NodeServiceList: got %+v", list)
	}

	// Health: the TTL check starts critical.
	entries, hmeta, err := health.Service("web", "", false, &consul.QueryOptions{Filter: `Service.Tags contains "v1"`})
	if err != nil {
		t.Fatalf("Health.Service: %v", err)
	}
	if len(entries) != 1 {
		t.Fatalf("Health.Service: got %d entries, want 1", len(entries))
	}
	e := entries[0]
	if e.Node.Node != "test" || e.Service.ID != "web1" || e.Service.Port != 8080 || !slices.Equal(e.Service.Tags, []string{"v1", "primary"}) {
		t.Errorf("Health.Service entry: node %+v service %+v", e.Node, e.Service)
	}
	ttl := findCheck(e.Checks, "web1-ttl")
	if ttl == nil || ttl.Status != consul.HealthCritical || ttl.ServiceID != "web1" || ttl.ServiceName != "web" || ttl.Name != "web1 alive" || ttl.Type != "ttl" {
		t.Errorf("Health.Service TTL check: got %+v, want web1-ttl critical", ttl)
	}
	if got := e.Checks.AggregatedStatus(); got != consul.HealthCritical {
		t.Errorf("AggregatedStatus: got %s, want critical", got)
	}
	if passing, _, err := health.Service("web", "", true, nil); err != nil || len(passing) != 0 {
		t.Errorf("Health.Service passing: got %d entries, %v; want none while the TTL check is critical", len(passing), err)
	}
	tagged, _, err := health.ServiceMultipleTags("web", []string{"v1", "primary"}, false, nil)
	if err != nil || len(tagged) != 1 {
		t.Errorf("Health.ServiceMultipleTags(v1, primary): got %d entries, %v; want 1", len(tagged), err)
	}
	if none, _, err := health.ServiceMultipleTags("web", []string{"v1", "canary"}, false, nil); err != nil || len(none) != 0 {
		t.Errorf("Health.ServiceMultipleTags(v1, canary): got %d entries, %v; want none", len(none), err)
	}

	// A blocking query returns when a second instance registers.
	type result struct {
		entries []*consul.ServiceEntry
		meta    *consul.QueryMeta
		err     error
	}
	done := make(chan result, 1)
	go func() {
		es, m, err := health.Service("web", "", false, &consul.QueryOptions{WaitIndex: hmeta.LastIndex, WaitTime: time.Minute})
		done <- result{es, m, err}
	}()
	reg2 := &consul.AgentServiceRegistration{ID: "web2", Name: "web", Tags: []string{"v2"}, Port: 8081}
	if err := ag.ServiceRegister(reg2); err != nil {
		t.Fatalf("ServiceRegister web2: %v", err)
	}
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("blocking Health.Service: %v", res.err)
		}
		if res.meta.LastIndex <= hmeta.LastIndex {
			t.Errorf("blocking Health.Service: index %d, want past %d", res.meta.LastIndex, hmeta.LastIndex)
		}
		ids := serviceIDs(res.entries)
		if !slices.Equal(ids, []string{"web1", "web2"}) {
			t.Errorf("blocking Health.Service: got %v, want [web1 web2]", ids)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("blocking Health.Service did not return after a second instance registered")
	}

	// Pass the TTL check, and follow it with blocking queries until the
	// health endpoint shows it passing.
	if err := ag.PassTTL("web1-ttl", "all good"); err != nil {
		t.Fatalf("PassTTL: %v", err)
	}
	waitFor(t, health, "web1 passing", func(es []*consul.ServiceEntry) bool {
		for _, e := range es {
			if c := findCheck(e.Checks, "web1-ttl"); c != nil && c.Status == consul.HealthPassing && c.Output == "all good" {
				return true
			}
		}
		return false
	}, nil)
	passing, _, err := health.Service("web", "", true, nil)
	if err != nil || !slices.Equal(serviceIDs(passing), []string{"web1", "web2"}) {
		t.Errorf("Health.Service passing: got %v, %v; want [web1 web2]", serviceIDs(passing), err)
	}
	checks, _, err := health.Checks("web", &consul.QueryOptions{Filter: `Status == "passing"`})
	if err != nil || len(checks) != 1 || checks[0].CheckID != "web1-ttl" {
		t.Errorf("Health.Checks passing: got %+v, %v; want web1-ttl", checks, err)
	}

	// Deregister both; the catalog empties.
	for _, id := range []string{"web1", "web2"} {
		if err := ag.ServiceDeregister(id); err != nil {
			t.Fatalf("ServiceDeregister %s: %v", id, err)
		}
	}
	left, _, err := cat.Service("web", "", nil)
	if err != nil || len(left) != 0 {
		t.Errorf("Catalog.Service after deregistering: got %d instances, %v; want none", len(left), err)
	}
	services, _, err := cat.Services(nil)
	if err != nil {
		t.Fatalf("Catalog.Services: %v", err)
	}
	if _, ok := services["web"]; ok {
		t.Errorf("Catalog.Services after deregistering: got %v, want no web", services)
	}
}

// TestConsulClientCatalogRegister registers an external node and service
// straight into the catalog with Consul's client, reads them back and
// deregisters them.
func TestConsulClientCatalogRegister(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	cat := c.Catalog()
	reg := &consul.CatalogRegistration{
		Node: "ext1", Address: "192.0.2.10", NodeMeta: map[string]string{"rack": "r1"},
		Service: &consul.AgentService{ID: "db1", Service: "db", Tags: []string{"primary"}, Port: 5432},
		Check: &consul.AgentCheck{
			CheckID: "db1-up", Name: "db up", Status: consul.HealthPassing, ServiceID: "db1",
		},
	}
	if _, err := cat.Register(reg, nil); err != nil {
		t.Fatalf("Catalog.Register: %v", err)
	}
	insts, _, err := cat.Service("db", "", nil)
	if err != nil || len(insts) != 1 {
		t.Fatalf("Catalog.Service(db): got %d, %v; want 1", len(insts), err)
	}
	in := insts[0]
	if in.Node != "ext1" || in.Address != "192.0.2.10" || in.NodeMeta["rack"] != "r1" || in.ServiceID != "db1" || in.ServicePort != 5432 {
		t.Errorf("Catalog.Service(db): got %+v", in)
	}
	entries, _, err := c.Health().Service("db", "primary", true, &consul.QueryOptions{Filter: `Node.Meta.rack == "r1"`})
	if err != nil || len(entries) != 1 || entries[0].Checks[0].CheckID != "db1-up" {
		t.Fatalf("Health.Service(db, passing): got %+v, %v", entries, err)
	}
	nodes, _, err := cat.Nodes(&consul.QueryOptions{Filter: `Node == "ext1"`})
	if err != nil || len(nodes) != 1 || nodes[0].Address != "192.0.2.10" || nodes[0].Meta["rack"] != "r1" {
		t.Errorf("Catalog.Nodes filtered: got %+v, %v", nodes, err)
	}
	if _, err := cat.Deregister(&consul.CatalogDeregistration{Node: "ext1"}, nil); err != nil {
		t.Fatalf("Catalog.Deregister: %v", err)
	}
	if node, _, err := cat.Node("ext1", nil); err != nil || node != nil {
		t.Errorf("Catalog.Node after deregistering: got %+v, %v; want nil", node, err)
	}
}

func findCheck(cs consul.HealthChecks, id string) *consul.HealthCheck {
	for _, c := range cs {
		if c.CheckID == id {
			return c
		}
	}
	return nil
}

func serviceIDs(es []*consul.ServiceEntry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.Service.ID)
	}
	slices.Sort(ids)
	return ids
}

// waitFor follows web's health with blocking queries until ok accepts
// it, failing the test after 30s.
func waitFor(t *testing.T, h *consul.Health, what string, ok func([]*consul.ServiceEntry) bool, q *consul.QueryOptions) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var index uint64
	for time.Now().Before(deadline) {
		opts := &consul.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second}
		if q != nil {
			opts.Filter = q.Filter
		}
		es, meta, err := h.Service("web", "", false, opts)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok(es) {
			return
		}
		if meta.LastIndex < index {
			index = 0 // moved backwards: start over, as Consul's clients do
		} else {
			index = meta.LastIndex
		}
	}
	t.Fatalf("no %s within 30s", what)
}
