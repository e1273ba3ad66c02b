package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify runs the agent as systemd runs the packaged unit
// (Type=notify): with NOTIFY_SOCKET naming a unixgram socket of the test.
// READY=1 comes once the HTTP API and DNS answer; SIGHUP (ExecReload)
// brings RELOADING=1 then READY=1; SIGTERM brings STOPPING=1, then a clean
// exit.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", sock, err)
	}
	defer notify.Close()

	dnsPort, httpPort := freePort(t), freePort(t)
	args := []string{"agent", "-dev", "-node", nodeName,
		"-dns-port", strconv.Itoa(dnsPort), "-http-port", strconv.Itoa(httpPort),
		"-server-port", strconv.Itoa(freePort(t)), "-serf-lan-port", strconv.Itoa(freePort(t)),
		"-serf-wan-port", strconv.Itoa(freePort(t))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin, args...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("cairn %s: %v", strings.Join(args, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			t.Logf("output of cairn %s:\n%s", strings.Join(args, " "), out.String())
		}
	}()

	expect := func(want string, timeout time.Duration) {
		t.Helper()
		if err := notify.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, err := notify.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if got := string(buf[:n]); got != want {
			t.Fatalf("got notification %q, want %q", got, want)
		}
	}
	signal := func(sig os.Signal) {
		t.Helper()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatalf("send %v to the agent: %v", sig, err)
		}
	}

	expect("READY=1", readyTimeout)
	// Ready means serving: no waiting after READY=1.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://127.0.0.1:" + strconv.Itoa(httpPort) + "/v1/status/leader")
	if err != nil {
		t.Fatalf("HTTP API after READY=1: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/status/leader after READY=1: got status %d, want 200", resp.StatusCode)
	}
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(dnsPort), 5*time.Second)
	if err != nil {
		t.Fatalf("DNS over TCP after READY=1: %v", err)
	}
	conn.Close()

	signal(syscall.SIGHUP)
	expect("RELOADING=1", readyTimeout)
	expect("READY=1", readyTimeout)

	signal(syscall.SIGTERM)
	expect("STOPPING=1", stopTimeout)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agent exit after SIGTERM: got %v, want status 0", err)
		}
	case <-time.After(stopTimeout):
		t.Fatalf("agent still running %v after SIGTERM", stopTimeout)
	}
}
