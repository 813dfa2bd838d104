//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// diffSession is a session with a project file open in the editor window
// (the CLI in its terminal on the right, as :ClaudeStart leaves it).
type diffSession struct {
	*session
	file string // absolute path of the file the tests edit
}

const diffFileText = "alpha\nbeta\ngamma\ndelta\n"

func startDiffSession(t *testing.T, extra string) *diffSession {
	t.Helper()
	s := startSession(t, sessionOpts{files: map[string]string{"hello.txt": diffFileText}, extra: extra})
	file := filepath.Join(s.project, "hello.txt")
	// The user works in the editor window; the CLI keeps its terminal.
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p") vim.cmd("edit hello.txt")`)
	var name string
	s.Eval(t, `return vim.api.nvim_buf_get_name(0)`, &name)
	if name != file {
		t.Fatalf("editing %q, want %q", name, file)
	}
	return &diffSession{session: s, file: file}
}

// scriptEdit scripts the model: Read the file (the CLI's Edit requires it),
// Edit it, then say done.
func (s *diffSession) scriptEdit(path, oldString, newString, done string) {
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": path})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": path, "old_string": oldString, "new_string": newString})),
		fakeapi.Reply(fakeapi.Text(done)),
	)
}

// pendingDiff is one entry of require("claude.diff").pending().
type pendingDiff struct {
	TabName     string `json:"tab_name"`
	File        string `json:"file"`
	ProposalBuf int    `json:"proposal_bufnr"`
	OriginalBuf int    `json:"original_bufnr"`
}

// waitDiff waits until the CLI's openDiff has put a diff on screen. The
// permission dialog in the terminal and the diff come together.
func (s *diffSession) waitDiff(t *testing.T) pendingDiff {
	t.Helper()
	s.WaitFor(t, 60*time.Second, `#require("claude.diff").pending() == 1`,
		`return { pending = require("claude.diff").pending(), screen = vim.api.nvim_buf_get_lines(`+diffItoa(s.st.Terminal.Bufnr)+`, 0, -1, false) }`,
		"the diff to open")
	var p []pendingDiff
	s.Eval(t, `return require("claude.diff").pending()`, &p)
	return p[0]
}

// waitNoDiff waits until no diff is open and none of our windows is left.
func (s *diffSession) waitNoDiff(t *testing.T) {
	t.Helper()
	s.WaitFor(t, 30*time.Second, `#require("claude.diff").pending() == 0 and (function()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.wo[w].diff or vim.fn.bufname(vim.api.nvim_win_get_buf(w)):find("Claude Code", 1, true) then return false end
  end
  return true end)()`, `return vim.tbl_map(function(w) return vim.fn.bufname(vim.api.nvim_win_get_buf(w)) end, vim.api.nvim_list_wins())`,
		"the diff windows to close")
}

func (s *diffSession) waitFileText(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(s.file)
		if string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, want %q; screen:\n%s", s.file, b, want, s.screen(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func diffItoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// mainRequestWith waits for a main request whose text has want.
func (s *diffSession) mainRequestWith(t *testing.T, want string) fakeapi.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.api.WaitFor(ctx, func(r fakeapi.Request) bool { return r.Main && strings.Contains(r.Text(), want) })
	if err != nil {
		var texts []string
		for _, m := range s.api.MainRequests() {
			texts = append(texts, m.Text())
		}
		t.Fatalf("no main request says %q: %v\nrequests:\n%s\nscreen:\n%s", want, err, strings.Join(texts, "\n-----\n"), s.screen(t))
	}
	return r
}

// 1. The user edits one line of the proposal and saves it: the CLI writes
// exactly that, the buffer shows it, and the model is told.
func TestCLIDiffAcceptEdited(t *testing.T) {
	s := startDiffSession(t, "")
	s.scriptEdit(s.file, "beta", "BETA", "Edited.")
	s.submit(t, "make beta loud")
	d := s.waitDiff(t)
	if d.File != s.file || !strings.Contains(d.TabName, "[Claude Code]") {
		t.Fatalf("pending diff %+v", d)
	}
	var name string
	s.Eval(t, `return vim.api.nvim_buf_get_name(...)`, &name, d.ProposalBuf)
	if !strings.Contains(name, d.TabName) {
		t.Fatalf("proposal buffer %q is not named after the tab %q", name, d.TabName)
	}
	want := "alpha\nBETA\ngamma (the user's own touch)\ndelta\n"
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])
vim.api.nvim_buf_set_lines(0, 2, 3, false, { "gamma (the user's own touch)" })
vim.cmd("write")`, d.ProposalBuf)
	s.waitFileText(t, want)
	s.waitNoDiff(t)
	s.WaitFor(t, 30*time.Second, `table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr("hello.txt"), 0, -1, false), "\n") .. "\n" == `+diffJSONString(want),
		`return vim.api.nvim_buf_get_lines(vim.fn.bufnr("hello.txt"), 0, -1, false)`, "the buffer to show the CLI's write")
	var modified bool
	s.Eval(t, `return vim.bo[vim.fn.bufnr("hello.txt")].modified`, &modified)
	if modified {
		t.Fatal("the file's buffer is modified after the reload")
	}
	// CLI 2.1.330 says so in the Edit's tool result.
	s.mainRequestWith(t, "The user modified your proposed changes")
	s.waitScreen(t, 30*time.Second, "Edited.")
}

func diffJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// 2. :q in either pane of a proposal rejects it: the CLI is answered (its
// terminal says so, and the turn stops), the file stays as it was, and the
// windows are as they were before the diff — the file's window too, when
// it was the file's pane that was closed.
func TestCLIDiffRejectWithQuit(t *testing.T) {
	for _, pane := range []string{"proposal", "your file"} {
		t.Run(pane, func(t *testing.T) {
			s := startDiffSession(t, "")
			before := s.windows(t)
			s.scriptEdit(s.file, "beta", "BETA", "Should not get here.")
			s.submit(t, "make beta loud")
			d := s.waitDiff(t)
			buf := d.ProposalBuf
			if pane == "your file" {
				buf = d.OriginalBuf
			}
			s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("quit")`, buf)
			s.waitScreen(t, 30*time.Second, "Rejected update to hello.txt")
			s.waitNoDiff(t)
			if b, _ := os.ReadFile(s.file); string(b) != diffFileText {
				t.Fatalf("the file changed: %q", b)
			}
			// The rejection ended the turn: the scripted final text was never asked for.
			if s.api.Pending() != 1 {
				t.Fatalf("%d scripted turns left, want 1 (the turn stops on a rejection)", s.api.Pending())
			}
			if after := s.windows(t); after != before {
				t.Fatalf("windows %s after the diff, %s before", after, before)
			}
		})
	}
}

// 3. A Write of a new file opens against an empty side; accepting it makes
// the CLI create the file with the proposal.
func TestCLIDiffNewFile(t *testing.T) {
	s := startDiffSession(t, "")
	path := filepath.Join(s.project, "pkg", "fresh.txt")
	content := "brand new\nfile ✓\n"
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Write", map[string]any{"file_path": path, "content": content})),
		fakeapi.Reply(fakeapi.Text("Created.")),
	)
	s.submit(t, "create a file")
	d := s.waitDiff(t)
	if d.File != path {
		t.Fatalf("diff for %q, want %q", d.File, path)
	}
	var orig []string
	s.Eval(t, `return vim.api.nvim_buf_get_lines(..., 0, -1, false)`, &orig, d.OriginalBuf)
	if len(orig) != 1 || orig[0] != "" {
		t.Fatalf("the current side of a new file shows %q", orig)
	}
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, d.ProposalBuf)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && string(b) == content {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, %v; screen:\n%s", path, b, err, s.screen(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.waitNoDiff(t)
	s.waitScreen(t, 30*time.Second, "Created.")
	// No buffer for the new file was left behind by the diff, and no empty one.
	var names []string
	s.Eval(t, `local out = {} for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.bo[b].buflisted then table.insert(out, vim.fn.bufname(b)) end end return out`, &names)
	if strings.Join(names, ",") != "hello.txt" {
		t.Fatalf("listed buffers: %q", names)
	}
}

// 4. The user answers Yes in the Claude terminal while the diff is open:
// the CLI sends close_tab, our windows close, the CLI applies its edit and
// the buffer shows it.
func TestCLIDiffYesInTerminal(t *testing.T) {
	s := startDiffSession(t, "")
	before := s.windows(t)
	s.scriptEdit(s.file, "gamma", "GAMMA", "Done in the terminal.")
	s.submit(t, "make gamma loud")
	s.waitDiff(t)
	s.waitScreen(t, 30*time.Second, "Do you want to make this edit to hello.txt?")
	// Keys typed right after the dialog appears may be lost: retry.
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])`, s.st.Terminal.Bufnr)
	for i := 0; ; i++ {
		s.typeKeys(t, "1")
		if s.waitGone(t, 3*time.Second) {
			break
		}
		if i == 5 {
			t.Fatalf("the dialog never took the answer; screen:\n%s", s.screen(t))
		}
	}
	want := "alpha\nbeta\nGAMMA\ndelta\n"
	s.waitFileText(t, want)
	s.waitNoDiff(t)
	s.WaitFor(t, 30*time.Second, `table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr("hello.txt"), 0, -1, false), "\n") .. "\n" == `+diffJSONString(want),
		`return vim.api.nvim_buf_get_lines(vim.fn.bufnr("hello.txt"), 0, -1, false)`, "the buffer to show the CLI's write")
	s.waitScreen(t, 30*time.Second, "Done in the terminal.")
	if after := s.windows(t); after != before {
		t.Fatalf("windows %s after the diff, %s before", after, before)
	}
}

// 5. The user's own :diffthis pair survives the closeAllDiffTabs the CLI
// sends at the start of the next turn — and a diff of ours opening and
// closing beside it.
func TestCLIDiffUserDiffthisSurvives(t *testing.T) {
	s := startDiffSession(t, "")
	if err := os.WriteFile(filepath.Join(s.project, "other.txt"), []byte("alpha\nBeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Exec(t, `vim.cmd("vsplit other.txt") vim.cmd("diffthis") vim.cmd("wincmd l") vim.cmd("diffthis")`)
	userPair := s.userDiffs(t)
	if userPair != "other.txt,hello.txt" {
		t.Fatalf("setup: diff windows %q", userPair)
	}
	s.api.Script(fakeapi.Reply(fakeapi.Text("Just talking.")))
	s.submit(t, "say something")
	s.waitScreen(t, 30*time.Second, "Just talking.")
	s.waitCLILog(t, "Calling MCP tool: closeAllDiffTabs", 1)
	if got := s.userDiffs(t); got != userPair {
		t.Fatalf("after closeAllDiffTabs the diff windows are %q, want %q", got, userPair)
	}

	// An edit now: our diff opens in a tab of its own (the user's diff would
	// merge with it) and goes away again, leaving the pair as it was.
	s.scriptEdit(s.file, "delta", "DELTA", "Edited beside your diff.")
	s.submit(t, "make delta loud")
	d := s.waitDiff(t)
	s.waitCLILog(t, "Calling MCP tool: closeAllDiffTabs", 2)
	var tabs int
	s.Eval(t, `return #vim.api.nvim_list_tabpages()`, &tabs)
	if tabs != 2 {
		t.Fatalf("%d tabs while our diff is open, want 2", tabs)
	}
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, d.ProposalBuf)
	s.waitFileText(t, "alpha\nbeta\ngamma\nDELTA\n")
	s.waitScreen(t, 30*time.Second, "Edited beside your diff.")
	s.waitNoDiffOfOurs(t)
	s.Eval(t, `return #vim.api.nvim_list_tabpages()`, &tabs)
	if got := s.userDiffs(t); got != userPair || tabs != 1 {
		t.Fatalf("after our diff: diff windows %q, %d tabs; want %q in 1 tab", got, tabs, userPair)
	}
}

// windows describes the current tab's windows: buffer names and sizes.
func (s *diffSession) windows(t *testing.T) string {
	t.Helper()
	var out string
	s.Eval(t, `local parts = {}
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  table.insert(parts, string.format("%s %dx%d", vim.fn.bufname(vim.api.nvim_win_get_buf(w)), vim.api.nvim_win_get_width(w), vim.api.nvim_win_get_height(w)))
end
return table.concat(parts, " | ")`, &out)
	return out
}

// waitGone reports whether the diff closed within d.
func (s *diffSession) waitGone(t *testing.T, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var n int
		s.Eval(t, `return #require("claude.diff").pending()`, &n)
		if n == 0 {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// userDiffs lists the buffers of the diff windows in the first tab.
func (s *diffSession) userDiffs(t *testing.T) string {
	t.Helper()
	var out string
	s.Eval(t, `local names = {}
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(vim.api.nvim_list_tabpages()[1])) do
  if vim.wo[w].diff then table.insert(names, vim.fn.bufname(vim.api.nvim_win_get_buf(w))) end
end
return table.concat(names, ",")`, &out)
	return out
}

func (s *diffSession) waitNoDiffOfOurs(t *testing.T) {
	t.Helper()
	s.WaitFor(t, 30*time.Second, `#require("claude.diff").pending() == 0 and (function()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.fn.bufname(b):find("Claude Code", 1, true) then return false end
  end
  return true end)()`, `return vim.tbl_map(function(b) return vim.fn.bufname(b) end, vim.api.nvim_list_bufs())`,
		"our diff to close")
}

// waitCLILog waits until the CLI's own log of the IDE connection has
// logged line at least n times.
func (s *diffSession) waitCLILog(t *testing.T, line string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		logs, _ := filepath.Glob(filepath.Join(s.env.Home, ".cache", "claude-cli-nodejs", "*", "mcp-logs-ide", "*"))
		count := 0
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			count += strings.Count(string(b), line)
		}
		if count >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CLI logged %q %d times, want %d", line, count, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
