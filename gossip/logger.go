package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// logWriter turns memberlist's log lines ("[WARN] memberlist: text") into
// slog records at the level named in the prefix, so memberlist logs through
// cairn's injected logger.
type logWriter struct {
	logger *slog.Logger
}

// newStdLogger returns the *log.Logger memberlist wants, writing to logger.
func newStdLogger(logger *slog.Logger) *log.Logger {
	return log.New(logWriter{logger: logger}, "", 0)
}

func (w logWriter) Write(p []byte) (int, error) {
	level, msg := parseLogLine(p)
	if w.logger.Enabled(context.Background(), level) {
		w.logger.Log(context.Background(), level, msg)
	}
	return len(p), nil
}

// parseLogLine splits a memberlist log line into its level and its text.
// Lines without a known level prefix are logged at Info.
func parseLogLine(p []byte) (slog.Level, string) {
	p = bytes.TrimRight(p, "\r\n")
	level := slog.LevelInfo
	if len(p) > 0 && p[0] == '[' {
		if end := bytes.IndexByte(p, ']'); end > 0 {
			known := true
			switch string(p[1:end]) {
			case "TRACE", "DEBUG":
				level = slog.LevelDebug
			case "INFO":
				level = slog.LevelInfo
			case "WARN", "WARNING":
				level = slog.LevelWarn
			case "ERR", "ERROR":
				level = slog.LevelError
			default:
				known = false
			}
			if known {
				p = bytes.TrimLeft(p[end+1:], " ")
			}
		}
	}
	p = bytes.TrimPrefix(p, []byte("memberlist: "))
	// memberlist gossips from its own goroutines, which do not wait for
	// Shutdown: a send racing the closing of this pool's own socket fails
	// this way. That is the pool stopping, not a fault worth an ERROR.
	if level > slog.LevelDebug && bytes.Contains(p, []byte("use of closed network connection")) {
		level = slog.LevelDebug
	}
	return level, string(p)
}
