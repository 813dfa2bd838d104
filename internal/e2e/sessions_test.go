//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Several terminals with a stand-in CLI: each is a session; the panel's
// `x` stops one and `<CR>` makes another the current terminal; a CLI that
// cannot start leaves an exited session, not an idle one forever.
func TestSessionsTerminals(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho READY\nexec sleep 600\n"), 0o755); err != nil {
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
		ID, State string
		PID       int
	}
	var list []sess
	e.WaitFor(t, 10*time.Second, `#require("claude").sessions() == 2 and require("claude").sessions()[2].pid ~= nil`,
		`return require("claude").sessions()`, "two terminal sessions")
	e.Eval(t, `return require("claude").sessions()`, &list)
	if list[0].ID != "t1" || list[0].PID != first.PID || list[1].ID != "t2" || list[1].PID != second.PID {
		t.Fatalf("sessions: %+v", list)
	}

	// The panel: x on t2 stops it; <CR> on t1 makes it current.
	e.Exec(t, `vim.cmd("ClaudeSessions") vim.api.nvim_win_set_cursor(0, { 3, 0 })`)
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
	// :ClaudeStop stops every terminal.
	e.Exec(t, `vim.cmd("ClaudeStop")`)
	waitGone(t, first.PID, "the first terminal's CLI")
}
