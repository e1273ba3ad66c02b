package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// QueryOptions are a read's options, taken from its query parameters as
// Consul names them. The zero value is a plain read of the agent's
// datacenter, answered as the backend answers by default.
type QueryOptions struct {
	// Datacenter is ?dc, lowercased: the datacenter to read from. ""
	// means the agent's own.
	Datacenter string
	// MinIndex is ?index. Above 0 the read blocks: it is answered once
	// the data's index is greater than MinIndex, or when the wait ends
	// (with the data as it then is, under the same index). When the
	// data's index is below MinIndex (a server that restored an older
	// snapshot, or one behind another the client asked before) the read
	// is answered at once with that lower index, so the client starts
	// over from it, as Consul's clients do when an index moves backwards.
	MinIndex uint64
	// MaxWait is ?wait: how long a blocking read may wait. 0 means the
	// default (5m); more than the maximum (10m) is capped; jitter of up
	// to 1/16 of it is added. Ignored without MinIndex.
	MaxWait time.Duration
	// AllowStale is ?stale: any server may answer from its own state.
	AllowStale bool
	// RequireConsistent is ?consistent: the leader confirms it still
	// leads before answering.
	RequireConsistent bool
	// Near is ?near on the reads that sort by it (catalog nodes and
	// service, health service): a node name, the answer sorted by the
	// estimated round trip time from it. "_agent" is turned into the
	// agent's node name by the handler. "" keeps the catalog's order.
	Near string
}

// QueryMeta says how current a read's answer is; it becomes the
// X-Consul-Index, X-Consul-KnownLeader and X-Consul-LastContact headers.
type QueryMeta struct {
	// Index is the index of the data the answer reflects, never 0.
	Index uint64
	// KnownLeader reports whether the answering server knew a leader.
	KnownLeader bool
	// LastContact is how long ago the answering server last heard from
	// the leader; 0 on the leader.
	LastContact time.Duration
	// ResultsFilteredByACLs reports that the answer leaves out what the
	// request's token may not read.
	ResultsFilteredByACLs bool
}

// parseQueryOptions reads a request's dc, index, wait, stale and
// consistent parameters; a malformed one is a 400 naming it. Parameters it
// does not know are ignored, as Consul ignores them.
func parseQueryOptions(r *http.Request) (QueryOptions, error) {
	q := r.URL.Query()
	opts := QueryOptions{
		Datacenter:        strings.ToLower(q.Get("dc")),
		AllowStale:        boolParam(r, "stale"),
		RequireConsistent: boolParam(r, "consistent"),
		Near:              q.Get("near"),
	}
	if opts.AllowStale && opts.RequireConsistent {
		return opts, badRequest("consistent", "cannot be combined with stale: the two ask for opposite consistency")
	}
	if v := q.Get("index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return opts, badRequest("index", "must be a non-negative integer, got %q", v)
		}
		opts.MinIndex = idx
	}
	if v := q.Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return opts, err
		}
		opts.MaxWait = d
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
func setMetaHeaders(w http.ResponseWriter, meta QueryMeta) {
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
func writeRead(w http.ResponseWriter, r *http.Request, meta QueryMeta, v any) {
	setMetaHeaders(w, meta)
	writeJSONPretty(w, r, v)
}
