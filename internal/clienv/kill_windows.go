//go:build windows

package clienv

import "os"

// killPID kills the process pid. (killByEnv finds no process on Windows,
// which has no /proc; this is here so that the package builds.)
func killPID(pid int) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	_ = p.Kill()
	_ = p.Release()
}
