// Package e2etest holds what the end-to-end test packages (e2e and
// e2e/faults) share.
package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildCairn builds ./cmd/cairn (without -race, whatever the tests run
// with: the agents' behaviour and timing are what is tested) into a new
// temporary directory named after prefix, and returns the binary's path
// and a function that removes the directory.
func BuildCairn(prefix string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, "cairn")
	// -buildvcs=auto overrides a GOFLAGS=-buildvcs=false in the go env: in
	// a clone the binary then reports its revision, as a user's build
	// does (a git worktree still gets none: the go command does not
	// recognize one).
	build := exec.Command(goCommand(), "build", "-buildvcs=auto", "-o", bin, "github.com/cairndns/cairn/cmd/cairn")
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("%s: %w\n%s", strings.Join(build.Args, " "), err, out)
	}
	return bin, cleanup, nil
}

// goCommand is the go command on PATH (go test puts the running
// toolchain's first), else plain "go".
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
