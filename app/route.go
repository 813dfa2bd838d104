package app

import (
	"strings"

	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
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

// sessionNamer tells the diff review which session a diff's owner is: a
// CLI's client id is the terminal session whose CLI has that client's pid;
// a chat's owner key ("chat:<id>") is that chat's session.
type sessionNamer struct {
	h    host.Host
	sess *sessions.Sessions
}

func (n sessionNamer) SessionOf(owner string) (nvimbridge.DiffSession, bool) {
	var match func(sessions.Session) bool
	if id, ok := strings.CutPrefix(owner, "chat:"); ok {
		match = func(x sessions.Session) bool { return x.Mode == sessions.ModeChat && x.ID == "c"+id }
	} else {
		pid := 0
		for _, c := range n.h.Clients() {
			if c.ID == owner {
				pid = c.PID
			}
		}
		if pid <= 0 {
			return nvimbridge.DiffSession{}, false
		}
		match = func(x sessions.Session) bool {
			return x.Mode == sessions.ModeTerminal && x.PID == pid && x.State != sessions.Exited
		}
	}
	for _, x := range n.sess.List() {
		if match(x) {
			return nvimbridge.DiffSession{ID: x.ID, Name: x.Name}, true
		}
	}
	return nvimbridge.DiffSession{}, false
}
