package compat_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientMonitor: the official client's Agent().Monitor streams
// the agent's log at debug, though the agent's own output is at warn
// (agenttest's level), and ends once its stop channel is closed.
func TestConsulClientMonitor(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	members, err := c.Agent().Members(false)
	if err != nil || len(members) != 1 {
		t.Fatalf("Members: got %v, %v", members, err)
	}
	self := net.JoinHostPort(members[0].Addr, strconv.Itoa(int(members[0].Port)))
	// Joining its own gossip address makes the agent log, at info.
	logSomething := func() {
		t.Helper()
		if err := c.Agent().Join(self, false); err != nil {
			t.Fatalf("Join %s: %v", self, err)
		}
	}

	stopCh := make(chan struct{})
	lines, err := c.Agent().Monitor("debug", stopCh, nil)
	if err != nil {
		t.Fatalf("Monitor: %v", err)
	}
	logSomething()
	deadline := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case l := <-lines:
			if l == "" {
				t.Fatal("stream ended before the line came")
			}
			found = strings.Contains(l, "joined through the API")
		case <-deadline:
			t.Fatal("no \"joined through the API\" line within 10s")
		}
	}

	// The client's reader notices stopCh between lines: one more line
	// lets it see it, close lines and the stream.
	close(stopCh)
	for open := true; open; {
		logSomething()
		select {
		case _, open = <-lines:
		case <-deadline:
			t.Fatal("the stream did not end within 10s of closing stopCh")
		}
	}
}

// TestConsulClientMonitorShowsChanges: what an operator does to an agent
// (a service registered and deregistered, maintenance mode on and off, a
// reload) shows in its log at info, so "consul monitor" shows it, as it
// does with Consul.
func TestConsulClientMonitorShowsChanges(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	stopCh := make(chan struct{})
	defer close(stopCh)
	lines, err := c.Agent().Monitor("info", stopCh, nil)
	if err != nil {
		t.Fatalf("Monitor: %v", err)
	}
	agent := c.Agent()
	for _, tc := range []struct {
		change string
		do     func() error
		want   string
	}{
		{"register web1", func() error {
			return agent.ServiceRegister(&consul.AgentServiceRegistration{ID: "web1", Name: "web", Port: 80})
		}, `msg="service registered" node=test dc=dc1 component=local service=web1 name=web`},
		{"web1 into maintenance", func() error { return agent.EnableServiceMaintenance("web1", "deploy") },
			`msg="service entered maintenance mode" node=test dc=dc1 component=local service=web1 reason=deploy`},
		{"web1 out of maintenance", func() error { return agent.DisableServiceMaintenance("web1") },
			`msg="service left maintenance mode" node=test dc=dc1 component=local service=web1`},
		{"node into maintenance", func() error { return agent.EnableNodeMaintenance("kernel") },
			`msg="node entered maintenance mode" node=test dc=dc1 component=local reason=kernel`},
		{"node out of maintenance", agent.DisableNodeMaintenance,
			`msg="node left maintenance mode" node=test dc=dc1 component=local`},
		{"reload", agent.Reload, `msg="configuration reloaded"`},
		{"deregister web1", func() error { return agent.ServiceDeregister("web1") },
			`msg="service deregistered" node=test dc=dc1 component=local service=web1`},
	} {
		if err := tc.do(); err != nil {
			t.Fatalf("%s: %v", tc.change, err)
		}
		deadline := time.After(10 * time.Second)
		for found := false; !found; {
			select {
			case l := <-lines:
				if l == "" {
					t.Fatalf("%s: the stream ended", tc.change)
				}
				found = strings.Contains(l, "level=INFO") && strings.Contains(l, tc.want)
			case <-deadline:
				t.Fatalf("%s: no line at info with %q within 10s", tc.change, tc.want)
			}
		}
	}
}
