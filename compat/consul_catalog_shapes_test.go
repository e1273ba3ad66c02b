package compat_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientCatalogRegisterShapes: the catalog registrations
// Consul's own tests make. A service registered with SkipNodeUpdate before
// its node exists creates the node; one registered on the agent's own node
// with SkipNodeUpdate and another address leaves the node as it is (no
// refusal); EnableTagOverride is kept and read back.
func TestConsulClientCatalogRegisterShapes(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	cat := c.Catalog()

	svc := &consul.AgentService{ID: "redisV1", Service: "redis", Tags: []string{"v1"}, Port: 1234, Address: "198.18.1.2"}
	if _, err := cat.Register(&consul.CatalogRegistration{Node: "foo", SkipNodeUpdate: true, Service: svc}, nil); err != nil {
		t.Fatalf("register on a node not yet in the catalog with SkipNodeUpdate: %v", err)
	}
	n, _, err := cat.Node("foo", nil)
	if err != nil || n == nil || n.Services["redisV1"] == nil {
		t.Fatalf("node foo: got %+v, %v; want it created with redisV1", n, err)
	}
	if _, err := cat.Register(&consul.CatalogRegistration{Node: "foo", Address: "127.0.0.2",
		NodeMeta: map[string]string{"env": "production"}}, nil); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := cat.Node("foo", nil); n.Node.Address != "127.0.0.2" || len(n.Services) != 1 {
		t.Errorf("node foo after its own registration: got %+v, want 127.0.0.2 with redisV1 kept", n.Node)
	}

	self, err := c.Agent().NodeName()
	if err != nil {
		t.Fatal(err)
	}
	own, _, err := cat.Node(self, nil)
	if err != nil || own == nil {
		t.Fatalf("the agent's node: %+v, %v", own, err)
	}
	proxy := &consul.AgentServiceConnectProxyConfig{
		DestinationServiceName: "web", DestinationServiceID: "web1", LocalServiceAddress: "127.0.0.2", LocalServicePort: 8080,
		Upstreams: []consul.Upstream{{DestinationName: "db", LocalBindPort: 9191, Config: map[string]any{"connect_timeout_ms": 1000.0}}},
		Mode:      consul.ProxyModeTransparent, TransparentProxy: &consul.TransparentProxyConfig{OutboundListenerPort: 808},
	}
	reg := &consul.CatalogRegistration{Node: self, Address: "192.168.10.10", SkipNodeUpdate: true,
		Service: &consul.AgentService{ID: "web-proxy1", Service: "web-proxy", Port: 8001, Kind: consul.ServiceKindConnectProxy, Proxy: proxy}}
	if _, err := cat.Register(reg, nil); err != nil {
		t.Fatalf("register on the agent's own node with SkipNodeUpdate and another address: %v", err)
	}
	after, _, err := cat.Node(self, nil)
	if err != nil || after.Node.Address != own.Node.Address || after.Services["web-proxy1"] == nil {
		t.Fatalf("the agent's node: got %+v (%v), want it at %s with web-proxy1", after, err, own.Node.Address)
	}
	// Kind and the proxy's configuration are kept as registered.
	if got := after.Services["web-proxy1"]; got.Kind != consul.ServiceKindConnectProxy || !reflect.DeepEqual(got.Proxy, proxy) {
		t.Errorf("web-proxy1: got kind %q proxy %+v, want %q %+v", got.Kind, got.Proxy, consul.ServiceKindConnectProxy, proxy)
	}
	if insts, _, err := cat.Service("web-proxy", "", nil); err != nil || len(insts) != 1 || !reflect.DeepEqual(insts[0].ServiceProxy, proxy) {
		t.Errorf("catalog service web-proxy: got %+v, %v; want its proxy configuration", insts, err)
	}

	tagged := &consul.CatalogRegistration{Node: "bar", Address: "192.0.2.3",
		Service: &consul.AgentService{ID: "redis1", Service: "redis", Port: 8000, EnableTagOverride: true}}
	if _, err := cat.Register(tagged, nil); err != nil {
		t.Fatal(err)
	}
	if n, _, err := cat.Node("bar", nil); err != nil || !n.Services["redis1"].EnableTagOverride {
		t.Errorf("catalog node bar: EnableTagOverride not read back (%v)", err)
	}
	insts, _, err := cat.Service("redis", "", &consul.QueryOptions{Filter: `Node == "bar"`})
	if err != nil || len(insts) != 1 || !insts[0].ServiceEnableTagOverride {
		t.Errorf("catalog service redis on bar: got %+v, %v; want ServiceEnableTagOverride", insts, err)
	}
}

// TestConsulClientNodeMeta: ?node-meta keeps only what is on nodes whose
// metadata holds every pair given, on each read Consul takes it on.
func TestConsulClientNodeMeta(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	cat, health := c.Catalog(), c.Health()
	for _, r := range []struct{ node, addr, os string }{{"lin", "192.0.2.1", "linux"}, {"win", "192.0.2.2", "windows"}} {
		reg := &consul.CatalogRegistration{Node: r.node, Address: r.addr, NodeMeta: map[string]string{"os": r.os, "env": "prod"},
			Service: &consul.AgentService{ID: "app-" + r.node, Service: "app", Tags: []string{r.os}, Port: 80},
			Checks:  consul.HealthChecks{{CheckID: "app-" + r.node, Name: "up", Status: consul.HealthCritical, ServiceID: "app-" + r.node}}}
		if _, err := cat.Register(reg, nil); err != nil {
			t.Fatal(err)
		}
	}
	lin := &consul.QueryOptions{NodeMeta: map[string]string{"os": "linux", "env": "prod"}}
	none := &consul.QueryOptions{NodeMeta: map[string]string{"os": "plan9"}}

	nodes, _, err := cat.Nodes(lin)
	if err != nil || len(nodes) != 1 || nodes[0].Node != "lin" {
		t.Errorf("catalog nodes: got %v, %v; want lin", nodes, err)
	}
	if svcs, _, err := cat.Services(none); err != nil || len(svcs) != 0 {
		t.Errorf("catalog services on no node: got %v, %v; want none", svcs, err)
	}
	if svcs, _, err := cat.Services(lin); err != nil || !slices.Equal(svcs["app"], []string{"linux"}) {
		t.Errorf("catalog services on lin: got %v, %v; want app [linux]", svcs, err)
	}
	if insts, _, err := cat.Service("app", "", lin); err != nil || len(insts) != 1 || insts[0].Node != "lin" {
		t.Errorf("catalog service app: got %v, %v; want the one on lin", insts, err)
	}
	if es, _, err := health.Service("app", "", false, lin); err != nil || len(es) != 1 || es[0].Node.Node != "lin" {
		t.Errorf("health service app: got %v, %v; want the one on lin", es, err)
	}
	if cs, _, err := health.Checks("app", lin); err != nil || len(cs) != 1 || cs[0].Node != "lin" {
		t.Errorf("health checks of app: got %v, %v; want lin's", cs, err)
	}
	if cs, _, err := health.State(consul.HealthCritical, lin); err != nil || len(cs) != 1 || cs[0].Node != "lin" {
		t.Errorf("health state critical: got %v, %v; want lin's", cs, err)
	}
}

// TestConsulClientHealthCheckFields: checks carry their service's tags
// (also to ?filter on), and a service's check registered without a name
// gets Consul's.
func TestConsulClientHealthCheckFields(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	reg := &consul.AgentServiceRegistration{Name: "foo", Tags: []string{"bar"}, Check: &consul.AgentServiceCheck{TTL: "15s"}}
	if err := c.Agent().ServiceRegister(reg); err != nil {
		t.Fatal(err)
	}
	var checks consul.HealthChecks
	waittest.For(t, 15*time.Second, "foo's check in the catalog", func() error {
		var err error
		checks, _, err = c.Health().Checks("foo", nil)
		if err == nil && len(checks) != 1 {
			err = fmt.Errorf("%d checks", len(checks))
		}
		return err
	})
	if ch := checks[0]; ch.Name != "Service 'foo' check" || !slices.Equal(ch.ServiceTags, []string{"bar"}) {
		t.Errorf("check: got name %q tags %v, want \"Service 'foo' check\" [bar]", ch.Name, ch.ServiceTags)
	}
	got, _, err := c.Health().State(consul.HealthAny, &consul.QueryOptions{Filter: `bar in ServiceTags`})
	if err != nil || len(got) != 1 || got[0].CheckID != "service:foo" {
		t.Errorf("checks with tag bar: got %v, %v; want service:foo", got, err)
	}
}

// TestConsulClientMaintenanceIsCritical: a maintenance check is critical,
// as Consul's, so Consul's clients (AggregatedStatus) and ?passing see
// it as Consul's.
func TestConsulClientMaintenanceIsCritical(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	ag := c.Agent()
	if err := ag.ServiceRegister(&consul.AgentServiceRegistration{Name: "web", Port: 80}); err != nil {
		t.Fatal(err)
	}
	if err := ag.EnableServiceMaintenance("web", "deploying"); err != nil {
		t.Fatal(err)
	}
	var entries []*consul.ServiceEntry
	waittest.For(t, 15*time.Second, "web's maintenance check in the catalog", func() error {
		var err error
		entries, _, err = c.Health().Service("web", "", false, nil)
		if err != nil {
			return err
		}
		if len(entries) != 1 || len(entries[0].Checks) < 2 {
			return errors.New("no maintenance check yet")
		}
		return nil
	})
	for _, ch := range entries[0].Checks {
		if ch.CheckID == "_service_maintenance:web" && (ch.Status != consul.HealthCritical || ch.Notes != "deploying") {
			t.Errorf("maintenance check: got status %q notes %q, want critical, deploying", ch.Status, ch.Notes)
		}
	}
	if got := entries[0].Checks.AggregatedStatus(); got != consul.HealthMaint {
		t.Errorf("AggregatedStatus: got %q, want %q", got, consul.HealthMaint)
	}
	if passing, _, err := c.Health().Service("web", "", true, nil); err != nil || len(passing) != 0 {
		t.Errorf("passing instances of web: got %d, %v; want none", len(passing), err)
	}
}

// TestConsulClientSessionLegacyChecks: the deprecated Checks field of a
// session is null, as Consul leaves it, however the session was made.
func TestConsulClientSessionLegacyChecks(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	s := c.Session()
	for _, se := range []*consul.SessionEntry{nil, {NodeChecks: []string{"serfHealth"}}} {
		var id string
		waittest.For(t, 15*time.Second, "a session", func() error {
			var err error
			if se == nil {
				id, _, err = s.CreateNoChecks(nil, nil)
			} else {
				id, _, err = s.Create(se, nil)
			}
			return err
		})
		info, _, err := s.Info(id, nil)
		if err != nil || info == nil {
			t.Fatalf("session info: %v, %v", info, err)
		}
		if info.Checks != nil {
			t.Errorf("session %+v: Checks got %v, want null", se, info.Checks)
		}
	}
}

// TestConsulClientStatusOtherDatacenter: ?dc on /v1/status/leader and
// /peers is answered by that datacenter's servers; an unknown one is an
// error, not this datacenter's answer.
func TestConsulClientStatusOtherDatacenter(t *testing.T) {
	t.Parallel()
	dc1 := agenttest.DatacenterConfigs(t, "dc1", 1)
	dc2 := agenttest.DatacenterConfigs(t, "dc2", 1)
	dc2[0].JoinWAN = []string{agenttest.WANAddr(dc1[0])}
	a := agenttest.StartConfigs(t, dc1)
	b := agenttest.StartConfigs(t, dc2)
	c, err := consul.NewClient(&consul.Config{Address: a.Agents[0].HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Status()
	waittest.For(t, 30*time.Second, "dc2's leader through dc1", func() error {
		leader, err := st.LeaderWithQueryOptions(&consul.QueryOptions{Datacenter: "dc2"})
		if err != nil {
			return err
		}
		if leader != b.RPCAddr(0) {
			return fmt.Errorf("leader %q, want dc2's %s", leader, b.RPCAddr(0))
		}
		return nil
	})
	peers, err := st.PeersWithQueryOptions(&consul.QueryOptions{Datacenter: "dc2"})
	if err != nil || !slices.Equal(peers, []string{b.RPCAddr(0)}) {
		t.Errorf("dc2's peers: got %v, %v; want [%s]", peers, err, b.RPCAddr(0))
	}
	if leader, err := st.LeaderWithQueryOptions(&consul.QueryOptions{Datacenter: "wrong_dc1"}); err == nil {
		t.Errorf("leader of an unknown datacenter: got %q, want an error", leader)
	}
	if peers, err := st.PeersWithQueryOptions(&consul.QueryOptions{Datacenter: "wrong_dc1"}); err == nil {
		t.Errorf("peers of an unknown datacenter: got %v, want an error", peers)
	}
}

// TestConsulClientSnapshotKnownLeader: a snapshot save says, as every
// read does, that the servers know a leader.
func TestConsulClientSnapshotKnownLeader(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	var qm *consul.QueryMeta
	waittest.For(t, 15*time.Second, "a snapshot", func() error {
		rc, meta, err := c.Snapshot().Save(nil)
		if err != nil {
			return err
		}
		qm = meta
		return rc.Close()
	})
	if !qm.KnownLeader || qm.LastIndex == 0 {
		t.Errorf("snapshot save meta: got %+v, want KnownLeader and an index", qm)
	}
}
