package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stubZonesDir holds the example resolver configurations the tests load.
var stubZonesDir = filepath.Join("..", "examples", "stub-zones")

// requireTool returns the path of the program name, which Debian's package
// pkg installs. Without it the test is skipped, or fails when CAIRN_E2E=1
// says the end-to-end tests must run.
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CAIRN_E2E") == "1" {
		t.Fatalf("%s is required when CAIRN_E2E=1; apt-get install %s", name, pkg)
	}
	t.Skipf("%s is not on PATH (apt-get install %s); set CAIRN_E2E=1 to fail instead", name, pkg)
	return ""
}

// skipOrFail skips the test because the machine cannot run it, or fails it
// when CAIRN_E2E=1 says the end-to-end tests must run.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CAIRN_E2E") == "1" {
		t.Fatalf("%s; required when CAIRN_E2E=1", msg)
	}
	t.Skipf("%s; set CAIRN_E2E=1 to fail instead", msg)
}

// exampleConfig returns the example file name from examples/stub-zones
// with the agent's address old, which must occur exactly once, replaced by
// new: the test runs the example as shipped, only on its own port.
func exampleConfig(t *testing.T, name, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stubZonesDir, name))
	if err != nil {
		t.Fatalf("read the example: %v", err)
	}
	text := string(b)
	if n := strings.Count(text, old); n != 1 {
		t.Fatalf("examples/stub-zones/%s: got %d occurrences of %q, want 1", name, n, old)
	}
	return strings.Replace(text, old, new, 1)
}

// startResolver runs the command that command(port) returns, for a free
// loopback port, and returns that port once the process accepts TCP
// connections on it. Should another process have taken the port since it
// was picked, it retries on a fresh one. A cleanup kills the process and
// shows its output if the test failed.
func startResolver(t *testing.T, command func(port int) []string) int {
	t.Helper()
	const attempts = 3
	for i := 1; ; i++ {
		port := freePort(t)
		args := command(port)
		err := launchResolver(t, port, args)
		if err == nil {
			return port
		}
		if i == attempts || !errors.Is(err, errAddrInUse) {
			t.Fatalf("start %s (attempt %d): %v", args[0], i, err)
		}
		t.Logf("start %s on port %d: %v; retrying on a fresh port", args[0], port, err)
	}
}

// launchResolver starts args and waits until it listens on port. The
// cleanup shows the output of a process that did not.
func launchResolver(t *testing.T, port int, args []string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cancel() // kills the process unless it has exited
		<-done
		if t.Failed() {
			t.Logf("output of %s:\n%s", strings.Join(args, " "), out.String())
		}
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-done:
			// Unbound says "Address already in use", dnsmasq "Address in use".
			if strings.Contains(out.String(), "in use") {
				return fmt.Errorf("exited (%v): %w", waitErr, errAddrInUse)
			}
			return fmt.Errorf("exited before it listened on %s: %v", addr, waitErr)
		case <-timeout.C:
			return fmt.Errorf("not listening on %s after %v", addr, readyTimeout)
		case <-tick.C:
		}
	}
}

// checkResolvesCluster asks the resolver on port, which sends cluster. to
// an agent where the tour's web service is registered, the questions an
// application would, and checks that the agent's answers come through.
func checkResolvesCluster(t *testing.T, port int) {
	t.Helper()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"web.service.dc1.cluster", "SRV"}, webSRV},
		{[]string{"web.service.dc1.cluster", "A"}, "127.0.0.1"},
		{[]string{"web.service.cluster", "A"}, "127.0.0.1"},
		{[]string{"v1.web.service.cluster", "SRV"}, webSRV},
		{[]string{"e2e.node.dc1.cluster", "A"}, "127.0.0.1"},
	} {
		got := strings.TrimSpace(dig(t, port, append(tc.args, "+short")...))
		if got != tc.want {
			t.Errorf("dig %s +short: got %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	out := dig(t, port, "nope.service.dc1.cluster", "A")
	if got := digStatus(out); got != "NXDOMAIN" {
		t.Errorf("dig nope.service.dc1.cluster A: got status %q, want NXDOMAIN:\n%s", got, out)
	}
}
