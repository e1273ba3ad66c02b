package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// logWriter turns memberlist's log lines ("[WARN] memberlist: text") into
// slog records at the level named in the prefix, so memberlist logs through
// cairn's injected logger. Lines caused by what the network sent pass
// through limiter first.
type logWriter struct {
	logger  *slog.Logger
	limiter *logLimiter // nil: nothing is left out
}

// newStdLogger returns the *log.Logger memberlist wants, writing to logger.
func newStdLogger(logger *slog.Logger, limiter *logLimiter) *log.Logger {
	return log.New(logWriter{logger: logger, limiter: limiter}, "", 0)
}

func (w logWriter) Write(p []byte) (int, error) {
	ctx := context.Background()
	level, msg := parseLogLine(p)
	if !w.logger.Enabled(ctx, level) {
		return len(p), nil
	}
	// Debug lines are asked for; the others are what a flood would
	// fill the log with.
	if w.limiter != nil && level > slog.LevelDebug {
		if kind, source, ok := networkCause(msg); ok {
			logged, suppressed := w.limiter.allow(kind, source)
			if !logged {
				return len(p), nil
			}
			if suppressed > 0 {
				w.logger.Log(ctx, level, msg, "suppressed", suppressed)
				return len(p), nil
			}
		}
	}
	w.logger.Log(ctx, level, msg)
	return len(p), nil
}

// logLimitInterval is how often memberlist may log one kind of line caused
// by one source address; the lines in between are counted and left out.
const logLimitInterval = time.Minute

// maxLimitKeys bounds the (kind, source) pairs a limiter remembers: a flood
// from spoofed addresses shares one allowance once it is reached.
const maxLimitKeys = 1024

// logLimiter lets one line per kind and source through per interval. It
// is safe for concurrent use.
type logLimiter struct {
	interval time.Duration
	now      func() time.Time
	dropped  atomic.Uint64

	mu   sync.Mutex
	seen map[limitKey]*limitState
}

type limitKey struct{ kind, source string }

type limitState struct {
	last    time.Time // when a line was last let through
	dropped uint64    // left out since
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval, now: time.Now, seen: make(map[limitKey]*limitState)}
}

// Dropped counts the lines left out since the limiter was made.
func (l *logLimiter) Dropped() uint64 { return l.dropped.Load() }

// allow reports whether a line of kind caused by source is logged now, and
// how many such lines were left out before it.
func (l *logLimiter) allow(kind, source string) (logged bool, suppressed uint64) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := limitKey{kind, source}
	st, ok := l.seen[k]
	if !ok && len(l.seen) >= maxLimitKeys {
		for key, s := range l.seen {
			if now.Sub(s.last) >= l.interval {
				delete(l.seen, key)
			}
		}
		if len(l.seen) >= maxLimitKeys {
			k = limitKey{"*", "*"} // the overflow: one allowance for all
			st, ok = l.seen[k]
		}
	}
	switch {
	case !ok:
		l.seen[k] = &limitState{last: now}
		return true, 0
	case now.Sub(st.last) < l.interval:
		st.dropped++
		l.dropped.Add(1)
		return false, 0
	}
	suppressed, st.last, st.dropped = st.dropped, now, 0
	return true, suppressed
}

// addresslessLines start memberlist lines caused by what peers sent that
// name no source address; the name a line quotes, if any, stands for one.
var addresslessLines = []string{
	"Got invalid checksum for UDP packet",
	"Remote node state size is",
	"ignoring alive message for",
	"Ignoring an alive message for",
	"Rejected node",
}

// networkCause tells whether a memberlist line was caused by something
// received from the network and if so returns its kind and source. Such
// lines end with memberlist's "from=<addr>" (the source is its host: a
// flood from many ports of one host is one source); the kind is the text
// before it, cut at its first colon (what follows is the error's detail),
// with quoted strings and numbers taken out, so that what a packet says
// cannot make a new kind.
func networkCause(msg string) (kind, source string, ok bool) {
	if i := strings.LastIndex(msg, "from="); i >= 0 {
		source = strings.TrimSpace(msg[i+len("from="):]) // memberlist puts it last
		if host, _, err := net.SplitHostPort(source); err == nil {
			source = host
		}
		return lineKind(msg[:i]), source, true
	}
	for _, prefix := range addresslessLines {
		if strings.HasPrefix(msg, prefix) {
			if _, rest, found := strings.Cut(msg, "'"); found {
				source, _, _ = strings.Cut(rest, "'")
			}
			return prefix, source, true
		}
	}
	return "", "", false
}

// lineKind reduces a line's text to its kind (see networkCause).
func lineKind(text string) string {
	var b strings.Builder
	quote := byte(0)
	digits := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			switch c {
			case '\\':
				i++ // an escaped character, as %q writes a quote
			case quote:
				quote = 0
				b.WriteString("…")
			}
			continue
		case c == '\'' || c == '"':
			quote = c
			continue
		case c == ':':
			return strings.TrimSpace(b.String())
		case c >= '0' && c <= '9':
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(c)
	}
	return strings.TrimSpace(b.String())
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
