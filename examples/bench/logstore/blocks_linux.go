package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func blocks(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks
	}
	return 0
}

// dropCache drops path's clean pages from the page cache (this file's
// only: the machine's other work keeps its cache), so the next read comes
// from the disk.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

const canDropCache = true
