//go:build unix

package clienv

import "syscall"

// killPID kills the process pid.
func killPID(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
