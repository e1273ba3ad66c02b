package rpc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// QueryOptions is embedded in the arguments of every read endpoint.
type QueryOptions struct {
	// Datacenter is the datacenter to answer from; empty means the
	// server's own. A server forwards a query for another datacenter to
	// a server of that one.
	Datacenter string
	// FromDatacenter is set by a server that forwards the query to
	// another datacenter, to its own, and by no one else. The receiving
	// server answers it as a query for its own datacenter and never
	// forwards it across datacenters again, so a request makes at most
	// one hop between datacenters even when WAN membership is wrong.
	FromDatacenter string
	// MinQueryIndex makes the query blocking: the server answers once
	// its data's index is greater than MinQueryIndex, or when the wait
	// (MaxQueryTime, see BlockingTimeout) ends. 0 answers at once.
	MinQueryIndex uint64
	// MaxQueryTime bounds the wait of a blocking query; 0 means the
	// server's default. The server caps it and adds jitter.
	MaxQueryTime time.Duration
	// AllowStale lets any server answer from its own state, without
	// forwarding to the leader: faster and available without a leader,
	// possibly behind (QueryMeta.LastContact says by how much).
	AllowStale bool
	// RequireConsistent makes the leader confirm it still leads (a round
	// with a quorum) before answering, so the answer is linearizable.
	RequireConsistent bool
	// Token is the secret ID of the ACL token the request is made with;
	// empty means the anonymous token. Servers with ACLs enabled answer
	// only what it may read. Never logged.
	Token string
}

// Validate reports options that contradict each other
// (ErrConflictingConsistency) or a negative MaxQueryTime (a
// *catalog.FieldError, so that a caller can name the field).
func (q QueryOptions) Validate() error {
	if q.AllowStale && q.RequireConsistent {
		return ErrConflictingConsistency
	}
	if q.MaxQueryTime < 0 {
		return &catalog.FieldError{Field: "MaxQueryTime", Reason: fmt.Sprintf("must not be negative, got %s", q.MaxQueryTime)}
	}
	return nil
}

// Blocking is satisfied by the arguments of every read (through the
// QueryOptions they embed): how long the server may hold the call before
// answering, so that a caller's own deadlines leave room for it.
type Blocking interface {
	// MaxBlockingWait is the longest the server waits before answering
	// under its default limits: 0 for a query that does not block.
	MaxBlockingWait() time.Duration
}

// MaxBlockingWait is the longest wait BlockingTimeout can give under
// DefaultBlockingLimits (the cap plus the whole jitter); 0 when the query
// does not block.
func (q *QueryOptions) MaxBlockingWait() time.Duration {
	if !q.IsBlocking() {
		return 0
	}
	l := DefaultBlockingLimits()
	jitter := l.JitterFraction
	l.JitterFraction = 0
	wait := q.BlockingTimeout(l)
	if jitter > 0 {
		wait += wait / time.Duration(jitter)
	}
	return wait
}

// IsBlocking reports whether the query waits for a change.
func (q QueryOptions) IsBlocking() bool { return q.MinQueryIndex > 0 }

// QueryOpts returns q: a request that embeds QueryOptions has it, so code
// that handles requests of any type (a client agent's door, a server's
// forward) reaches their options.
func (q *QueryOptions) QueryOpts() *QueryOptions { return q }

// WaitEnd is when the wait of q, begun at start, ends under l, without
// the jitter (the server asked adds its own).
func (q QueryOptions) WaitEnd(start time.Time, l BlockingLimits) time.Time {
	l.JitterFraction = 0
	return start.Add(q.BlockingTimeout(l))
}

// KeepWaitEnd shortens the wait of a blocking q to what is left of it
// before end, for a query sent again (to another server, or to a new
// leader) after the first it went to failed or lost leadership: the
// caller then has its answer about when the wait it asked for ends, with
// the current index and data, as from a wait that ran out, instead of
// after a second full wait. A wait already over becomes a plain read.
func (q *QueryOptions) KeepWaitEnd(end time.Time) {
	if !q.IsBlocking() {
		return
	}
	// MaxQueryTime 0 means the default wait, so a wait about over is no
	// wait at all.
	if left := time.Until(end); left >= time.Millisecond {
		q.MaxQueryTime = left
	} else {
		q.MinQueryIndex = 0
	}
}

// BlockingLimits is a server's policy for the wait of blocking queries.
type BlockingLimits struct {
	// Default is the wait of a query that sets no MaxQueryTime.
	// Default 5m (Consul's).
	Default time.Duration
	// Max caps MaxQueryTime. Default 10m (Consul's).
	Max time.Duration
	// JitterFraction: a random wait of up to 1/JitterFraction of the
	// wait is added, so that the many blocking queries started together
	// (after a leader election, say) do not all return together. 0 adds
	// none. Default 16 (Consul's).
	JitterFraction int
}

// DefaultBlockingLimits returns Consul's limits: 5m by default, at most
// 10m, plus up to 1/16 of jitter.
func DefaultBlockingLimits() BlockingLimits {
	return BlockingLimits{
		Default:        5 * time.Minute,  // Consul's default_query_time
		Max:            10 * time.Minute, // Consul's max_query_time
		JitterFraction: 16,               // Consul's structs.JitterFraction
	}
}

// Validate reports every invalid field of l, each error naming its field.
func (l BlockingLimits) Validate() error {
	var errs []error
	if l.Default <= 0 {
		errs = append(errs, fmt.Errorf("rpc: Default: must be positive, got %s", l.Default))
	}
	if l.Max < l.Default {
		errs = append(errs, fmt.Errorf("rpc: Max: must be at least Default (%s), got %s", l.Default, l.Max))
	}
	if l.JitterFraction < 0 {
		errs = append(errs, fmt.Errorf("rpc: JitterFraction: must be 0 (none) or more, got %d", l.JitterFraction))
	}
	return errors.Join(errs...)
}

// BlockingTimeout returns how long a blocking query with these options
// may wait under limits l, as Consul computes it: MaxQueryTime, or
// l.Default when it is 0 (or negative), capped at l.Max, plus a random
// jitter in [0, wait/l.JitterFraction). With jitter the result may exceed
// l.Max by up to that fraction.
func (q QueryOptions) BlockingTimeout(l BlockingLimits) time.Duration {
	return q.blockingTimeout(l, rand.Int64N)
}

// blockingTimeout is BlockingTimeout with the random source given:
// randN(n) returns a number in [0, n).
func (q QueryOptions) blockingTimeout(l BlockingLimits, randN func(n int64) int64) time.Duration {
	wait := q.MaxQueryTime
	switch {
	case wait <= 0:
		wait = l.Default
	case wait > l.Max:
		wait = l.Max
	}
	if l.JitterFraction > 0 {
		if span := int64(wait) / int64(l.JitterFraction); span > 0 {
			wait += time.Duration(randN(span))
		}
	}
	return wait
}

// QueryMeta is embedded in the reply of every read endpoint.
type QueryMeta struct {
	// Index is the index of the data the answer reflects: the value to
	// send as MinQueryIndex to wait for the next change.
	Index uint64
	// LastContact is how long ago the answering server last heard from
	// the leader; 0 when the leader answered.
	LastContact time.Duration
	// KnownLeader reports whether the answering server knew a leader.
	KnownLeader bool
	// ResultsFilteredByACLs reports that the answer leaves out what the
	// request's token may not read (X-Consul-Results-Filtered-By-ACLs).
	ResultsFilteredByACLs bool
}

// WriteRequest is embedded in the arguments of every write endpoint.
type WriteRequest struct {
	// Datacenter is the datacenter to write to; empty means the
	// server's own. A server forwards a write for another datacenter to
	// a server of that one.
	Datacenter string
	// FromDatacenter is set by a server that forwards the write to
	// another datacenter, as QueryOptions.FromDatacenter.
	FromDatacenter string
	// Token is the secret ID of the ACL token the write is made with, as
	// QueryOptions.Token. Never logged.
	Token string
	// RequestID names one write however often it is sent: a client agent
	// sets a new one (SetRequestID) on each idempotent write before the
	// first attempt, keeps it on every retry, and the servers apply a write of
	// a given ID at most once, so that a copy delivered late (by a server
	// that was paused) cannot undo a newer write. Empty: no such care.
	RequestID string
}

// SetRequestID sets RequestID.
func (w *WriteRequest) SetRequestID(id string) { w.RequestID = id }

// Write is satisfied by the arguments of every write endpoint (through the
// WriteRequest they embed), so a caller can tell a write from a read by its
// arguments: a write whose request may have reached a server must not be
// sent again blindly.
type Write interface{ isWrite() }

func (*WriteRequest) isWrite() {}

// Idempotent is satisfied by the arguments of writes whose second
// application changes nothing the first did not (registering a node,
// service or check as it is, deregistering what is gone): a caller that
// does not know whether one was applied may send it again.
type Idempotent interface {
	isIdempotent()
	SetRequestID(id string)
}

// Authenticated is satisfied by the arguments of every endpoint that takes
// a token (through the QueryOptions or WriteRequest they embed), so that
// what sends requests to the servers can give each one the token it is
// made with in one place, whatever the method.
type Authenticated interface {
	// SetTokenIfEmpty sets the request's token unless it has one.
	SetTokenIfEmpty(secret string)
	// RequestToken is the request's token ("" for the anonymous one).
	RequestToken() string
	// RequestDatacenter is the datacenter the request names ("" for
	// the server's own).
	RequestDatacenter() string
}

// RequestToken is Token.
func (q *QueryOptions) RequestToken() string { return q.Token }

// RequestDatacenter is Datacenter.
func (q *QueryOptions) RequestDatacenter() string { return q.Datacenter }

// RequestToken is Token.
func (w *WriteRequest) RequestToken() string { return w.Token }

// RequestDatacenter is Datacenter.
func (w *WriteRequest) RequestDatacenter() string { return w.Datacenter }

// SetTokenIfEmpty sets Token unless it is set.
func (q *QueryOptions) SetTokenIfEmpty(secret string) {
	if q.Token == "" {
		q.Token = secret
	}
}

// SetTokenIfEmpty sets Token unless it is set.
func (w *WriteRequest) SetTokenIfEmpty(secret string) {
	if w.Token == "" {
		w.Token = secret
	}
}
