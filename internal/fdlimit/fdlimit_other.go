//go:build !linux

package fdlimit

// Raise does nothing here and returns an error wrapping ErrUnsupported:
// the agent then sets no connection cap from the limit (its configured
// caps still apply).
func Raise() (soft, hard uint64, err error) {
	return 0, 0, ErrUnsupported
}
