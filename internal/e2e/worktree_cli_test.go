//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// gitIn runs git in dir (a throwaway identity: the test machine may have
// none) and fails the test when git does.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// :ClaudeStart --worktree feat beside a running Claude: git makes the
// worktree (the CLI's layout, on the branch worktree-feat from HEAD), a
// second CLI starts in it and connects, the dashboard shows its session in
// that directory, and its edit of the worktree's copy of the file opens as
// a diff of that copy — accepted there, the main tree's file untouched.
func TestCLIWorktreeSession(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := startDiffSession(t, "")
	gitIn(t, s.project, "init", "-q")
	gitIn(t, s.project, "add", "hello.txt")
	gitIn(t, s.project, "commit", "-q", "-m", "start")
	head := gitIn(t, s.project, "rev-parse", "HEAD")
	first := s.st.Terminal.PID

	s.Exec(t, `vim.cmd("ClaudeStart --worktree feat")`)
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(require("claude.terminal").info() or {}).pid ~= %d`, first),
		`return { notes = _G.notes, info = require("claude.terminal").info() }`, "the worktree's terminal")
	st := s.status(t)
	killOnCleanup(t, st.Terminal.PID)
	wt := filepath.Join(s.project, ".claude", "worktrees", "feat")
	if got := gitIn(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "worktree-feat" {
		t.Fatalf("worktree on branch %q, want worktree-feat", got)
	}
	if got := gitIn(t, wt, "rev-parse", "HEAD"); got != head {
		t.Fatalf("worktree at %s, want HEAD %s", got, head)
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", st.Terminal.PID)); err == nil && cwd != wt {
		t.Fatalf("the CLI runs in %q, want %q", cwd, wt)
	}
	s.WaitFor(t, 60*time.Second,
		fmt.Sprintf(`(function() for _, c in ipairs(require("claude").status().clients) do if c.pid == %d then return true end end end)()`, st.Terminal.PID),
		`return { status = require("claude").status(), screen = vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false) }`,
		"the worktree's CLI to connect")
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(function() for _, x in ipairs(require("claude").sessions()) do if x.dir == %q then return true end end end)()`, wt),
		`return require("claude").sessions()`, "the dashboard to list the worktree's session")
	var line string
	s.Eval(t, `require("claude.sessions").open() local l = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") vim.cmd("close") return l`, &line)
	if !strings.Contains(line, "[wt:feat]") {
		t.Fatalf("the dashboard does not tag the worktree session:\n%s", line)
	}

	// A selection in the worktree's copy reaches its session only: the
	// main session, asked next, was told nothing of it; the worktree's
	// session was.
	mainSt := s.st
	s.st = st
	var has08 bool
	s.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &has08)
	if !has08 {
		// Neovim 0.7 leaves the second terminal's screen at the CLI's
		// banner (its prompt never shows, so nothing can be typed to it),
		// as with :ClaudeStartNew, whose tests do not type into the second
		// terminal either. The worktree, the connection and the dashboard
		// are checked above; the rest runs on 0.8+.
		t.Skip("Neovim 0.7 does not render a second Claude terminal's prompt")
	}
	s.waitScreen(t, 60*time.Second, "? for shortcuts")
	wtFile := filepath.Join(wt, "hello.txt")
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p") vim.cmd("edit " .. vim.fn.fnameescape(...))`, wtFile)
	s.selInput(t, "2GVj")
	s.selInput(t, "<Esc>")
	s.waitScreen(t, 30*time.Second, "2 lines selected")
	s.api.Script(fakeapi.Reply(fakeapi.Text("Main here.")), fakeapi.Reply(fakeapi.Text("Worktree here.")))
	s.st = mainSt
	s.submit(t, "qmain")
	mainReq := s.mainRequestWith(t, "qmain")
	if strings.Contains(mainReq.Text(), wtFile) {
		t.Fatalf("the main session was told of the worktree's selection:\n%s", mainReq.Text())
	}
	s.waitScreen(t, 30*time.Second, "Main here.")
	s.st = st
	s.submit(t, "qwt")
	wtReq := s.mainRequestWith(t, "qwt")
	if want := "The user selected the lines 2 to 3 from " + wtFile; !strings.Contains(wtReq.Text(), want) {
		t.Fatalf("the worktree's session lacks %q:\n%s", want, wtReq.Text())
	}
	s.waitScreen(t, 30*time.Second, "Worktree here.")

	// The worktree's session edits its own copy.
	s.scriptEdit(wtFile, "beta", "BETA", "Edited.")
	s.submit(t, "make beta loud")
	d := s.waitDiff(t)
	if d.File != wtFile {
		t.Fatalf("the diff is of %q, want the worktree's %q", d.File, wtFile)
	}
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, d.ProposalBuf)
	s.waitNoDiff(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(wtFile)
		if string(b) == "alpha\nBETA\ngamma\ndelta\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worktree file %q; screen:\n%s", b, s.screen(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, _ := os.ReadFile(s.file); string(b) != diffFileText {
		t.Fatalf("the main tree's file changed: %q", b)
	}

	// D in the dashboard on the worktree's session: the question names the
	// uncommitted edit; "Keep" deletes nothing, "Discard" stops the
	// session and removes the worktree and its branch.
	discard := func(answer string) string {
		t.Helper()
		var asked string
		s.Eval(t, `local answer = ...
_G.asked = nil
vim.ui.select = function(items, o, cb) _G.asked = o.prompt cb(answer) end
require("claude.sessions").open()
for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
  if l:find("[wt:feat]", 1, true) then vim.api.nvim_win_set_cursor(0, { i, 0 }) end
end
vim.cmd("normal D")
return ""`, &asked, answer)
		s.WaitFor(t, 30*time.Second, `_G.asked ~= nil`, `return _G.notes`, "the question")
		s.Eval(t, `return _G.asked`, &asked)
		return asked
	}
	asked := discard("Keep")
	if !strings.Contains(asked, "hello.txt") || !strings.Contains(asked, "worktree-feat") || !strings.Contains(asked, "1 uncommitted change") {
		t.Fatalf("the question does not name the branch and the uncommitted change:\n%s", asked)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("kept, yet the worktree is gone: %v", err)
	}
	s.Exec(t, `pcall(vim.cmd, "close")`)
	discard("Discard")
	s.WaitFor(t, 30*time.Second, `(function() for _, n in ipairs(_G.notes) do if tostring(n.msg):find("discarded", 1, true) then return true end end end)()`,
		`return _G.notes`, "the worktree and its branch to go")
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the worktree is left: %v", err)
	}
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(function() for _, x in ipairs(require("claude").sessions()) do if x.dir == %q and x.state ~= "exited" then return false end end return true end)()`, wt),
		`return require("claude").sessions()`, "the worktree's session to stop")
	if got := gitIn(t, s.project, "branch", "--list", "worktree-feat"); got != "" {
		t.Fatalf("the branch is left: %q", got)
	}
}

// Outside a git repository :ClaudeStart --worktree says so and starts
// nothing: no second terminal, no directory.
func TestCLIWorktreeOutsideRepository(t *testing.T) {
	s := startDiffSession(t, "")
	first := s.st.Terminal.PID
	s.Exec(t, `_G.notes = {} vim.cmd("ClaudeStart --worktree feat")`)
	s.WaitFor(t, 30*time.Second, `(function() for _, n in ipairs(_G.notes) do if tostring(n.msg or n):find("not in a git repository", 1, true) then return true end end end)()`,
		`return _G.notes`, "the notice")
	var pid int
	s.Eval(t, `return require("claude.terminal").info().pid`, &pid)
	if pid != first {
		t.Fatalf("a terminal started outside a repository: pid %d", pid)
	}
	if _, err := os.Stat(filepath.Join(s.project, ".claude", "worktrees")); err == nil {
		t.Fatalf("a worktree directory was made")
	}
}

// :ClaudeChat --worktree cw <prompt>: a new chat whose CLI runs in the new
// worktree, with the prompt sent; the dashboard lists it there.
func TestCLIWorktreeChat(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := startChatSession(t, map[string]string{"hello.txt": "hi\n"}, "")
	gitIn(t, s.project, "init", "-q")
	gitIn(t, s.project, "add", "hello.txt")
	gitIn(t, s.project, "commit", "-q", "-m", "start")
	s.api.Script(fakeapi.Reply(fakeapi.Text("From the worktree.")))
	s.Exec(t, `vim.cmd("ClaudeChat --worktree cw qchatwt")`)
	wt := filepath.Join(s.project, ".claude", "worktrees", "cw")
	s.WaitFor(t, 60*time.Second, fmt.Sprintf(`(function() for _, x in ipairs(require("claude").sessions()) do if x.mode == "chat" and x.dir == %q then return true end end end)()`, wt),
		`return { sessions = require("claude").sessions(), notes = _G.notes }`, "the worktree's chat")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.api.WaitFor(ctx, func(r fakeapi.Request) bool { return r.Main && strings.Contains(r.Text(), "qchatwt") }); err != nil {
		t.Fatalf("the chat's prompt never reached the model: %v", err)
	}
	if got := gitIn(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "worktree-cw" {
		t.Fatalf("worktree on branch %q", got)
	}
}

// With worktree.dir outside the project, the new worktree joins the lock
// file's workspace folders (the CLI and the host's path rule need it), and
// its CLI connects.
func TestCLIWorktreeOutsideDirInLock(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := startDiffSession(t, fmt.Sprintf(`, worktree = { dir = %q }`, outside))
	gitIn(t, s.project, "init", "-q")
	gitIn(t, s.project, "add", "hello.txt")
	gitIn(t, s.project, "commit", "-q", "-m", "start")
	first := s.st.Terminal.PID
	s.Exec(t, `vim.cmd("ClaudeStart --worktree out")`)
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(require("claude.terminal").info() or {}).pid ~= %d`, first),
		`return { notes = _G.notes, info = require("claude.terminal").info() }`, "the worktree's terminal")
	st := s.status(t)
	killOnCleanup(t, st.Terminal.PID)
	wt := filepath.Join(outside, "out")
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(function()
  local f = io.open(require("claude").status().lock_file) if not f then return false end
  local lock = vim.json.decode(f:read("*a")) f:close()
  for _, d in ipairs(lock.workspaceFolders or {}) do if d == %q then return true end end
end)()`, wt), `return require("claude").status().lock_file`, "the lock's folders to cover the worktree")
	s.WaitFor(t, 60*time.Second,
		fmt.Sprintf(`(function() for _, c in ipairs(require("claude").status().clients) do if c.pid == %d then return true end end end)()`, st.Terminal.PID),
		`return require("claude").status()`, "the worktree's CLI to connect")
}

// A CLI started with its own --worktree (here from terminal_cmd) makes
// the worktree and runs there: its hooks say so, the dashboard lists the
// session in the worktree, and a selection in the worktree's copy of a
// file reaches it.
func TestCLIOwnWorktreeRecognised(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cli := clienv.Binary(t)
	s := startSession(t, sessionOpts{files: map[string]string{"hello.txt": diffFileText},
		before: func(t *testing.T, project string) {
			gitIn(t, project, "init", "-q")
			gitIn(t, project, "add", "hello.txt")
			gitIn(t, project, "commit", "-q", "-m", "start")
		},
		extra: fmt.Sprintf(`, terminal_cmd = { %q, "--permission-mode", "default", "--worktree", "clw" }`, cli)})
	wt := filepath.Join(s.project, ".claude", "worktrees", "clw")
	if _, err := os.Stat(filepath.Join(wt, "hello.txt")); err != nil {
		t.Fatalf("the CLI made no worktree: %v", err)
	}
	s.api.Script(fakeapi.Reply(fakeapi.Text("In the worktree.")))
	s.submit(t, "where")
	s.waitScreen(t, 30*time.Second, "In the worktree.")
	s.WaitFor(t, 30*time.Second, fmt.Sprintf(`(function() local x = require("claude").sessions()[1] return x and x.dir == %q end)()`, wt),
		`return require("claude").sessions()`, "the session to be the worktree's (its hooks' cwd)")
}
