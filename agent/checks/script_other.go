//go:build !unix

package checks

import "os/exec"

// killProcessGroup does nothing here: the timeout kills the program
// itself (exec.CommandContext's default), and scriptWaitDelay bounds the
// wait for anything it left behind.
func killProcessGroup(*exec.Cmd) {}
