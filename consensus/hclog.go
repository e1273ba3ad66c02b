package consensus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter hands raft's hclog calls to slog, so all of cairn logs through
// one injected logger. raft's Trace level maps below slog's Debug.
type hclogAdapter struct {
	logger *slog.Logger
	name   string
	args   []any
}

var _ hclog.Logger = (*hclogAdapter)(nil)

const levelTrace = slog.LevelDebug - 4

func newHCLog(logger *slog.Logger) hclog.Logger {
	return &hclogAdapter{logger: logger}
}

func toSlogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	for i, v := range args {
		// raft's "node" names a Raft peer; the agent's logger already carries
		// "node" for this agent, so raft's is renamed to keep keys unique.
		if i%2 == 0 && v == "node" {
			args[i] = "raft_node"
		}
		// hclog.Fmt values are a format and its arguments, rendered lazily.
		if f, ok := v.(hclog.Format); ok && len(f) > 0 {
			if format, ok := f[0].(string); ok {
				args[i] = fmt.Sprintf(format, f[1:]...)
			}
		}
		// raft's network transport logs a connection or listener closed
		// under it as an error, also when the closing is the server's own
		// shutdown (it checks for that only on some paths). A closed
		// connection is not a fault worth an ERROR line; a peer that goes
		// away is noticed by raft's heartbeats, which log it themselves.
		if level == hclog.Error && i%2 == 1 && isClosedConn(v) {
			level = hclog.Debug
		}
	}
	a.logger.Log(context.Background(), toSlogLevel(level), msg, args...)
}
func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(l slog.Level) bool {
	return a.logger.Enabled(context.Background(), l)
}
func (a *hclogAdapter) IsTrace() bool { return a.enabled(levelTrace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(slog.LevelDebug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(slog.LevelInfo) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(slog.LevelWarn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(slog.LevelError) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.args }
func (a *hclogAdapter) With(args ...any) hclog.Logger {
	return &hclogAdapter{logger: a.logger.With(args...), name: a.name, args: append(a.args[:len(a.args):len(a.args)], args...)}
}
func (a *hclogAdapter) Name() string { return a.name }
func (a *hclogAdapter) Named(name string) hclog.Logger {
	full := name
	if a.name != "" {
		full = a.name + "." + name
	}
	return &hclogAdapter{logger: a.logger.With("subsystem", full), name: full, args: a.args}
}
func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{logger: a.logger.With("subsystem", name), name: name, args: a.args}
}

// SetLevel is ignored: the level is the slog handler's.
func (a *hclogAdapter) SetLevel(hclog.Level) {}
func (a *hclogAdapter) GetLevel() hclog.Level {
	switch {
	case a.IsTrace():
		return hclog.Trace
	case a.IsDebug():
		return hclog.Debug
	case a.IsInfo():
		return hclog.Info
	case a.IsWarn():
		return hclog.Warn
	}
	return hclog.Error
}
func (a *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(a.logger.Handler(), slog.LevelInfo)
}
func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return a.StandardLogger(nil).Writer()
}

// isClosedConn reports whether a logged value is the error of using a
// closed connection or listener.
func isClosedConn(v any) bool {
	err, ok := v.(error)
	return ok && (errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed network connection"))
}
