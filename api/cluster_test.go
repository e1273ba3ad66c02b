package api_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/cairndns/cairn/api"
)

func TestAgentMembers(t *testing.T) {
	// Consul's shape, with the serf fields cairn does not send.
	c, seen := fakeAgent(t, reply{Body: `[
		{"Name": "srv-1", "Addr": "10.0.0.1", "Port": 8301, "Status": 1,
		 "Tags": {"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1"},
		 "ProtocolMin": 1, "ProtocolMax": 5, "ProtocolCur": 2, "DelegateMin": 2, "DelegateMax": 5, "DelegateCur": 4},
		{"Name": "web-1", "Addr": "10.0.0.11", "Port": 8301, "Status": 2, "Tags": {"role": "node", "dc": "dc1", "vsn": "1"}},
		{"Name": "web-2", "Addr": "10.0.0.12", "Port": 8301, "Status": 3, "Tags": {"role": "node", "dc": "dc2"}},
		{"Name": "web-3", "Addr": "10.0.0.13", "Port": 8301, "Status": 4, "Tags": {"role": "node", "dc": "dc1"}},
		{"Name": "odd", "Addr": "::1", "Port": 1, "Status": 0},
		{"Name": "odder", "Addr": "::2", "Port": 2, "Status": 9, "Tags": {}}]`})
	got, err := c.Agent().Members(context.Background())
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/agent/members", "")
	want := []api.Member{
		{Name: "srv-1", Addr: "10.0.0.1", Port: 8301, Status: api.MemberAlive, Role: api.RoleServer, Datacenter: "dc1",
			Tags: map[string]string{"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1"}},
		{Name: "web-1", Addr: "10.0.0.11", Port: 8301, Status: api.MemberLeaving, Role: api.RoleClient, Datacenter: "dc1",
			Tags: map[string]string{"role": "node", "dc": "dc1", "vsn": "1"}},
		{Name: "web-2", Addr: "10.0.0.12", Port: 8301, Status: api.MemberLeft, Role: api.RoleClient, Datacenter: "dc2",
			Tags: map[string]string{"role": "node", "dc": "dc2"}},
		{Name: "web-3", Addr: "10.0.0.13", Port: 8301, Status: api.MemberFailed, Role: api.RoleClient, Datacenter: "dc1",
			Tags: map[string]string{"role": "node", "dc": "dc1"}},
		{Name: "odd", Addr: "::1", Port: 1, Status: api.MemberNone, Role: api.RoleClient, Tags: map[string]string{}},
		{Name: "odder", Addr: "::2", Port: 2, Status: "unknown", Role: api.RoleClient, Tags: map[string]string{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestAgentMembersEmpty(t *testing.T) {
	for _, body := range []string{`[]`, `null`} {
		c, _ := fakeAgent(t, reply{Body: body})
		got, err := c.Agent().Members(context.Background())
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("body %s: got %#v, %v; want an empty, non-nil slice", body, got, err)
		}
	}
}

func TestAgentJoin(t *testing.T) {
	for _, tc := range []struct{ addr, path string }{
		{"10.0.0.2", "/v1/agent/join/10.0.0.2"},
		{"10.0.0.2:8301", "/v1/agent/join/10.0.0.2:8301"},
		{"[::1]:8301", "/v1/agent/join/%5B::1%5D:8301"},
		{"a/b", "/v1/agent/join/a%2Fb"},
	} {
		c, seen := fakeAgent(t, reply{})
		if err := c.Agent().Join(context.Background(), tc.addr); err != nil {
			t.Fatalf("Join(%q): %v", tc.addr, err)
		}
		checkRequest(t, only(t, seen), "PUT", tc.path, "")
	}
	c, seen := fakeAgent(t, reply{})
	if err := c.Agent().Join(context.Background(), ""); err == nil {
		t.Error(`Join(""): got no error, want one`)
	}
	if n := len(seen()); n != 0 {
		t.Errorf(`Join(""): agent saw %d requests, want none`, n)
	}
}

func TestAgentJoinFails(t *testing.T) {
	c, _ := fakeAgent(t, reply{Status: 500, Body: `{"error": "join 10.0.0.2: connection refused"}`})
	err := c.Agent().Join(context.Background(), "10.0.0.2")
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 500 || se.Message != "join 10.0.0.2: connection refused" {
		t.Errorf("got %v (%T), want a 500 *api.StatusError with the agent's message", err, err)
	}
}

func TestAgentLeave(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	if err := c.Agent().Leave(context.Background()); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	checkRequest(t, only(t, seen), "PUT", "/v1/agent/leave", "")
}

func TestOperatorRaftConfiguration(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `{"Servers": [
		{"ID": "srv-1", "Node": "srv-1", "Address": "10.0.0.1:8300", "Leader": true, "ProtocolVersion": "3", "Voter": true},
		{"ID": "srv-2", "Node": "srv-2", "Address": "10.0.0.2:8300", "Leader": false, "ProtocolVersion": "3", "Voter": false}],
		"Index": 42}`})
	got, err := c.Operator().RaftConfiguration(context.Background())
	if err != nil {
		t.Fatalf("RaftConfiguration: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/operator/raft/configuration", "")
	want := &api.RaftConfiguration{
		Servers: []*api.RaftServer{
			{ID: "srv-1", Node: "srv-1", Address: "10.0.0.1:8300", Leader: true, ProtocolVersion: "3", Voter: true},
			{ID: "srv-2", Node: "srv-2", Address: "10.0.0.2:8300", ProtocolVersion: "3"},
		},
		Index: 42,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestOperatorRaftConfigurationFails(t *testing.T) {
	c, _ := fakeAgent(t, reply{Status: 500, Body: `{"error": "no cluster leader"}`})
	got, err := c.Operator().RaftConfiguration(context.Background())
	var se *api.StatusError
	if got != nil || !errors.As(err, &se) || se.Code != 500 {
		t.Errorf("got %+v, %v; want nil and a 500 *api.StatusError", got, err)
	}
}

func TestAgentMembersWAN(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `[
		{"Name": "s1.dc2", "Addr": "10.0.2.1", "Port": 8302, "Status": 1, "Tags": {"role": "consul", "dc": "dc2", "port": "8300", "vsn": "1"}}]`})
	got, err := c.Agent().MembersWAN(context.Background())
	if err != nil {
		t.Fatalf("MembersWAN: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/agent/members", "wan=1")
	want := []api.Member{{Name: "s1.dc2", Addr: "10.0.2.1", Port: 8302, Status: api.MemberAlive, Role: api.RoleServer, Datacenter: "dc2",
		Tags: map[string]string{"role": "consul", "dc": "dc2", "port": "8300", "vsn": "1"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestAgentJoinWAN(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	if err := c.Agent().JoinWAN(context.Background(), "10.0.2.1:8302"); err != nil {
		t.Fatalf("JoinWAN: %v", err)
	}
	checkRequest(t, only(t, seen), "PUT", "/v1/agent/join/10.0.2.1:8302", "wan=1")
	c, _ = fakeAgent(t, reply{Status: 400, Body: `{"error": "wan: a client agent", "field": "wan", "reason": "a client agent"}`})
	var se *api.StatusError
	if err := c.Agent().JoinWAN(context.Background(), "10.0.2.1"); !errors.As(err, &se) || se.Code != 400 {
		t.Errorf("JoinWAN on a client: got %v, want a 400 *api.StatusError", err)
	}
}

func TestCatalogDatacenters(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string
	}{
		{`["dc1", "dc2"]`, []string{"dc1", "dc2"}},
		{`null`, []string{}},
	} {
		c, seen := fakeAgent(t, reply{Body: tc.body})
		got, err := c.Catalog().Datacenters(context.Background())
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("body %s: got %#v, %v; want %#v", tc.body, got, err, tc.want)
		}
		checkRequest(t, only(t, seen), "GET", "/v1/catalog/datacenters", "")
	}
}
