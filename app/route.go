package app

import (
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/sessions"
)

// sessionRouter routes a selection (and a mention) to the CLI of the
// terminal session whose directory holds the file — with a session per git
// worktree, the one in that worktree; in the main tree, the one used last
// there. A CLI that is no terminal session of ours (run elsewhere) gets
// every selection as before: where it runs is unknown. When no session
// holds the file, every CLI gets it.
type sessionRouter struct {
	h    host.Host
	sess *sessions.Sessions
}

func (r sessionRouter) Route(path string) ([]string, bool) {
	clients := r.h.Clients()
	pids := make([]int, 0, len(clients))
	for _, c := range clients {
		if c.Initialized && c.PID > 0 {
			pids = append(pids, c.PID)
		}
	}
	pid, ok := r.sess.Holder(path, pids)
	if !ok {
		return nil, false
	}
	ids := make([]string, 0, 1)
	for _, c := range clients {
		if c.Initialized && (c.PID == pid || !r.sess.Known(c.PID)) {
			ids = append(ids, c.ID)
		}
	}
	return ids, true
}
