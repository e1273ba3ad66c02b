package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const autopilotConfigBody = `{"CleanupDeadServers": true, "LastContactThreshold": "200ms", "MaxTrailingLogs": 250, "MinQuorum": 0,
	"ServerStabilizationTime": "10s", "RedundancyZoneTag": "", "DisableUpgradeMigration": false, "UpgradeVersionTag": "",
	"CreateIndex": 4, "ModifyIndex": 9}`

func TestAutopilotGetConfig(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/operator/autopilot/configuration": {body: autopilotConfigBody}})
	stdout, stderr, code := runCLI(t, "operator", "autopilot", "get-config", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	want := "CleanupDeadServers = true\nLastContactThreshold = 200ms\nMaxTrailingLogs = 250\nMinQuorum = 0\nServerStabilizationTime = 10s\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	stdout, _, code = runCLI(t, "operator", "autopilot", "get-config", "-http-addr", agent.URL, "-format", "json")
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || got["LastContactThreshold"] != "200ms" || got["ModifyIndex"] != 9.0 {
		t.Errorf("-format json: got %s (exit %d, %v)", stdout, code, err)
	}
}

func TestAutopilotSetConfig(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"GET /v1/operator/autopilot/configuration": {body: autopilotConfigBody},
		"PUT /v1/operator/autopilot/configuration": {body: "true"},
	})
	stdout, stderr, code := runCLI(t, "operator", "autopilot", "set-config", "-http-addr", agent.URL,
		"-cleanup-dead-servers=false", "-last-contact-threshold", "1s", "-min-quorum", "3", "-server-stabilization-time", "30s")
	if code != 0 || stdout != "Configuration updated.\n" {
		t.Fatalf("got exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	seen := agent.requests()
	if len(seen) != 2 || seen[1].Method != "PUT" || seen[1].Query != "cas=9" {
		t.Fatalf("agent saw %+v, want a GET then a PUT with cas=9", seen)
	}
	var sent map[string]any
	if err := json.Unmarshal(seen[1].Body, &sent); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"CleanupDeadServers": false, "LastContactThreshold": "1s", "MaxTrailingLogs": 250.0, "MinQuorum": 3.0, "ServerStabilizationTime": "30s"}
	for k, v := range want {
		if sent[k] != v {
			t.Errorf("sent %s = %v, want %v (the flags given, the rest as read)", k, sent[k], v)
		}
	}

	agent.answers["PUT /v1/operator/autopilot/configuration"] = answer{body: "false"}
	_, stderr, code = runCLI(t, "operator", "autopilot", "set-config", "-http-addr", agent.URL, "-max-trailing-logs", "10")
	wantError(t, stderr, code, "changed while this command ran", "run it again")

	agent.answers["PUT /v1/operator/autopilot/configuration"] = answer{status: 400,
		body: `{"error": "ServerStabilizationTime: too long", "field": "ServerStabilizationTime", "reason": "too long"}`}
	_, stderr, code = runCLI(t, "operator", "autopilot", "set-config", "-http-addr", agent.URL, "-server-stabilization-time", "1000h")
	wantError(t, stderr, code, "set the autopilot configuration: agent returned 400: ServerStabilizationTime: too long")

	agent.reset()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-last-contact-threshold", "soon"}, "last-contact-threshold"},
		{[]string{"-server-stabilization-time", "-1s"}, "must not be negative"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, stderr, code := runCLI(t, append([]string{"operator", "autopilot", "set-config", "-http-addr", agent.URL}, tc.args...)...)
		wantUsage(t, stderr, code, tc.want)
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none (usage errors send none)", n)
	}
}

func TestAutopilotState(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/operator/autopilot/state": {body: `{
		"Healthy": false, "FailureTolerance": 0, "OptimisticFailureTolerance": 0, "Leader": "s1", "Voters": ["s1", "s2"],
		"Servers": {
			"s2": {"ID": "s2", "Name": "s2", "Address": "10.0.0.2:8300", "NodeStatus": "failed", "Version": "", "LastContact": "-1ns",
			       "LastTerm": 0, "LastIndex": 0, "Healthy": false, "StableSince": "2025-03-06T22:08:00Z", "Status": "voter", "ClockSkew": "-5.004s"},
			"s1": {"ID": "s1", "Name": "s1", "Address": "10.0.0.1:8300", "NodeStatus": "alive", "Version": "1.0", "LastContact": "0s",
			       "LastTerm": 2, "LastIndex": 46, "Healthy": true, "StableSince": "2025-03-06T22:07:51Z", "Status": "leader", "ClockSkew": "0s"}}}`}})
	stdout, stderr, code := runCLI(t, "operator", "autopilot", "state", "-http-addr", agent.URL)
	if code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	want := "" +
		"Healthy: false\nFailure Tolerance: 0\nOptimistic Failure Tolerance: 0\nLeader: s1\n\n" +
		"Node  Address        Status  Healthy  Gossip  Last Contact  Last Term  Last Index  Stable Since          Version  Clock Skew\n" +
		"s1    10.0.0.1:8300  leader  true     alive   0s            2          46          2025-03-06T22:07:51Z  1.0      0s\n" +
		"s2    10.0.0.2:8300  voter   false    failed  unknown       0          0           2025-03-06T22:08:00Z           -5.004s\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	if !strings.Contains(stderr, "Warning: clocks off from the leader's by more than 1s: s2 -5.004s;") {
		t.Errorf("got stderr %q, want a warning about s2's clock", stderr)
	}
	stdout, _, code = runCLI(t, "operator", "autopilot", "state", "-http-addr", agent.URL, "-format", "json")
	if code != 0 || !strings.Contains(stdout, `"Leader": "s1"`) {
		t.Errorf("-format json: got %s (exit %d)", stdout, code)
	}
	_, stderr, code = runCLI(t, "operator", "autopilot", "nothing")
	wantUsage(t, stderr, code, `unknown command "cairn operator autopilot nothing"`)
}

// TestRaftRemovePeerAndTransferLeader: the two commands send Consul's
// requests, and remove-peer wants exactly one of -id and -address.
func TestRaftRemovePeerAndTransferLeader(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{
		"DELETE /v1/operator/raft/peer":          {body: ""},
		"POST /v1/operator/raft/transfer-leader": {body: `{"Success": true}`},
	})
	for _, tc := range []struct {
		args          []string
		method, query string
		stdout        string
	}{
		{[]string{"remove-peer", "-id", "abc"}, "DELETE", "id=abc", "Removed peer with id abc\n"},
		{[]string{"remove-peer", "-address", "10.0.0.9:8300"}, "DELETE", "address=10.0.0.9%3A8300", "Removed peer with address 10.0.0.9:8300\n"},
		{[]string{"transfer-leader", "-id", "abc"}, "POST", "id=abc", "Success\n"},
		{[]string{"transfer-leader"}, "POST", "", "Success\n"},
	} {
		agent.reset()
		stdout, stderr, code := runCLI(t, append(append([]string{"operator", "raft"}, tc.args...), "-http-addr", agent.URL)...)
		if code != 0 || stdout != tc.stdout {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %q", tc.args, code, stdout, stderr, tc.stdout)
			continue
		}
		seen := agent.requests()
		if len(seen) != 1 || seen[0].Method != tc.method || seen[0].Query != tc.query {
			t.Errorf("%v: agent saw %+v, want %s ?%s", tc.args, seen, tc.method, tc.query)
		}
	}
	agent.reset()
	for _, args := range [][]string{{"remove-peer"}, {"remove-peer", "-id", "a", "-address", "b:1"}} {
		_, stderr, code := runCLI(t, append(append([]string{"operator", "raft"}, args...), "-http-addr", agent.URL)...)
		wantUsage(t, stderr, code, "give one of -id and -address")
	}
	if n := len(agent.requests()); n != 0 {
		t.Errorf("agent saw %d requests, want none", n)
	}
}
