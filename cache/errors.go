package cache

import "errors"

// ErrClosed is returned by Get after Close, and by a Get whose miss was
// still waiting for its fetch when Close was called.
var ErrClosed = errors.New("cache closed")

// ErrFetchTimeout is wrapped by Get's error when the fetch of a miss did
// not finish within Config.FetchTimeout (typically: no server reachable).
// The DNS layer answers SERVFAIL.
var ErrFetchTimeout = errors.New("cache fetch timed out")
