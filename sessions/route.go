package sessions

import (
	"path/filepath"
	"strings"
)

// Holder is the terminal session, among those whose CLI runs as one of
// pids, that a file at path belongs to: the one whose directory holds it
// most closely (a session in a worktree under the project holds the
// worktree's files, not the project's session), and among several in that
// directory the one the user used last. ok is false when no such session
// holds path. pid is that session's CLI.
func (s *Sessions) Holder(path string, pids []int) (pid int, ok bool) {
	path = filepath.Clean(path)
	want := make(map[int]bool, len(pids))
	for _, p := range pids {
		if p > 0 {
			want[p] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *Session
	for _, x := range s.byID {
		if x.Mode != ModeTerminal || x.State == Exited || !want[x.PID] || !within(path, x.Dir) {
			continue
		}
		switch {
		case best == nil,
			len(filepath.Clean(x.Dir)) > len(filepath.Clean(best.Dir)),
			len(filepath.Clean(x.Dir)) == len(filepath.Clean(best.Dir)) && x.used > best.used:
			best = x
		}
	}
	if best == nil {
		return 0, false
	}
	return best.PID, true
}

// Known reports whether pid is the CLI of a running terminal session
// (whose directory Holder knows).
func (s *Sessions) Known(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.byID {
		if x.PID == pid && pid > 0 && x.Mode == ModeTerminal && x.State != Exited {
			return true
		}
	}
	return false
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	dir = filepath.Clean(dir)
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// cliWorktree is the worktree the CLI's own --worktree made, when cwd (a
// hook's) is in one under dir, the session's directory: the CLI's layout,
// <dir>/.claude/worktrees/<name>; else "".
func cliWorktree(dir, cwd string) string {
	if dir == "" || cwd == "" || !filepath.IsAbs(cwd) {
		return ""
	}
	root := filepath.Join(filepath.Clean(dir), ".claude", "worktrees")
	rel, err := filepath.Rel(root, filepath.Clean(cwd))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	name, _, _ := strings.Cut(rel, string(filepath.Separator))
	return filepath.Join(root, name)
}
