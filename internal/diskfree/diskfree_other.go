//go:build !(linux || darwin || freebsd)

package diskfree

// Of returns ErrUnsupported here.
func Of(string) (Space, error) { return Space{}, ErrUnsupported }
