package logstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/logstream"
)

// syncBuffer is the base handler's output, written from several
// goroutines.
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

// newHub returns a hub over a text handler at info writing to the returned
// buffer, and a logger through the hub.
func newHub(t *testing.T, bufferLines int) (*logstream.Hub, *slog.Logger, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	cfg := logstream.DefaultConfig()
	cfg.BufferLines = bufferLines
	hub, err := logstream.New(cfg, slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err != nil {
		t.Fatal(err)
	}
	return hub, slog.New(hub.Handler()), &out
}

// take reads the n lines lines holds now (they were sent synchronously by
// the log calls) and fails if there are fewer.
func take(t *testing.T, lines <-chan []byte, n int) []string {
	t.Helper()
	var got []string
	for range n {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("lines closed after %d of %d: %q", len(got), n, got)
			}
			got = append(got, string(l))
		default:
			t.Fatalf("got %d lines, want %d: %q", len(got), n, got)
		}
	}
	return got
}

func wantEmpty(t *testing.T, lines <-chan []byte) {
	t.Helper()
	select {
	case l := <-lines:
		t.Fatalf("got line %q, want none", l)
	default:
	}
}

func TestSubscriberLevelBelowBase(t *testing.T) {
	hub, logger, out := newHub(t, 16)
	debug, cancel := hub.Subscribe(slog.LevelDebug, false)
	defer cancel()
	warn, cancelWarn := hub.Subscribe(slog.LevelWarn, false)
	defer cancelWarn()

	logger.Debug("quiet", "n", 1)
	logger.Info("normal", "n", 2)
	logger.Warn("loud", "n", 3)

	if got := out.String(); strings.Contains(got, "quiet") || !strings.Contains(got, "normal") || !strings.Contains(got, "loud") {
		t.Errorf("base output: got %q, want info and warn only", got)
	}
	got := take(t, debug, 3)
	for i, want := range []string{"level=DEBUG msg=quiet n=1\n", "level=INFO msg=normal n=2\n", "level=WARN msg=loud n=3\n"} {
		if !strings.HasSuffix(got[i], want) {
			t.Errorf("debug subscriber line %d: got %q, want it to end in %q", i, got[i], want)
		}
	}
	wantEmpty(t, debug)
	if got := take(t, warn, 1); !strings.HasSuffix(got[0], "msg=loud n=3\n") {
		t.Errorf("warn subscriber: got %q", got)
	}
	wantEmpty(t, warn)
}

// The subscribers' lines are the base handler's, attributes and groups
// included.
func TestLinesMatchBaseOutput(t *testing.T) {
	hub, logger, out := newHub(t, 16)
	lines, cancel := hub.Subscribe(slog.LevelInfo, false)
	defer cancel()
	l := logger.With("component", "http").WithGroup("req").With("path", "/v1/x")
	l.Info("served", "code", 200, slog.Group("client", "ip", "127.0.0.1"))
	logger.WithGroup("").With().Info("plain")

	want := strings.SplitAfter(out.String(), "\n")
	got := take(t, lines, 2)
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("line %d: got %q, want the base's %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[0], "component=http req.path=/v1/x req.code=200 req.client.ip=127.0.0.1") {
		t.Errorf("got %q, want the attributes in their groups", got[0])
	}
}

func TestJSONLines(t *testing.T) {
	hub, logger, _ := newHub(t, 16)
	lines, cancel := hub.Subscribe(slog.LevelDebug, true)
	defer cancel()
	logger.With("component", "dns").WithGroup("q").Debug("asked", "name", "web.service.cluster.")

	var got map[string]any
	line := take(t, lines, 1)[0]
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("line %q is not JSON: %v", line, err)
	}
	q, _ := got["q"].(map[string]any)
	if got["level"] != "DEBUG" || got["msg"] != "asked" || got["component"] != "dns" || q["name"] != "web.service.cluster." {
		t.Errorf("got %v", got)
	}
}

func TestSlowSubscriberDrops(t *testing.T) {
	hub, logger, out := newHub(t, 2)
	lines, cancel := hub.Subscribe(slog.LevelInfo, false)
	defer cancel()
	for i := range 5 {
		logger.Info("line", "i", i) // never blocks, though nobody reads
	}
	if n := strings.Count(out.String(), "\n"); n != 5 {
		t.Errorf("base got %d lines, want 5", n)
	}
	if got := take(t, lines, 2); !strings.HasSuffix(got[0], "i=0\n") || !strings.HasSuffix(got[1], "i=1\n") {
		t.Errorf("got %q, want the first two lines", got)
	}
	wantEmpty(t, lines)
	if got, want := hub.Dropped(), uint64(3); got != want {
		t.Errorf("Dropped: got %d, want %d", got, want)
	}
	// Caught up: the count comes first, then the new line.
	logger.Info("line", "i", 5)
	got := take(t, lines, 2)
	if !strings.HasSuffix(got[0], `level=WARN msg="... 3 lines dropped"`+"\n") || !strings.HasSuffix(got[1], "i=5\n") {
		t.Errorf("got %q, want the drop count then i=5", got)
	}
	wantEmpty(t, lines)
}

func TestCancel(t *testing.T) {
	hub, logger, _ := newHub(t, 4)
	lines, cancel := hub.Subscribe(slog.LevelDebug, false)
	cancel()
	cancel() // harmless
	if _, ok := <-lines; ok {
		t.Fatal("lines still open after cancel")
	}
	logger.Info("after") // must not panic on the closed channel
	if logger.Enabled(t.Context(), slog.LevelDebug) {
		t.Error("debug enabled with no subscriber left")
	}
}

// With nobody subscribed, a record below the base's level costs nothing.
func TestNoSubscriberIsFree(t *testing.T) {
	_, logger, out := newHub(t, 4)
	if logger.Enabled(t.Context(), slog.LevelDebug) {
		t.Fatal("debug enabled with no subscriber")
	}
	allocs := testing.AllocsPerRun(100, func() { logger.Debug("nobody", "n", 1) })
	if allocs != 0 {
		t.Errorf("got %v allocations per debug line, want 0", allocs)
	}
	if out.String() != "" {
		t.Errorf("base got %q", out.String())
	}
}

func TestConfigValidate(t *testing.T) {
	if err := logstream.DefaultConfig().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	cfg := logstream.Config{BufferLines: 0}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "BufferLines") {
		t.Errorf("got %v, want an error naming BufferLines", err)
	}
	if _, err := logstream.New(logstream.DefaultConfig(), nil); err == nil {
		t.Error("New with a nil base: got no error")
	}
}

// Loggers, subscribers and cancels all at once, for the race detector.
func TestConcurrent(t *testing.T) {
	hub, logger, _ := newHub(t, 8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			l := logger.With("g", g)
			for i := range 200 {
				l.Debug("tick", "i", i)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 20 {
				lines, cancel := hub.Subscribe(slog.LevelDebug, false)
				select {
				case <-lines:
				default:
				}
				cancel()
				for range lines { // drained and closed
				}
			}
		})
	}
	wg.Wait()
}

func ExampleHub() {
	var out bytes.Buffer
	hub, _ := logstream.New(logstream.DefaultConfig(), slog.NewTextHandler(&out, nil)) // base at info
	logger := slog.New(hub.Handler())
	lines, cancel := hub.Subscribe(slog.LevelDebug, false)
	logger.Debug("only the subscriber sees this")
	cancel()
	for l := range lines {
		fmt.Print(strings.SplitN(string(l), " ", 2)[1]) // without the time
	}
	fmt.Printf("base: %q\n", out.String())
	// Output:
	// level=DEBUG msg="only the subscriber sees this"
	// base: ""
}

// BenchmarkNoSubscriber is a debug line dropped by an info base: what
// every agent pays while nobody monitors.
func BenchmarkNoSubscriber(b *testing.B) {
	hub, err := logstream.New(logstream.DefaultConfig(), slog.NewTextHandler(io.Discard, nil))
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(hub.Handler())
	b.ReportAllocs()
	for b.Loop() {
		logger.Debug("nobody", "n", 1)
	}
}

// BenchmarkSubscriber is an info line written to the base and to one
// subscriber whose buffer is drained.
func BenchmarkSubscriber(b *testing.B) {
	hub, err := logstream.New(logstream.DefaultConfig(), slog.NewTextHandler(io.Discard, nil))
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(hub.Handler()).With("component", "bench")
	lines, cancel := hub.Subscribe(slog.LevelInfo, false)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range lines {
		}
	})
	b.ReportAllocs()
	for b.Loop() {
		logger.Info("line", "n", 1)
	}
	cancel()
	wg.Wait()
}
