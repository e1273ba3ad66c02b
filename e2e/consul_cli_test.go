package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// consulCLIScript builds Consul's CLI, unchanged, from its module source
// (the version it names) and prints the binary's path; CI runs it before
// the tests, and the binary is cached between runs.
const consulCLIScript = "consulcli/build-consul.sh"

// requireConsulCLI returns the path of the consul binary the script
// builds. With CAIRN_E2E=1 the script builds it if need be (minutes, the
// first time); otherwise a binary not built yet skips the test.
func requireConsulCLI(t *testing.T) string {
	t.Helper()
	args := []string{consulCLIScript}
	if os.Getenv("CAIRN_E2E") != "1" {
		args = append(args, "--check")
	}
	cmd := exec.Command("bash", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return strings.TrimSpace(string(out))
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		t.Skipf("Consul's CLI is not built (bash e2e/%s builds it, in minutes); set CAIRN_E2E=1 to build it and run", consulCLIScript)
	}
	t.Fatalf("bash e2e/%s: %v\n%s", consulCLIScript, err, stderr.String())
	return ""
}

// outcome is what a step of the Consul CLI run is expected to do today.
type outcome int

const (
	works outcome = iota
	// fails marks a step that fails against cairn today, for the reason
	// in its why; the run logs it and goes on. Should it work, the run
	// says so: its row is then flipped to works.
	fails
)

// cliStep is one command of the Consul CLI run, or an action of the test.
// Steps run in order and share the cluster, so a later step may rely on
// what an earlier one did (which must then be one that works). In args
// (split on spaces) and want, $name is a variable: set by the test or
// saved by an earlier step.
type cliStep struct {
	expect outcome
	at     string // the agent whose HTTP API the command uses
	args   string // the command line after "consul"
	// want is a regular expression the command's output (stdout, then
	// stderr) must match; code is its exit status (default 0).
	want string
	code int
	// poll runs the command again until it does as wanted, as for what
	// the cluster learns in its own time (coordinates, gossip).
	poll bool
	// save sets variables from the output: name → a regular expression
	// whose first group is the value. out saves the whole stdout in the
	// file $dir/<out>.
	save map[string]string
	out  string
	// token is the ACL token the command runs with (default $mgmt once
	// set).
	token string
	// bg starts the command in the background under that name (a watch,
	// a monitor), which works once it has started; a later step with wait
	// checks its output against want. A wait step with args runs that
	// command before each look, until the output comes: the way to know
	// that a stream is attached.
	bg, wait string
	// do is an action of the test, not a command, named by args.
	do func(*cliRun)
	// why says, for a step that fails, why: what cairn lacks (kept as a
	// note once the row works).
	why string
}

// consulCLISteps is the run: each Consul command for a feature cairn has,
// and what its output must show. The agents: servers s1, s2, s3 and
// clients c1, c2 of dc1, with ACLs (default deny) and gossip encryption.
var consulCLISteps = []cliStep{
	// ACLs first: the bootstrap token runs every later command.
	{expect: works, at: "s1", args: "acl bootstrap", want: `SecretID:\s+[0-9a-f-]{36}`,
		token: "-", save: map[string]string{"mgmt": `SecretID:\s+(\S+)`}},
	{expect: works, at: "s1", args: "acl policy create -name agents -rules @$dir/agents.hcl", want: `Name:\s+agents`},
	{expect: works, at: "s1", args: "acl policy create -name kv-read -rules @$dir/kv-read.hcl", want: `Name:\s+kv-read`},
	{expect: works, at: "s1", args: "acl policy list", want: `(?s)agents:.*kv-read:`},
	// The agents were started with $agent as their agent token.
	{expect: works, at: "s1", args: "acl token create -description agents -secret $agent -policy-name agents",
		want: `SecretID:\s+$agent`, save: map[string]string{"agentID": `AccessorID:\s+(\S+)`}},
	{expect: works, at: "s1", args: "acl token create -description reader -policy-name kv-read",
		save: map[string]string{"reader": `SecretID:\s+(\S+)`, "readerID": `AccessorID:\s+(\S+)`}},
	{expect: works, at: "s1", args: "acl token list", want: `(?s)Description:\s+(agents.*Description:\s+reader|reader.*Description:\s+agents)`},
	{expect: works, at: "s1", args: "acl token read -accessor-id $readerID", want: `(?s)Description:\s+reader.*kv-read`},
	{expect: works, at: "s1", args: "acl token clone -accessor-id $readerID -description copy", want: `Description:\s+copy`,
		why: "no PUT /v1/acl/token/<id>/clone"},
	{expect: works, at: "s1", args: "acl role list", want: `^$`, why: "no /v1/acl/roles"},
	{expect: works, at: "c1", args: "acl set-agent-token agent $agent", want: `ACL token "agent" set successfully`,
		why: "no PUT /v1/agent/token/<kind>"},

	{expect: works, at: "s1", args: "members", poll: true,
		want: `(?m)^c1\s+127\.0\.0\.1:\d+\s+alive\s+client\s+.*\s+dc1\s`},
	{expect: works, at: "s1", args: "members", want: `(?m)^s3\s+127\.0\.0\.1:\d+\s+alive\s+server\s+.*\s+dc1\s`},
	{expect: works, at: "s1", args: "members -wan", want: `(?m)^s2\.dc1\s+127\.0\.0\.1:\d+\s+alive\s+server\s`},
	{expect: works, at: "c1", args: "info", want: `(?s)consul:.*server = false`},
	{expect: works, at: "s1", args: "info", want: `(?s)raft:.*state = (Leader|Follower)`},
	{expect: works, at: "s1", args: "join 127.0.0.1:$c1lan", want: `Successfully joined cluster by contacting 1 nodes\.`},
	{expect: works, at: "s1", args: "rtt s1 c1", poll: true, want: `Estimated s1 <-> c1 rtt: \d+\.\d{3} ms \(using LAN coordinates\)`},
	{expect: works, at: "s1", args: "rtt -wan s2.dc1", poll: true,
		want: `Estimated s2\.dc1 <-> s1\.dc1 rtt: \d+\.\d{3} ms \(using WAN coordinates\)`},

	// Key/value store, locks and watches.
	{expect: works, at: "c1", args: "kv put app/a 1", want: `Success! Data written to: app/a`},
	{expect: works, at: "c1", args: "kv put app/b 2", want: `Success! Data written to: app/b`},
	{expect: works, at: "c1", args: "kv get app/a", want: `^1\n$`},
	{expect: works, at: "c1", args: "kv get -recurse app/", want: `^app/a:1\napp/b:2\n$`},
	{expect: works, at: "c1", args: "kv get app/a", token: "$reader", want: `^1\n$`},
	{expect: works, at: "c1", args: "kv put app/a 9", token: "$reader", code: 1, want: `403`},
	{expect: works, at: "c1", args: "kv export app/", out: "export.json", want: `"key": "app/b",\s+"flags": 0,\s+"value": "Mg=="`},
	{expect: works, at: "c1", args: "kv delete app/a", want: `Success! Deleted key: app/a`},
	{expect: works, at: "c1", args: "kv delete -recurse app/", want: `Success! Deleted keys with prefix: app/`},
	{expect: works, at: "c1", args: "kv get app/b", code: 1, want: `Error! No key exists at: app/b`},
	{expect: works, at: "c1", args: "kv import @$dir/export.json", want: `Imported: app/a\nImported: app/b`},
	{expect: works, at: "c1", args: "kv get app/b", want: `^2\n$`},
	{expect: works, at: "c1", args: "lock locks/job echo ran-under-lock", want: `ran-under-lock`},
	{expect: works, at: "c1", args: "lock -n 2 locks/sem echo ran-in-semaphore", want: `ran-in-semaphore`},
	{expect: works, at: "c1", args: "watch -type key -key app/watched cat", bg: "key-watch"},
	{expect: works, at: "c1", args: "kv put app/watched hello", want: `Success!`},
	{expect: works, wait: "key-watch", want: `"Value":"aGVsbG8="`}, // base64 of hello
	{expect: works, at: "c1", args: "watch -type keyprefix -prefix app/ cat", bg: "prefix-watch"},
	{expect: works, wait: "prefix-watch", want: `"Key":"app/watched"`},

	// The local agent: services, maintenance, reload, as monitor shows them.
	{expect: works, at: "c1", args: "monitor", bg: "monitor"},
	{expect: works, wait: "monitor", at: "c1", args: "join 127.0.0.1:$c1lan", want: `msg="joined through the API"`},
	{expect: works, at: "c1", args: "watch -type service -service web cat", bg: "service-watch"},
	{expect: works, at: "c1", args: "services register -name web -port 8080 -tag v1", want: `Registered service: web`},
	{expect: works, wait: "monitor", want: `msg="service registered" .*service=web`},
	{expect: works, wait: "service-watch", want: `"Service":"web"`},
	{expect: works, at: "c1", args: "catalog services -tags", poll: true, want: `(?m)^web\s+v1$`},
	{expect: works, at: "c1", args: "catalog nodes -service web", want: `(?m)^c1\s+[0-9a-f]{8}\s+127\.0\.0\.1\s+dc1$`},
	{expect: works, at: "c1", args: "catalog nodes", want: `(?s)Node\s+ID\s+Address\s+DC.*\ns3\s`},
	{expect: works, at: "c1", args: "catalog datacenters", want: `^dc1\n$`},
	{expect: works, at: "c1", args: "maint -enable -reason kernel", want: `Node maintenance is now enabled`},
	{expect: works, wait: "monitor", want: `msg="node entered maintenance mode" .*reason=kernel`},
	{expect: works, at: "c1", args: "maint -enable -service web -reason deploy", want: `Service maintenance is now enabled for "web"`},
	// consul maint lists the checks in its map's order: either comes first.
	{expect: works, at: "c1", args: "maint",
		want: `(?s)(Node:\s+Name:\s+c1\s+Reason: kernel.*Service:\s+ID:\s+web\s+Reason: deploy|Service:\s+ID:\s+web\s+Reason: deploy.*Node:\s+Name:\s+c1\s+Reason: kernel)`},
	{expect: works, at: "c1", args: "maint -disable", want: `Node maintenance is now disabled`},
	{expect: works, at: "c1", args: "maint -disable -service web", want: `Service maintenance is now disabled for "web"`},
	{expect: works, wait: "monitor", want: `msg="service left maintenance mode" .*service=web`},
	{expect: works, at: "c1", args: "reload", want: `Configuration reload triggered`},
	{expect: works, wait: "monitor", want: `msg="configuration reloaded"`},
	{expect: works, at: "c1", args: "services deregister -id web", want: `Deregistered service: web`},
	{expect: works, wait: "monitor", want: `msg="service deregistered" .*service=web`},

	// Events.
	{expect: works, at: "c1", args: "watch -type event -name deploy cat", bg: "event-watch"},
	{expect: works, at: "c1", args: "event -name deploy", want: `Event ID: \S+`, why: "no PUT /v1/event/fire/<name>"},
	{expect: works, wait: "event-watch", want: `"Name":"deploy"`, why: "no /v1/event/list"},

	// Snapshots: what is written after a save is gone after its restore.
	{expect: works, at: "s1", args: "snapshot save $dir/backup.snap", want: `Saved and verified snapshot to index \d+`},
	{expect: works, at: "s1", args: "snapshot inspect $dir/backup.snap", want: `(?s)ID\s+\S+.*Index\s+\d+.*Term\s+\d+`},
	{expect: works, at: "c1", args: "kv put after/snapshot x", want: `Success!`},
	{expect: works, at: "s2", args: "snapshot restore $dir/backup.snap", want: `Restored snapshot`},
	{expect: works, at: "c1", args: "kv get after/snapshot", poll: true, code: 1, want: `Error! No key exists at: after/snapshot`},
	{expect: works, at: "c1", args: "kv get app/b", want: `^2\n$`},

	// Gossip keys: a new one installed, made primary, the old one removed.
	{expect: works, at: "s1", args: "keyring -list", want: `(?s)WAN:\s+$key \[3/3\].*dc1 \(LAN\):\s+$key \[5/5\]`},
	{expect: works, args: "keygen", save: map[string]string{"newkey": `^(\S+)\n$`}},
	{expect: works, at: "s1", args: "keyring -install $newkey", want: `Installing new gossip encryption key`},
	{expect: works, at: "s1", args: "keyring -use $newkey", want: `Changing primary gossip encryption key`},
	{expect: works, at: "s1", args: "keyring -remove $key", want: `Removing gossip encryption key`},
	{expect: works, at: "s1", args: "keyring -list-primary", want: `(?s)dc1 \(LAN\):\s+$newkey \[5/5\]`},

	// Raft and autopilot.
	{expect: works, at: "s1", args: "operator raft list-peers", want: `(?s)Node\s+ID\s+Address\s+State\s+Voter.*s3\s+\S+\s+127\.0\.0\.1:$s3rpc\s+(leader|follower)\s+true`},
	{expect: works, at: "s1", args: "operator autopilot get-config", want: `CleanupDeadServers = true`},
	{expect: works, at: "s1", args: "operator autopilot set-config -cleanup-dead-servers=false", want: `Configuration updated!`},
	{expect: works, at: "s2", args: "operator autopilot get-config", want: `CleanupDeadServers = false`},
	{expect: works, at: "s1", args: "operator autopilot state", poll: true, want: `(?s)Healthy:\s+true.*Voters:`},
	{expect: works, at: "s1", args: "operator raft transfer-leader", want: `Success`, why: "no POST /v1/operator/raft/transfer-leader"},
	{expect: works, at: "c1", args: "debug -duration 10s -interval 5s -capture agent -capture members -output $dir/debug", want: `Saved debug archive`,
		why: "consul debug reads /v1/agent/self's DebugConfig, which cairn lacks"},

	// Agents leaving: c2 gracefully, s3 killed, then removed by hand.
	{expect: works, at: "c2", args: "leave", want: `Graceful leave complete`},
	{expect: works, at: "s1", args: "members", poll: true, want: `(?m)^c2\s+127\.0\.0\.1:\d+\s+left\s+client\s`},
	{do: killS3, args: "kill s3"},
	{expect: works, at: "s1", args: "members", poll: true, want: `(?m)^s3\s+127\.0\.0\.1:\d+\s+failed\s+server\s`},
	{expect: works, at: "s1", args: "operator raft remove-peer -address 127.0.0.1:$s3rpc", want: `Removed peer with address "127\.0\.0\.1:$s3rpc"`,
		why: "no DELETE /v1/operator/raft/peer"},
	{expect: works, at: "s1", args: "force-leave s3", want: `^$`, why: "no PUT /v1/agent/force-leave/<node>"},
	{expect: works, at: "s1", args: "members", poll: true, want: `(?m)^s3\s+127\.0\.0\.1:\d+\s+left\s+server\s`,
		why: "needs force-leave"},
}

// killS3 kills server s3 as a crash would.
func killS3(r *cliRun) {
	s3 := r.agents["s3"]
	if err := s3.cmd.Process.Kill(); err != nil {
		r.t.Fatalf("kill s3: %v", err)
	}
	<-s3.done
}

// TestConsulCLI runs Consul's own CLI, built from its module source, against
// a cairn cluster, one step of consulCLISteps at a time, and logs a table
// of what works.
func TestConsulCLI(t *testing.T) {
	t.Parallel()
	consul := requireConsulCLI(t)
	dir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	r := &cliRun{t: t, consul: consul, bgs: map[string]*bgCommand{}, vars: map[string]string{
		"dir": dir, "key": base64.StdEncoding.EncodeToString(key), "agent": "9b1d4c3e-6a2f-4e8d-9c7b-1f0a2b3c4d5e",
	}}
	for name, body := range map[string]string{
		"agents.hcl":  `node_prefix "" { policy = "write" }` + "\n" + `service_prefix "" { policy = "write" }`,
		"kv-read.hcl": `key_prefix "app/" { policy = "read" }`,
		"cairn.hcl": fmt.Sprintf(`encrypt = %q
sync_coordinate_interval_min = "200ms"
coordinate_update_period = "100ms"
acl {
  enabled = true
  default_policy = "deny"
  tokens { agent = %q }
}
`, r.vars["key"], r.vars["agent"]),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lan := map[string]string{}
	for _, name := range []string{"s1", "s2", "s3", "c1", "c2"} {
		lan[name] = strconv.Itoa(freePort(t))
	}
	r.vars["c1lan"], r.vars["s3rpc"] = lan["c1"], strconv.Itoa(freePort(t))
	args := map[string][]string{}
	for name := range lan {
		a := []string{"-node", name, "-data-dir", t.TempDir(), "-config-file", filepath.Join(dir, "cairn.hcl"),
			"-serf-lan-port", lan[name], "-retry-interval", "1s",
			"-retry-join", "127.0.0.1:" + lan["s1"], "-retry-join", "127.0.0.1:" + lan["s2"], "-retry-join", "127.0.0.1:" + lan["s3"]}
		if name[0] == 's' {
			a = append(a, "-server", "-bootstrap-expect", "3")
		}
		if name == "s3" {
			a = append(a, "-server-port", r.vars["s3rpc"])
		}
		args[name] = a
	}
	start := time.Now()
	r.agents = launchTogether(t, args)
	t.Logf("five agents ready in %v", time.Since(start).Round(time.Millisecond))

	var table strings.Builder
	var newlyWorking []string
	for i, s := range consulCLISteps {
		line, ok := r.step(s)
		fmt.Fprintf(&table, "%3d  %-5s  %s\n", i+1, map[bool]string{true: "works", false: "FAILS"}[ok], line)
		switch {
		case s.do != nil:
		case ok && s.expect == fails:
			newlyWorking = append(newlyWorking, line)
		case !ok && s.expect == works:
			t.Errorf("step %d: %s", i+1, line)
		}
	}
	t.Logf("the Consul CLI against cairn, %v in all:\n%s", time.Since(start).Round(time.Second), table.String())
	for _, line := range newlyWorking {
		t.Logf("now works (flip its row to works): %s", line)
	}
}

// cliRun is the state of one run of the steps.
type cliRun struct {
	t      *testing.T
	consul string
	agents map[string]*agentProc
	vars   map[string]string
	bgs    map[string]*bgCommand
}

// bgCommand is a command running in the background.
type bgCommand struct {
	out  *syncBuffer
	done chan struct{}
}

// stepTimeout bounds one command, and the wait of a poll or of a
// background command's output for a step that works; one that fails
// today waits only failingWait.
const (
	stepTimeout = 30 * time.Second
	failingWait = 3 * time.Second
)

// step runs s and returns a line for the table (the command and what
// went wrong, or why it is known to fail) and whether it did as wanted.
func (r *cliRun) step(s cliStep) (line string, ok bool) {
	t := r.t
	t.Helper()
	args := r.expand(s.args, false)
	name := "consul " + args
	if s.wait != "" {
		name = "output of " + s.wait
	}
	if s.do != nil {
		s.do(r)
		return s.args, true
	}
	var err error
	switch {
	case s.bg != "":
		err = r.startBG(s)
	case s.wait != "":
		err = r.waitBG(s)
	default:
		err = r.runPolled(s)
	}
	switch {
	case err == nil:
		return name, true
	case s.why != "" && s.expect == fails:
		t.Logf("%s: %v", name, err)
		return name + " — " + s.why, false
	default:
		return fmt.Sprintf("%s: %v", name, err), false
	}
}

// expand replaces the $variables of s; in a regular expression (re),
// their values are quoted.
func (r *cliRun) expand(s string, re bool) string {
	return os.Expand(s, func(name string) string {
		v, ok := r.vars[name]
		switch {
		case !ok:
			r.t.Fatalf("%q: no variable $%s", s, name)
		case re:
			return regexp.QuoteMeta(v)
		}
		return v
	})
}

// command returns the consul command of s, talking to its agent with its
// token, and the environment Consul's CLI reads, and no other CONSUL_
// variable.
func (r *cliRun) command(ctx context.Context, s cliStep) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.consul, strings.Fields(r.expand(s.args, false))...)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONSUL_") {
			env = append(env, kv)
		}
	}
	if s.at != "" {
		env = append(env, "CONSUL_HTTP_ADDR="+r.agents[s.at].httpAddr())
	}
	token := s.token
	if token == "" {
		token = r.vars["mgmt"] // "" until the bootstrap
	}
	if token != "-" && token != "" {
		env = append(env, "CONSUL_HTTP_TOKEN="+r.expand(token, false))
	}
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runPolled runs s's command, again until it does as wanted when s.poll
// says so.
func (r *cliRun) runPolled(s cliStep) error {
	wait := stepTimeout
	if s.expect == fails {
		wait = failingWait
	}
	deadline := time.Now().Add(wait)
	for {
		err := r.run(s)
		if err == nil || !s.poll || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// run runs s's command once and checks its exit status and output, then
// saves what s says to.
func (r *cliRun) run(s cliStep) error {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cmd := r.command(ctx, s)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		code = exit.ExitCode()
	default:
		return fmt.Errorf("%w; stderr %q", err, stderr.String())
	}
	out := stdout.String() + stderr.String()
	if code != s.code {
		return fmt.Errorf("exit status %d, want %d; output %q", code, s.code, out)
	}
	if err := r.match(s.want, out); err != nil {
		return err
	}
	for name, expr := range s.save {
		m := regexp.MustCompile(expr).FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("output %q has no %s (%s)", out, name, expr)
		}
		r.vars[name] = m[1]
	}
	if s.out != "" {
		if err := os.WriteFile(filepath.Join(r.vars["dir"], s.out), stdout.Bytes(), 0o600); err != nil {
			r.t.Fatal(err)
		}
	}
	return nil
}

// match checks out against the regular expression want, with its
// variables expanded.
func (r *cliRun) match(want, out string) error {
	if want == "" {
		return nil
	}
	if !regexp.MustCompile(r.expand(want, true)).MatchString(out) {
		return fmt.Errorf("output %q does not match %s", out, want)
	}
	return nil
}

// startBG starts s's command in the background until the test ends.
func (r *cliRun) startBG(s cliStep) error {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := r.command(ctx, s)
	bg := &bgCommand{out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = bg.out, bg.out
	if err := cmd.Start(); err != nil {
		cancel()
		return err
	}
	go func() {
		_ = cmd.Wait()
		close(bg.done)
	}()
	r.t.Cleanup(func() {
		cancel()
		<-bg.done
	})
	r.bgs[s.bg] = bg
	return nil
}

// waitBG waits until the output of the background command s.wait matches
// s.want.
func (r *cliRun) waitBG(s cliStep) error {
	bg := r.bgs[s.wait]
	if bg == nil {
		return fmt.Errorf("no background command %q is running", s.wait)
	}
	wait := stepTimeout
	if s.expect == fails {
		wait = failingWait
	}
	deadline := time.Now().Add(wait)
	for {
		if s.args != "" {
			if err := r.run(cliStep{at: s.at, args: s.args}); err != nil {
				return err
			}
		}
		err := r.match(s.want, bg.out.String())
		if err == nil {
			return nil
		}
		select {
		case <-bg.done:
			return fmt.Errorf("it exited: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		if s.args != "" {
			time.Sleep(250 * time.Millisecond) // between commands
		} else {
			time.Sleep(pollInterval)
		}
	}
}
