//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// waitingRequest is the Lua expression: the request id of the terminal
// prompt the first session waits on that Neovim can answer, or false.
const waitingRequest = `(function() local x = require("claude").sessions()[1]
	return x and x.state == "needs input" and type(x.request) == "table" and x.request.request_id or false end)()`

// hookLingers reports whether a waiting PermissionRequest hook still runs
// under the CLI.
func hookLingers(cli int) bool {
	for _, pid := range descendants(cli) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(b), "hook\x00PermissionRequest") {
			return true
		}
	}
	return false
}

// pressInPrompt types key into the CLI's permission prompt until Lua
// expression done holds (a key typed just as the prompt draws can be
// lost: it is typed again after a while).
func (s *session) pressInPrompt(t *testing.T, key, done string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.typeKeys(t, key)
		for again := time.Now().Add(5 * time.Second); time.Now().Before(again); time.Sleep(100 * time.Millisecond) {
			var ok bool
			s.Eval(t, `return `+done+` and true or false`, &ok)
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prompt was not answered; screen:\n%s", s.screen(t))
		}
	}
}

func (s *session) waitHookGone(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); hookLingers(s.st.Terminal.PID); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the PermissionRequest hook still waits after its prompt was answered")
		}
	}
}

// With the real CLI, a terminal session's permission prompt is answered
// from Neovim or in the terminal, whichever comes first. The CLI shows its
// own prompt while our PermissionRequest hook waits (checked here: the
// prompt is on screen while Neovim's queue holds the request).
//
//   - `:ClaudeAnswer allow` in another window allows a Bash call: the CLI
//     runs it (the model gets its tool_result), the terminal's prompt goes.
//   - The next Bash call is answered in the terminal (typed into its job)
//     while Neovim's queue shows it: the queue drops it, and the hook that
//     waited ends (the CLI leaves it running when the user answers in the
//     terminal: the call's PostToolUse tells the host).
//   - A third prompt dismissed in the terminal (Esc) also leaves the queue:
//     the CLI kills the hook, which cancels its call.
func TestCLITerminalPromptAnsweredFromNeovim(t *testing.T) {
	s := startSession(t, sessionOpts{})
	first := fakeapi.ToolUse("Bash", map[string]any{"command": "touch allowed.txt", "description": "Create a file"})
	second := fakeapi.ToolUse("Bash", map[string]any{"command": "touch typed.txt", "description": "Create another"})
	third := fakeapi.ToolUse("Bash", map[string]any{"command": "touch dismissed.txt", "description": "And one more"})
	s.api.Script(fakeapi.Reply(first), fakeapi.Reply(fakeapi.Text("First done.")),
		fakeapi.Reply(second), fakeapi.Reply(fakeapi.Text("Second done.")),
		fakeapi.Reply(third))

	// Neovim answers first, from another window.
	s.submit(t, "make the first file")
	s.WaitFor(t, 60*time.Second, waitingRequest, `return { sessions = require("claude").sessions(), notes = _G.notes }`, "the prompt in Neovim's queue")
	s.waitScreen(t, 30*time.Second, "Do you want to proceed?")
	s.Exec(t, `vim.cmd("wincmd p") vim.cmd("new")`)
	var before int
	s.Eval(t, `return vim.api.nvim_get_current_win()`, &before)
	s.Exec(t, `vim.cmd("ClaudeAnswer allow")`)
	var after int
	s.Eval(t, `return vim.api.nvim_get_current_win()`, &after)
	if after != before {
		t.Fatal(":ClaudeAnswer allow left the window it ran in")
	}
	r := s.waitMain(t, 2)
	res, ok := r.ToolResult(first.ID)
	if !ok || res.IsError {
		t.Fatalf("the model got no successful tool_result for the allowed call (%v): %s", ok, res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(s.project, "allowed.txt")); err != nil {
		t.Fatalf("the CLI did not run the allowed command: %v", err)
	}
	s.waitScreen(t, 30*time.Second, "First done.")
	if scr := s.screen(t); strings.Contains(scr, "Do you want to proceed?") {
		t.Fatalf("the terminal still shows its prompt:\n%s", scr)
	}
	s.waitHookGone(t)

	// The terminal answers first, while Neovim's queue shows the prompt.
	s.Exec(t, `vim.cmd("wincmd p")`) // back to the terminal's window
	s.submit(t, "make the second file")
	var rid string
	s.WaitFor(t, 60*time.Second, waitingRequest, `return require("claude").sessions()`, "the second prompt in Neovim's queue")
	s.Eval(t, `return `+waitingRequest, &rid)
	s.waitScreen(t, 30*time.Second, "Do you want to proceed?")
	s.Exec(t, `vim.cmd("ClaudeSessions")`)
	panel := panelLines(t, s)
	if !strings.Contains(panel, "touch typed.txt") {
		t.Fatalf(":ClaudeSessions does not show the waiting request:\n%s", panel)
	}
	s.Exec(t, `vim.cmd("close")`)
	s.pressInPrompt(t, "1", `(function() local x = require("claude").sessions()[1] return x.request == nil and x.state ~= "needs input" end)()`)
	if r, ok := s.waitMain(t, 4).ToolResult(second.ID); !ok || r.IsError {
		t.Fatalf("the model got no successful tool_result for the call allowed in the terminal: %s", r.ResultText())
	}
	if _, err := os.Stat(filepath.Join(s.project, "typed.txt")); err != nil {
		t.Fatalf("the command allowed in the terminal did not run: %v", err)
	}
	s.waitHookGone(t)
	// The prompt is gone for Neovim too: answering it now says so.
	var err string
	s.Eval(t, `local ok, r, e = pcall(require("claude.server").request, "sessions.answer", { request_id = ..., behavior = "allow" }) return tostring(e or (not ok and r) or "")`, &err, rid)
	if !strings.Contains(err, "no longer open") {
		t.Fatalf("answering a settled prompt: %q", err)
	}

	// Dismissed in the terminal: the CLI kills the hook.
	s.submit(t, "make the third file")
	s.WaitFor(t, 60*time.Second, waitingRequest, `return require("claude").sessions()`, "the third prompt in Neovim's queue")
	s.waitScreen(t, 30*time.Second, "Do you want to proceed?")
	s.pressInPrompt(t, "\x1b", `require("claude").sessions()[1].request == nil`)
	s.waitHookGone(t)
	if _, err := os.Stat(filepath.Join(s.project, "dismissed.txt")); err == nil {
		t.Fatal("the dismissed command ran")
	}

	// A command of two lines: :ClaudeAnswer allow from elsewhere allows
	// nothing its notice cannot show, but opens the panel on it, where a
	// allows it.
	fourth := fakeapi.ToolUse("Bash", map[string]any{"command": "touch four1.txt\ntouch four2.txt", "description": "Two files"})
	s.api.Script(fakeapi.Reply(fourth), fakeapi.Reply(fakeapi.Text("Fourth done.")))
	n := len(s.api.MainRequests())
	s.submit(t, "make two files")
	s.WaitFor(t, 60*time.Second, waitingRequest, `return require("claude").sessions()`, "the fourth prompt in Neovim's queue")
	s.Exec(t, `vim.cmd("wincmd p") vim.cmd("ClaudeAnswer allow")`)
	var ft string
	s.Eval(t, `return vim.bo.filetype`, &ft)
	if ft != "claude-sessions" || !strings.Contains(panelLines(t, s), "│ touch four2.txt") {
		t.Fatalf(":ClaudeAnswer allow did not show the two-line request in the panel (%q):\n%s", ft, panelLines(t, s))
	}
	if len(s.api.MainRequests()) != n+1 {
		t.Fatal("the two-line request was allowed from a notice that could not show it")
	}
	s.Exec(t, `vim.cmd("normal a")`)
	if r, ok := s.waitMain(t, n+2).ToolResult(fourth.ID); !ok || r.IsError {
		t.Fatalf("the request allowed in the panel did not run: %s", r.ResultText())
	}
	s.waitHookGone(t)

	// Denied from Neovim with a reason: Claude hears it, nothing runs.
	fifth := fakeapi.ToolUse("Bash", map[string]any{"command": "touch denied.txt", "description": "One more"})
	s.api.Script(fakeapi.Reply(fifth), fakeapi.Reply(fakeapi.Text("Fifth refused.")))
	s.waitScreen(t, 30*time.Second, "Fourth done.")
	s.Exec(t, `vim.cmd("close")`) // the panel
	s.submit(t, "make the denied file")
	s.WaitFor(t, 60*time.Second, waitingRequest, `return require("claude").sessions()`, "the fifth prompt in Neovim's queue")
	s.Exec(t, `vim.cmd("wincmd p")
		vim.ui.input = function(_, on_confirm) on_confirm("name it otherwise") end
		vim.cmd("ClaudeAnswer deny")`)
	if r, ok := s.waitMain(t, n+4).ToolResult(fifth.ID); !ok || !r.IsError || !strings.Contains(r.ResultText(), "name it otherwise") {
		t.Fatalf("the model did not hear the refusal: %v %s", ok, r.ResultText())
	}
	if _, err := os.Stat(filepath.Join(s.project, "denied.txt")); err == nil {
		t.Fatal("the denied command ran")
	}
	s.waitHookGone(t)
}

// With the real CLI in plan mode, the plan the terminal session presents
// opens in a markdown buffer above the terminal; the user's edit, written
// with :w, sends it back, and the model's next request carries the
// comment. As the CLI's plan mode asks, the model writes its plan to the
// plan file the CLI names, then calls ExitPlanMode, which carries no plan
// (the CLI's PermissionRequest hook gets an empty input: pinned here).
func TestCLITerminalPlanSentBack(t *testing.T) {
	s := startSession(t, sessionOpts{permissionMode: "plan"})
	// A first turn tells the model where its plan file goes.
	s.submit(t, "where does the plan go")
	m := regexp.MustCompile(`create your plan at (/\S+?\.md)`).FindStringSubmatch(s.waitMain(t, 1).Text())
	if m == nil {
		t.Fatalf("the CLI named no plan file:\n%s", s.waitMain(t, 1).Text())
	}
	plan := "# Plan\n\n1. Write hello.txt\n"
	write := fakeapi.ToolUse("Write", map[string]any{"file_path": m[1], "content": plan})
	exit := fakeapi.ToolUse("ExitPlanMode", map[string]any{})
	s.api.Script(fakeapi.Reply(write), fakeapi.Reply(exit), fakeapi.Reply(fakeapi.Text("I will revise the plan.")))
	s.waitScreen(t, 30*time.Second, fakeapi.NoTurnText)
	s.submit(t, "plan the hello file")
	const buf = `vim.fn.bufnr("claude-plan://t1/t1-1.md")`
	s.WaitFor(t, 60*time.Second, buf+` > 0 and #vim.fn.win_findbuf(`+buf+`) > 0`,
		`return { sessions = require("claude").sessions(), notes = _G.notes, bufs = vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs()) }`,
		"the plan buffer")
	var got struct {
		Ft    string   `json:"ft"`
		Lines []string `json:"lines"`
	}
	s.Eval(t, `local b = `+buf+` return { ft = vim.bo[b].filetype, lines = vim.api.nvim_buf_get_lines(b, 0, -1, false) }`, &got)
	if got.Ft != "markdown" || strings.Join(got.Lines, "\n") != strings.TrimSuffix(plan, "\n") {
		var x any
		s.Eval(t, `return require("claude").sessions()`, &x)
		t.Fatalf("the plan buffer: %q; sessions %v", got.Lines, x)
	}
	const comment = "- Also add a test for hello.txt (review comment)"
	s.Exec(t, `local b = `+buf+`
		vim.api.nvim_set_current_win(vim.fn.win_findbuf(b)[1])
		vim.api.nvim_buf_set_lines(b, -1, -1, false, { ... })
		vim.cmd("write")`, comment)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.api.WaitFor(ctx, func(r fakeapi.Request) bool { _, ok := r.ToolResult(exit.ID); return r.Main && ok })
	if err != nil {
		t.Fatalf("no request answered the plan: %v; screen:\n%s", err, s.screen(t))
	}
	res, _ := r.ToolResult(exit.ID)
	if !res.IsError || !strings.Contains(res.ResultText(), comment) {
		t.Fatalf("the model did not get the comment as the plan's refusal: %s", res.ResultText())
	}
	s.WaitFor(t, 30*time.Second, buf+` == -1`, ``, "the plan buffer to go")
	s.waitHookGone(t)

	// The revised plan, approved with ga in its buffer: the CLI leaves
	// plan mode (manual mode, as ga says) and the call succeeds.
	revised := plan + "2. Test hello.txt\n"
	exit2 := fakeapi.ToolUse("ExitPlanMode", map[string]any{})
	s.api.Script(fakeapi.Reply(fakeapi.ToolUse("Write", map[string]any{"file_path": m[1], "content": revised})),
		fakeapi.Reply(exit2), fakeapi.Reply(fakeapi.Text("Starting on the approved plan.")))
	s.waitScreen(t, 30*time.Second, "I will revise the plan.")
	s.submit(t, "revise it")
	const buf2 = `vim.fn.bufnr("claude-plan://t1/t1-2.md")`
	s.WaitFor(t, 60*time.Second, buf2+` > 0 and #vim.fn.win_findbuf(`+buf2+`) > 0`,
		`return { sessions = require("claude").sessions(), notes = _G.notes }`, "the revised plan's buffer")
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(`+buf2+`)[1]) vim.cmd("normal ga")`)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	r, err = s.api.WaitFor(ctx2, func(r fakeapi.Request) bool { _, ok := r.ToolResult(exit2.ID); return r.Main && ok })
	if err != nil {
		t.Fatalf("no request answered the approved plan: %v; screen:\n%s", err, s.screen(t))
	}
	if res, _ := r.ToolResult(exit2.ID); res.IsError {
		t.Fatalf("the approved plan's call failed: %s", res.ResultText())
	}
	s.waitScreen(t, 30*time.Second, "Starting on the approved plan.")
	// (the footer as it is now: the terminal's scrollback may keep an
	// earlier frame's "plan mode on" footer above it)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		f := footer(s.screen(t))
		if strings.Contains(f, "manual mode on") || strings.Contains(f, "? for shortcuts") && !strings.Contains(f, "plan mode on") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CLI is still in plan mode (footer %q):\n%s", f, s.screen(t))
		}
	}
	s.waitHookGone(t)
}

// footer is the CLI's mode line as the terminal shows it now: the last
// line that names a mode or the shortcuts.
func footer(screen string) string {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.Contains(l, "mode on") || strings.Contains(l, "for shortcuts") || strings.Contains(l, "accept edits on") {
			return l
		}
	}
	return ""
}
