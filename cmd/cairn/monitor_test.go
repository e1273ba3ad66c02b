package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
)

// lockedBuffer is a CLI's output read while the CLI runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startCLI runs the CLI in a goroutine; the returned channel gets its exit
// code. The test waits for it (cliDone).
func startCLI(ctx context.Context, args ...string) (stdout, stderr *lockedBuffer, code <-chan int) {
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"cairn"}, args...), stdout, stderr) }()
	return stdout, stderr, done
}

// waitOutput waits until out contains want, or fails after a deadline.
func waitOutput(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("got output %q, want it to contain %q", out.String(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cliDone waits for the CLI's exit code, or fails after a deadline.
func cliDone(t *testing.T, code <-chan int) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end within 10s")
		return -1
	}
}

// streamingAgent answers GET /v1/agent/monitor with lines, then holds the
// stream open until the client leaves (or ends it, with end).
func streamingAgent(t *testing.T, lines []string, end bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/agent/monitor" {
			http.NotFound(w, r)
			return
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		http.NewResponseController(w).Flush()
		if !end {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// SIGINT ends `cairn monitor` cleanly. Not parallel: the signal goes to
// the whole test process, and no other test runs meanwhile.
func TestMonitorInterrupt(t *testing.T) {
	srv := streamingAgent(t, []string{"time=x level=INFO msg=hello"}, false)
	stdout, stderr, code := startCLI(context.Background(), "monitor", "-http-addr", srv.URL)
	// The line is printed after the command listens for signals.
	waitOutput(t, stdout, "msg=hello\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if c := cliDone(t, code); c != 0 || stderr.String() != "" {
		t.Errorf("got exit code %d, stderr %q; want 0 and nothing", c, stderr)
	}
}

func TestMonitorStreamEnded(t *testing.T) {
	t.Parallel()
	srv := streamingAgent(t, []string{"a", "b"}, true)
	stdout, stderr, code := runCLI(t, "monitor", "-http-addr", srv.URL, "-log-level", "ERROR")
	wantError(t, stderr, code, "the agent ended the stream")
	if stdout != "a\nb\n" {
		t.Errorf("got stdout %q", stdout)
	}
}

func TestMonitorUsage(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCLI(t, "monitor", "-log-level", "loud")
	wantUsage(t, stderr, code, `-log-level: "loud" is not one of trace, debug, info, warn, error`)
	_, stderr, code = runCLI(t, "monitor", "now")
	wantUsage(t, stderr, code, `unexpected argument "now"`)
}

func TestMonitorAgainstAgent(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t)) // its own output at warn
	addr := a.HTTPAddr().String()
	client, err := api.NewClient(api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	members, err := client.Agent().Members(t.Context())
	if err != nil || len(members) != 1 {
		t.Fatalf("Members: got %v, %v", members, err)
	}
	self := fmt.Sprintf("%s:%d", members[0].Addr, members[0].Port)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr, code := startCLI(ctx, "monitor", "-http-addr", addr, "-log-level", "debug", "-log-json")
	// Until the stream is open, joins log to nobody: repeat them.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), `"msg":"joined through the API"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no join line within 10s: stdout %q, stderr %q", stdout, stderr)
		}
		if err := client.Agent().Join(t.Context(), self); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel() // as SIGINT does
	if c := cliDone(t, code); c != 0 || stderr.String() != "" {
		t.Errorf("got exit code %d, stderr %q", c, stderr)
	}
}
