package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
)

// membersBody is what an agent of a small cluster answers to
// GET /v1/agent/members, in Consul's shape and in no particular order.
const membersBody = `[
	{"Name": "web-2", "Addr": "10.0.0.12", "Port": 8301, "Status": 4, "Tags": {"role": "node", "dc": "dc1", "vsn": "1", "build": "0.1.0:fcfdcb7a"}},
	{"Name": "srv-1", "Addr": "10.0.0.1", "Port": 8301, "Status": 1,
	 "Tags": {"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1", "build": "0.2.0:0123abcd"}, "ClockSkew": "5.002s"},
	{"Name": "web-1", "Addr": "10.0.0.11", "Port": 8301, "Status": 1, "Tags": {"role": "node", "dc": "dc1", "vsn": "1"}},
	{"Name": "v6", "Addr": "fd00::7", "Port": 18301, "Status": 3, "Tags": {"role": "node", "dc": "dc2", "vsn": "1"}},
	{"Name": "dev", "Addr": "127.0.0.1", "Port": 0, "Status": 1, "Tags": {"role": "consul", "dc": "dc1", "vsn": "1"}, "ClockSkew": "0s"}]`

func membersAgent(t *testing.T) *fakeAgent {
	return newFakeAgent(t, map[string]answer{"GET /v1/agent/members": {body: membersBody}})
}

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "" +
			"Node   Address          Status  Role    Build           Protocol  DC   Clock Skew\n" +
			"dev    127.0.0.1        alive   server                  1         dc1  0s\n" +
			"srv-1  10.0.0.1:8301    alive   server  0.2.0:0123abcd  1         dc1  5.002s\n" +
			"v6     [fd00::7]:18301  left    client                  1         dc2\n" +
			"web-1  10.0.0.11:8301   alive   client                  1         dc1\n" +
			"web-2  10.0.0.12:8301   failed  client  0.1.0:fcfdcb7a  1         dc1\n"},
		{[]string{"-status", "alive"}, "" +
			"Node   Address         Status  Role    Build           Protocol  DC   Clock Skew\n" +
			"dev    127.0.0.1       alive   server                  1         dc1  0s\n" +
			"srv-1  10.0.0.1:8301   alive   server  0.2.0:0123abcd  1         dc1  5.002s\n" +
			"web-1  10.0.0.11:8301  alive   client                  1         dc1\n"},
		{[]string{"-status", "leaving"}, "Node  Address  Status  Role  Build  Protocol  DC  Clock Skew\n"},
		{[]string{"-format", "table", "-status", "failed"}, "" +
			"Node   Address         Status  Role    Build           Protocol  DC   Clock Skew\n" +
			"web-2  10.0.0.12:8301  failed  client  0.1.0:fcfdcb7a  1         dc1\n"},
	} {
		agent := membersAgent(t)
		args := append([]string{"members", "-http-addr", agent.URL}, tc.args...)
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: got exit code %d, stderr %q", tc.args, code, stderr)
		}
		if stdout != tc.want {
			t.Errorf("%v: got\n%s\nwant\n%s", tc.args, stdout, tc.want)
		}
		// srv-1's clock is past rpc.ClockSkewWarnAt; dev's is not.
		if warned := strings.Contains(stderr, "Warning: clocks off from this agent's by more than 1s: srv-1 5.002s;"); warned != strings.Contains(tc.want, "srv-1") {
			t.Errorf("%v: got stderr %q, want a warning about srv-1's clock when it is listed", tc.args, stderr)
		}
		agent.only(t, "GET", "/v1/agent/members")
	}
}

func TestMembersJSON(t *testing.T) {
	agent := membersAgent(t)
	stdout, stderr, code := runCLI(t, "members", "-http-addr", agent.URL, "-format", "json", "-status", "alive")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	var got []api.Member
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout %q is not a JSON array of members: %v", stdout, err)
	}
	zero, skew := api.Duration(0), api.Duration(5002*time.Millisecond)
	want := []api.Member{
		{Name: "dev", Addr: "127.0.0.1", Status: "alive", Role: "server", Datacenter: "dc1",
			Tags: map[string]string{"role": "consul", "dc": "dc1", "vsn": "1"}, ClockSkew: &zero},
		{Name: "srv-1", Addr: "10.0.0.1", Port: 8301, Status: "alive", Role: "server", Datacenter: "dc1",
			Tags: map[string]string{"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1", "build": "0.2.0:0123abcd"}, ClockSkew: &skew},
		{Name: "web-1", Addr: "10.0.0.11", Port: 8301, Status: "alive", Role: "client", Datacenter: "dc1",
			Tags: map[string]string{"role": "node", "dc": "dc1", "vsn": "1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMembersUsageErrors(t *testing.T) {
	agent := membersAgent(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-status", "dead"}, []string{`-status "dead"`, "alive, failed, left, leaving", `"cairn members -h"`}},
		{[]string{"-status", ""}, []string{`-status ""`}},
		{[]string{"-format", "yaml"}, []string{`-format "yaml"`, "table or json", `"cairn members -h"`}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
	} {
		args := append([]string{"members", "-http-addr", agent.URL}, tc.args...)
		stdout, stderr, code := runCLI(t, args...)
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestMembersWANRejectedByAgent(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/agent/members": {status: 400,
		body: `{"error": "wan: the WAN pool is not available", "field": "wan", "reason": "the WAN pool is not available"}`}})
	_, stderr, code := runCLI(t, "members", "-http-addr", agent.URL)
	wantError(t, stderr, code, "list members: agent returned 400: wan: the WAN pool is not available")
}

func TestJoin(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/join/10.0.0.2":        {},
		"PUT /v1/agent/join/10.0.0.3:8301":   {},
		"PUT /v1/agent/join/%5Bfd00::1%5D:1": {},
	})
	stdout, stderr, code := runCLI(t, "join", "-http-addr", agent.URL, "10.0.0.2", "10.0.0.3:8301", "[fd00::1]:1")
	if code != 0 || stderr != "" {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "Joined 3 of 3 agents\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	var paths []string
	for _, r := range agent.requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	want := []string{"PUT /v1/agent/join/10.0.0.2", "PUT /v1/agent/join/10.0.0.3:8301", "PUT /v1/agent/join/%5Bfd00::1%5D:1"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("agent saw %q, want %q", paths, want)
	}
}

// TestJoinSome: joining one address is a success; the others are warned about.
func TestJoinSome(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/join/10.0.0.2": {status: 500, body: `{"error": "join 10.0.0.2: connection refused"}`},
		"PUT /v1/agent/join/10.0.0.3": {},
	})
	stdout, stderr, code := runCLI(t, "join", "-http-addr", agent.URL, "10.0.0.2", "10.0.0.3")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "Joined 1 of 2 agents\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	if want := "Warning: join 10.0.0.2: agent returned 500: join 10.0.0.2: connection refused\n"; stderr != want {
		t.Errorf("got stderr %q, want %q", stderr, want)
	}
}

func TestJoinNone(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"PUT /v1/agent/join/10.0.0.2": {status: 500, body: `{"error": "join 10.0.0.2: connection refused"}`},
	}) // 10.0.0.3 gets a 404
	stdout, stderr, code := runCLI(t, "join", "-http-addr", agent.URL, "10.0.0.2", "10.0.0.3")
	wantError(t, stderr, code, "joined 0 of 2 agents; ",
		"join 10.0.0.2: agent returned 500: join 10.0.0.2: connection refused; ",
		"join 10.0.0.3: agent returned 404")
	if stdout != "" {
		t.Errorf("got stdout %q, want none", stdout)
	}
}

func TestJoinUsageErrors(t *testing.T) {
	agent := newFakeAgent(t, nil)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"missing ADDRESS", `"cairn join -h"`}},
		{[]string{"10.0.0.2", "-nope", "x:1"}, []string{`unknown flag "-nope" after address "10.0.0.2"`}},
		{[]string{"10.0.0.2", ""}, []string{"address 2 is empty"}},
	} {
		args := append([]string{"join", "-http-addr", agent.URL}, tc.args...)
		stdout, stderr, code := runCLI(t, args...)
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}

func TestLeave(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/leave": {}})
	stdout, stderr, code := runCLI(t, "leave", "-http-addr", agent.URL)
	if code != 0 || stderr != "" {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "Graceful leave complete\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	agent.only(t, "PUT", "/v1/agent/leave")
}

func TestLeaveFails(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/leave": {status: 500, body: `{"error": "leave: broadcast timed out"}`}})
	stdout, stderr, code := runCLI(t, "leave", "-http-addr", agent.URL)
	wantError(t, stderr, code, "leave: agent returned 500: leave: broadcast timed out")
	if stdout != "" {
		t.Errorf("got stdout %q, want none", stdout)
	}
	_, stderr, code = runCLI(t, "leave", "-http-addr", agent.URL, "now")
	wantUsage(t, stderr, code, `unexpected argument "now"`)
}

const raftBody = `{"Servers": [
	{"ID": "srv-2", "Node": "srv-2", "Address": "10.0.0.2:8300", "Leader": false, "ProtocolVersion": "3", "Voter": true},
	{"ID": "srv-1", "Node": "srv-1", "Address": "10.0.0.1:8300", "Leader": true, "ProtocolVersion": "3", "Voter": true},
	{"ID": "srv-3", "Node": "srv-3", "Address": "10.0.0.3:8300", "Leader": false, "ProtocolVersion": "3", "Voter": false}],
	"Index": 17}`

func TestListPeers(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/operator/raft/configuration": {body: raftBody}})
	stdout, stderr, code := runCLI(t, "operator", "raft", "list-peers", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	want := "" +
		"Node   ID     Address        State     Voter\n" +
		"srv-1  srv-1  10.0.0.1:8300  leader    true\n" +
		"srv-2  srv-2  10.0.0.2:8300  follower  true\n" +
		"srv-3  srv-3  10.0.0.3:8300  follower  false\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	agent.only(t, "GET", "/v1/operator/raft/configuration")
}

func TestListPeersJSON(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/operator/raft/configuration": {body: raftBody}})
	stdout, stderr, code := runCLI(t, "operator", "raft", "list-peers", "-http-addr", agent.URL, "-format", "json")
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	var got api.RaftConfiguration
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout %q is not a Raft configuration: %v", stdout, err)
	}
	if got.Index != 17 || len(got.Servers) != 3 || got.Servers[0].Node != "srv-1" || !got.Servers[0].Leader {
		t.Errorf("got %s, want the 3 servers sorted by node, srv-1 leading, at index 17", stdout)
	}
}

func TestListPeersErrors(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/operator/raft/configuration": {
		status: 500, body: `{"error": "read raft configuration: no cluster leader"}`}})
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{nil, exitError, []string{"read the raft configuration: agent returned 500: read raft configuration: no cluster leader"}},
		{[]string{"-format", "xml"}, exitUsage, []string{`-format "xml"`, `"cairn operator raft list-peers -h"`}},
		{[]string{"extra"}, exitUsage, []string{`unexpected argument "extra"`}},
	} {
		args := append([]string{"operator", "raft", "list-peers", "-http-addr", agent.URL}, tc.args...)
		_, stderr, code := runCLI(t, args...)
		wantExit(t, stderr, code, tc.code, tc.want...)
	}
	if n := len(agent.requests()); n != 1 {
		t.Errorf("agent saw %d requests, want 1 (usage errors send none)", n)
	}
}

func TestMembersWAN(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/agent/members": {body: `[
		{"Name": "s1.dc2", "Addr": "10.0.2.1", "Port": 8302, "Status": 1, "Tags": {"role": "consul", "dc": "dc2", "port": "8300", "vsn": "1"}},
		{"Name": "s1.dc1", "Addr": "10.0.1.1", "Port": 8302, "Status": 4, "Tags": {"role": "consul", "dc": "dc1", "port": "8300", "vsn": "1"}}]`}})
	stdout, stderr, code := runCLI(t, "members", "-wan", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	want := "" +
		"Node    Address        Status  Role    Build  Protocol  DC   Clock Skew\n" +
		"s1.dc1  10.0.1.1:8302  failed  server         1         dc1\n" +
		"s1.dc2  10.0.2.1:8302  alive   server         1         dc2\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	if got := agent.only(t, "GET", "/v1/agent/members"); got.Query != "wan=1" {
		t.Errorf("got query %q, want wan=1", got.Query)
	}
}

func TestJoinWAN(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/join/10.0.2.1:8302": {}})
	stdout, stderr, code := runCLI(t, "join", "-wan", "-http-addr", agent.URL, "10.0.2.1:8302")
	if code != 0 || stderr != "" {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	if want := "Joined 1 of 1 agents\n"; stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}
	if got := agent.only(t, "PUT", "/v1/agent/join/10.0.2.1:8302"); got.Query != "wan=1" {
		t.Errorf("got query %q, want wan=1", got.Query)
	}
}

func TestForceLeave(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"PUT /v1/agent/force-leave/web-3": {}})
	stdout, stderr, code := runCLI(t, "force-leave", "-prune", "-http-addr", agent.URL, "web-3")
	if code != 0 || stderr != "" || stdout != "" {
		t.Fatalf("got exit code %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
	if got := agent.only(t, "PUT", "/v1/agent/force-leave/web-3"); got.Query != "prune=1" {
		t.Errorf("got query %q, want prune=1", got.Query)
	}
	_, stderr, code = runCLI(t, "force-leave", "-http-addr", agent.URL)
	wantUsage(t, stderr, code, "want one NODE")
}
