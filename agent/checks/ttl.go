package checks

import (
	"context"
	"fmt"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// runTTL turns a TTL check critical when no report has come within TTL.
// The deadline lives in c.expires and is moved by updateTTL; the timer
// here only wakes the loop to look at it, so a report racing the timer
// can never be overtaken by a stale expiry.
func (c *check) runTTL(ctx context.Context) {
	timer := time.NewTimer(c.def.TTL)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-c.wake:
		}
		c.mu.Lock()
		left := time.Until(c.expires)
		var seq uint64
		var changed bool
		if left <= 0 && !c.expired {
			c.expired = true
			out := "TTL expired"
			if c.output != "" {
				out = "TTL expired (last output before timeout follows): " + c.output
			}
			seq, changed = c.setLocked(catalog.HealthCritical, out)
		}
		status, output := c.status, c.output
		c.mu.Unlock()
		if changed {
			c.publish(seq, status, output)
		}
		if left > 0 {
			timer.Reset(left)
		}
		// Once expired, only a report (c.wake) or removal wakes the loop.
	}
}

// updateTTL records the application's report and restarts the TTL.
// Reports bypass the thresholds: the application states its health, it is
// not a sample of it.
func (c *check) updateTTL(status catalog.HealthStatus, output string) error {
	switch status {
	case catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical:
	default:
		return &catalog.FieldError{Field: "Status", Reason: fmt.Sprintf("%q is not a check status: use passing, warning or critical", status)}
	}
	output = truncate([]byte(output), c.def.OutputMaxSize)
	c.mu.Lock()
	c.expires = time.Now().Add(c.def.TTL)
	c.expired = false
	seq, changed := c.setLocked(status, output)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	if changed {
		c.publish(seq, status, output)
	}
	return nil
}
