// Package clock holds the one wait of cairn's retry and poll loops: a
// pause that ends early when its context does. It imports nothing of
// cairn's, so any package may use it (api excepted: a client library that
// stays on the standard library keeps its own copy).
package clock

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, and reports whether d passed:
// false means ctx ended first and the caller should stop. Its timer is
// released either way.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
