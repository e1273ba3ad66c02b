package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// BlockingGet makes one blocking query, Consul's way: GET path with
// ?index=index&wait=wait, answered once the data's index passes index or
// the wait ends (an agent without blocking support answers at once). It
// returns the JSON body as it came and the X-Consul-Index, the index to
// send next. index 0 answers at once; wait 0 is the agent's default.
// query holds the path's other parameters. A 404 (a key that does not
// exist) is the body null with its index. The CLI's watch uses it.
func (c *Client) BlockingGet(ctx context.Context, path string, query url.Values, index uint64, wait time.Duration) (json.RawMessage, *QueryMeta, error) {
	if path == "" || path[0] != '/' {
		return nil, nil, errors.New("blocking get: path must start with /")
	}
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if index > 0 {
		q.Set("index", strconv.FormatUint(index, 10))
		if wait > 0 {
			q.Set("wait", strconv.FormatInt(wait.Milliseconds(), 10)+"ms")
		}
	}
	var body json.RawMessage
	meta, err := c.do(ctx, request{method: http.MethodGet, path: path, query: q, notFoundOK: true}, &body)
	if errors.Is(err, errNotFound) {
		// A key that does not exist (yet): null, at the index to wait
		// on for it to appear.
		return json.RawMessage("null"), meta, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return body, meta, nil
}
