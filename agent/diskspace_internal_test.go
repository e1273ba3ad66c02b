package agent

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent/config"
)

// Below limits.data_dir_min_free_bytes the agent warns, naming the data
// dir and what is left; with room to spare, or a threshold of 0, it says
// nothing.
func TestDataDirFreeSpaceWarning(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minFree int
		warn    bool
	}{
		{"below the threshold", math.MaxInt, true},
		{"above it", 1, false},
		{"no threshold", 0, false},
	} {
		var buf bytes.Buffer
		cfg := config.Default()
		cfg.DataDir, cfg.Limits.DataDirMinFreeBytes = t.TempDir(), tc.minFree
		a := &Agent{cfg: cfg, logger: slog.New(slog.NewTextHandler(&buf, nil))}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // one check, then it returns
		a.watchDiskSpace(ctx)
		got := strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "free_bytes=") &&
			strings.Contains(buf.String(), cfg.DataDir)
		if got != tc.warn {
			t.Errorf("%s: warned %v, want %v; log:\n%s", tc.name, got, tc.warn, buf.String())
		}
	}
}
