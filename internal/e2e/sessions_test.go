//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// Several terminals with a stand-in CLI: each is a session; the panel's
// `x` stops one and `<CR>` makes another the current terminal; a CLI that
// cannot start leaves an exited session, not an idle one forever.
func TestSessionsTerminals(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-claude")
	// each start says its pid and arguments in argsLog too: the test reads
	// them there, not off a terminal's screen, which may not be drawn yet
	argsLog := script + ".args"
	if err := os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\necho READY\necho \"ARGS: $*\"\necho \"$$ $*\" >> '%s'\nexec sleep 600\n", argsLog)), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = { %q }`, script)})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	first := e.status(t).Terminal
	if first == nil {
		t.Fatalf(":ClaudeStart: notes %+v", e.notes(t))
	}
	killOnCleanup(t, first.PID)
	killOnCleanup(t, e.hostPID(t))
	e.Exec(t, `vim.cmd("ClaudeStartNew")`)
	second := e.status(t).Terminal
	if second == nil || second.PID == first.PID {
		t.Fatalf(":ClaudeStartNew: %+v", second)
	}
	killOnCleanup(t, second.PID)
	type sess struct {
		ID, State, Name string
		PID             int
	}
	var list []sess
	e.WaitFor(t, 10*time.Second, `#require("claude").sessions() == 2 and require("claude").sessions()[2].pid ~= nil`,
		`return require("claude").sessions()`, "two terminal sessions")
	e.Eval(t, `return require("claude").sessions()`, &list)
	var dir string
	e.Eval(t, `return vim.fn.fnamemodify(vim.fn.getcwd(), ":t")`, &dir)
	if list[0].ID != "t1" || list[0].PID != first.PID || list[1].ID != "t2" || list[1].PID != second.PID {
		t.Fatalf("sessions: %+v", list)
	}
	// Both started in one directory, yet named apart (panel, notices).
	if list[0].Name != dir || list[1].Name != dir+" #2" {
		t.Fatalf("two terminals of %s are named %q and %q", dir, list[0].Name, list[1].Name)
	}

	// The panel: x on t2 stops it; <CR> on t1 makes it current. Asked
	// for again from another window, the open panel gets the cursor.
	e.Exec(t, `vim.cmd("ClaudeSessions") vim.cmd("wincmd t") vim.cmd("ClaudeSessions")`)
	var ft string
	var wins int
	e.Eval(t, `return vim.bo.filetype`, &ft)
	e.Eval(t, `return #vim.fn.win_findbuf(vim.api.nvim_get_current_buf())`, &wins)
	if ft != "claude-sessions" || wins != 1 {
		t.Fatalf("a second :ClaudeSessions left the cursor in a %q buffer (%d windows)", ft, wins)
	}
	e.Exec(t, `vim.api.nvim_win_set_cursor(0, { 3, 0 })`)
	e.Exec(t, `vim.api.nvim_feedkeys("x", "x", false)`)
	waitGone(t, second.PID, "the second terminal's CLI")
	e.WaitFor(t, 10*time.Second, `require("claude").sessions()[2].state == "exited"`, `return require("claude").sessions()`, "t2 to exit")
	e.Exec(t, `vim.api.nvim_win_set_cursor(0, { 2, 0 }) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)`)
	var cur int
	e.Eval(t, `return vim.api.nvim_get_current_buf()`, &cur)
	if st := e.status(t); st.Terminal == nil || st.Terminal.PID != first.PID || cur != first.Bufnr {
		t.Fatalf("<CR> did not bring back the first terminal: %+v, current buffer %d", st.Terminal, cur)
	}

	// A CLI that cannot start.
	e.Exec(t, `require("claude.config").options.terminal_cmd = { "/nonexistent/claude" } vim.cmd("ClaudeStartNew")`)
	e.WaitFor(t, 10*time.Second, `#require("claude").sessions() == 3 and require("claude").sessions()[3].state == "exited"`,
		`return require("claude").sessions()`, "the failed start's session to be exited")
	if st := e.status(t); st.Terminal == nil || st.Terminal.PID != first.PID {
		t.Fatalf("after a failed :ClaudeStartNew the running terminal is no longer current: %+v", st.Terminal)
	}
	// A chat handed over to the terminal resumes in a new one beside the
	// running terminal, whose CLI goes on.
	// (with a --settings file of the user's: our layer carrying it is a
	// private file, gone once the CLI is stopped)
	userSettings := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(userSettings, []byte(`{"model":"opus"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Exec(t, `require("claude.config").options.terminal_cmd = { ..., "--settings", select(2, ...) }`, script, userSettings)
	e.Exec(t, `require("claude.sessions").handover({ id = "c9", mode = "chat", name = "chat 9", dir = vim.fn.getcwd(), claude_session = "abc" })`)
	resumed := e.status(t).Terminal
	if resumed == nil || resumed.PID == first.PID {
		t.Fatalf("the handover started no terminal: %+v; notes %+v", resumed, e.notes(t))
	}
	killOnCleanup(t, resumed.PID)
	for deadline := time.Now().Add(10 * time.Second * nvimtest.Slack); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(argsLog)
		if slices.ContainsFunc(strings.Split(string(b), "\n"), func(l string) bool {
			return strings.HasPrefix(l, strconv.Itoa(resumed.PID)+" ") && strings.Contains(l, " --resume abc")
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed terminal's CLI (pid %d) did not get --resume abc; started: %q; its screen:\n%s", resumed.PID, b, e.Lines(t, resumed.Bufnr))
		}
	}
	// (every terminal's layer is a private file: its HTTP hooks carry the
	// host's token; one of them carries the user's settings too)
	all, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("nvim-claude-settings-%d-*", e.hostPID(t)), "*.json"))
	var layers []string
	for _, l := range all {
		if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), `"opus"`) {
			layers = append(layers, l)
		}
	}
	if len(layers) != 1 {
		t.Fatalf("the layers with the user's --settings: %v of %v", layers, all)
	}
	layer := layers[0]
	var pids []int
	e.Eval(t, `local out = {} for _, x in ipairs(require("claude.terminal").all()) do table.insert(out, x.pid) end return out`, &pids)
	if len(pids) != 2 || (pids[0] != first.PID && pids[1] != first.PID) {
		t.Fatalf("the handover stopped the running terminal: terminals %v, first %d", pids, first.PID)
	}
	// :ClaudeStop stops every terminal.
	e.Exec(t, `vim.cmd("ClaudeStop")`)
	waitGone(t, first.PID, "the first terminal's CLI")
	waitGone(t, resumed.PID, "the resumed terminal's CLI")
	waitFile(t, layer, false)
}

// A turn that ends while Neovim has lost the desktop's focus is notified
// (vim.notify and the notifier) even with its terminal on screen, and
// stays `done` until the user is back: then it is seen. The CLI is a
// stand-in; its hooks are the real entry point, called as the CLI would.
func TestSessionsDoneWhileAway(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho READY\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notified := filepath.Join(t.TempDir(), "notifier.log")
	e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = { %q }, sessions = { notifier = { "sh", "-c", 'echo "$0" >> %s' } }`, script, notified)})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	term := e.status(t).Terminal
	if term == nil {
		t.Fatalf(":ClaudeStart: notes %+v", e.notes(t))
	}
	killOnCleanup(t, term.PID)
	killOnCleanup(t, e.hostPID(t))
	var sock string
	e.Eval(t, `return require("claude.terminal").editor_tools().socket`, &sock)
	hook := func(event string) {
		t.Helper()
		cmd := exec.Command(hostBin, "hook", event, "t1")
		cmd.Env = []string{"NVIM_CLAUDE_MCP_SOCKET=" + sock}
		cmd.Stdin = strings.NewReader(`{"session_id":"abc"}`)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("hook %s: %v %s", event, err, out)
		}
	}
	state := func(want, what string) {
		t.Helper()
		e.WaitFor(t, 10*time.Second, fmt.Sprintf(`require("claude").sessions()[1].state == %q`, want),
			`return { sessions = require("claude").sessions(), notes = _G.notes }`, what)
	}
	// The terminal is on screen, and the current window.
	e.Exec(t, `vim.api.nvim_set_current_win(vim.fn.bufwinid(...))`, term.Bufnr)
	hook("UserPromptSubmit")
	state("working", "the turn to start")
	e.Exec(t, `vim.cmd("doautocmd FocusLost")`)
	hook("Stop")
	state("done", "the turn to end")
	e.WaitFor(t, 10*time.Second, `#_G.notes > 0`, `return _G.notes`, "the done notice")
	e.WaitFor(t, 10*time.Second, fmt.Sprintf(`(function() local f = io.open(%q) if not f then return false end
		local s = f:read("*a") f:close() return s:find("\n") ~= nil end)()`, notified), `return _G.notes`, "the notifier to run")
	b, err := os.ReadFile(notified)
	// The start's own notice (edits unreviewed in auto mode) is not the
	// session's: only the done notice counts here.
	var n []note
	for _, x := range e.notes(t) {
		if !strings.Contains(x.Msg, "auto mode") {
			n = append(n, x)
		}
	}
	if err != nil || len(n) != 1 || !strings.Contains(n[0].Msg, "is done") || !strings.Contains(string(b), "is done") {
		t.Fatalf("notes %+v, notifier %q (%v)", n, b, err)
	}
	e.Exec(t, `vim.cmd("doautocmd FocusGained")`)
	state("idle", "the user back at the terminal to see it")
}

// hookCall runs the real hook entry point as the CLI would, with stdin as
// the CLI's hook input.
func hookCall(t *testing.T, sock, event, session, stdin string) {
	t.Helper()
	cmd := exec.Command(hostBin, "hook", event, session)
	cmd.Env = []string{"NVIM_CLAUDE_MCP_SOCKET=" + sock}
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("hook %s: %v %s", event, err, out)
	}
}

// hasControl reports a character that a buffer, a statusline or a
// terminal would obey rather than show.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// Text from outside reaches Neovim only displayable: a project directory
// whose name holds a newline, ESC and BEL, and hook input with the same,
// while :ClaudeSessions is open. The panel draws, the statusline and every
// notice (vim.notify and the notifier) show the characters instead of
// obeying them, and no event is lost: the "needs you" and the "is done"
// notices both go out.
func TestSessionsHostileText(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho READY\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ws\n\x1b[31mred\a")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	notified := filepath.Join(t.TempDir(), "notifier.log")
	e := startEditor(t, editorOpts{dir: dir, extra: fmt.Sprintf(`, terminal_cmd = { %q }, sessions = { notifier = { "sh", "-c", 'printf "%%s\\0" "$0" >> %s' } }`, script, notified)})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	term := e.status(t).Terminal
	if term == nil {
		t.Fatalf(":ClaudeStart: notes %+v", e.notes(t))
	}
	killOnCleanup(t, term.PID)
	killOnCleanup(t, e.hostPID(t))
	var sock string
	e.Eval(t, `return require("claude.terminal").editor_tools().socket`, &sock)
	var name string
	e.WaitFor(t, 10*time.Second, `#require("claude").sessions() == 1`, `return require("claude").sessions()`, "the session")
	e.Eval(t, `return require("claude").sessions()[1].name`, &name)
	if name != "ws⏎^[[31mred^G" {
		t.Fatalf("the session of a directory named %q is named %q", filepath.Base(dir), name)
	}
	// The panel is open, the terminal out of sight (another tab page).
	e.Exec(t, `vim.cmd("ClaudeSessions") vim.cmd("tabnew")`)
	hookCall(t, sock, "UserPromptSubmit", "t1", `{"session_id":"abc"}`)
	hookCall(t, sock, "Notification", "t1", `{"session_id":"abc","notification_type":"permission_prompt",
		"message":"Claude needs your permission\n\u001b]0;owned\u0007\u001b[2J to use Bash\u0007"}`)
	e.WaitFor(t, 10*time.Second, `(function() for _, n in ipairs(_G.notes) do if n.msg:find("needs you") then return true end end end)()`,
		`return { notes = _G.notes, sessions = require("claude").sessions() }`, "the needs-you notice")
	hookCall(t, sock, "Stop", "t1", `{"session_id":"abc"}`)
	e.WaitFor(t, 10*time.Second, `(function() for _, n in ipairs(_G.notes) do if n.msg:find("is done") then return true end end end)()`,
		`return { notes = _G.notes, sessions = require("claude").sessions() }`, "the is-done notice")

	var panel []string
	e.Eval(t, `for _, b in ipairs(vim.api.nvim_list_bufs()) do
		if vim.bo[b].filetype == "claude-sessions" then return vim.api.nvim_buf_get_lines(b, 0, -1, false) end end`, &panel)
	if len(panel) < 2 || hasControl(strings.Join(panel, "")) || !strings.Contains(panel[1], "ws⏎^[[31mred^G") || !strings.Contains(panel[1], "/ws⏎^[[31mred^G") {
		t.Fatalf("the panel:\n%q", panel)
	}
	var line string
	e.Eval(t, `return require("claude").statusline() .. "|" .. require("claude").sessions_statusline()`, &line)
	if hasControl(line) {
		t.Fatalf("statusline %q", line)
	}
	needs, done := 0, 0
	for _, n := range e.notes(t) {
		if hasControl(n.Msg) || n.Level >= 4 {
			t.Fatalf("notice %+v", n)
		}
		if strings.Contains(n.Msg, "needs you") {
			needs++
			if !strings.Contains(n.Msg, "Claude needs your permission⏎^[]0;owned^G^[[2J to use Bash^G") || !strings.Contains(n.Msg, "ws⏎^[[31mred^G") {
				t.Fatalf("the needs-you notice: %q", n.Msg)
			}
		}
		if strings.Contains(n.Msg, "is done") {
			done++
		}
	}
	if needs != 1 || done != 1 {
		t.Fatalf("%d needs-you and %d is-done notices, want one each: %+v", needs, done, e.notes(t))
	}
	e.WaitFor(t, 10*time.Second, fmt.Sprintf(`(function() local f = io.open(%q, "rb") if not f then return false end
		local s = f:read("*a") f:close() return select(2, s:gsub("%%z", "")) >= 2 end)()`, notified), `return _G.notes`, "the notifier to run twice")
	b, _ := os.ReadFile(notified)
	for _, m := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		if hasControl(m) {
			t.Fatalf("the notifier got %q", m)
		}
	}
	// A --settings of the user's that cannot be read: the warning names
	// it, shown.
	e.Exec(t, `_G.notes = {} require("claude.config").options.terminal_cmd = { ..., "--settings", "no\nsuch\27[2J.json" } vim.cmd("ClaudeStartNew")`, script)
	e.WaitFor(t, 10*time.Second, `(function() for _, n in ipairs(_G.notes) do if n.msg:find("--settings", 1, true) then return true end end end)()`,
		`return _G.notes`, "the warning about the --settings")
	for _, n := range e.notes(t) {
		if hasControl(n.Msg) || (strings.Contains(n.Msg, "--settings") && !strings.Contains(n.Msg, "no⏎such^[[2J.json")) {
			t.Fatalf("notice %q", n.Msg)
		}
	}
	if st := e.status(t); st.Terminal != nil {
		killOnCleanup(t, st.Terminal.PID)
	}
}

// The settings layer that carries a --settings file of the user's (their
// settings, an API key in env perhaps) does not outlive a Neovim and host
// killed outright: the next start sweeps it, even a plain :ClaudeStart
// without --settings. A directory of that name someone else owns is left
// alone.
func TestSessionsSettingsLayerSweptAfterKill(t *testing.T) {
	tmp := t.TempDir()
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho READY\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(mine, []byte(`{"env":{"ANTHROPIC_API_KEY":"sk-secret"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{nvim: []string{"TMPDIR=" + tmp}, extra: fmt.Sprintf(`, terminal_cmd = { %q, "--settings", %q }`, script, mine)})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	term := e.status(t).Terminal
	if term == nil {
		t.Fatalf(":ClaudeStart: notes %+v", e.notes(t))
	}
	killOnCleanup(t, term.PID)
	host := e.hostPID(t)
	killOnCleanup(t, host)
	layers, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("nvim-claude-settings-%d-*", host), "t1.json"))
	if len(layers) != 1 {
		t.Fatalf("no settings layer in %s: %v", tmp, layers)
	}
	var nvimPID int
	e.Eval(t, `return vim.fn.getpid()`, &nvimPID)
	for _, pid := range []int{nvimPID, host, term.PID} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for _, pid := range []int{nvimPID, host, term.PID} {
		waitGone(t, pid, "a killed process")
	}
	_ = e.Nvim.Close()
	if _, err := os.Stat(layers[0]); err != nil {
		t.Fatalf("the layer is gone before any sweep: %v", err)
	}
	// Someone else's directory of the same name, of a host that is gone.
	foreign := filepath.Join(tmp, fmt.Sprintf("nvim-claude-settings-%d-other", host))
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	chowned := os.Geteuid() == 0 && os.Chown(foreign, 65534, 65534) == nil

	// A plain :ClaudeStart, no --settings.
	e2 := startEditor(t, editorOpts{nvim: []string{"TMPDIR=" + tmp}, extra: fmt.Sprintf(`, terminal_cmd = { %q }`, script)})
	e2.Exec(t, captureNotify)
	e2.Exec(t, `vim.cmd("ClaudeStart")`)
	term2 := e2.status(t).Terminal
	if term2 == nil {
		t.Fatalf(":ClaudeStart: notes %+v", e2.notes(t))
	}
	killOnCleanup(t, term2.PID)
	killOnCleanup(t, e2.hostPID(t))
	waitFile(t, filepath.Dir(layers[0]), false)
	if chowned {
		if _, err := os.Stat(foreign); err != nil {
			t.Fatalf("another user's directory was swept: %v", err)
		}
	} else {
		t.Log("not root: the directory of another user is tested in the sessions package only")
	}
}

// `h` on a working session waits for its turn to end, says so and marks
// the panel; `h` again cancels; a session that exits meanwhile is not
// handed over, and the user is told. (The hand-over itself, with the real
// CLI and a chat: TestCLISessionBusyHandover.)
func TestSessionsHandoverWaitsAndCancels(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho READY\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = { %q }`, script)})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	term := e.status(t).Terminal
	if term == nil {
		t.Fatalf(":ClaudeStart: notes %+v", e.notes(t))
	}
	killOnCleanup(t, term.PID)
	killOnCleanup(t, e.hostPID(t))
	var sock string
	e.Eval(t, `return require("claude.terminal").editor_tools().socket`, &sock)
	hookCall(t, sock, "UserPromptSubmit", "t1", `{"session_id":"abc-123"}`)
	e.WaitFor(t, 10*time.Second, `require("claude").sessions()[1].state == "working"`, `return require("claude").sessions()`, "the turn")
	e.Exec(t, `vim.cmd("ClaudeSessions") vim.api.nvim_win_set_cursor(0, { 2, 0 })`)
	handovers := func() string {
		var ids []string
		e.Eval(t, `return require("claude.sessions").handovers()`, &ids)
		return strings.Join(ids, ",")
	}
	note := func(want string) {
		t.Helper()
		e.WaitFor(t, 10*time.Second, fmt.Sprintf(`(function() for _, n in ipairs(_G.notes) do if n.msg:find(%q, 1, true) then return true end end end)()`, want),
			`return _G.notes`, want)
	}
	e.Exec(t, `vim.api.nvim_feedkeys("h", "x", false)`)
	if got := handovers(); got != "t1" {
		t.Fatalf("h on a working session: handovers %q, notes %+v", got, e.notes(t))
	}
	note("continues in a chat when its turn ends")
	var row string
	e.Eval(t, `return vim.api.nvim_buf_get_lines(0, 1, 2, false)[1]`, &row)
	if !strings.Contains(row, "→ a chat when the turn ends (h cancels)") {
		t.Fatalf("the panel row: %q", row)
	}
	e.Exec(t, `vim.api.nvim_feedkeys("h", "x", false)`)
	if got := handovers(); got != "" {
		t.Fatalf("h again did not cancel: %q", got)
	}
	note("the handover is cancelled")
	if !alive(term.PID) {
		t.Fatal("the working terminal's CLI was stopped")
	}
	// Waiting again, then the CLI exits before its turn ends.
	e.Exec(t, `vim.api.nvim_feedkeys("h", "x", false)`)
	if got := handovers(); got != "t1" {
		t.Fatalf("handovers %q", got)
	}
	e.Exec(t, `vim.api.nvim_feedkeys("x", "x", false)`)
	waitGone(t, term.PID, "the stopped CLI")
	note("exited before its turn ended: not handed over")
	if got := handovers(); got != "" {
		t.Fatalf("an exited session still waits to be handed over: %q", got)
	}
}
