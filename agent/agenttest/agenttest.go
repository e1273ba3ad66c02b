// Package agenttest starts real cairn agents in-process for tests: on
// loopback, on free ports, with logs routed to the test's log.
package agenttest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/config"
)

// Config returns a dev agent configuration on 127.0.0.1 with every port
// picked free by the system, and the node named "test".
func Config(t testing.TB) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Dev = true
	cfg.NodeName = "test"
	cfg.Ports = config.Ports{HTTPS: -1, DNSTLS: -1}
	cfg.LogLevel = "warn"
	return cfg
}

// Start starts an agent with cfg and shuts it down when the test ends.
func Start(t testing.TB, cfg config.Config) *agent.Agent {
	t.Helper()
	return StartPrepared(t, cfg, nil)
}

// StartPrepared is Start with prepare (nil: none) run on the agent
// before it starts: for hooks a test sets through the agent package's
// export_test.go.
func StartPrepared(t testing.TB, cfg config.Config, prepare func(*agent.Agent)) *agent.Agent {
	t.Helper()
	level, err := config.ParseLogLevel(cfg.LogLevel)
	if err != nil {
		t.Fatal(err)
	}
	var lv slog.LevelVar
	lv.Set(level)
	return start(t, cfg, &lv, nil, prepare)
}

// StartLogging is Start with the agent's log lines, at level (which a
// reload given it may change), also kept in the returned Logs.
func StartLogging(t testing.TB, cfg config.Config, level *slog.LevelVar) (*agent.Agent, *Logs) {
	t.Helper()
	logs := &Logs{}
	return start(t, cfg, level, logs, nil), logs
}

// Logs are the log lines of an agent started with StartLogging.
type Logs struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Lines returns the lines logged so far that contain every one of parts.
func (l *Logs) Lines(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.buf.String()) {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			out = append(out, line)
		}
	}
	return out
}

func start(t testing.TB, cfg config.Config, level *slog.LevelVar, also io.Writer, prepare func(*agent.Agent)) *agent.Agent {
	t.Helper()
	w := &testWriter{t: t, also: also}
	// Registered before the agent's own cleanup, so it runs after it.
	t.Cleanup(w.close)
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	a, err := agent.New(cfg, logger)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	if prepare != nil {
		prepare(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("agent.Start: %v", err)
	}
	t.Cleanup(func() { Stop(t, a) })
	return a
}

// Stop shuts an agent down and fails the test if that fails. Stopping twice
// is harmless.
func Stop(t testing.TB, a *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Errorf("agent.Shutdown: %v", err)
	}
}

// testWriter sends log lines to t.Log, so they show only for failing
// tests. After close (the test's last cleanup) it drops them: memberlist
// does not wait for a probe in flight when it shuts down, and that probe
// may still log, which t.Log refuses once the test has completed.
type testWriter struct {
	t      testing.TB
	also   io.Writer // nil: none
	mu     sync.Mutex
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.also != nil {
		_, _ = w.also.Write(p)
	}
	if !w.closed {
		w.t.Log(string(p))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

// FastCoordinates makes an agent started with cfg send its network
// coordinate to the servers within 100–200ms of starting and every
// 200–400ms after, and (on a server) apply what it receives every 50ms,
// so that a test sees coordinates in the catalog within a second instead
// of the 10–20s the defaults take.
func FastCoordinates(cfg *config.Config) {
	cfg.Coordinates.SyncIntervalMin = 200 * time.Millisecond
	cfg.Coordinates.UpdatePeriod = 50 * time.Millisecond
}
