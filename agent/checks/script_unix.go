//go:build unix

package checks

import (
	"os/exec"
	"syscall"
)

// killProcessGroup puts the program in a process group of its own and
// makes the timeout kill the whole group: a script that runs curl or sleep
// must not leave them running (and holding its output pipe) once it has
// been given up on.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
