package local

import (
	"errors"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

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

// refused reports whether err is the servers' answer that a write is not
// allowed (a permission, a token, a field), as opposed to a failure to
// reach them: such a write will never be applied, so the agent keeps
// nothing of it. Nil is no refusal.
func refused(err error) bool {
	var fe *catalog.FieldError
	return errors.Is(err, rpc.ErrPermissionDenied) || errors.Is(err, rpc.ErrACLNotFound) || errors.As(err, &fe)
}
