package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// parseQueryOptions reads a request's dc, index, wait, stale and
// consistent parameters as Consul names them: ?dc (lowercased; "" for the
// agent's), ?index (above 0 the read blocks until the data's index moves
// past it, or the wait ends; an index below it is answered at once, so
// the client starts over, as Consul's do when an index moves backwards),
// ?wait (0: the servers' default of 5m; capped at 10m, plus jitter),
// ?stale and ?consistent. A malformed one is a 400 naming it. Parameters
// it does not know are ignored, as Consul ignores them.
func parseQueryOptions(r *http.Request) (rpc.QueryOptions, error) {
	q := r.URL.Query()
	opts := rpc.QueryOptions{
		Datacenter:        strings.ToLower(q.Get("dc")),
		AllowStale:        boolParam(r, "stale"),
		RequireConsistent: boolParam(r, "consistent"),
	}
	if opts.AllowStale && opts.RequireConsistent {
		return opts, badRequest("consistent", "cannot be combined with stale: the two ask for opposite consistency")
	}
	if v := q.Get("index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return opts, badRequest("index", "must be a non-negative integer, got %q", v)
		}
		opts.MinQueryIndex = idx
	}
	if v := q.Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return opts, err
		}
		opts.MaxQueryTime = d
	}
	return opts, nil
}

// parseWait reads ?wait in Consul's syntax: a Go duration with a unit
// ("10s", "5m", "1m30s"). A bare number is refused, as Consul refuses it:
// "10" could be seconds or milliseconds.
func parseWait(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, badRequest("wait", "must be a duration with a unit such as \"10s\" or \"5m\", got %q", v)
	}
	if d < 0 {
		return 0, badRequest("wait", "must not be negative, got %q", v)
	}
	return d, nil
}

// setMetaHeaders writes meta as Consul's headers. LastContact is in whole
// milliseconds; a server that never heard from a leader reports the
// largest value rather than an overflowing one.
func setMetaHeaders(w http.ResponseWriter, meta rpc.QueryMeta) {
	h := w.Header()
	h.Set("X-Consul-Index", strconv.FormatUint(max(meta.Index, 1), 10))
	h.Set("X-Consul-KnownLeader", strconv.FormatBool(meta.KnownLeader))
	ms := meta.LastContact.Milliseconds()
	if meta.LastContact < 0 || ms > math.MaxInt32 {
		ms = math.MaxInt32
	}
	h.Set("X-Consul-LastContact", strconv.FormatInt(ms, 10))
	if meta.ResultsFilteredByACLs {
		h.Set("X-Consul-Results-Filtered-By-ACLs", "true")
	}
}

// writeRead writes a read's result with its meta headers, indented with
// ?pretty.
func writeRead(w http.ResponseWriter, r *http.Request, meta rpc.QueryMeta, v any) {
	setMetaHeaders(w, meta)
	writeJSONPretty(w, r, v)
}
