//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

const finishBase = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n"

// answerQuestions stubs vim.ui.select: each question is kept in
// _G.asked, and answered by the first choice of answers whose key the
// question contains.
const answerQuestions = `_G.asked = {}
vim.ui.select = function(items, o, cb)
  table.insert(_G.asked, o.prompt)
  for _, a in ipairs(_G.answers or {}) do
    if o.prompt:find(a[1], 1, true) then return cb(a[2]) end
  end
  cb(nil)
end`

// waitNote waits for a notice containing want.
func waitNote(t *testing.T, s *session, want, what string) {
	t.Helper()
	s.WaitFor(t, 60*time.Second, fmt.Sprintf(`(function() for _, n in ipairs(_G.notes) do if tostring(n.msg):find(%q, 1, true) then return true end end end)()`, want),
		`return { notes = _G.notes, asked = _G.asked }`, what)
}

// waitBranchReview waits until the review queue shows a branch review of
// n files and returns the panel's lines and the quickfix texts.
func waitBranchReview(t *testing.T, s *session, n int) (panel, qf string) {
	t.Helper()
	s.WaitFor(t, 60*time.Second, fmt.Sprintf(`(function()
  local items = require("claude.review").items()
  return #items == %d and items[1] ~= nil and items[1].session == "branch"
end)()`, n), `return { items = require("claude.review").items(), notes = _G.notes }`, "the branch review")
	s.Eval(t, `local out = {}
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_get_name(b):find("claude%-review://queue$") then out = vim.api.nvim_buf_get_lines(b, 0, -1, false) end
end
return table.concat(out, "\n")`, &panel)
	s.Eval(t, `local out = {} for _, q in ipairs(vim.fn.getqflist()) do table.insert(out, q.text) end return table.concat(out, "\n")`, &qf)
	return panel, qf
}

// A session in a worktree edits a file in two places (acceptEdits); the
// review queue names its session and worktree. F in :ClaudeSessions
// commits its uncommitted edit (after asking) and reviews the branch in
// the queue's panel; one hunk is dropped there (gr, :w) and
// :ClaudeWorktree finish brings the branch in: the main tree has exactly
// the kept hunk, and worktree and branch go after the question. A second
// worktree's branch conflicts with the main tree: the conflict lands as
// markers in the buffer and a quickfix list, nothing is committed and
// nothing removed; a dirty main tree is refused by name first. A third
// worktree (a session) is discarded after its question.
func TestCLIWorktreeFinish(t *testing.T) {
	s := startSession(t, sessionOpts{permissionMode: "acceptEdits", files: map[string]string{"a.txt": finishBase}})
	gitIn(t, s.project, "init", "-q")
	gitIn(t, s.project, "config", "user.name", "t")
	gitIn(t, s.project, "config", "user.email", "t@example.invalid")
	gitIn(t, s.project, "config", "commit.gpgsign", "false")
	gitIn(t, s.project, "add", "a.txt")
	gitIn(t, s.project, "commit", "-q", "-m", "start")
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p")`)
	s.Exec(t, answerQuestions)
	first := s.st.Terminal.PID

	// The worktree's session gets its prompt on its command line: nothing
	// is typed into its terminal (Neovim 0.7 does not draw a second one).
	wt := filepath.Join(s.project, ".claude", "worktrees", "feat")
	wtFile := filepath.Join(wt, "a.txt")
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": wtFile})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": wtFile, "old_string": "two", "new_string": "TWO"})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": wtFile, "old_string": "eight", "new_string": "EIGHT"})),
		fakeapi.Reply(fakeapi.Text("Both done.")),
	)
	s.Exec(t, `vim.cmd("ClaudeStart --worktree feat qloud")`)
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(require("claude.terminal").info() or {}).pid ~= %d`, first),
		`return { notes = _G.notes, info = require("claude.terminal").info() }`, "the worktree's terminal")
	killOnCleanup(t, s.status(t).Terminal.PID)
	edited := strings.Replace(strings.Replace(finishBase, "two", "TWO", 1), "eight", "EIGHT", 1)
	deadline := time.Now().Add(90 * time.Second)
	for {
		b, _ := os.ReadFile(wtFile)
		if string(b) == edited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worktree's file is %q; notes %+v", b, s.notes(t))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The review queue names the session and its worktree.
	items := reviewList(t, s.editor, "", 1)
	if it := items["a.txt"]; it.Path != wtFile || !strings.HasPrefix(it.Label, "terminal ") {
		t.Fatalf("the queue lists %+v", items)
	}
	var qfText string
	s.Eval(t, `return vim.fn.getqflist()[1].text`, &qfText)
	if !strings.Contains(qfText, "[wt:feat]") || !strings.Contains(qfText, "terminal ") {
		t.Fatalf("the quickfix entry does not name the session and worktree: %q", qfText)
	}
	s.Exec(t, `vim.cmd("cclose") for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)):find("claude%-review://") then vim.api.nvim_win_close(w, true) end
end`)

	// F on the worktree's session in the dashboard: the question names the
	// uncommitted edit; Commit, and the branch is reviewed in the panel.
	s.Exec(t, `_G.answers = { { "Discard the worktree", "Discard" }, { "uncommitted change", "Commit" }, { "is brought in", "Remove" } }`)
	s.Exec(t, `require("claude.sessions").open()
for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
  if l:find("[wt:feat]", 1, true) then vim.api.nvim_win_set_cursor(0, { i, 0 }) end
end
vim.cmd("normal F")`)
	panel, qf := waitBranchReview(t, s, 1)
	var asked []string
	s.Eval(t, `return _G.asked`, &asked)
	if len(asked) != 1 || !strings.Contains(asked[0], "a.txt") || !strings.Contains(asked[0], "1 uncommitted change") {
		t.Fatalf("the commit question: %q", asked)
	}
	if !strings.Contains(panel, "+2 -2") || !strings.Contains(panel, "[wt:feat]") || !strings.Contains(panel, "worktree-feat") || !strings.Contains(qf, "[wt:feat]") {
		t.Fatalf("the branch review's panel:\n%s\nquickfix:\n%s", panel, qf)
	}
	if got := gitIn(t, wt, "status", "--porcelain"); got != "" {
		t.Fatalf("the worktree is not committed: %q", got)
	}

	// <CR> in the panel opens the diff against the merge base; gr on the
	// EIGHT hunk drops it; :w keeps the drop.
	s.Exec(t, `local k = vim.api.nvim_replace_termcodes("<CR>", true, false, true)
for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)):find("claude%-review://") then vim.api.nvim_set_current_win(w) end
end
vim.api.nvim_win_set_cursor(0, { 1, 0 })
vim.cmd("normal " .. k)`)
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`vim.api.nvim_buf_get_name(0) == %q`, wtFile), `return vim.api.nvim_buf_get_name(0)`, "the diff")
	s.Exec(t, `vim.api.nvim_win_set_cursor(0, { 8, 0 }) vim.cmd("normal gr") vim.cmd("write")`)
	kept := strings.Replace(finishBase, "two", "TWO", 1)
	if b, _ := os.ReadFile(wtFile); string(b) != kept {
		t.Fatalf("after gr and :w the worktree's file is %q; notes %+v", b, s.notes(t))
	}
	s.Exec(t, `vim.cmd("tabclose")`)

	// Bring it in (squash, the default): exactly the kept hunk arrives;
	// Remove takes the worktree and its branch, and stops its session.
	s.Exec(t, `vim.cmd("ClaudeWorktree finish feat")`)
	waitNote(t, s, "and its branch worktree-feat removed", "the bring-in and the removal")
	if b, _ := os.ReadFile(filepath.Join(s.project, "a.txt")); string(b) != kept {
		t.Fatalf("the main tree's file is %q, want %q", b, kept)
	}
	if got := gitIn(t, s.project, "status", "--porcelain", "--untracked-files=no"); got != "" {
		t.Fatalf("the main tree is left with %q", got)
	}
	if log := gitIn(t, s.project, "log", "-p", "-1"); strings.Contains(log, "EIGHT") {
		t.Fatalf("the dropped hunk arrived in the commit:\n%s", log)
	}
	s.Eval(t, `return _G.asked`, &asked)
	if len(asked) != 2 || !strings.Contains(asked[1], "Remove it") || !strings.Contains(asked[1], "worktree-feat") {
		t.Fatalf("the removal question: %q", asked)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the worktree is left: %v", err)
	}
	if got := gitIn(t, s.project, "branch", "--list", "worktree-feat"); got != "" {
		t.Fatalf("the branch is left: %q", got)
	}

	// A conflict: the branch and the main tree both change line two.
	s.Exec(t, `require("claude.worktree").create("cf", function(w) _G.cf = w end)`)
	s.WaitFor(t, 30*time.Second, `_G.cf ~= nil`, `return _G.notes`, "the second worktree")
	cf := filepath.Join(s.project, ".claude", "worktrees", "cf")
	if err := os.WriteFile(filepath.Join(cf, "a.txt"), []byte(strings.Replace(kept, "TWO", "zwei", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cf, "b.txt"), []byte("bee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, cf, "add", "-A")
	gitIn(t, cf, "commit", "-q", "-m", "zwei")
	main := filepath.Join(s.project, "a.txt")
	if err := os.WriteFile(main, []byte(strings.Replace(kept, "TWO", "deux", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, s.project, "commit", "-q", "-am", "deux")
	head := gitIn(t, s.project, "rev-parse", "HEAD")
	s.Exec(t, `_G.asked = {} _G.notes = {} vim.cmd("ClaudeWorktree finish cf")`)
	waitBranchReview(t, s, 2)

	// First a dirty main tree: refused by name, nothing changed.
	dirty := strings.Replace(kept, "deux", "mine", 1) + "mine\n"
	if err := os.WriteFile(main, []byte(dirty), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Exec(t, `vim.cmd("ClaudeWorktree finish cf")`)
	waitNote(t, s, "the main tree has uncommitted changes", "the refusal")
	notes := s.notes(t)
	if last := notes[len(notes)-1].Msg; !strings.Contains(last, "a.txt") || !strings.Contains(last, "Nothing brought in") {
		t.Fatalf("the refusal does not name the file: %q", last)
	}
	if b, _ := os.ReadFile(main); string(b) != dirty || gitIn(t, s.project, "rev-parse", "HEAD") != head {
		t.Fatalf("a refused bring-in changed the main tree: %q", b)
	}
	gitIn(t, s.project, "checkout", "--", "a.txt")

	s.Exec(t, `vim.cmd("ClaudeWorktree finish cf")`)
	waitNote(t, s, "stopped on conflicts", "the conflict")
	var conflict struct {
		Title string   `json:"title"`
		Items []string `json:"items"`
		Buf   []string `json:"buf"`
	}
	s.Eval(t, `local main = ...
local qf = vim.fn.getqflist({ title = 0, items = 0 })
local items = {}
for _, q in ipairs(qf.items) do table.insert(items, vim.api.nvim_buf_get_name(q.bufnr) .. ":" .. q.lnum .. ": " .. q.text) end
local b = vim.fn.bufnr(main)
return { title = qf.title, items = items, buf = b > 0 and vim.api.nvim_buf_get_lines(b, 0, -1, false) or {} }`, &conflict, main)
	if !strings.Contains(conflict.Title, "conflicts") || len(conflict.Items) != 1 || !strings.HasPrefix(conflict.Items[0], main+":2: ") {
		t.Fatalf("the conflict's quickfix list: %+v", conflict)
	}
	if !strings.Contains(strings.Join(conflict.Buf, "\n"), "<<<<<<<") {
		t.Fatalf("the buffer shows no conflict markers: %q", conflict.Buf)
	}
	if got := gitIn(t, s.project, "rev-parse", "HEAD"); got != head {
		t.Fatalf("a conflicted bring-in committed: HEAD %s, want %s", got, head)
	}
	if st := gitIn(t, s.project, "status", "--porcelain", "--untracked-files=no"); !strings.Contains(st, "UU a.txt") {
		t.Fatalf("the main tree is not in git's conflict state: %q", st)
	}
	s.Eval(t, `return _G.asked`, &asked)
	for _, a := range asked {
		if strings.Contains(a, "Remove it") {
			t.Fatalf("a removal was offered after a conflict: %q", asked)
		}
	}
	if _, err := os.Stat(cf); err != nil {
		t.Fatalf("the conflicted worktree is gone: %v", err)
	}
	gitIn(t, s.project, "reset", "-q", "--merge")

	// A third worktree, a session's, is discarded after its question.
	s.Exec(t, `_G.asked = {} _G.notes = {} vim.cmd("ClaudeStart --worktree two")`)
	two := filepath.Join(s.project, ".claude", "worktrees", "two")
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(function() for _, x in ipairs(require("claude").sessions()) do if x.dir == %q then return true end end end)()`, two),
		`return require("claude").sessions()`, "the third worktree's session")
	killOnCleanup(t, s.status(t).Terminal.PID)
	s.Exec(t, `vim.cmd("ClaudeWorktree discard two")`)
	waitNote(t, s, "discarded", "the discard")
	s.Eval(t, `return _G.asked`, &asked)
	if len(asked) != 1 || !strings.Contains(asked[0], "Discard the worktree two") || !strings.Contains(asked[0], "worktree-two") {
		t.Fatalf("the discard question: %q", asked)
	}
	if _, err := os.Stat(two); !os.IsNotExist(err) {
		t.Fatalf("the discarded worktree is left: %v", err)
	}
	if got := gitIn(t, s.project, "branch", "--list", "worktree-two"); got != "" {
		t.Fatalf("the discarded branch is left: %q", got)
	}
}
