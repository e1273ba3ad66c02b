package resolver

import (
	"context"
	"sync"
	"time"
)

// closedChan is the Done channel of a query context cancelled before any
// Source asked for one.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// queryContext is the context of one question's Source calls. It carries
// the question's deadline (Config.QueryTimeout) like
// context.WithTimeout's, but makes its channel and timer only when a
// Source asks for Done: a cache hit never waits, so answering from memory
// costs one small allocation instead of a context, a timer and their
// bookkeeping. A Source that waits (a cache miss, an RPC) gets a real
// timer at that moment.
type queryContext struct {
	deadline time.Time

	mu       sync.Mutex
	done     chan struct{} // nil until Done is called or the context is cancelled
	timer    *time.Timer
	canceled bool
	waited   bool // Done was called: a Source may have kept the channel
}

var _ context.Context = (*queryContext)(nil)

func newQueryContext(timeout time.Duration) *queryContext {
	return &queryContext{deadline: time.Now().Add(timeout)}
}

func (c *queryContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *queryContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waited = true
	if c.done == nil {
		d := time.Until(c.deadline)
		if d <= 0 {
			c.done = closedChan
		} else {
			done := make(chan struct{})
			c.done = done
			c.timer = time.AfterFunc(d, func() { c.cancel() })
		}
	}
	return c.done
}

// Err is DeadlineExceeded from the deadline on (closing Done then, if its
// timer has not yet), Canceled after cancel, else nil.
func (c *queryContext) Err() error {
	if !time.Now().Before(c.deadline) {
		c.cancel()
		return context.DeadlineExceeded
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.canceled {
		return context.Canceled
	}
	return nil
}

func (c *queryContext) Value(any) any { return nil }

// cancel ends the context: its question has been answered (or its time is
// up). Anything a Source left waiting on Done is released.
func (c *queryContext) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.canceled {
		return
	}
	c.canceled = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.done == nil {
		c.done = closedChan
	} else if c.done != closedChan {
		close(c.done)
	}
}

// reusable reports whether c, cancelled, may be the context of another
// question (packer.context): no Source waited on it, so nothing holds
// its channel or timer. A Source must not keep a context past its call
// (the context package's rule); one that waited is not trusted to, and
// its context is left to the garbage collector.
func (c *queryContext) reusable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.canceled && !c.waited && c.timer == nil
}

// renew makes c, reusable, the context of a new question, due at
// deadline.
func (c *queryContext) renew(deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = deadline
	c.done, c.timer, c.canceled, c.waited = nil, nil, false, false
}
