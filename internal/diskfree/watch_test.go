package diskfree

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
)

// Below the threshold Watch warns, naming the dir and what is left; with
// room to spare, or a threshold of 0, it says nothing.
func TestWatchWarnsBelowTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minFree uint64
		warn    bool
	}{
		{"below the threshold", math.MaxUint64, true},
		{"above it", 1, false},
		{"no threshold", 0, false},
	} {
		var buf bytes.Buffer
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // one check, then it returns
		Watch(ctx, dir, tc.minFree, slog.New(slog.NewTextHandler(&buf, nil)))
		got := strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "free_bytes=") &&
			strings.Contains(buf.String(), dir)
		if got != tc.warn {
			t.Errorf("%s: warned %v, want %v; log:\n%s", tc.name, got, tc.warn, buf.String())
		}
	}
}
