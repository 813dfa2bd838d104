package sessions

import (
	"context"
	"encoding/json"
	"testing"
)

// TestHolder: a file goes to the session whose directory holds it most
// closely; in one directory, to the one used last; never to an exited
// session or a CLI that is not connected.
func TestHolder(t *testing.T) {
	s := New(&fakeHost{})
	call := func(method string, p map[string]any) any {
		t.Helper()
		raw, _ := json.Marshal(p)
		res, err := s.Hooks().LuaRequests[method](context.Background(), raw)
		if err != nil {
			t.Fatalf("%s %v: %v", method, p, err)
		}
		return res
	}
	term := func(dir string, pid int) string {
		id := call("sessions.terminal", map[string]any{"dir": dir}).(TerminalInfo).ID
		call("sessions.update", map[string]any{"id": id, "event": "pid", "pid": pid})
		return id
	}
	main1 := term("/p", 101)
	term("/p/.claude/worktrees/a", 201)
	term("/p/.claude/worktrees/b", 301)
	main2 := term("/p", 102)
	all := []int{101, 102, 201, 301}
	tests := []struct {
		name string
		path string
		pids []int
		used string // a session made current first
		want int
	}{
		{"worktree a's file", "/p/.claude/worktrees/a/x.go", all, "", 201},
		{"worktree b's file", "/p/.claude/worktrees/b/sub/x.go", all, "", 301},
		{"a prefix is not a worktree", "/p/.claude/worktrees/ab/x.go", all, "", 102},
		{"main tree: the last made is the last used", "/p/x.go", all, "", 102},
		{"main tree: the one made current", "/p/x.go", all, main1, 101},
		{"main tree: the other made current again", "/p/x.go", all, main2, 102},
		{"worktree a not connected: the main tree's", "/p/.claude/worktrees/a/x.go", []int{101, 102, 301}, "", 102},
		{"outside every session", "/elsewhere/x.go", all, "", 0},
		{"no CLI connected", "/p/x.go", nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.used != "" {
				call("sessions.update", map[string]any{"id": tt.used, "event": "used"})
			}
			got, ok := s.Holder(tt.path, tt.pids)
			if got != tt.want || ok != (tt.want != 0) {
				t.Fatalf("Holder(%q) = %d, %v; want %d", tt.path, got, ok, tt.want)
			}
		})
	}
	call("sessions.update", map[string]any{"id": main2, "event": "exited"})
	if got, _ := s.Holder("/p/x.go", all); got != 101 {
		t.Fatalf("after the last used exited: %d, want 101", got)
	}
	if s.Known(102) || !s.Known(101) || s.Known(0) {
		t.Fatalf("Known: 102 %v 101 %v", s.Known(102), s.Known(101))
	}
}

// A terminal whose CLI made its own worktree (claude -w) is that
// worktree's session once a hook says where it runs: a file of the
// worktree goes to it. Any other directory changes nothing.
func TestCLIWorktreeFromHooks(t *testing.T) {
	for _, tc := range []struct {
		cwd, want string
	}{
		{"/proj/a/.claude/worktrees/feat", "/proj/a/.claude/worktrees/feat"},
		{"/proj/a/.claude/worktrees/feat/sub/dir", "/proj/a/.claude/worktrees/feat"},
		{"/proj/a/sub", "/proj/a"},
		{"/proj/a/.claude/worktrees", "/proj/a"},
		{"/elsewhere/.claude/worktrees/x", "/proj/a"},
		{"relative/.claude/worktrees/x", "/proj/a"},
		{"", "/proj/a"},
	} {
		s := New(&fakeHost{})
		sid := newTerminal(t, s)
		if err := s.Hook(HookCall{Session: sid, Event: "UserPromptSubmit", Cwd: tc.cwd}); err != nil {
			t.Fatal(err)
		}
		dir := ""
		for _, x := range s.List() {
			if x.ID == sid {
				dir = x.Dir
			}
		}
		if dir != tc.want {
			t.Errorf("cwd %q: the session's dir %q, want %q", tc.cwd, dir, tc.want)
		}
	}
}

// Where the CLI runs is told by its first hook: the model's `cd` into
// another worktree under the project (the CLI's cwd follows its shell)
// does not make the session that worktree's — its dashboard keys would
// then discard or finish a worktree that is not the session's.
func TestCLIWorktreeFirstHookOnly(t *testing.T) {
	s := New(&fakeHost{})
	sid := newTerminal(t, s)
	for _, cwd := range []string{"/proj/a", "/proj/a/.claude/worktrees/other"} {
		if err := s.Hook(HookCall{Session: sid, Event: "PreToolUse", Cwd: cwd}); err != nil {
			t.Fatal(err)
		}
	}
	if dir := s.List()[0].Dir; dir != "/proj/a" {
		t.Fatalf("after a cd into another worktree the session's dir is %q", dir)
	}
}
