//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPermissionModeNotice: terminal.permission_mode is passed as
// --permission-mode (unless the command line names a mode), and the first
// :ClaudeStart of a Neovim session in a mode that applies edits unasked —
// from the option, the arguments or the CLI's settings.json — says once that
// edits will not be reviewed and how to change it; a mode that asks says
// nothing.
func TestPermissionModeNotice(t *testing.T) {
	for _, tt := range []struct {
		name     string
		option   string // terminal.permission_mode ("" = nil)
		settings string // the CLI's user settings.json ("" = none)
		args     string // :ClaudeStart arguments
		wantArgs string // what the CLI is started with
		notice   string // "" = no notice
	}{
		{"option auto", "auto", "", "", "--permission-mode auto", "auto mode (option)"},
		{"option manual", "manual", `{"permissions":{"defaultMode":"auto"}}`, "", "--permission-mode manual", ""},
		{"settings acceptEdits", "", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", "ARGS=", "acceptEdits mode ("},
		{"settings manual", "", `{"permissions":{"defaultMode":"manual"}}`, "", "ARGS=", ""},
		{"arguments win over the option", "auto", "", "--permission-mode manual", "--permission-mode manual", ""},
		{"arguments bypassPermissions", "manual", "", "--permission-mode=bypassPermissions", "--permission-mode=bypassPermissions", "bypassPermissions mode (arguments)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "args")
			script := filepath.Join(dir, "fake-claude")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"ARGS=$*\" > "+out+"\nexec sleep 600\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "claude-config")
			if err := os.MkdirAll(cfg, 0o700); err != nil {
				t.Fatal(err)
			}
			if tt.settings != "" {
				if err := os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(tt.settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			opt := "nil"
			if tt.option != "" {
				opt = fmt.Sprintf("%q", tt.option)
			}
			e := startEditor(t, editorOpts{
				env:   map[string]string{"CLAUDE_CONFIG_DIR": cfg},
				extra: fmt.Sprintf(`, terminal_cmd = { %q }, terminal = { permission_mode = %s }`, script, opt),
			})
			e.Exec(t, captureNotify)
			start := func(cmd string) {
				t.Helper()
				e.Exec(t, fmt.Sprintf(`vim.cmd(%q)`, cmd))
				st := e.status(t)
				if !st.Running || st.Terminal == nil {
					t.Fatalf("status after %s: %+v notes %+v", cmd, st, e.notes(t))
				}
				killOnCleanup(t, st.Terminal.PID)
				killOnCleanup(t, e.hostPID(t))
			}
			start(strings.TrimSpace("ClaudeStart " + tt.args))
			var got []byte
			deadline := time.Now().Add(20 * time.Second)
			for {
				got, _ = os.ReadFile(out)
				if len(got) > 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !strings.Contains(string(got), tt.wantArgs) {
				t.Errorf("the CLI was started with %q, want %q in it", got, tt.wantArgs)
			}
			// A restart in the same session says nothing more.
			start(strings.TrimSpace("ClaudeStart! " + tt.args))
			var notices []string
			for _, n := range e.notes(t) {
				if strings.Contains(n.Msg, "without the diff review") {
					notices = append(notices, n.Msg)
				}
			}
			switch {
			case tt.notice == "" && len(notices) > 0:
				t.Errorf("a mode that asks got the notice: %q", notices)
			case tt.notice != "" && len(notices) != 1:
				t.Errorf("want the notice once, got %d: %q (all: %+v)", len(notices), notices, e.notes(t))
			case tt.notice != "" && (!strings.Contains(notices[0], tt.notice) || !strings.Contains(notices[0], `permission_mode = "manual"`)):
				t.Errorf("the notice %q does not name %q and how to change it", notices[0], tt.notice)
			}
		})
	}
}

// TestPermissionModeBadValue: a mode the CLI does not have is refused by
// setup() with the modes it has.
func TestPermissionModeBadValue(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.Exec(t, captureNotify)
	e.Exec(t, `require("claude").setup({ terminal = { permission_mode = "review" } })`)
	var msgs []string
	for _, n := range e.notes(t) {
		msgs = append(msgs, n.Msg)
	}
	if msg := strings.Join(msgs, "\n"); !strings.Contains(msg, "permission_mode") || !strings.Contains(msg, `"manual"`) {
		t.Errorf("setup() with a bad permission_mode said %q", msg)
	}
	var mode any
	e.Eval(t, `return require("claude.config").options.terminal.permission_mode`, &mode)
	if mode != nil {
		t.Errorf("the bad value was kept: %v", mode)
	}
}

// TestCLIPermissionModeOptionOpensDiff: with terminal.permission_mode =
// "manual" and no mode on the command line (the README's lazy.nvim spec),
// the real CLI — whose own default applies edits unasked — asks before an
// edit: the diff review opens.
func TestCLIPermissionModeOptionOpensDiff(t *testing.T) {
	s := startSession(t, sessionOpts{
		permissionMode: "none",
		files:          map[string]string{"hello.txt": diffFileText},
		extra:          `, terminal = { width = 0.6, permission_mode = "manual" }`,
	})
	file := filepath.Join(s.project, "hello.txt")
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p") vim.cmd("edit hello.txt")`)
	d := &diffSession{session: s, file: file}
	d.scriptEdit(file, "beta", "BETA", "Edited.")
	d.submit(t, "make beta loud")
	if p := d.waitDiff(t); p.File != file {
		t.Fatalf("pending diff %+v", p)
	}
	if b, _ := os.ReadFile(file); string(b) != diffFileText {
		t.Errorf("the file changed before the review: %q", b)
	}
}
