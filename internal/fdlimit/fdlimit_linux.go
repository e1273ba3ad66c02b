//go:build linux

package fdlimit

import (
	"fmt"
	"syscall"
)

// Raise raises the soft limit on open files (RLIMIT_NOFILE) to the hard
// limit, and returns both as they are afterwards. When the soft limit is
// already the hard one it changes nothing. (Go programs since Go 1.19
// raise it so at start themselves, for their own process only; Raise
// makes sure of it and tells the agent the limit to budget within.) On
// error it returns the limits as they were, when they could be read.
func Raise() (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("fdlimit: read RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur >= lim.Max {
		return lim.Cur, lim.Max, nil
	}
	raised := syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		return lim.Cur, lim.Max, fmt.Errorf("fdlimit: raise RLIMIT_NOFILE from %d to %d: %w", lim.Cur, lim.Max, err)
	}
	return raised.Cur, raised.Max, nil
}
