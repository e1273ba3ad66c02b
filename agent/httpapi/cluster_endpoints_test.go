package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/rpc"
)

// consulAgentMember is Consul's api.AgentMember, field for field, so the
// tests check that Consul's Go client decodes what cairn sends.
type consulAgentMember struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      int
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

// consulRaftConfiguration is Consul's api.RaftConfiguration.
type consulRaftConfiguration struct {
	Servers []*struct {
		ID              string
		Node            string
		Address         string
		Leader          bool
		ProtocolVersion string
		Voter           bool
	}
	Index uint64
}

func testCluster() *fakeCluster {
	return &fakeCluster{
		members: []httpapi.Member{
			{Name: "web-3", Addr: "10.0.0.13", Port: 8301, Status: "failed", Role: "client", Datacenter: "dc1", ProtocolVersion: 1},
			{Name: "srv-1", Addr: "10.0.0.1", Port: 8301, Status: "alive", Role: "server", Datacenter: "dc1",
				RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1, ID: "adf4238a-882b-9ddc-4a9d-5b6758e4159e",
				Build: "v0.4.0:abcdef12", ProtocolMin: 1, ProtocolMax: 2},
			{Name: "web-1", Addr: "10.0.0.11", Port: 8301, Status: "leaving", Role: "client", Datacenter: "dc1", ProtocolVersion: 1},
			{Name: "web-2", Addr: "10.0.0.12", Port: 18301, Status: "left", Role: "client", Datacenter: "dc1", ProtocolVersion: 2},
			{Name: "odd", Addr: "::1", Port: 8301, Status: "reaped", Role: "server", Datacenter: "dc2", ProtocolVersion: 1},
		},
		raft: &rpc.RaftConfigurationResponse{
			Servers: []rpc.RaftServer{
				{ID: "srv-1", Address: "10.0.0.1:8300", Leader: true, Voter: true},
				{ID: "srv-2", Address: "10.0.0.2:8300", Voter: true},
				{ID: "srv-3", Address: "10.0.0.3:8300"},
			},
			Index: 42,
		},
		joined: 1,
	}
}

func TestAgentMembers(t *testing.T) {
	for _, target := range []string{"/v1/agent/members", "/v1/agent/members?wan=0", "/v1/agent/members?segment=_all"} {
		rec := serve(newClusterServer(t, testCluster()), http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusOK)
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: got Content-Type %q, want application/json", target, ct)
		}
		got := decode[[]consulAgentMember](t, rec)
		want := []consulAgentMember{
			{Name: "odd", Addr: "::1", Port: 8301, Status: 0,
				Tags: map[string]string{"role": "consul", "dc": "dc2", "vsn": "1"}},
			{Name: "srv-1", Addr: "10.0.0.1", Port: 8301, Status: 1,
				Tags: map[string]string{"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1", "vsn_min": "1", "vsn_max": "2",
					"id": "adf4238a-882b-9ddc-4a9d-5b6758e4159e", "build": "v0.4.0:abcdef12"}},
			{Name: "web-1", Addr: "10.0.0.11", Port: 8301, Status: 2,
				Tags: map[string]string{"role": "node", "dc": "dc1", "vsn": "1"}},
			{Name: "web-2", Addr: "10.0.0.12", Port: 18301, Status: 3,
				Tags: map[string]string{"role": "node", "dc": "dc1", "vsn": "2"}},
			{Name: "web-3", Addr: "10.0.0.13", Port: 8301, Status: 4,
				Tags: map[string]string{"role": "node", "dc": "dc1", "vsn": "1"}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got\n%+v\nwant\n%+v", target, got, want)
		}
	}
}

func TestAgentMembersJSONKeys(t *testing.T) {
	rec := serve(newClusterServer(t, testCluster()), http.MethodGet, "/v1/agent/members", "")
	wantStatus(t, rec, http.StatusOK)
	var raw []any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	if len(raw) == 0 {
		t.Fatalf("got no members")
	}
	if got, want := keys(t, raw[0]), sorted("Name", "Addr", "Port", "Tags", "Status"); !slices.Equal(got, want) {
		t.Errorf("got keys %v, want %v", got, want)
	}
}

func TestAgentMembersEmpty(t *testing.T) {
	rec := serve(newClusterServer(t, &fakeCluster{}), http.MethodGet, "/v1/agent/members", "")
	wantStatus(t, rec, http.StatusOK)
	if got := strings.TrimSpace(rec.Body.String()); got != "[]" {
		t.Errorf("got body %s, want []", got)
	}
}

func TestAgentMembersPretty(t *testing.T) {
	rec := serve(newClusterServer(t, testCluster()), http.MethodGet, "/v1/agent/members?pretty", "")
	wantStatus(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), "\n    {") {
		t.Errorf("got body %s, want it indented", rec.Body)
	}
}

// TestAgentMembersWANOnClient: a client agent is in no WAN pool; as
// Consul's, it lists no WAN members.
func TestAgentMembersWANOnClient(t *testing.T) {
	for _, target := range []string{"/v1/agent/members?wan=1", "/v1/agent/members?wan", "/v1/agent/members?wan=true"} {
		rec := serve(newClusterServer(t, testCluster()), http.MethodGet, target, "")
		wantStatus(t, rec, http.StatusOK)
		if got := strings.TrimSpace(rec.Body.String()); got != "[]" {
			t.Errorf("%s: got body %s, want []", target, got)
		}
	}
}

// TestOtherPoolsRejected: network segments are not served, and a client
// agent cannot join a WAN pool; asking for them is a 400 naming the
// parameter, and nothing is joined.
func TestOtherPoolsRejected(t *testing.T) {
	tests := []struct {
		method, target, field string
	}{
		{http.MethodGet, "/v1/agent/members?segment=alpha", "segment"},
		{http.MethodPut, "/v1/agent/join/10.0.0.2?wan=1", "wan"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			cl := testCluster()
			rec := serve(newClusterServer(t, cl), tt.method, tt.target, "")
			wantStatus(t, rec, http.StatusBadRequest)
			body := errorBody(t, rec)
			if body["field"] != tt.field {
				t.Errorf("got field %v, want %q", body["field"], tt.field)
			}
			if tt.field == "wan" && !strings.Contains(body["reason"].(string), "no WAN pool") {
				t.Errorf("got reason %q, want it to say the agent is in no WAN pool", body["reason"])
			}
			if joins, _ := cl.calls(); len(joins) != 0 {
				t.Errorf("Join was called with %v, want no call", joins)
			}
		})
	}
}

func TestAgentMembersWAN(t *testing.T) {
	cl := testCluster()
	cl.wan = []httpapi.Member{
		{Name: "srv-1.dc2", Addr: "10.0.2.1", Port: 8302, Status: "alive", Role: "server", Datacenter: "dc2", RPCAddr: "10.0.2.1:8300", ProtocolVersion: 1},
		{Name: "srv-1.dc1", Addr: "10.0.0.1", Port: 8302, Status: "failed", Role: "server", Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1},
	}
	rec := serve(newClusterServer(t, cl), http.MethodGet, "/v1/agent/members?wan=1", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[[]consulAgentMember](t, rec)
	want := []consulAgentMember{
		{Name: "srv-1.dc1", Addr: "10.0.0.1", Port: 8302, Status: 4,
			Tags: map[string]string{"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1"}},
		{Name: "srv-1.dc2", Addr: "10.0.2.1", Port: 8302, Status: 1,
			Tags: map[string]string{"role": "consul", "dc": "dc2", "port": "8300", "vsn": "1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestAgentJoinWAN(t *testing.T) {
	cl := testCluster()
	cl.wan = []httpapi.Member{}
	rec := serve(newClusterServer(t, cl), http.MethodPut, "/v1/agent/join/10.0.2.1:8302?wan=1", "")
	wantStatus(t, rec, http.StatusOK)
	if got, want := cl.wanCalls(), [][]string{{"10.0.2.1:8302"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("JoinWAN got %q, want %q", got, want)
	}
	if joins, _ := cl.calls(); len(joins) != 0 {
		t.Errorf("Join (LAN) got %q, want no call", joins)
	}
}

func TestCatalogDatacenters(t *testing.T) {
	for _, tc := range []struct {
		dcs  []string
		want string
	}{
		{[]string{"dc1", "dc2"}, `["dc1","dc2"]`},
		{nil, `[]`},
	} {
		cl := testCluster()
		cl.dcs = tc.dcs
		rec := serve(newClusterServer(t, cl), http.MethodGet, "/v1/catalog/datacenters", "")
		wantStatus(t, rec, http.StatusOK)
		if got := strings.TrimSpace(rec.Body.String()); got != tc.want {
			t.Errorf("datacenters %v: got body %s, want %s", tc.dcs, got, tc.want)
		}
	}
	cl := testCluster()
	cl.dcsErr = errors.New("no cairn servers known")
	rec := serve(newClusterServer(t, cl), http.MethodGet, "/v1/catalog/datacenters", "")
	wantStatus(t, rec, http.StatusInternalServerError)
	if body := errorBody(t, rec); !strings.Contains(body["error"].(string), "no cairn servers known") {
		t.Errorf("got error %v, want the cause", body["error"])
	}
}

func TestAgentJoin(t *testing.T) {
	for _, tc := range []struct {
		target, addr string
	}{
		{"/v1/agent/join/10.0.0.2", "10.0.0.2"},
		{"/v1/agent/join/10.0.0.2:8301", "10.0.0.2:8301"},
		{"/v1/agent/join/[::1]:8301", "[::1]:8301"},
		{"/v1/agent/join/node-2.example", "node-2.example"},
		{"/v1/agent/join/10.0.0.2?wan=0", "10.0.0.2"},
	} {
		cl := testCluster()
		rec := serve(newClusterServer(t, cl), http.MethodPut, tc.target, "")
		wantStatus(t, rec, http.StatusOK)
		if rec.Body.Len() != 0 {
			t.Errorf("%s: got body %q, want none", tc.target, rec.Body)
		}
		joins, leaves := cl.calls()
		if want := [][]string{{tc.addr}}; !reflect.DeepEqual(joins, want) {
			t.Errorf("%s: Join got %q, want %q", tc.target, joins, want)
		}
		if leaves != 0 {
			t.Errorf("%s: Leave was called", tc.target)
		}
	}
}

func TestAgentJoinFails(t *testing.T) {
	tests := []struct {
		name    string
		joined  int
		err     error
		code    int
		message []string // substrings of the error
	}{
		{"error", 0, errors.New("dial tcp 10.0.0.2:8301: connection refused"), http.StatusInternalServerError,
			[]string{"10.0.0.2", "connection refused"}},
		{"multi-line error", 0, errors.New("first\nsecond"), http.StatusInternalServerError, []string{"first; second"}},
		{"none answered, no error", 0, nil, http.StatusInternalServerError, []string{"10.0.0.2", "no agent answered"}},
		// One answer is a join: gossip does the rest.
		{"one answered with an error", 1, errBoom, http.StatusOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &fakeCluster{joined: tt.joined, joinErr: tt.err}
			rec := serve(newClusterServer(t, cl), http.MethodPut, "/v1/agent/join/10.0.0.2", "")
			wantStatus(t, rec, tt.code)
			if tt.code == http.StatusOK {
				return
			}
			msg := errorBody(t, rec)["error"].(string)
			for _, w := range tt.message {
				if !strings.Contains(msg, w) {
					t.Errorf("got error %q, want it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestAgentJoinBadAddress(t *testing.T) {
	for _, target := range []string{"/v1/agent/join/", "/v1/agent/join/a/b", "/v1/agent/join/10.0.0.2%2F8301"} {
		cl := testCluster()
		rec := serve(newClusterServer(t, cl), http.MethodPut, target, "")
		wantStatus(t, rec, http.StatusBadRequest)
		if body := errorBody(t, rec); body["field"] != "address" {
			t.Errorf("%s: got field %v, want address", target, body["field"])
		}
		if joins, _ := cl.calls(); len(joins) != 0 {
			t.Errorf("%s: Join was called with %v, want no call", target, joins)
		}
	}
}

func TestAgentLeave(t *testing.T) {
	cl := testCluster()
	rec := serve(newClusterServer(t, cl), http.MethodPut, "/v1/agent/leave", "")
	wantStatus(t, rec, http.StatusOK)
	if rec.Body.Len() != 0 {
		t.Errorf("got body %q, want none", rec.Body)
	}
	if _, leaves := cl.calls(); leaves != 1 {
		t.Errorf("got %d Leave calls, want 1", leaves)
	}
}

func TestAgentLeaveFails(t *testing.T) {
	cl := &fakeCluster{leaveErr: errBoom}
	rec := serve(newClusterServer(t, cl), http.MethodPut, "/v1/agent/leave", "")
	wantStatus(t, rec, http.StatusInternalServerError)
	if msg := errorBody(t, rec)["error"].(string); !strings.Contains(msg, "boom") {
		t.Errorf("got error %q, want it to contain boom", msg)
	}
}

func TestOperatorRaftConfiguration(t *testing.T) {
	rec := serve(newClusterServer(t, testCluster()), http.MethodGet, "/v1/operator/raft/configuration", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[consulRaftConfiguration](t, rec)
	if got.Index != 42 {
		t.Errorf("got Index %d, want 42", got.Index)
	}
	type server struct {
		ID, Node, Address, ProtocolVersion string
		Leader, Voter                      bool
	}
	var servers []server
	for _, s := range got.Servers {
		servers = append(servers, server{s.ID, s.Node, s.Address, s.ProtocolVersion, s.Leader, s.Voter})
	}
	want := []server{
		{"srv-1", "srv-1", "10.0.0.1:8300", "3", true, true},
		{"srv-2", "srv-2", "10.0.0.2:8300", "3", false, true},
		{"srv-3", "srv-3", "10.0.0.3:8300", "3", false, false},
	}
	if !reflect.DeepEqual(servers, want) {
		t.Errorf("got servers\n%+v\nwant\n%+v", servers, want)
	}

	m := decode[map[string]any](t, rec)
	if got, want := keys(t, m), sorted("Servers", "Index"); !slices.Equal(got, want) {
		t.Errorf("got keys %v, want %v", got, want)
	}
	first := m["Servers"].([]any)[0]
	if got, want := keys(t, first), sorted("ID", "Node", "Address", "Leader", "ProtocolVersion", "Voter", "LastIndex"); !slices.Equal(got, want) {
		t.Errorf("got server keys %v, want %v", got, want)
	}
}

func TestOperatorRaftConfigurationEmpty(t *testing.T) {
	for _, raft := range []*rpc.RaftConfigurationResponse{nil, {}} {
		rec := serve(newClusterServer(t, &fakeCluster{raft: raft}), http.MethodGet, "/v1/operator/raft/configuration", "")
		wantStatus(t, rec, http.StatusOK)
		if got := strings.TrimSpace(rec.Body.String()); got != `{"Servers":[],"Index":0}` {
			t.Errorf("got body %s, want {\"Servers\":[],\"Index\":0}", got)
		}
	}
}

func TestOperatorRaftConfigurationFails(t *testing.T) {
	cl := &fakeCluster{raftErr: errors.New("no cluster leader")}
	rec := serve(newClusterServer(t, cl), http.MethodGet, "/v1/operator/raft/configuration", "")
	wantStatus(t, rec, http.StatusInternalServerError)
	if msg := errorBody(t, rec)["error"].(string); !strings.Contains(msg, "no cluster leader") {
		t.Errorf("got error %q, want it to contain the cause", msg)
	}
}

// TestOperatorRaftConfigurationLastIndex: each server's LastIndex is the
// one the leader's autopilot saw (what `consul operator raft list-peers`
// shows as Commit Index); a server autopilot does not know has 0.
func TestOperatorRaftConfigurationLastIndex(t *testing.T) {
	cl := &autopilotCluster{fakeCluster: *testCluster(), health: rpc.ServerHealthResponse{Servers: []rpc.ServerHealth{
		{ID: "srv-1", LastIndex: 46}, {ID: "srv-2", LastIndex: 45},
	}}}
	rec := serve(newClusterServer(t, cl), http.MethodGet, "/v1/operator/raft/configuration", "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[struct {
		Servers []struct {
			ID        string
			LastIndex uint64
		}
	}](t, rec)
	want := map[string]uint64{"srv-1": 46, "srv-2": 45, "srv-3": 0}
	if len(got.Servers) != len(want) {
		t.Fatalf("got %d servers, want %d", len(got.Servers), len(want))
	}
	for _, s := range got.Servers {
		if s.LastIndex != want[s.ID] {
			t.Errorf("server %s: got LastIndex %d, want %d", s.ID, s.LastIndex, want[s.ID])
		}
	}
}
