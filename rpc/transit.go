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
// stopped (SIGSTOP) server resumes, would arrive with their full time left,
// and a write the caller has given up on (and answered "unknown" for)
// would still be applied, over newer ones.
//
// So a request also carries when it was sent, as the age of its session
// on the caller's clock (requestHeader.Sent), and the server compares it
// with the session's age on its own clock at arrival. The server's session
// begins once it has read the handshake; the caller's once the server has
// answered its first ping on the session, before which no request is sent
// (Pool.open). The caller's session thus begins after the server's, and
// the difference is at least the request's transit. (Were the caller's to
// begin at its handshake, a server that hung before reading a new
// connection would read the handshake and a request behind it together
// when it resumed, and measure nothing.) The server keeps the least
// difference seen lately on the session (starting from zero), and a
// request whose difference is larger lost that much more on the way: it
// comes off its time left. A server's deadline is then never later than
// the caller's plus the session's fastest transit in the last one to two
// baselineWindows. Both ages come from monotonic clocks, which are never
// stepped, so neither a wrong wall clock nor NTP correcting one moves a
// deadline; what remains is the clocks' rates (NTP slews within 500ppm),
// whose drift the window bounds (to 60ms at most).

// baselineWindow is how long a session's least difference is kept before
// it is measured afresh, so that the clocks' rates cannot drift it far.
const baselineWindow = time.Minute

// transitBaseline is one session's least (age here − age at the caller),
// over the last one to two baselineWindows. Safe for concurrent use.
type transitBaseline struct {
	start time.Time // when the session began here: age 0

	mu          sync.Mutex
	windowStart time.Duration // age when the current window began
	cur, prev   time.Duration // least differences in the current and previous windows
	prevSet     bool
}

// newTransitBaseline is the baseline of a session starting now, seeded
// with zero: the caller's session begins later.
func newTransitBaseline(now time.Time) *transitBaseline {
	return &transitBaseline{start: now}
}

// delay returns how much longer than the session's fastest lately a
// request sent at session age sent (the caller's clock) and read here at
// arrived took on the way, and records it.
func (b *transitBaseline) delay(sent time.Duration, arrived time.Time) time.Duration {
	if b == nil || sent <= 0 {
		return 0
	}
	age := arrived.Sub(b.start)
	diff := age - sent
	b.mu.Lock()
	defer b.mu.Unlock()
	if age-b.windowStart > baselineWindow {
		b.prev, b.prevSet = b.cur, true
		b.cur, b.windowStart = diff, age
	}
	b.cur = min(b.cur, diff)
	least := b.cur
	if b.prevSet {
		least = min(least, b.prev)
	}
	return diff - least
}
