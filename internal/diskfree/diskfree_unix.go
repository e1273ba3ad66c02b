//go:build linux || darwin || freebsd

package diskfree

import (
	"fmt"
	"syscall"
)

// Of returns the room on the file system holding path. Free counts the
// blocks available to unprivileged users (the root reserve is left out,
// as df shows it).
func Of(path string) (Space, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Space{}, fmt.Errorf("diskfree: statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize) // int64 on linux, uint32 on darwin
	return Space{Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs}, nil
}
