//go:build unix

package e2e

import (
	"sort"
	"strings"
	"testing"
)

// TestClaudeSubcommands: every :ClaudeXxx is also :Claude xxx, with the same
// effect and completion, and a wrong subcommand names the right ones.
func TestClaudeSubcommands(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.Exec(t, captureNotify)

	// One subcommand per command, derived from the commands themselves.
	var missing []string
	e.Eval(t, `
		local subs = require("claude.commands").subcommands
		local have = {}
		for _, c in pairs(subs) do have[c.name] = true end
		local missing = {}
		for name in pairs(vim.api.nvim_get_commands({})) do
			if name:match("^Claude.") and not have[name] then missing[#missing + 1] = name end
		end
		return missing`, &missing)
	if len(missing) != 0 {
		t.Errorf("commands without a :Claude subcommand: %v", missing)
	}

	for _, tt := range []struct {
		line string
		want []string
	}{
		{"Claude chat-s", []string{"chat-send", "chat-sessions"}},
		{"Claude st", []string{"start", "start-new", "status", "stop"}},
		{"Claude share ", []string{"off", "on", "toggle"}},
		{"Claude install d", []string{"download"}},
	} {
		var got []string
		e.Eval(t, `return vim.fn.getcompletion(...,"cmdline")`, &got, tt.line)
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("completion of %q = %v, want %v", tt.line, got, tt.want)
		}
	}

	// The subcommand does what the command does: :Claude serve starts the
	// server, :Claude share off turns sharing off, :Claude stop stops it.
	e.Exec(t, `vim.cmd("Claude serve")`)
	st := e.status(t)
	if !st.Running {
		t.Fatalf(":Claude serve: not running; notes %+v", e.notes(t))
	}
	killOnCleanup(t, e.hostPID(t))
	var sharing bool
	e.Exec(t, `vim.cmd("Claude share off")`)
	e.Eval(t, `return require("claude.selection").sharing()`, &sharing)
	if sharing {
		t.Error(":Claude share off left sharing on")
	}
	e.Exec(t, `vim.cmd("Claude stop")`)
	if st := e.status(t); st.Running {
		t.Error(":Claude stop: still running")
	}

	e.Exec(t, `_G.notes = {} vim.cmd("Claude frobnicate")`)
	ns := e.notes(t)
	if len(ns) != 1 || !strings.Contains(ns[0].Msg, `no subcommand "frobnicate"`) || !strings.Contains(ns[0].Msg, "start") || ns[0].Level != 4 {
		t.Errorf(":Claude frobnicate said %+v, want one error naming it and the subcommands", ns)
	}
}
