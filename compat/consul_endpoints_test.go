package compat_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
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
	// `consul debug` refuses an agent without both keys.
	for _, key := range []string{"EnableDebug", "ACLsEnabled"} {
		if _, ok := self["DebugConfig"][key].(bool); !ok {
			t.Errorf("DebugConfig.%s: got %v, want a bool", key, self["DebugConfig"][key])
		}
	}

	for filter, want := range map[string]int{`Tags["dc"] == dc1`: 1, `Tags["dc"] == "not-Exist"`: 0} {
		ms, err := ag.MembersOpts(consul.MembersOpts{Filter: filter})
		if err != nil || len(ms) != want {
			t.Errorf("members ?filter=%s: got %d, %v; want %d", filter, len(ms), err, want)
		}
	}

	// A filter that does not parse, in Consul's words.
	if _, err := ag.MembersOpts(consul.MembersOpts{Filter: `Tags["dc"] == invalid-bexpr-value`}); err == nil ||
		!strings.Contains(err.Error(), "Failed to create boolean expression evaluator") {
		t.Errorf("bad filter: got %v, want Consul's \"Failed to create boolean expression evaluator\"", err)
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

// TestConsulClientEvents: a user event fired through one agent reaches
// every agent of the datacenter (through a server and gossip) and lists
// with the index Consul's client derives from its ID; a blocking list
// waits for the next event, as `watch -type event` does.
func TestConsulClientEvents(t *testing.T) {
	t.Parallel()
	c := newAgentCluster(t)
	id, meta, err := c.agentC.Event().Fire(&consul.UserEvent{Name: "deploy", Payload: []byte("v2")}, nil)
	if err != nil || id == "" || meta.RequestTime == 0 {
		t.Fatalf("Fire: %q %+v %v", id, meta, err)
	}
	for _, cl := range []*consul.Client{c.agentC, c.server} {
		waittest.For(t, 30*time.Second, "the event listed", func() error {
			evs, qm, err := cl.Event().List("deploy", nil)
			if err != nil {
				return err
			}
			if len(evs) != 1 || evs[0].ID != id || string(evs[0].Payload) != "v2" {
				return fmt.Errorf("got %+v, want the one event %s", evs, id)
			}
			if qm.LastIndex != cl.Event().IDToIndex(id) {
				return fmt.Errorf("index %d, want %d", qm.LastIndex, cl.Event().IDToIndex(id))
			}
			return nil
		})
	}
	// A blocking list returns with the next event.
	_, qm, err := c.server.Event().List("deploy", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []*consul.UserEvent, 1)
	go func() {
		evs, _, _ := c.server.Event().List("deploy", &consul.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: time.Minute})
		got <- evs
	}()
	id2, _, err := c.agentC.Event().Fire(&consul.UserEvent{Name: "deploy"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-got:
		if len(evs) != 2 || evs[1].ID != id2 {
			t.Errorf("blocking list: got %+v, want the two events", evs)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the blocking list did not return with the second event")
	}
	// A node filter that matches no agent: nobody keeps it.
	if _, _, err := c.agentC.Event().Fire(&consul.UserEvent{Name: "none", NodeFilter: "^nobody$"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.agentC.Event().Fire(&consul.UserEvent{Name: "bad", TagFilter: "x"}, nil); err == nil {
		t.Error("a tag filter without a service filter: accepted, want refused")
	}
}

// TestConsulClientUnixSocket: with addresses.http = "unix://<path>" the
// API is served on the socket, with the mode of unix_sockets, and
// Consul's client reaches it there (sending the path as its Host).
func TestConsulClientUnixSocket(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	sock := filepath.Join(t.TempDir(), "http.sock")
	cfg.Addresses.HTTP = "unix://" + sock
	cfg.UnixSockets.Mode = "0600"
	agenttest.Start(t, cfg)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket file mode %v, want a socket with 0600", fi.Mode())
	}
	c, err := consul.NewClient(&consul.Config{Address: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	self, err := c.Agent().Self()
	if err != nil || self["Config"]["NodeName"] != "test" {
		t.Errorf("Self over the socket: got %v, %v", self["Config"], err)
	}
}
