package api

import (
	"net/url"
	"strconv"
	"time"
)

// QueryOptions are the options of a read: which datacenter, how
// consistent, whether to block until a change, and which entries to keep.
// A nil *QueryOptions is a plain read of the agent's datacenter.
type QueryOptions struct {
	// Datacenter to read from; "" means the agent's own (?dc).
	Datacenter string
	// AllowStale lets any server answer, possibly a little behind the
	// leader (?stale); QueryMeta.LastContact says by how much.
	AllowStale bool
	// RequireConsistent makes the leader confirm it still leads before
	// answering (?consistent). It cannot be combined with AllowStale.
	RequireConsistent bool
	// WaitIndex makes the read block until the data's index is past it
	// (?index): pass the QueryMeta.LastIndex of the previous answer.
	WaitIndex uint64
	// WaitTime bounds a blocking read (?wait); 0 means the agent's
	// default (5 minutes). The agent caps it at 10 minutes and may add up
	// to 1/16 of jitter; with the context of the call, set no deadline
	// shorter than that.
	WaitTime time.Duration
	// Filter keeps only the entries matching an expression in Consul's
	// filter language (?filter), e.g. `Service.Tags contains "v1"`.
	Filter string
	// Near sorts the answer by the estimated round trip time from a node,
	// nearest first (?near): a node name, or "_agent" for the agent's
	// own. Only the catalog's nodes and service reads and the health
	// service read sort by it.
	Near string
}

// values adds q's parameters to v (which may be nil) and returns it.
func (q *QueryOptions) values(v url.Values) url.Values {
	if q == nil {
		return v
	}
	if v == nil {
		v = url.Values{}
	}
	if q.Datacenter != "" {
		v.Set("dc", q.Datacenter)
	}
	if q.AllowStale {
		v.Set("stale", "")
	}
	if q.RequireConsistent {
		v.Set("consistent", "")
	}
	if q.WaitIndex != 0 {
		v.Set("index", strconv.FormatUint(q.WaitIndex, 10))
	}
	if q.WaitTime > 0 {
		// Whole milliseconds, at least one: the agent reads a duration
		// with a unit.
		v.Set("wait", strconv.FormatInt(max(q.WaitTime.Milliseconds(), 1), 10)+"ms")
	}
	if q.Filter != "" {
		v.Set("filter", q.Filter)
	}
	if q.Near != "" {
		v.Set("near", q.Near)
	}
	return v
}

// firstOptions returns the first of opts, or nil: the methods take their
// options as an optional trailing argument, so that calls without them
// stay as they were.
func firstOptions(opts []*QueryOptions) *QueryOptions {
	if len(opts) == 0 {
		return nil
	}
	return opts[0]
}
