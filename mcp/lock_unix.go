//go:build unix

package mcp

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ProcessAlive reports whether pid is a live process: signal 0 reaches it,
// or is refused for lack of permission (the process exists).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func ownedByCurrentUser(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
