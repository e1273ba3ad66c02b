package consensustest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a new directory and returns it,
// unmounted when the test ends (after everything the test started later
// has stopped). It skips the test unless it runs as root on a system
// where mount works.
func Tmpfs(tb testing.TB, size int64) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(tb.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		tb.Skipf("mount a tmpfs: %v: %s", err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			tb.Errorf("consensustest: umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until the file system has no room left but
// leave bytes, and returns a func that removes it.
func Fill(tb testing.TB, dir string, leave int64) (free func()) {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	_ = f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		tb.Fatalf("consensustest: fill %s: got %v, want ENOSPC", dir, err)
	}
	// A write smaller than buf may still fit.
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		for _, err := f.Write(buf[:512]); err == nil; _, err = f.Write(buf[:512]) {
		}
		_ = f.Close()
	}
	if leave > 0 {
		st, err := os.Stat(path)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Truncate(path, max(0, st.Size()-leave)); err != nil {
			tb.Fatal(err)
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			tb.Errorf("consensustest: free %s: %v", dir, err)
		}
	}
}
