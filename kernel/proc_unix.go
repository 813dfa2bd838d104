//go:build unix

package kernel

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own: a terminal's
// Ctrl-C for Neovim is not for it, and killHelper can kill the group.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killHelper kills the helper's process group (the helper leads it).
func killHelper(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// killKernel kills the kernel's process group: jupyter_client starts the
// kernel in a session of its own, so pid leads it.
func killKernel(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
