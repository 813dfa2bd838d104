//go:build windows

package mcp

import (
	"io/fs"
	"os"
)

// ProcessAlive reports whether pid is a live process: whether it can be
// opened.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// ownedByCurrentUser is false on Windows: directory modes are left alone.
func ownedByCurrentUser(fs.FileInfo) bool { return false }
