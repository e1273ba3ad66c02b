package gossip

import (
	"context"
	"log/slog"
	"sync"
	"testing"
)

func TestParseLogLine(t *testing.T) {
	for _, tc := range []struct {
		in    string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:5\n", slog.LevelDebug, "Stream connection from=127.0.0.1:5"},
		{"[INFO] memberlist: Marking b as failed\n", slog.LevelInfo, "Marking b as failed"},
		{"[WARN] memberlist: Refuting a dead message (from: a)\n", slog.LevelWarn, "Refuting a dead message (from: a)"},
		{"[ERR] memberlist: Failed push/pull merge: x\n", slog.LevelError, "Failed push/pull merge: x"},
		{"[ERROR] memberlist: y", slog.LevelError, "y"},
		{"[ERR] Failed to shutdown transport: z\n", slog.LevelError, "Failed to shutdown transport: z"},
		{"[ERR] memberlist: Failed to send gossip to 127.0.0.1:2: write udp 127.0.0.1:1->127.0.0.1:2: use of closed network connection\n", slog.LevelDebug,
			"Failed to send gossip to 127.0.0.1:2: write udp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"}, // the pool stopping
		{"no prefix at all\n", slog.LevelInfo, "no prefix at all"},
		{"[SHOUT] memberlist: w\n", slog.LevelInfo, "[SHOUT] memberlist: w"},
		{"[", slog.LevelInfo, "["},
		{"", slog.LevelInfo, ""},
	} {
		level, msg := parseLogLine([]byte(tc.in))
		if level != tc.level || msg != tc.msg {
			t.Errorf("parseLogLine(%q) = %v, %q; want %v, %q", tc.in, level, msg, tc.level, tc.msg)
		}
	}
}

// recorder is a slog.Handler that keeps records.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func TestStdLoggerAdapter(t *testing.T) {
	rec := &recorder{}
	l := newStdLogger(slog.New(rec))
	l.Printf("[WARN] memberlist: ignoring alive message for '%s': %s", "x", "bad")
	if len(rec.records) != 1 {
		t.Fatalf("got %d records, want 1", len(rec.records))
	}
	if r := rec.records[0]; r.Level != slog.LevelWarn || r.Message != "ignoring alive message for 'x': bad" {
		t.Errorf("got %v %q, want WARN \"ignoring alive message for 'x': bad\"", r.Level, r.Message)
	}
}
