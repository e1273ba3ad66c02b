package rpc

import (
	"sync"
	"time"
)

// A request carries the time its caller has left (requestHeader.Timeout),
// not the moment it ends: the server's deadline is its own clock at
// arrival plus that, so no two machines' clocks are compared. What a
// duration alone misses is the time the request spent on the way: bytes
// held in a TCP retransmit queue through a partition, or read only when a
// stopped (SIGSTOP) server resumes, would arrive with their full time left
// and a write the caller has given up on (and answered "unknown" for)
// would still be applied, over newer ones.
//
// So a request also carries when it was sent, on the caller's monotonic
// clock (requestHeader.Sent), and the server keeps, per session, the
// least (arrival − sent) seen lately: the clocks' offset plus the fastest
// transit. A request that took longer than that lost the difference on
// the way, and it comes off its time left. The offset cancels out, and
// monotonic clocks are never stepped, so neither a wrong wall clock nor
// NTP correcting one moves a deadline.

// monoEpoch is the origin of monoNow; set once, at start.
var monoEpoch = time.Now()

// monoNow is this process's monotonic clock, in nanoseconds.
func monoNow() int64 { return int64(time.Since(monoEpoch)) }

// baselineWindow is how long a session's least transit is kept before it
// is measured afresh: the two clocks' rates differ a little (NTP slews
// them), and an old minimum would drift by that much.
const baselineWindow = time.Minute

// transitBaseline is one session's least (arrival − sent), over the last
// one to two baselineWindows. Safe for concurrent use.
type transitBaseline struct {
	mu        sync.Mutex
	start     int64 // monoNow when the current window began
	cur, prev int64 // least offsets seen in the current and previous windows
	curSet    bool
	prevSet   bool
}

// delay returns how much longer than the session's fastest lately a
// request sent at sent (the caller's clock) and read at arrived (ours,
// monoNow) took to arrive, and records it.
func (b *transitBaseline) delay(sent, arrived int64) time.Duration {
	if b == nil || sent == 0 {
		return 0
	}
	offset := arrived - sent
	b.mu.Lock()
	defer b.mu.Unlock()
	if arrived-b.start > int64(baselineWindow) {
		b.prev, b.prevSet = b.cur, b.curSet
		b.curSet, b.start = false, arrived
	}
	if !b.curSet || offset < b.cur {
		b.cur, b.curSet = offset, true
	}
	least := b.cur
	if b.prevSet && b.prev < least {
		least = b.prev
	}
	return time.Duration(offset - least)
}
