package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// Three sessions at once, the main tree's and two worktrees' (wa, wb),
// each with diff.open_in_new_tab = "session":
//   - a selection in wb's copy reaches wb's session only;
//   - all three propose an edit of the same file (each its own copy) and
//     wait at the same time: each proposal opens in its own session's tab
//     page, named after it, and none replaces another;
//   - each is answered in its tab, in another order than they came: wb's
//     accepted, wa's rejected, the main tree's accepted — each CLI gets its
//     own answer (the files say so) and goes on.
func TestCLIThreeSessionsInWorktrees(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := startDiffSession(t, `, diff = { open_in_new_tab = "session" }`)
	var has08 bool
	s.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &has08)
	if !has08 {
		// Neovim 0.7 leaves a second Claude terminal's screen at the CLI's
		// banner (TestCLIWorktreeSession says more): nothing can be typed
		// to the worktrees' sessions there.
		t.Skip("Neovim 0.7 does not render a second Claude terminal's prompt")
	}
	gitIn(t, s.project, "init", "-q")
	gitIn(t, s.project, "add", "hello.txt")
	gitIn(t, s.project, "commit", "-q", "-m", "start")

	type tree struct {
		name string
		st   status
		file string
	}
	trees := []*tree{{name: "main", st: s.st, file: s.file}}
	for _, name := range []string{"wa", "wb"} {
		prev := trees[len(trees)-1].st.Terminal.PID
		s.Exec(t, `vim.cmd("ClaudeStart --worktree " .. ...)`, name)
		s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(require("claude.terminal").info() or {}).pid ~= %d`, prev),
			`return { notes = _G.notes, info = require("claude.terminal").info() }`, "the worktree's terminal")
		st := s.status(t)
		killOnCleanup(t, st.Terminal.PID)
		s.WaitFor(t, 60*time.Second,
			fmt.Sprintf(`(function() for _, c in ipairs(require("claude").status().clients) do if c.pid == %d then return true end end end)()`, st.Terminal.PID),
			`return require("claude").status()`, "the worktree's CLI to connect")
		trees = append(trees, &tree{name: name, st: st, file: filepath.Join(s.project, ".claude", "worktrees", name, "hello.txt")})
	}
	main, wa, wb := trees[0], trees[1], trees[2]
	// use makes tr's terminal the one shown (as <CR> on it in
	// :ClaudeSessions does) and the one the test types to.
	use := func(tr *tree) {
		t.Helper()
		s.st = tr.st
		s.Exec(t, `local cur = vim.api.nvim_get_current_win()
require("claude.terminal").switch(..., false)
if vim.api.nvim_win_is_valid(cur) then vim.api.nvim_set_current_win(cur) end`, tr.st.Terminal.Bufnr)
	}
	for _, tr := range trees[1:] {
		use(tr)
		s.waitScreen(t, 60*time.Second, "? for shortcuts")
	}

	// A selection in wb's copy: wa, asked next, was told nothing of it.
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p") vim.cmd("edit " .. vim.fn.fnameescape(...))`, wb.file)
	s.selInput(t, "2GVj")
	s.selInput(t, "<Esc>")
	use(wb)
	s.waitScreen(t, 30*time.Second, "2 lines selected")
	s.api.Script(fakeapi.Reply(fakeapi.Text("A here.")))
	use(wa)
	s.submit(t, "qwa")
	if req := s.mainRequestWith(t, "qwa"); strings.Contains(req.Text(), wb.file) {
		t.Fatalf("wa's session was told of wb's selection:\n%s", req.Text())
	}
	s.waitScreen(t, 30*time.Second, "A here.")

	// All three propose at once; each waits for its answer.
	for i, tr := range trees {
		use(tr)
		s.api.Script(
			fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": tr.file})),
			fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": tr.file, "old_string": "beta", "new_string": "BETA-" + tr.name})),
		)
		s.submit(t, "edit as "+tr.name)
		s.WaitFor(t, 60*time.Second, fmt.Sprintf(`#require("claude.diff").pending() == %d`, i+1),
			`return { pending = require("claude.diff").pending(), screen = vim.api.nvim_buf_get_lines(`+diffItoa(tr.st.Terminal.Bufnr)+`, 0, -1, false) }`,
			"the diff of "+tr.name)
	}
	var open []struct {
		File        string `json:"file"`
		ProposalBuf int    `json:"proposal_bufnr"`
		Session     struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"session"`
		Tab     int    `json:"tab"`
		TabName string `json:"tab_session_name"`
		Mine    bool   `json:"mine"`
	}
	s.Eval(t, `local out = {}
for _, d in ipairs(require("claude.diff").pending()) do
  local tab = vim.api.nvim_win_get_tabpage(vim.fn.win_findbuf(d.proposal_bufnr)[1])
  local ok, name = pcall(vim.api.nvim_tabpage_get_var, tab, "claude_session_name")
  d.tab = vim.api.nvim_tabpage_get_number(tab)
  d.tab_session_name = ok and name or ""
  d.mine = d.session ~= nil and tab == require("claude.diff").session_tab(d.session.id)
  table.insert(out, d)
end
return out`, &open)
	tabs := map[int]bool{}
	for i, d := range open {
		tr := trees[i]
		if d.File != tr.file || d.Session.ID == "" || !d.Mine || d.TabName != d.Session.Name || tabs[d.Tab] {
			t.Fatalf("diff %d (of %s) is not alone in its session's tab: %+v", i, tr.name, open)
		}
		tabs[d.Tab] = true
	}
	for _, tr := range trees[1:] {
		if d := open[map[string]int{"wa": 1, "wb": 2}[tr.name]]; !strings.Contains(d.Session.Name, tr.name) {
			t.Fatalf("the session of %s's diff is named %q", tr.name, d.Session.Name)
		}
	}

	// Answered in their tabs, in another order.
	answer := func(i int, cmd string) {
		t.Helper()
		s.Exec(t, `local buf, cmd = ...
vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
vim.cmd(cmd)`, open[i].ProposalBuf, cmd)
	}
	waitFile := func(tr *tree, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, _ := os.ReadFile(tr.file)
			if string(b) == want {
				return
			}
			if time.Now().After(deadline) {
				use(tr)
				t.Fatalf("%s's file: %q, want %q; its screen:\n%s", tr.name, b, want, s.screen(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	s.api.Script(fakeapi.Reply(fakeapi.Text("B saved.")))
	answer(2, "write")
	waitFile(wb, strings.Replace(diffFileText, "beta", "BETA-wb", 1))
	use(wb)
	s.waitScreen(t, 30*time.Second, "B saved.")
	answer(1, "ClaudeDiffReject")
	use(wa)
	s.waitScreen(t, 30*time.Second, "Rejected update to hello.txt")
	s.api.Script(fakeapi.Reply(fakeapi.Text("Main saved.")))
	answer(0, "write")
	waitFile(main, strings.Replace(diffFileText, "beta", "BETA-main", 1))
	use(main)
	s.waitScreen(t, 30*time.Second, "Main saved.")
	s.waitNoDiffOfOurs(t)
	waitFile(wa, diffFileText) // the rejected one: untouched
}
