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
