package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestHCLogDemotesClosedConnections checks that raft's errors about a
// closed connection are logged at debug, and other errors stay errors.
func TestHCLogDemotesClosedConnections(t *testing.T) {
	var buf bytes.Buffer
	logger := newHCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	logger.Error("failed to accept connection", "error", fmt.Errorf("accept: %w", net.ErrClosed))
	logger.Error("failed to decode incoming command", "error", errors.New("read tcp 1.2.3.4:1->5.6.7.8:2: use of closed network connection"))
	logger.Error("failed to appendEntries", "error", errors.New("connection refused"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"level=DEBUG", "level=DEBUG", "level=ERROR"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s, want %s", i, lines[i], w)
		}
	}
}
