package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// Debug reads the agent's answers as it sends them, for a bug report
// (`cairn debug`): its JSON without decoding, its metrics in the
// Prometheus text format, its runtime profiles.
type Debug struct{ c *Client }

// Debug returns the raw reads of the agent's diagnostics.
func (c *Client) Debug() *Debug { return &Debug{c: c} }

// Get sends GET path?query (path such as "/v1/agent/self" or
// "/debug/pprof/heap") and returns the body of a 2xx answer, which the
// caller reads and closes; any other status is a *StatusError, no answer
// an *UnreachableError. The read ends with ctx.
func (d *Debug) Get(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	req, err := d.c.newRequest(ctx, request{method: http.MethodGet, path: path, query: query})
	if err != nil {
		return nil, err
	}
	req.Header.Del("Accept") // profiles are binary, metrics text
	resp, err := d.c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
