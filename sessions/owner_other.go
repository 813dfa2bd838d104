//go:build !unix

package sessions

import (
	"io/fs"

	"github.com/nvim-claude/nvim-claude/mcp"
)

// ownedByUser cannot tell here: the sweep leaves everything alone.
func ownedByUser(fs.FileInfo) bool { return false }

func hostAlive(pid int) bool { return mcp.ProcessAlive(pid) }
