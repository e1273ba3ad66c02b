// Package waittest waits in tests for a condition to hold, polling it
// with a deadline instead of sleeping and hoping. It is the one such
// helper of the repository; imported only by tests and <pkg>test
// packages.
package waittest

import (
	"testing"
	"time"
)

// poll is how often the condition is asked again.
const poll = 10 * time.Millisecond

// For polls cond until it returns nil, and fails tb with what and cond's
// last error when that has not happened within timeout.
func For(tb testing.TB, timeout time.Duration, what string, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(poll)
	}
}
