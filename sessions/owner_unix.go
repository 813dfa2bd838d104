//go:build unix

package sessions

import (
	"bytes"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// ownedByUser reports whether fi (an Lstat) is the current user's: a
// sweep removes nothing of anyone else's.
func ownedByUser(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// hostAlive reports whether the host pid still runs: signal 0 reaches it
// and, where /proc tells, it is not a zombie (a host killed with its
// Neovim waits there until something reaps it, yet holds nothing).
func hostAlive(pid int) bool {
	if !mcp.ProcessAlive(pid) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state …: comm may hold spaces and parentheses
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	f := strings.Fields(rest)
	return len(f) == 0 || f[0] != "Z"
}
