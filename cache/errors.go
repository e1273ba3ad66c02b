package cache

import "errors"

// ErrClosed is returned by Get after Close, and by a Get whose miss was
// still waiting for its fetch when Close was called.
var ErrClosed = errors.New("cache closed")

// ErrFetchTimeout is wrapped by Get's error when the fetch of a miss did
// not finish within Config.FetchTimeout (typically: no server reachable).
// The DNS layer answers SERVFAIL.
var ErrFetchTimeout = errors.New("cache fetch timed out")

// ErrOverloaded is wrapped by Get's error for a miss that found
// Config.MaxEntries other misses already being fetched: it is refused at
// once rather than adding a goroutine and an RPC to the pile. The DNS
// layer answers SERVFAIL.
var ErrOverloaded = errors.New("cache overloaded: too many fetches in flight")
