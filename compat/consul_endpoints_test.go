package compat_test

import (
	"strings"
	"testing"

	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientAgentEndpoints: what Consul's client reads of the
// agent's own endpoints, as Consul's tests use them: DebugConfig's
// SerfAdvertiseAddrLAN and EnableDebug in /v1/agent/self (the agent joins
// itself through the former; `consul debug` needs the latter), ?filter on
// the members, /v1/agent/host, force-leave, and the health of a service
// by ID and by name with the status the client reads from the code.
func TestConsulClientAgentEndpoints(t *testing.T) {
	t.Parallel()
	c := newConsulClient(t)
	ag := c.Agent()

	self, err := ag.Self()
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := self["DebugConfig"]["SerfAdvertiseAddrLAN"].(string)
	if !strings.HasPrefix(addr, "tcp://") {
		t.Fatalf("DebugConfig.SerfAdvertiseAddrLAN: got %q, want tcp://ip:port", addr)
	}
	if err := ag.Join(strings.TrimPrefix(addr, "tcp://"), false); err != nil {
		t.Errorf("join itself: %v", err)
	}
	if _, ok := self["DebugConfig"]["EnableDebug"].(bool); !ok {
		t.Errorf("DebugConfig.EnableDebug: got %v, want a bool", self["DebugConfig"]["EnableDebug"])
	}

	for filter, want := range map[string]int{`Tags["dc"] == dc1`: 1, `Tags["dc"] == "not-Exist"`: 0} {
		ms, err := ag.MembersOpts(consul.MembersOpts{Filter: filter})
		if err != nil || len(ms) != want {
			t.Errorf("members ?filter=%s: got %d, %v; want %d", filter, len(ms), err, want)
		}
	}

	host, err := ag.Host()
	if err != nil || host["CollectionTime"] == nil {
		t.Errorf("Host: got %v, %v; want CollectionTime", host, err)
	}

	if err := ag.ForceLeave("test"); err != nil {
		t.Errorf("ForceLeave: %v", err)
	}
	if err := ag.ForceLeaveOptions("test", consul.ForceLeaveOpts{Prune: true}, nil); err != nil {
		t.Errorf("ForceLeave prune: %v", err)
	}

	health := func(id, name, want string) {
		t.Helper()
		st, info, err := ag.AgentHealthServiceByID(id)
		if err != nil || st != want || info == nil || info.Service.ID != id {
			t.Errorf("by ID %s: got %s %+v %v, want %s", id, st, info, err, want)
		}
		st, infos, err := ag.AgentHealthServiceByName(name)
		if err != nil || st != want || len(infos) == 0 {
			t.Errorf("by name %s: got %s %d %v, want %s", name, st, len(infos), err, want)
		}
	}
	if st, info, err := ag.AgentHealthServiceByID("nope"); err != nil || st != consul.HealthCritical || info != nil {
		t.Errorf("unknown ID: got %s %+v %v, want critical, nothing", st, info, err)
	}
	if err := ag.ServiceRegister(&consul.AgentServiceRegistration{ID: "foo", Name: "bar", Port: 8000, Check: &consul.AgentServiceCheck{TTL: "15s"}}); err != nil {
		t.Fatal(err)
	}
	health("foo", "bar", consul.HealthCritical)
	for _, step := range []struct {
		set  func(string, string) error
		want string
	}{{ag.WarnTTL, consul.HealthWarning}, {ag.PassTTL, consul.HealthPassing}, {ag.FailTTL, consul.HealthCritical}} {
		if err := step.set("service:foo", "x"); err != nil {
			t.Fatal(err)
		}
		health("foo", "bar", step.want)
	}
}
