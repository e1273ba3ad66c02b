package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/e2e/e2etest"
	"github.com/cairndns/cairn/internal/porttest"
)

// cairnBin is the cairn binary TestMain builds for every test.
var cairnBin string

const (
	// nodeName is given to every agent with -node, so that DNS answers do
	// not depend on the host name.
	nodeName = "e2e"
	// readyTimeout bounds how long an agent may take to start.
	readyTimeout = 20 * time.Second
	// stopTimeout bounds how long an agent may take to exit after SIGINT.
	stopTimeout = 15 * time.Second
	// pollInterval is how often a condition with a deadline is checked.
	pollInterval = 50 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	if spec := os.Getenv(relayEnv); spec != "" {
		return runRelayProcess(spec) // a helper of the delay tests, no test run
	}
	bin, cleanup, err := e2etest.BuildCairn("cairn-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer cleanup()
	cairnBin = bin
	return m.Run()
}

// requireDig returns the path of dig. Without dig the test is skipped, or
// fails when CAIRN_E2E=1 says the end-to-end tests must run.
func requireDig(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("dig")
	if err == nil {
		return p
	}
	if os.Getenv("CAIRN_E2E") == "1" {
		t.Fatal("dig is required when CAIRN_E2E=1; apt-get install bind9-dnsutils")
	}
	t.Skip("dig is not on PATH (apt-get install bind9-dnsutils); set CAIRN_E2E=1 to fail instead")
	return ""
}

// freePort returns a loopback port free for both TCP and UDP (the
// agent's DNS server binds both on one port) that no other test of this
// process has been given.
func freePort(t *testing.T) int {
	t.Helper()
	return porttest.Free(t)
}

// syncBuffer is a bytes.Buffer that the process's output copier writes
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// agentProc is one "cairn agent" process.
type agentProc struct {
	dnsPort, httpPort int
	cmd               *exec.Cmd
	out               *syncBuffer   // stdout and stderr
	done              chan struct{} // closed once the process has exited
	waitErr           error         // cmd.Wait's result, set before done is closed
}

// httpAddr is the agent's HTTP API address, as CAIRN_HTTP_ADDR takes it.
func (a *agentProc) httpAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.httpPort))
}

// errAddrInUse says an agent could not bind one of its ports.
var errAddrInUse = errors.New("address already in use")

// startAgent runs "cairn agent -node e2e <args>" on fresh ports and returns
// once it is ready.
func startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	return startAgentOn(t, freePort(t), freePort(t), args...)
}

// startAgentOn is startAgent on the given ports. Should another process
// have taken one of them since it was picked, it retries on fresh ports.
func startAgentOn(t *testing.T, dnsPort, httpPort int, args ...string) *agentProc {
	t.Helper()
	const attempts = 3
	for i := 1; ; i++ {
		a, err := launchAgent(t, dnsPort, httpPort, args)
		if err == nil {
			return a
		}
		if i == attempts || !errors.Is(err, errAddrInUse) {
			t.Fatalf("start agent (attempt %d): %v", i, err) // the cleanup shows the output
		}
		t.Logf("start agent on DNS port %d, HTTP port %d: %v; retrying on fresh ports", dnsPort, httpPort, err)
		dnsPort, httpPort = freePort(t), freePort(t)
	}
}

// launchAgent starts the process and waits until it is ready. On error the
// returned agentProc still holds the output. A cleanup kills the process if
// the test has not stopped it and shows its output if the test failed.
func launchAgent(t *testing.T, dnsPort, httpPort int, args []string) (*agentProc, error) {
	t.Helper()
	// Every agent gets ports of its own for RPC and gossip too (a -dev
	// agent is a server listening on all three); args given later win.
	full := append([]string{"agent", "-node", nodeName,
		"-dns-port", strconv.Itoa(dnsPort), "-http-port", strconv.Itoa(httpPort),
		"-server-port", strconv.Itoa(freePort(t)), "-serf-lan-port", strconv.Itoa(freePort(t)),
		"-serf-wan-port", strconv.Itoa(freePort(t))}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, cairnBin, full...)
	a := &agentProc{dnsPort: dnsPort, httpPort: httpPort, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("cairn %s: %v", strings.Join(full, " "), err)
	}
	go func() {
		a.waitErr = cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		cancel() // kills the process unless it has exited
		<-a.done
		if t.Failed() {
			t.Logf("output of cairn %s:\n%s", strings.Join(full, " "), a.out.String())
		}
	})

	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if a.ready() {
			return a, nil
		}
		select {
		case <-a.done:
			if strings.Contains(a.out.String(), "address already in use") {
				return a, fmt.Errorf("agent exited (%v): %w", a.waitErr, errAddrInUse)
			}
			return a, fmt.Errorf("agent exited before it was ready: %v", a.waitErr)
		case <-timeout.C:
			return a, fmt.Errorf("agent not ready after %v", readyTimeout)
		case <-tick.C:
		}
	}
}

// ready reports whether the agent has a Raft leader and its DNS server is
// listening. The HTTP API starts before DNS, so the leader alone does not
// say that DNS answers yet; the DNS server binds UDP and TCP together.
func (a *agentProc) ready() bool {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + a.httpAddr() + "/v1/status/leader")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var leader string
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&leader) != nil || leader == "" {
		return false
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(a.dnsPort)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// stop interrupts the agent as Ctrl-C would and checks that it exits with
// status 0 in time, having logged no error.
func (a *agentProc) stop(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("send SIGINT to the agent: %v", err)
	}
	timeout := time.NewTimer(stopTimeout)
	defer timeout.Stop()
	select {
	case <-a.done:
	case <-timeout.C:
		t.Fatalf("agent still running %v after SIGINT", stopTimeout)
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("agent exit code after SIGINT: got %d (%v), want 0", code, a.waitErr)
	}
	for line := range strings.Lines(a.out.String()) {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("agent logged an error: %s", strings.TrimSpace(line))
		}
	}
}

// runCLI runs "cairn <args>" against the agent at httpAddr, given through
// CAIRN_HTTP_ADDR, and returns its output and exit code.
func runCLI(t *testing.T, httpAddr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, httpAddr, cairnBin, args...)
}

// runCommand runs name with args, CAIRN_HTTP_ADDR set to httpAddr, and
// returns its output and exit code; a command that cannot run, or is
// killed after 15 s, fails the test.
func runCommand(t *testing.T, httpAddr, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "CAIRN_HTTP_ADDR="+httpAddr) // the last one wins
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), code
}

// mustCLI is runCLI for a command that must succeed silently on stderr.
func mustCLI(t *testing.T, httpAddr string, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCLI(t, httpAddr, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("cairn %s: got exit code %d, stderr %q, want 0 and none", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// dig runs "dig @127.0.0.1 -p <port> <args>" and returns its output.
func dig(t *testing.T, port int, args ...string) string {
	t.Helper()
	bin := requireDig(t)
	full := append([]string{"@127.0.0.1", "-p", strconv.Itoa(port), "+time=2", "+tries=2"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("dig %s: %v\n%s%s", strings.Join(full, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// digStatus is the rcode in dig's header line ("status: NXDOMAIN").
func digStatus(out string) string {
	_, rest, ok := strings.Cut(out, "status: ")
	if !ok {
		return ""
	}
	status, _, _ := strings.Cut(rest, ",")
	return status
}

// digSection returns the records of one section of dig's full output
// ("ANSWER", "AUTHORITY", "ADDITIONAL"), each split into fields.
func digSection(out, name string) [][]string {
	var records [][]string
	in := false
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		switch {
		case line == ";; "+name+" SECTION:":
			in = true
		case in && (line == "" || strings.HasPrefix(line, ";")):
			return records
		case in:
			records = append(records, strings.Fields(line))
		}
	}
	return records
}

// tableRow reports whether a table the CLI printed has a row of exactly
// these cells.
func tableRow(out string, cells ...string) bool {
	want := strings.Join(cells, " ")
	for line := range strings.Lines(out) {
		if strings.Join(strings.Fields(line), " ") == want {
			return true
		}
	}
	return false
}

// waitOutput waits, up to readyTimeout, until the agent's output holds
// want.
func waitOutput(t *testing.T, a *agentProc, want string) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for !strings.Contains(a.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's output lacks %q after %v:\n%s", want, readyTimeout, a.out.String())
		}
		time.Sleep(pollInterval)
	}
}

// launchTogether starts the agents of args (by name, each with its
// arguments and fresh DNS and HTTP ports) at once, as a cluster whose
// servers are ready only once enough of them run must be, and returns
// them by name once every one is ready; any failure fails the test.
func launchTogether(t *testing.T, args map[string][]string) map[string]*agentProc {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		agents = map[string]*agentProc{}
		errs   []error
	)
	for name, a := range args {
		wg.Go(func() {
			p, err := launchAgent(t, freePort(t), freePort(t), a)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			agents[name] = p
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start the agents together: %v", err)
	}
	return agents
}
