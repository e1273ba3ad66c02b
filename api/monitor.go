package api

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
)

// maxLogLine caps one line of the log stream; a longer one ends it.
const maxLogLine = 1 << 20

// Monitor streams the agent's log lines from now on, at level ("trace",
// "debug", "info", "warn" or "error"; "" is info) or above, in the agent's
// text format: GET /v1/agent/monitor?loglevel=<level>. It needs agent:read
// with ACLs. A refused request is an error; after that, the lines come on
// the channel, without their "\n", until ctx ends or the agent closes the
// stream (it shuts down), and then the channel is closed. The goroutine
// reading the stream is the caller's: it stops when ctx ends, and has
// stopped when the channel is closed.
func (a *Agent) Monitor(ctx context.Context, level string) (<-chan string, error) {
	return a.monitor(ctx, url.Values{"loglevel": {level}})
}

// MonitorJSON is Monitor with each line a JSON object (?logjson).
func (a *Agent) MonitorJSON(ctx context.Context, level string) (<-chan string, error) {
	return a.monitor(ctx, url.Values{"loglevel": {level}, "logjson": {""}})
}

func (a *Agent) monitor(ctx context.Context, query url.Values) (<-chan string, error) {
	req, err := a.c.newRequest(ctx, request{method: http.MethodGet, path: "/v1/agent/monitor", query: query})
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := a.c.send(ctx, req) // snapshot.go: a 2xx with its body open
	if err != nil {
		return nil, err
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		// ctx ending aborts the request, and with it the read.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), maxLogLine)
		for sc.Scan() {
			select {
			case out <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
