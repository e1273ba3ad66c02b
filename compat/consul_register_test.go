package compat_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// TestConsulAgentServiceFieldsKept registers a service with every field
// Consul's client may send that cairn only keeps (EnableTagOverride,
// SocketPath, Ports, Locality) and expects them back from the agent, the
// catalog and the health endpoint; after a restart on the same data
// directory (the agent's persisted copy); and after the catalog lost the
// service (anti-entropy's copy).
func TestConsulAgentServiceFieldsKept(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Dev, cfg.Server = false, true
	cfg.DataDir = t.TempDir()
	cfg.AEInterval = time.Second
	a := agenttest.Start(t, cfg)
	locality := &consul.Locality{Region: "us-west-1", Zone: "us-west-1a"}
	ports := consul.ServicePorts{{Name: "http", Port: 8080, Default: true}, {Name: "metrics", Port: 9090}}
	reg := &consul.AgentServiceRegistration{
		ID: "web-1", Name: "web", EnableTagOverride: true, SocketPath: "/run/web.sock",
		Ports: ports, Locality: locality,
	}
	c := consulClient(t, a.HTTPAddr().String())
	if err := c.Agent().ServiceRegister(reg); err != nil {
		t.Fatalf("ServiceRegister: %v", err)
	}
	check := func(when string, c *consul.Client) {
		t.Helper()
		svcs, err := c.Agent().Services()
		if err != nil {
			t.Fatalf("%s: Agent.Services: %v", when, err)
		}
		s := svcs["web-1"]
		if s == nil || !s.EnableTagOverride || s.SocketPath != "/run/web.sock" || !reflect.DeepEqual(s.Ports, ports) || !reflect.DeepEqual(s.Locality, locality) {
			t.Errorf("%s: agent service: got %+v, want the fields registered", when, s)
		}
		waittest.For(t, 10*time.Second, when+": the fields in the catalog", func() error {
			cs, _, err := c.Catalog().Service("web", "", nil)
			if err != nil {
				return err
			}
			if len(cs) != 1 || !cs[0].ServiceEnableTagOverride || !reflect.DeepEqual(cs[0].ServiceLocality, locality) {
				return fmt.Errorf("catalog: got %+v", cs)
			}
			es, _, err := c.Health().Service("web", "", false, nil)
			if err != nil {
				return err
			}
			if len(es) != 1 || es[0].Service.SocketPath != "/run/web.sock" || !reflect.DeepEqual(es[0].Service.Ports, ports) || !reflect.DeepEqual(es[0].Service.Locality, locality) {
				return fmt.Errorf("health: got %+v", es)
			}
			return nil
		})
	}
	check("registered", c)

	agenttest.Stop(t, a)
	a = agenttest.Start(t, cfg)
	c = consulClient(t, a.HTTPAddr().String())
	check("after a restart", c)

	if _, err := c.Catalog().Deregister(&consul.CatalogDeregistration{Node: cfg.NodeName, ServiceID: "web-1"}, nil); err != nil {
		t.Fatalf("Catalog.Deregister: %v", err)
	}
	check("after anti-entropy", c)
}

// TestConsulAgentServiceBadPorts: Ports are checked as Consul checks them.
func TestConsulAgentServiceBadPorts(t *testing.T) {
	t.Parallel()
	ag := newConsulClient(t).Agent()
	for _, tc := range []struct {
		ports consul.ServicePorts
		field string
	}{
		{consul.ServicePorts{{Name: "http", Port: 80}}, "Ports"},
		{consul.ServicePorts{{Name: "http", Port: 80, Default: true}, {Name: "http", Port: 81}}, "Ports[1].Name"},
		{consul.ServicePorts{{Name: "", Port: 80, Default: true}}, "Ports[0].Name"},
		{consul.ServicePorts{{Name: "a", Port: 80, Default: true}, {Name: "b", Port: 81, Default: true}}, "Ports[1].Default"},
	} {
		err := ag.ServiceRegister(&consul.AgentServiceRegistration{Name: "web", Ports: tc.ports})
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("ports %+v: got %v, want a 400 naming %s", tc.ports, err, tc.field)
		}
	}
}

// TestConsulAgentServiceEnableTagOverride: tags changed in the catalog are
// taken up by the agent of a service registered with EnableTagOverride,
// and anti-entropy leaves them there; without it, the agent's tags win.
func TestConsulAgentServiceEnableTagOverride(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.AEInterval = time.Second
	a := agenttest.Start(t, cfg)
	c := consulClient(t, a.HTTPAddr().String())
	self, err := c.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := self["Member"]["Addr"].(string)
	for _, reg := range []*consul.AgentServiceRegistration{
		{ID: "over", Name: "over", Tags: []string{"agent"}, EnableTagOverride: true},
		{ID: "kept", Name: "kept", Tags: []string{"agent"}},
	} {
		if err := c.Agent().ServiceRegister(reg); err != nil {
			t.Fatalf("ServiceRegister %s: %v", reg.ID, err)
		}
		_, err := c.Catalog().Register(&consul.CatalogRegistration{
			Node: cfg.NodeName, Address: addr,
			Service: &consul.AgentService{ID: reg.ID, Service: reg.Name, Tags: []string{"catalog"}, EnableTagOverride: reg.EnableTagOverride},
		}, nil)
		if err != nil {
			t.Fatalf("Catalog.Register %s: %v", reg.ID, err)
		}
	}
	waittest.For(t, 10*time.Second, "the agent to take the catalog's tags of over and put back its own of kept", func() error {
		svcs, err := c.Agent().Services()
		if err != nil {
			return err
		}
		if got := svcs["over"].Tags; !slices.Equal(got, []string{"catalog"}) {
			return fmt.Errorf("agent tags of over: got %v, want [catalog]", got)
		}
		for name, want := range map[string]string{"over": "catalog", "kept": "agent"} {
			cs, _, err := c.Catalog().Service(name, "", nil)
			if err != nil {
				return err
			}
			if len(cs) != 1 || !slices.Equal(cs[0].ServiceTags, []string{want}) {
				return fmt.Errorf("catalog tags of %s: got %+v, want [%s]", name, cs, want)
			}
		}
		return nil
	})
}

// TestConsulAgentServiceContentHash: one agent service read carries a
// ContentHash; a read blocking on it (Consul's WaitHash) returns when the
// service changes, with a new hash, and otherwise only when its wait ends.
func TestConsulAgentServiceContentHash(t *testing.T) {
	t.Parallel()
	ag := newConsulClient(t).Agent()
	reg := &consul.AgentServiceRegistration{ID: "web", Name: "web", Port: 80}
	if err := ag.ServiceRegister(reg); err != nil {
		t.Fatal(err)
	}
	svc, meta, err := ag.Service("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if svc.ContentHash == "" || meta.LastContentHash != svc.ContentHash {
		t.Fatalf("got ContentHash %q, header %q; want one, the same in both", svc.ContentHash, meta.LastContentHash)
	}
	start := time.Now()
	same, _, err := ag.Service("web", &consul.QueryOptions{WaitHash: svc.ContentHash, WaitTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || same.ContentHash != svc.ContentHash {
		t.Errorf("blocking on an unchanged service: returned after %s with hash %q, want after the 200ms wait with %q", d, same.ContentHash, svc.ContentHash)
	}

	type result struct {
		svc *consul.AgentService
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, _, err := ag.Service("web", &consul.QueryOptions{WaitHash: svc.ContentHash, WaitTime: time.Minute})
		done <- result{s, err}
	}()
	reg.Port = 81
	if err := ag.ServiceRegister(reg); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.svc.Port != 81 || r.svc.ContentHash == svc.ContentHash {
			t.Errorf("blocking read woken by the change: got %+v, %v; want port 81 and a new hash", r.svc, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read blocking on the hash did not return when the service changed")
	}
}

// TestConsulCheckInvalidDuration: a check with a duration that does not
// parse is refused with Consul's wording, which its users match.
func TestConsulCheckInvalidDuration(t *testing.T) {
	t.Parallel()
	ag := newConsulClient(t).Agent()
	if err := ag.ServiceRegister(&consul.AgentServiceRegistration{Name: "redis"}); err != nil {
		t.Fatal(err)
	}
	reg := &consul.AgentCheckRegistration{Name: "redischeck", ServiceID: "redis"}
	reg.TTL = "15s"
	reg.DeregisterCriticalServiceAfter = "nope"
	if err := ag.CheckRegister(reg); err == nil || !strings.Contains(err.Error(), "invalid duration") || !strings.Contains(err.Error(), "nope") {
		t.Errorf("got %v, want a 400 saying invalid duration \"nope\"", err)
	}
}

func consulClient(t *testing.T, addr string) *consul.Client {
	t.Helper()
	c, err := consul.NewClient(&consul.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConsulDockerCheck: a docker check registered through Consul's client
// is kept as a docker check; with no daemon (or no such container) to run
// it in, it is critical and says why.
func TestConsulDockerCheck(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.EnableScriptChecks = true
	ag := consulClient(t, agenttest.Start(t, cfg).HTTPAddr().String()).Agent()
	if err := ag.ServiceRegister(&consul.AgentServiceRegistration{Name: "redis"}); err != nil {
		t.Fatal(err)
	}
	reg := &consul.AgentCheckRegistration{Name: "redischeck", ServiceID: "redis", AgentServiceCheck: consul.AgentServiceCheck{
		DockerContainerID: "f972c95ebf0e", Args: []string{"/bin/true"}, Shell: "/bin/bash", Interval: "100ms",
	}}
	if err := ag.CheckRegister(reg); err != nil {
		t.Fatalf("CheckRegister: %v", err)
	}
	waittest.For(t, 10*time.Second, "the docker check critical, saying why", func() error {
		checks, err := ag.Checks()
		if err != nil {
			return err
		}
		c := checks["redischeck"]
		if c == nil || c.Type != "docker" || c.Status != consul.HealthCritical || !strings.Contains(c.Output, "docker exec in container f972c95ebf0e") {
			return fmt.Errorf("got %+v", c)
		}
		return nil
	})
}
