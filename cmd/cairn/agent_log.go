package main

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/logfile"
)

// agentLogger is the agent's logger: text or JSON lines (log_json) on
// stderr and, with log_file, in a rotating file too, as Consul logs to
// both. lvl is the level a reload may change. The returned close ends the
// file.
func agentLogger(cfg config.Config, stderr io.Writer, lvl *slog.LevelVar) (*slog.Logger, func() error, error) {
	out, closeFn := stderr, func() error { return nil }
	if cfg.LogFile.Path != "" {
		f, err := logfile.Open(cfg.LogFile)
		if err != nil {
			return nil, nil, err
		}
		out, closeFn = &tee{stderr: stderr, file: f}, f.Close
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogJSON {
		// Durations as "1.5s", as the text lines show them, rather than
		// slog's nanoseconds.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(out, opts)), closeFn, nil
	}
	return slog.New(slog.NewTextHandler(out, opts)), closeFn, nil
}

// tee writes each log line to stderr and to the log file. A failing file
// (a full disk) does not stop the lines on stderr, where its error is
// told once until the file works again.
type tee struct {
	stderr io.Writer
	file   io.Writer

	mu     sync.Mutex
	failed bool
}

func (t *tee) Write(p []byte) (int, error) {
	n, err := t.stderr.Write(p)
	_, ferr := t.file.Write(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case ferr != nil && !t.failed:
		t.failed = true
		fmt.Fprintf(t.stderr, "cairn: writing the log file failed; logging to stderr only until it works again: %v\n", ferr)
	case ferr == nil && t.failed:
		t.failed = false
	}
	return n, err
}
