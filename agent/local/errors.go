package local

import "errors"

var (
	// ErrUnknownService is returned for a service ID this agent does not hold.
	ErrUnknownService = errors.New("unknown service")
	// ErrUnknownCheck is returned for a check ID this agent does not hold.
	ErrUnknownCheck = errors.New("unknown check")
	// ErrNotTTL is returned when a status is reported for a check that is
	// not a TTL check: its runner decides its status.
	ErrNotTTL = errors.New("not a TTL check")
	// ErrNotSynced wraps the error of a change that was stored on the agent
	// but could not be pushed to the catalog yet; anti-entropy retries it.
	ErrNotSynced = errors.New("stored on the agent but not yet in the catalog")
)
