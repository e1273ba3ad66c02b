package compat_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// newClusterClient starts three servers and a client agent c1 joined to
// them, and returns Consul's client for the client agent once it reads the
// catalog through its servers.
func newClusterClient(t *testing.T) *consul.Client {
	t.Helper()
	c := agenttest.StartCluster(t, 3)
	cl := agenttest.Start(t, agenttest.ClientConfig(t, "c1", c.GossipAddr(0), c.GossipAddr(1), c.GossipAddr(2)))
	client, err := consul.NewClient(&consul.Config{Address: cl.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "the client agent in the catalog", func() error {
		n, _, err := client.Catalog().Node("c1", nil)
		if err != nil {
			return err
		}
		if n == nil {
			return errors.New("no node c1 yet")
		}
		return nil
	})
	return client
}

// TestConsulClientFilters registers what Prometheus' consul_sd reads and
// filters it through Consul's client as a Prometheus job does: filter on
// the list of services (consul_sd's `filter`), on a service's health
// (`health_filter`) with Checks.Status, and on every ServiceNode field
// consul_sd turns into labels. Through a client agent, so the servers do
// the reading.
func TestConsulClientFilters(t *testing.T) {
	t.Parallel()
	c := newClusterClient(t)
	cat, health := c.Catalog(), c.Health()
	for _, reg := range []*consul.CatalogRegistration{
		{
			Node: "ext1", Address: "192.0.2.1", NodeMeta: map[string]string{"rack": "r1"},
			Service: &consul.AgentService{ID: "api-1", Service: "api", Tags: []string{"prom", "v1"}, Port: 9100,
				Meta: map[string]string{"metrics_path": "/metrics"}},
			Checks: consul.HealthChecks{{CheckID: "api-1-up", Name: "up", Status: consul.HealthPassing, ServiceID: "api-1"}},
		},
		{
			Node: "ext2", Address: "192.0.2.2", NodeMeta: map[string]string{"rack": "r2"},
			Service: &consul.AgentService{ID: "api-2", Service: "api", Tags: []string{"v2"}, Port: 9100, Address: "198.51.100.2"},
			Checks:  consul.HealthChecks{{CheckID: "api-2-up", Name: "up", Status: consul.HealthCritical, ServiceID: "api-2"}},
		},
		{
			Node: "ext2", Address: "192.0.2.2", NodeMeta: map[string]string{"rack": "r2"},
			Service: &consul.AgentService{ID: "db-1", Service: "db", Tags: []string{"prom"}, Port: 5432},
		},
	} {
		if _, err := cat.Register(reg, nil); err != nil {
			t.Fatalf("Catalog.Register %s: %v", reg.Service.ID, err)
		}
	}

	// consul_sd's filter: the services with an instance it selects.
	for _, tc := range []struct {
		filter string
		want   map[string][]string
	}{
		{`"prom" in ServiceTags`, map[string][]string{"api": {"prom", "v1"}, "db": {"prom"}}},
		{`NodeMeta.rack == "r2" and ServiceName != "db"`, map[string][]string{"api": {"v2"}}},
		{`ServiceMeta.metrics_path == "/metrics" and ServicePort == 9100 and Node == "ext1"`, map[string][]string{"api": {"prom", "v1"}}},
		{`ServiceAddress == "198.51.100.2" and Address == "192.0.2.2" and ServiceID == "api-2"`, map[string][]string{"api": {"v2"}}},
		{`Datacenter == "dc1" and TaggedAddresses is empty and ServiceTaggedAddresses is empty and ServiceName == "db"`, map[string][]string{"db": {"prom"}}},
	} {
		got, meta, err := cat.Services(&consul.QueryOptions{Filter: tc.filter})
		if err != nil {
			t.Fatalf("Catalog.Services filter %s: %v", tc.filter, err)
		}
		if !maps.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("Catalog.Services filter %s: got %v, want %v", tc.filter, got, tc.want)
		}
		if meta.LastIndex == 0 {
			t.Errorf("Catalog.Services filter %s: no index", tc.filter)
		}
	}
	all, _, err := cat.Services(nil)
	if err != nil || all["api"] == nil || all["db"] == nil || all["cairn"] == nil {
		t.Errorf("Catalog.Services unfiltered: got %v, %v; want api, db and cairn", all, err)
	}
	for _, bad := range []string{"garbage (((", `Nope == "x"`} {
		if got, _, err := cat.Services(&consul.QueryOptions{Filter: bad}); err == nil {
			t.Errorf("Catalog.Services filter %s: got %v and no error, want an error", bad, got)
		}
	}

	// consul_sd's health_filter, on /v1/health/service/<name>.
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{`Checks.Status == "passing"`, []string{"api-1"}},
		{`Checks.Status == "critical"`, []string{"api-2"}},
		{`Checks.Status != "passing"`, []string{"api-2"}},
		{`Checks.CheckID == "api-1-up" and Checks.Name == "up" and Checks.ServiceName == "api"`, []string{"api-1"}},
		{`"prom" in Checks.ServiceTags`, []string{"api-1"}},
		{`Node.Meta.rack == "r2" and Node.Node == "ext2" and Node.Address == "192.0.2.2" and Node.Datacenter == "dc1"`, []string{"api-2"}},
		{`Service.Port == 9100 and Service.Meta.metrics_path == "/metrics" and "v1" in Service.Tags`, []string{"api-1"}},
		{`Node.TaggedAddresses is empty and Service.TaggedAddresses is empty and Service.Address == ""`, []string{"api-1"}},
	} {
		es, _, err := health.Service("api", "", false, &consul.QueryOptions{Filter: tc.filter})
		if err != nil {
			t.Fatalf("Health.Service filter %s: %v", tc.filter, err)
		}
		if got := serviceIDs(es); !slices.Equal(got, tc.want) {
			t.Errorf("Health.Service filter %s: got %v, want %v", tc.filter, got, tc.want)
		}
	}
	// And on the catalog's list of instances (consul_sd without health).
	insts, _, err := cat.Service("api", "", &consul.QueryOptions{Filter: `NodeMeta.rack == "r1" and "prom" in ServiceTags`})
	if err != nil || len(insts) != 1 || insts[0].ServiceID != "api-1" {
		t.Errorf("Catalog.Service filtered: got %s, %v; want api-1", fmt.Sprint(insts), err)
	}
}

// TestConsulClientTaggedAddresses: tagged addresses registered through
// the catalog (the node's and the service's) and through the agent (the
// service's) come back from every read as Consul gives them, and a filter
// selects on them. Through a client agent: they cross the RPC to the
// servers and Raft.
func TestConsulClientTaggedAddresses(t *testing.T) {
	t.Parallel()
	c := newClusterClient(t)
	cat, health, ag := c.Catalog(), c.Health(), c.Agent()
	nodeTagged := map[string]string{"lan": "10.0.0.5", "wan": "198.51.100.5"}
	svcTagged := map[string]consul.ServiceAddress{"wan": {Address: "198.51.100.5", Port: 443}, "lan": {Address: "10.0.0.5", Port: 8443}}
	if _, err := cat.Register(&consul.CatalogRegistration{
		Node: "ext1", Address: "10.0.0.5", TaggedAddresses: nodeTagged,
		Service: &consul.AgentService{ID: "gw-1", Service: "gw", Port: 8443, TaggedAddresses: svcTagged},
	}, nil); err != nil {
		t.Fatalf("Catalog.Register: %v", err)
	}

	insts, _, err := cat.Service("gw", "", nil)
	if err != nil || len(insts) != 1 {
		t.Fatalf("Catalog.Service(gw): got %d, %v; want 1", len(insts), err)
	}
	if in := insts[0]; !maps.Equal(in.TaggedAddresses, nodeTagged) || !maps.Equal(in.ServiceTaggedAddresses, svcTagged) {
		t.Errorf("Catalog.Service(gw): got TaggedAddresses %v, ServiceTaggedAddresses %v; want %v, %v",
			in.TaggedAddresses, in.ServiceTaggedAddresses, nodeTagged, svcTagged)
	}
	es, _, err := health.Service("gw", "", false, nil)
	if err != nil || len(es) != 1 {
		t.Fatalf("Health.Service(gw): got %d, %v; want 1", len(es), err)
	}
	if e := es[0]; !maps.Equal(e.Node.TaggedAddresses, nodeTagged) || !maps.Equal(e.Service.TaggedAddresses, svcTagged) {
		t.Errorf("Health.Service(gw): got node %v, service %v; want %v, %v", e.Node.TaggedAddresses, e.Service.TaggedAddresses, nodeTagged, svcTagged)
	}
	node, _, err := cat.Node("ext1", nil)
	if err != nil || node == nil || !maps.Equal(node.Node.TaggedAddresses, nodeTagged) || !maps.Equal(node.Services["gw-1"].TaggedAddresses, svcTagged) {
		t.Errorf("Catalog.Node(ext1): got %+v, %v", node, err)
	}
	// An agent's own node carries its lan and wan addresses, as Consul's
	// agents register them (the wan one is the lan one unless
	// advertise_addr_wan says otherwise), once its first full sync has
	// written the row (the leader may have made it first, from gossip).
	waittest.For(t, 30*time.Second, "the client agent's tagged addresses", func() error {
		self, _, err := cat.Node("c1", nil)
		if err != nil || self == nil {
			return fmt.Errorf("Catalog.Node(c1): got %+v, %v", self, err)
		}
		addr := self.Node.Address
		if want := map[string]string{"lan": addr, "lan_ipv4": addr, "wan": addr, "wan_ipv4": addr}; !maps.Equal(self.Node.TaggedAddresses, want) {
			return fmt.Errorf("got tagged addresses %v, want %v", self.Node.TaggedAddresses, want)
		}
		return nil
	})
	nodes, _, err := cat.Nodes(&consul.QueryOptions{Filter: `TaggedAddresses.wan == "198.51.100.5"`})
	if err != nil || len(nodes) != 1 || nodes[0].Node != "ext1" || !maps.Equal(nodes[0].TaggedAddresses, nodeTagged) {
		t.Errorf("Catalog.Nodes filtered on TaggedAddresses.wan: got %+v, %v", nodes, err)
	}
	for _, filter := range []string{
		`ServiceTaggedAddresses.wan.Port == 443 and TaggedAddresses.lan == "10.0.0.5"`,
		`ServiceTaggedAddresses is not empty and "wan" in TaggedAddresses`,
	} {
		got, _, err := cat.Services(&consul.QueryOptions{Filter: filter})
		if err != nil || len(got) != 1 || got["gw"] == nil {
			t.Errorf("Catalog.Services filter %s: got %v, %v; want gw", filter, got, err)
		}
	}
	if es, _, err := health.Service("gw", "", false, &consul.QueryOptions{Filter: `Service.TaggedAddresses.lan.Address == "10.0.0.5"`}); err != nil || len(es) != 1 {
		t.Errorf("Health.Service filter on Service.TaggedAddresses: got %d, %v; want 1", len(es), err)
	}

	// Through the agent: kept on the agent and synced to the catalog.
	agentTagged := map[string]consul.ServiceAddress{"wan": {Address: "203.0.113.7", Port: 80}}
	if err := ag.ServiceRegister(&consul.AgentServiceRegistration{ID: "web1", Name: "web", Port: 8080, TaggedAddresses: agentTagged}); err != nil {
		t.Fatalf("Agent.ServiceRegister: %v", err)
	}
	svc, _, err := ag.Service("web1", nil)
	if err != nil || !maps.Equal(svc.TaggedAddresses, agentTagged) {
		t.Errorf("Agent.Service(web1): got %+v, %v; want tagged addresses %v", svc, err, agentTagged)
	}
	all, err := ag.Services()
	if err != nil || all["web1"] == nil || !maps.Equal(all["web1"].TaggedAddresses, agentTagged) {
		t.Errorf("Agent.Services: got %+v, %v", all["web1"], err)
	}
	waittest.For(t, 10*time.Second, "web1's tagged addresses in the catalog", func() error {
		insts, _, err := cat.Service("web", "", nil)
		if err != nil {
			return err
		}
		if len(insts) != 1 || !maps.Equal(insts[0].ServiceTaggedAddresses, agentTagged) {
			return fmt.Errorf("got %+v", insts)
		}
		return nil
	})
}

// TestConsulClientFilterACL: the list of services filtered with ?filter
// holds only what the token may read, as the unfiltered list does, and
// says it left something out.
func TestConsulClientFilterACL(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	a := agenttest.Start(t, cfg)
	anon, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := anon.ACL().Bootstrap()
	if err != nil {
		t.Fatalf("ACL.Bootstrap: %v", err)
	}
	mgmt, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String(), Token: boot.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "db"} {
		if _, err := mgmt.Catalog().Register(&consul.CatalogRegistration{Node: "ext1", Address: "192.0.2.1",
			Service: &consul.AgentService{ID: name + "-1", Service: name, Tags: []string{"prom"}, Port: 80}}, nil); err != nil {
			t.Fatalf("Catalog.Register %s: %v", name, err)
		}
	}
	if _, _, err := mgmt.ACL().PolicyCreate(&consul.ACLPolicy{Name: "web-reader",
		Rules: `service "web" { policy = "read" }` + "\n" + `node_prefix "" { policy = "read" }`}, nil); err != nil {
		t.Fatalf("ACL.PolicyCreate: %v", err)
	}
	tok, _, err := mgmt.ACL().TokenCreate(&consul.ACLToken{Policies: []*consul.ACLTokenPolicyLink{{Name: "web-reader"}}}, nil)
	if err != nil {
		t.Fatalf("ACL.TokenCreate: %v", err)
	}
	web, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String(), Token: tok.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	got, meta, err := web.Catalog().Services(&consul.QueryOptions{Filter: `"prom" in ServiceTags`})
	if err != nil || !maps.EqualFunc(got, map[string][]string{"web": {"prom"}}, slices.Equal) || !meta.ResultsFilteredByACLs {
		t.Errorf("Catalog.Services filtered with the web token: got %v (filtered by ACLs %v), %v; want web alone, filtered", got, meta.ResultsFilteredByACLs, err)
	}
	got, _, err = mgmt.Catalog().Services(&consul.QueryOptions{Filter: `"prom" in ServiceTags`})
	if err != nil || len(got) != 2 {
		t.Errorf("Catalog.Services filtered with the management token: got %v, %v; want web and db", got, err)
	}
}

// TestConsulClientAgentFilters: the official client's ServicesWithFilter
// and ChecksWithFilter (what `consul services list -filter` and
// `consul checks` scripts send) select among the agent's own services and
// checks.
func TestConsulClientAgentFilters(t *testing.T) {
	t.Parallel()
	ag := newConsulClient(t).Agent()
	for _, reg := range []*consul.AgentServiceRegistration{
		{ID: "api-1", Name: "api", Tags: []string{"prom"}, Port: 9100, Check: &consul.AgentServiceCheck{TTL: "30s"}},
		{ID: "api-2", Name: "api", Port: 9101, Meta: map[string]string{"env": "test"}},
		{ID: "db-1", Name: "db", Port: 5432},
	} {
		if err := ag.ServiceRegister(reg); err != nil {
			t.Fatalf("ServiceRegister %s: %v", reg.ID, err)
		}
	}
	svcs, err := ag.ServicesWithFilter(`Service == "api" and "prom" in Tags`)
	if err != nil || !slices.Equal(slices.Sorted(maps.Keys(svcs)), []string{"api-1"}) {
		t.Errorf("ServicesWithFilter: got %v, %v; want api-1 alone", svcs, err)
	}
	svcs, err = ag.ServicesWithFilter(`Meta.env == "test"`)
	if err != nil || !slices.Equal(slices.Sorted(maps.Keys(svcs)), []string{"api-2"}) {
		t.Errorf("ServicesWithFilter on Meta: got %v, %v; want api-2 alone", svcs, err)
	}
	checks, err := ag.ChecksWithFilter(`ServiceID == "api-1" and Status == "critical"`)
	if err != nil || len(checks) != 1 {
		t.Errorf("ChecksWithFilter: got %v, %v; want the critical TTL check of api-1", checks, err)
	}
	if _, err := ag.ServicesWithFilter(`garbage (((`); err == nil {
		t.Error("ServicesWithFilter with a malformed filter: got no error, want one")
	}
}
