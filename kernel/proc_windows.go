//go:build windows

package kernel

import (
	"os"
	"os/exec"
	"syscall"
)

// Windows has no process group that can be killed as a whole (that takes a
// Job Object, which package syscall does not offer), so a kill here ends
// the helper and the kernel themselves; a process the kernel's code started
// outlives them. Interrupts never come from here on any system: the helper
// asks jupyter_client, which on Windows sets the kernel's interrupt event
// instead of sending SIGINT.

// ownProcessGroup starts cmd in a new process group, the nearest Windows has
// to one of its own: the console's Ctrl-C is disabled for it (Ctrl-Break
// still reaches it).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killHelper kills the helper process (not what it started; see above).
func killHelper(p *os.Process) {
	_ = p.Kill()
}

// killKernel kills the kernel process (not what it started; see above).
func killKernel(pid int) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return // gone already, or not ours to open
	}
	_ = p.Kill()
	_ = p.Release()
}
