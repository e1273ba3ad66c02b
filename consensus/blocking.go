package consensus

import (
	"context"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// blockingQuery answers a read, waiting for a change first when opts ask
// for it (Consul's blocking queries).
//
// run reads the state store, fills in the caller's reply, adds what it read
// to ws and returns the index of the data it read; it must overwrite, not
// append to, the reply, since it may run several times. ws is nil when the
// query does not block.
//
// Without MinQueryIndex, run runs once. With it, run runs again each time
// something it read changes, until the index it returns is greater than
// MinQueryIndex or the wait ends: opts.BlockingTimeout(limits), which
// includes the jitter. Then the latest result is the answer and the error
// is nil: a query that waited in vain returns the index it was given, and
// the caller asks again. When ctx ends first (the caller went away, or the
// endpoint's Close ended it as the server stops), its error is returned,
// not the latest result: on a follower that result may predate what the
// caller waits for (a cache catching up to a change it was told of), and
// returned as an answer it would replace newer data the caller holds.
//
// meta.Index is set to the index of the answer, but never to 0: a client
// that sends 0 back as MinQueryIndex would not block at all and would spin
// (Consul's rule). The other fields of meta are the caller's.
func blockingQuery(ctx context.Context, limits rpc.BlockingLimits, opts rpc.QueryOptions, meta *rpc.QueryMeta, run func(ws catalog.WatchSet) (uint64, error)) error {
	blocking := opts.IsBlocking()
	request := ctx
	if blocking {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.BlockingTimeout(limits))
		defer cancel()
	}
	for {
		var ws catalog.WatchSet
		if blocking {
			ws = catalog.NewWatchSet()
		}
		idx, err := run(ws)
		if err != nil {
			return err
		}
		meta.Index = max(idx, 1)
		if !blocking || meta.Index > opts.MinQueryIndex {
			return nil
		}
		// A nil error means something read changed: read again. An error
		// means the wait is over: the result just read is the answer.
		if ws.WatchCtx(ctx) != nil {
			return request.Err() // nil when the wait itself ended
		}
	}
}

// blockingEnd is the end of a forwarded blocking read's wait, kept in its
// ctx so that forward, which knows nothing of queries, can shorten the
// wait of the read it sends again after a leader change.
type blockingEnd struct {
	q   *rpc.QueryOptions
	end time.Time
}

type blockingEndKey struct{}

// withBlockingEnd notes in ctx when the wait q asks for ends.
func withBlockingEnd(ctx context.Context, q *rpc.QueryOptions, limits rpc.BlockingLimits) context.Context {
	return context.WithValue(ctx, blockingEndKey{}, &blockingEnd{q: q, end: q.WaitEnd(time.Now(), limits)})
}

// keepBlockingEnd shortens the wait of the blocking read ctx carries (if
// any) to what is left of it (rpc.QueryOptions.KeepWaitEnd).
func keepBlockingEnd(ctx context.Context) {
	if b, ok := ctx.Value(blockingEndKey{}).(*blockingEnd); ok {
		b.q.KeepWaitEnd(b.end)
	}
}

// leaderPatience is how long a request waits for a leader to be known, or
// for Raft to see a leader it could not reach go: LeaderWait, or for a
// blocking read with time left up to twice that. Raft notices a dead
// leader only after a heartbeat timeout (randomized up to twice the
// configured one) and then holds an election, which together can outlast
// LeaderWait; a read that waits anyway waits for them rather than fail
// with "no leader" in the middle of its wait. Not longer: a server cut off
// from the quorum must still let its caller try another soon.
func (c *Catalog) leaderPatience(ctx context.Context) time.Duration {
	if b, ok := ctx.Value(blockingEndKey{}).(*blockingEnd); ok {
		return min(max(c.cfg.LeaderWait, time.Until(b.end)), 2*c.cfg.LeaderWait)
	}
	return c.cfg.LeaderWait
}
