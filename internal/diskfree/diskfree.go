// Package diskfree reads how much room a file system has left, for the
// agent's data-dir warning and the servers' raft log store. It has no
// state and starts nothing.
package diskfree

import "errors"

// ErrUnsupported is returned where the platform offers no statfs.
var ErrUnsupported = errors.New("diskfree: not supported on this platform")

// Space is a file system's size and what an unprivileged process may
// still write to it, in bytes.
type Space struct {
	Free  uint64
	Total uint64
}
