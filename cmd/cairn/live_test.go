package main

// Tests of the commands against real agents started in-process
// (agent/agenttest): a dev agent (one in-memory server) where a server is
// needed, gossiping client agents for join and leave.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/porttest"
)

// devAgent starts a dev agent named node and returns its HTTP address.
func devAgent(t *testing.T, node string) string {
	t.Helper()
	cfg := agenttest.Config(t)
	cfg.NodeName = node
	return agenttest.Start(t, cfg).HTTPAddr().String()
}

// mustRun runs the CLI, fails the test unless it exits 0 with nothing on
// stderr, and returns stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCLI(t, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("%v: got exit code %d, stderr %q", args, code, stderr)
	}
	return stdout
}

// eventually runs the CLI until its output contains want, for reads that
// trail a write (the agent's sync to the catalog).
func eventually(t *testing.T, want string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := mustRun(t, args...)
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v: got %q, want it to contain %q", args, out, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func decodeJSON[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output %q is not the JSON wanted: %v", out, err)
	}
	return v
}

func TestCommandsAgainstAgent(t *testing.T) {
	addr := devAgent(t, "test")
	t.Setenv(api.AddressEnv, addr)

	if out := mustRun(t, "services", "register", "-name", "web", "-port", "8080", "-tag", "v1", "-check-ttl", "30s"); out != "Registered service: web\n" {
		t.Errorf("register: got %q", out)
	}
	out := mustRun(t, "services", "list")
	// The agent's own services only: a server's cairn service is the
	// leader's, in the catalog, as Consul's consul service is.
	if out != "ID   Name  Address  Port  Tags\nweb  web            8080  v1\n" {
		t.Errorf("services list: got %q", out)
	}
	if svcs := decodeJSON[[]api.AgentService](t, mustRun(t, "services", "list", "-format", "json")); len(svcs) != 1 || svcs[0].ID != "web" || svcs[0].Port != 8080 {
		t.Errorf("services list json: got %+v", svcs)
	}

	if out := mustRun(t, "checks", "pass", "-note", "fine", "service:web"); out != "Check service:web: passing\n" {
		t.Errorf("checks pass: got %q", out)
	}
	out = mustRun(t, "checks", "list")
	if !strings.Contains(out, "service:web") || !strings.Contains(out, "passing") {
		t.Errorf("checks list: got %q", out)
	}
	for _, verb := range []string{"warn", "fail", "pass"} {
		mustRun(t, "checks", verb, "service:web")
	}

	out = eventually(t, "web", "health", "-passing", "web")
	if !strings.Contains(out, "Node  ServiceID  Address    Port  Status   Checks\ntest  web        127.0.0.1  8080  passing  2 passing\n") {
		t.Errorf("health: got %q", out)
	}
	if got := decodeJSON[[]instanceHealth](t, mustRun(t, "health", "-format", "json", "web")); len(got) != 1 || got[0].Status != "passing" {
		t.Errorf("health json: got %+v", got)
	}

	if out := mustRun(t, "catalog", "datacenters"); out != "dc1\n" {
		t.Errorf("catalog datacenters: got %q", out)
	}
	if got := decodeJSON[[]string](t, mustRun(t, "catalog", "datacenters", "-format", "json")); len(got) != 1 || got[0] != "dc1" {
		t.Errorf("catalog datacenters json: got %q", got)
	}
	if out := mustRun(t, "catalog", "nodes"); out != "Node  Address    DC\ntest  127.0.0.1  dc1\n" {
		t.Errorf("catalog nodes: got %q", out)
	}
	if got := decodeJSON[[]api.Node](t, mustRun(t, "catalog", "nodes", "-format", "json")); len(got) != 1 || got[0].Node != "test" {
		t.Errorf("catalog nodes json: got %+v", got)
	}
	if out := mustRun(t, "catalog", "services", "-tags"); out != "cairn\nweb    v1\n" {
		t.Errorf("catalog services -tags: got %q", out)
	}
	if out := mustRun(t, "catalog", "services", "-node", "test"); out != "cairn\nweb\n" {
		t.Errorf("catalog services -node test: got %q", out)
	}
	if out := mustRun(t, "catalog", "services", "-node", "elsewhere"); out != "" {
		t.Errorf("catalog services -node elsewhere: got %q", out)
	}
	if got := decodeJSON[map[string][]string](t, mustRun(t, "catalog", "services", "-format", "json")); len(got["web"]) != 1 || got["web"][0] != "v1" {
		t.Errorf("catalog services json: got %v", got)
	}

	if out := mustRun(t, "maint", "-enable", "-reason", "upgrade"); out != "Node maintenance is now enabled\n" {
		t.Errorf("maint: got %q", out)
	}
	eventually(t, "maintenance", "health", "web")
	mustRun(t, "maint", "-disable")
	eventually(t, "passing", "health", "web")

	if out := mustRun(t, "members"); !strings.Contains(out, "test") || !regexp.MustCompile(`alive +server +\S+:\S+ +1 +dc1`).MatchString(out) {
		t.Errorf("members: got %q", out)
	}
	if out := mustRun(t, "operator", "raft", "list-peers"); !regexp.MustCompile(`test  [0-9a-f-]{36}  `).MatchString(out) || !strings.Contains(out, "leader  true") {
		t.Errorf("list-peers: got %q", out)
	}

	if got := decodeJSON[[]api.ServiceEntry](t, mustRun(t, "watch", "-type", "service", "-service", "web")); len(got) != 1 || got[0].Service.ID != "web" {
		t.Errorf("watch without handler: got %+v", got)
	}
	if out := mustRun(t, "services", "deregister", "-id", "web"); out != "Deregistered service: web\n" {
		t.Errorf("deregister: got %q", out)
	}
}

// watchInto runs "cairn watch" against the agent at addr with args and a
// handler that writes each view it gets to a file, which it returns with a
// function that stops the watch and checks it exited cleanly.
func watchInto(t *testing.T, addr string, args ...string) (string, func()) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	argv := append(append([]string{"cairn", "watch", "-http-addr", addr}, args...),
		"--", "sh", "-c", `cat > "$1.tmp" && mv "$1.tmp" "$1"`, "sh", out)
	go func() { done <- run(ctx, argv, &stdout, &stderr) }()
	return out, func() {
		t.Helper()
		cancel()
		select {
		case code := <-done:
			if code != 0 || stderr.Len() != 0 {
				t.Errorf("watch: got exit code %d, stderr %q", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not stop when its context ended")
		}
	}
}

// handled waits until the watch handler's file satisfies ok.
func handled(t *testing.T, out string, want string, ok func(data []byte) bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second) // the watch may be backing off
	for {
		data, _ := os.ReadFile(out)
		if ok(data) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler output %q, want %s", data, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchRunsHandler watches a service on a real agent and sees the
// handler run with the instances, then again when a second one registers.
func TestWatchRunsHandler(t *testing.T) {
	addr := devAgent(t, "test")
	mustRun(t, "services", "register", "-http-addr", addr, "-name", "web", "-id", "web-1", "-port", "80")
	out, stop := watchInto(t, addr, "-type", "service", "-service", "web")
	seen := func(ids ...string) {
		t.Helper()
		handled(t, out, fmt.Sprintf("instances %v", ids), func(data []byte) bool {
			var entries []api.ServiceEntry
			if json.Unmarshal(data, &entries) != nil {
				return false
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Service.ID)
			}
			return strings.Join(got, ",") == strings.Join(ids, ",")
		})
	}
	seen("web-1")
	mustRun(t, "services", "register", "-http-addr", addr, "-name", "web", "-id", "web-2", "-port", "81")
	seen("web-1", "web-2")
	stop()
}

// TestWatchKey watches a key that does not exist yet (the handler gets
// null), then sees it written, and a prefix.
func TestWatchKey(t *testing.T) {
	addr := devAgent(t, "watchkey")
	out, stop := watchInto(t, addr, "-type", "key", "-key", "app/flag")
	handled(t, out, "null", func(data []byte) bool { return strings.TrimSpace(string(data)) == "null" })
	mustRun(t, "kv", "put", "-http-addr", addr, "app/flag", "on")
	handled(t, out, `the key with value "on"`, func(data []byte) bool {
		var pairs []api.KVPair
		return json.Unmarshal(data, &pairs) == nil && len(pairs) == 1 && string(pairs[0].Value) == "on"
	})
	stop()

	out, stop = watchInto(t, addr, "-type", "keyprefix", "-prefix", "app/")
	mustRun(t, "kv", "put", "-http-addr", addr, "app/other", "x")
	handled(t, out, "both keys under app/", func(data []byte) bool {
		var pairs []api.KVPair
		return json.Unmarshal(data, &pairs) == nil && len(pairs) == 2
	})
	stop()
}

// TestSnapshotCommands saves one agent's catalog, restores it into another
// and inspects the file; a damaged file is refused before it is sent.
func TestSnapshotCommands(t *testing.T) {
	src := devAgent(t, "test")
	mustRun(t, "services", "register", "-http-addr", src, "-name", "web", "-port", "80", "-tag", "v1")
	eventually(t, "web", "catalog", "services", "-http-addr", src)
	file := filepath.Join(t.TempDir(), "backup.snap")
	out := mustRun(t, "snapshot", "save", "-http-addr", src, file)
	if !strings.HasPrefix(out, "Saved and verified snapshot to index ") {
		t.Errorf("save: got %q", out)
	}
	out = mustRun(t, "snapshot", "inspect", file)
	if !strings.Contains(out, "Datacenter  dc1\n") || !strings.Contains(out, "Nodes       1\n") || !strings.Contains(out, "Services    2\n") ||
		!regexp.MustCompile(`(?m)^ID +[0-9]+-[0-9]+-[0-9]+$`).MatchString(out) || !regexp.MustCompile(`(?m)^Term +[1-9][0-9]*$`).MatchString(out) {
		t.Errorf("inspect: got %q", out)
	}
	if meta := decodeJSON[api.SnapshotMeta](t, mustRun(t, "snapshot", "inspect", "-format", "json", file)); meta.Nodes != 1 || meta.Version != 1 {
		t.Errorf("inspect json: got %+v", meta)
	}

	// The other agent is another node: its own anti-entropy leaves node
	// "test" of the restored catalog alone.
	dst := devAgent(t, "other")
	if out := mustRun(t, "snapshot", "restore", "-http-addr", dst, file); out != "Restored snapshot\n" {
		t.Errorf("restore: got %q", out)
	}
	if out := mustRun(t, "catalog", "services", "-tags", "-node", "test", "-http-addr", dst); out != "cairn\nweb    v1\n" {
		t.Errorf("restored catalog: got %q", out)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	bad := filepath.Join(t.TempDir(), "bad.snap")
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "snapshot", "restore", "-http-addr", dst, bad)
	wantError(t, stderr, code, "restore snapshot: ", bad)
	_, stderr, code = runCLI(t, "snapshot", "inspect", filepath.Join(t.TempDir(), "missing.snap"))
	wantError(t, stderr, code, "missing.snap")
}

// TestJoinMembersLeave joins two client agents through the CLI, lists
// them, and makes one leave.
func TestJoinMembersLeave(t *testing.T) {
	cfgA, cfgB := agenttest.ClientConfig(t, "a"), agenttest.ClientConfig(t, "b")
	a, b := agenttest.Start(t, cfgA), agenttest.Start(t, cfgB)
	addrA := a.HTTPAddr().String()
	if out := mustRun(t, "join", "-http-addr", addrA, agenttest.GossipAddr(cfgB)); out != "Joined 1 of 1 agents\n" {
		t.Errorf("join: got %q", out)
	}
	eventually(t, "b  ", "members", "-http-addr", addrA)
	members := decodeJSON[[]api.Member](t, mustRun(t, "members", "-format", "json", "-http-addr", addrA))
	if len(members) != 2 || members[0].Name != "a" || members[1].Name != "b" {
		t.Errorf("members: got %+v", members)
	}
	if out := mustRun(t, "leave", "-http-addr", b.HTTPAddr().String()); out != "Graceful leave complete\n" {
		t.Errorf("leave: got %q", out)
	}
	eventually(t, "left", "members", "-http-addr", addrA)
}

func TestNewCommandsUsageErrors(t *testing.T) {
	t.Setenv(api.AddressEnv, porttest.Refused(t))
	file := filepath.Join(t.TempDir(), "x.snap")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"snapshot"}, nil},
		{[]string{"snapshot", "nope"}, []string{`unknown command "cairn snapshot nope"`}},
		{[]string{"snapshot", "save"}, []string{"missing FILE", `"cairn snapshot save -h"`}},
		{[]string{"snapshot", "save", file, "-nope", "x:1"}, []string{`unknown flag "-nope" after FILE`}},
		{[]string{"snapshot", "restore", file, file}, []string{"want one FILE"}},
		{[]string{"snapshot", "inspect", "-format", "xml", file}, []string{`-format "xml"`}},
		{[]string{"snapshot", "save", "-bogus", file}, []string{"-bogus", `"cairn snapshot save -h"`}},
		{[]string{"watch"}, []string{"missing -type", "service, services, nodes, checks"}},
		{[]string{"watch", "-type", "kv"}, []string{`-type "kv"`}},
		{[]string{"watch", "-type", "service"}, []string{"-type service needs -service"}},
		{[]string{"watch", "-type", "nodes", "-tag", "v1"}, []string{"-tag does not go with -type nodes"}},
		{[]string{"watch", "-type", "checks", "-state", "bad"}, []string{`-state "bad"`}},
		{[]string{"watch", "-type", "checks", "-service", "web", "-state", "any"}, []string{"not both"}},
		{[]string{"watch", "-type", "nodes", "-wait", "0s"}, []string{"-wait"}},
		{[]string{"watch", "-type", "nodes", "--", ""}, []string{"handler is empty"}},
		{[]string{"services", "list", "-format", "yaml"}, []string{`-format "yaml"`}},
		{[]string{"catalog", "nodes", "-format", "yaml"}, []string{`-format "yaml"`}},
		{[]string{"catalog", "datacenters", "-format", "yaml"}, []string{`-format "yaml"`}},
		{[]string{"catalog", "services", "-format", "yaml"}, []string{`-format "yaml"`}},
		{[]string{"catalog", "services", "-node", ""}, []string{"-node is empty"}},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		if tc.want == nil { // a group without a subcommand shows its help
			if code != 0 || !strings.Contains(stdout, "USAGE:") {
				t.Errorf("%v: got exit code %d, stdout %q", tc.args, code, stdout)
			}
			continue
		}
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}
}
