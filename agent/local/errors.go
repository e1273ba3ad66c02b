package local

import "errors"

var (
	// ErrUnknownService is returned for a service ID this agent does not hold.
	ErrUnknownService = errors.New("unknown service")
	// ErrNotSynced wraps the error of a change that was stored on the agent
	// but could not be pushed to the catalog yet; anti-entropy retries it.
	ErrNotSynced = errors.New("stored on the agent but not yet in the catalog")
)
