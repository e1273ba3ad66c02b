package checks

import "errors"

// Errors returned, wrapped with the check's ID, by Manager methods.
var (
	// ErrUnknownCheck: no check with that ID is running.
	ErrUnknownCheck = errors.New("unknown check")
	// ErrNotTTL: UpdateTTL was called for a check that is not a TTL check;
	// only the application's own reports drive a TTL check.
	ErrNotTTL = errors.New("not a TTL check")
	// ErrClosed: the Manager has been closed.
	ErrClosed = errors.New("check manager closed")
	// ErrNoAliasSource: an alias check was added to a Manager built
	// without an AliasSource.
	ErrNoAliasSource = errors.New("alias checks need an AliasSource")
)
