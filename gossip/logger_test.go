package gossip

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"
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
	l := newStdLogger(slog.New(rec), nil)
	l.Printf("[WARN] memberlist: ignoring alive message for '%s': %s", "x", "bad")
	if len(rec.records) != 1 {
		t.Fatalf("got %d records, want 1", len(rec.records))
	}
	if r := rec.records[0]; r.Level != slog.LevelWarn || r.Message != "ignoring alive message for 'x': bad" {
		t.Errorf("got %v %q, want WARN \"ignoring alive message for 'x': bad\"", r.Level, r.Message)
	}
}

func TestNetworkCause(t *testing.T) {
	for _, tc := range []struct {
		msg          string
		kind, source string
		ok           bool
	}{
		{"Decrypt packet failed: no installed keys could decrypt the message from=10.0.0.7:8301", "Decrypt packet failed", "10.0.0.7", true},
		{"Failed to decode ping request: EOF from=[2001:db8::1]:8301", "Failed to decode ping request", "2001:db8::1", true},
		{"msg type (37) not supported from=10.0.0.7:9", "msg type (#) not supported", "10.0.0.7", true},
		{"Got ping for unexpected node 'evil-1' from=10.0.0.7:9", "Got ping for unexpected node …", "10.0.0.7", true},
		{"Got ping for unexpected node 'evil-2: from=x' from=10.0.0.7:9", "Got ping for unexpected node …", "10.0.0.7", true},
		{`discarding packet with unacceptable label "a:b": from=10.0.0.7:9`, `discarding packet with unacceptable label …`, "10.0.0.7", true},
		{`discarding packet with unacceptable label "x\"y:z": from=10.0.0.7:9`, `discarding packet with unacceptable label …`, "10.0.0.7", true},
		{"Failed to receive: No installed keys could decrypt the message from=<unknown address>", "Failed to receive", "<unknown address>", true},
		{"Got invalid checksum for UDP packet: 1a, 2b", "Got invalid checksum for UDP packet", "", true},
		{"ignoring alive message for 'b': incompatible gossip peer", "ignoring alive message for", "b", true},
		{"Suspect c1 has failed, no acks received", "", "", false},
		{"Marking b as failed, suspect timeout reached (2 peer confirmations)", "", "", false},
	} {
		kind, source, ok := networkCause(tc.msg)
		if kind != tc.kind || source != tc.source || ok != tc.ok {
			t.Errorf("networkCause(%q) = %q, %q, %v; want %q, %q, %v", tc.msg, kind, source, ok, tc.kind, tc.source, tc.ok)
		}
	}
}

func TestLogLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLogLimiter(time.Minute)
	l.now = func() time.Time { return now }
	allow := func(kind, source string, wantLogged bool, wantSuppressed uint64) {
		t.Helper()
		logged, suppressed := l.allow(kind, source)
		if logged != wantLogged || suppressed != wantSuppressed {
			t.Errorf("at %s: allow(%q, %q) = %v, %d; want %v, %d", now.Format(time.TimeOnly), kind, source, logged, suppressed, wantLogged, wantSuppressed)
		}
	}
	allow("decrypt", "10.0.0.1", true, 0)
	for range 100 {
		allow("decrypt", "10.0.0.1", false, 0)
	}
	allow("decrypt", "10.0.0.2", true, 0) // another source
	allow("decode", "10.0.0.1", true, 0)  // another kind
	now = now.Add(59 * time.Second)
	allow("decrypt", "10.0.0.1", false, 0)
	now = now.Add(time.Second)
	allow("decrypt", "10.0.0.1", true, 101) // the next window says how many were left out
	allow("decrypt", "10.0.0.1", false, 0)
	if got := l.Dropped(); got != 102 {
		t.Errorf("Dropped() = %d, want 102", got)
	}

	// Spoofed sources beyond maxLimitKeys share one allowance.
	l = newLogLimiter(time.Minute)
	l.now = func() time.Time { return now }
	for i := range maxLimitKeys {
		l.allow("spoof", strconv.Itoa(i))
	}
	allow("spoof", "new-1", true, 0)
	allow("spoof", "new-2", false, 0)
	if got := len(l.seen); got > maxLimitKeys+1 {
		t.Errorf("limiter remembers %d keys, want at most %d", got, maxLimitKeys+1)
	}
}

func TestStdLoggerLimitsNetworkLines(t *testing.T) {
	rec := &recorder{}
	lim := newLogLimiter(time.Minute)
	l := newStdLogger(slog.New(rec), lim)
	for i := range 1000 {
		l.Printf("[ERR] memberlist: Decrypt packet failed: bad %d from=10.0.0.9:%d", i, 1000+i)
		l.Printf("[DEBUG] memberlist: Stream connection from=10.0.0.9:%d", i) // debug: asked for, not limited
	}
	l.Printf("[INFO] memberlist: Suspect b has failed, no acks received")
	var errs, debugs, infos int
	for _, r := range rec.records {
		switch r.Level {
		case slog.LevelError:
			errs++
		case slog.LevelDebug:
			debugs++
		case slog.LevelInfo:
			infos++
		}
	}
	if errs != 1 || debugs != 1000 || infos != 1 || lim.Dropped() != 999 {
		t.Errorf("got %d error, %d debug, %d info lines, %d dropped; want 1, 1000, 1, 999", errs, debugs, infos, lim.Dropped())
	}
}
