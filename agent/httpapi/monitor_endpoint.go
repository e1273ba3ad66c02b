package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
)

// monitorState is a signal that ends every stream of GET
// /v1/agent/monitor when the server shuts down (http.Server.Shutdown waits
// for handlers, and a stream would otherwise run until its client leaves).
type monitorState struct {
	initOnce sync.Once
	endOnce  sync.Once
	done     chan struct{}
}

// stopped is closed once the server shuts down.
func (m *monitorState) stopped() <-chan struct{} { return m.doneChan() }

func (m *monitorState) doneChan() chan struct{} {
	m.initOnce.Do(func() { m.done = make(chan struct{}) })
	return m.done
}

// end ends every stream; called by Shutdown, harmless twice.
func (m *monitorState) end() {
	ch := m.doneChan()
	m.endOnce.Do(func() { close(ch) })
}

// monitorLevel parses ?loglevel as Consul's: trace, debug, info, warn or
// error in any case; "" is info. trace is debug, cairn's lowest level.
func monitorLevel(v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "trace", "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "err", "error":
		return slog.LevelError, nil
	}
	return 0, badRequest("loglevel", "must be one of trace, debug, info, warn, error; got %q", v)
}

// agentMonitor answers GET /v1/agent/monitor?loglevel=<level>[&logjson]:
// the agent's log lines from now on, at that level or above, flushed one
// by one until the client goes away or the server shuts down. It needs
// agent:read, as Consul's. With logjson (present, whatever its value, as
// Consul's) each line is a JSON object.
func (s *Server) agentMonitor(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Logs == nil {
		return notFound("the log stream is not served by this agent")
	}
	q := r.URL.Query()
	level, err := monitorLevel(q.Get("loglevel"))
	if err != nil {
		return err
	}
	_, asJSON := q["logjson"]
	lines, cancel := s.deps.Logs(level, asJSON)
	defer cancel()

	// The headers go at once: a client (Consul's Agent().Monitor) waits
	// for them before it reads a line.
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil // the client is gone; nothing can be answered now
	}
	stopped := s.monitor.stopped()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return nil
			}
			if _, err := w.Write(line); err != nil {
				return nil
			}
			if err := rc.Flush(); err != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		case <-stopped:
			return nil
		}
	}
}
