package edtools

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

const fixGo = "package fix\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n// Greet greets.\nfunc Greet(name string) string {\n\treturn fmt.Sprintf(\"hi %s\", name)\n}\n"

// callAsync runs a tool that waits for the user (apply_code_action) and
// hands its outcome back later.
func (h *edHarness) callAsync(t *testing.T, tool string, args any) <-chan [2]any {
	t.Helper()
	out := make(chan [2]any, 1)
	go func() {
		text, isErr := h.call(t, tool, args)
		out <- [2]any{text, isErr}
	}()
	return out
}

// waitResult is the outcome of a callAsync (a failure guard bounds it).
func waitResult(t *testing.T, ch <-chan [2]any) (string, bool) {
	t.Helper()
	select {
	case r := <-ch:
		return r[0].(string), r[1].(bool)
	case <-time.After(60 * time.Second):
		t.Fatal("apply_code_action did not return")
		return "", false
	}
}

// waitDiff waits for a diff review to be on screen and returns its file;
// the call ending first (an error) fails the test.
func (h *edHarness) waitDiff(t *testing.T, res <-chan [2]any) string {
	t.Helper()
	deadline := time.Now().Add(30 * nvimtest.Slack * time.Second)
	for {
		var files []string
		if err := h.TryEval(`local out = {} for _, d in ipairs(require("claude.diff").pending()) do table.insert(out, d.file) end return out`, &files); err != nil {
			t.Fatal(err)
		}
		if len(files) == 1 {
			return files[0]
		}
		select {
		case r := <-res:
			t.Fatalf("apply_code_action returned before any diff was shown (isError %v):\n%s", r[1], r[0])
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single diff to review: %q", files)
		}
	}
}

// actionNumber finds an action's number in a code_actions listing.
func actionNumber(t *testing.T, listing, title string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(\d+)\. ` + regexp.QuoteMeta(title)).FindStringSubmatch(listing)
	if m == nil {
		t.Fatalf("no %q in the listing:\n%s", title, listing)
	}
	return m[1]
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listActions waits (a failure guard: gopls may still load the package)
// until code_actions at fix.go's line offers title.
func (h *edHarness) listActions(t *testing.T, args map[string]any, title string) string {
	t.Helper()
	var text string
	deadline := time.Now().Add(30 * time.Second)
	for {
		var isErr bool
		text, isErr = h.call(t, "code_actions", args)
		if !isErr && strings.Contains(text, ". "+title) || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	return text
}

// A code action is applied only as far as the user accepts its
// diffs, through Neovim's buffers, and the result says what happened.
func TestEditorToolsApplyCodeAction(t *testing.T) {
	organize := map[string]any{"file": "fix/fix.go", "line": 5}
	noImports := strings.Replace(fixGo, "\t\"strings\"\n", "", 1)
	tests := []struct {
		name string
		run  func(t *testing.T, h *edHarness)
	}{
		{"accepted with :w in the proposal: written", func(t *testing.T, h *edHarness) {
			listing := h.listActions(t, organize, "Organize Imports")
			n := actionNumber(t, listing, "Organize Imports")
			args := map[string]any{"file": "fix/fix.go", "line": 5, "action": n}
			res := h.callAsync(t, "apply_code_action", args)
			if f := h.waitDiff(t, res); f != filepath.Join(h.dir, "fix/fix.go") {
				t.Fatalf("diff for %s", f)
			}
			// The user's :w runs in an autocommand, while Neovim waits for
			// the host's answer: the files are written after it.
			h.Exec(t, `local d = require("claude.diff").pending()[1]
				vim.api.nvim_set_current_win(vim.fn.win_findbuf(d.proposal_bufnr)[1]) vim.cmd("write")`)
			text, isErr := waitResult(t, res)
			want := "applied code action " + n + ` "Organize Imports" [source.organizeImports]; the user accepted every file:` + "\n- fix/fix.go: accepted, written"
			if isErr || text != want {
				t.Fatalf("isError %v:\n%s\nwant:\n%s", isErr, text, want)
			}
			if got := readFile(t, filepath.Join(h.dir, "fix/fix.go")); got != noImports {
				t.Fatalf("fix.go:\n%s", got)
			}
			var mod bool
			h.Eval(t, `return vim.bo[vim.fn.bufnr(...)].modified`, &mod, filepath.Join(h.dir, "fix/fix.go"))
			if mod {
				t.Fatal("fix.go's buffer has unsaved changes")
			}
		}},
		{"rejected: nothing changes", func(t *testing.T, h *edHarness) {
			h.listActions(t, organize, "Organize Imports")
			res := h.callAsync(t, "apply_code_action", map[string]any{"file": "fix/fix.go", "line": 5, "action": "organize imports"})
			h.waitDiff(t, res)
			h.Exec(t, `vim.cmd("ClaudeDiffReject")`)
			text, isErr := waitResult(t, res)
			if isErr || !strings.HasPrefix(text, `the user rejected code action`) || !strings.HasSuffix(text, "\n- fix/fix.go: rejected, unchanged") {
				t.Fatalf("isError %v:\n%s", isErr, text)
			}
			if got := readFile(t, filepath.Join(h.dir, "fix/fix.go")); got != fixGo {
				t.Fatalf("fix.go changed:\n%s", got)
			}
		}},
		{"accepted with the user's changes (a lazily resolved action)", func(t *testing.T, h *edHarness) {
			at := map[string]any{"file": "fix/fix.go", "line": 10, "col": 22}
			h.listActions(t, at, "Split arguments into separate lines")
			args := map[string]any{"file": "fix/fix.go", "line": 10, "col": 22, "action": "Split arguments into separate lines"}
			res := h.callAsync(t, "apply_code_action", args)
			h.waitDiff(t, res)
			var prop []string
			h.Eval(t, `return vim.api.nvim_buf_get_lines(require("claude.diff").pending()[1].proposal_bufnr, 0, -1, false)`, &prop)
			if !strings.Contains(strings.Join(prop, "\n"), "\treturn fmt.Sprintf(\n\t\t\"hi %s\",\n\t\tname,\n\t)") {
				t.Fatalf("the proposal:\n%s", strings.Join(prop, "\n"))
			}
			h.Exec(t, `local d = require("claude.diff").pending()[1]
				vim.api.nvim_buf_set_lines(d.proposal_bufnr, 7, 8, false, { "// Greet greets, split." })
				vim.cmd("ClaudeDiffAccept")`)
			text, isErr := waitResult(t, res)
			if isErr || !strings.HasSuffix(text, "- fix/fix.go: accepted with the user's own changes, written") {
				t.Fatalf("isError %v:\n%s", isErr, text)
			}
			got := readFile(t, filepath.Join(h.dir, "fix/fix.go"))
			if !strings.Contains(got, "// Greet greets, split.\n") || !strings.Contains(got, "\treturn fmt.Sprintf(\n\t\t\"hi %s\",\n\t\tname,\n\t)\n}\n") {
				t.Fatalf("fix.go:\n%s", got)
			}
		}},
		{"a server command's edits, one file of two accepted", func(t *testing.T, h *edHarness) {
			at := map[string]any{"file": "fix/fix.go", "line": 9, "col": 6}
			h.listActions(t, at, "Extract declarations to new file")
			res := h.callAsync(t, "apply_code_action", map[string]any{"file": "fix/fix.go", "line": 9, "col": 6, "action": "Extract declarations to new file"})
			var created string
			for i := 0; i < 2; i++ {
				f := h.waitDiff(t, res)
				if _, err := os.Stat(f); os.IsNotExist(err) {
					created = f
					h.Exec(t, `vim.cmd("ClaudeDiffAccept")`)
				} else {
					h.Exec(t, `vim.cmd("ClaudeDiffReject")`)
				}
				// The next file's diff may be open already.
				h.WaitFor(t, 10*time.Second, fmt.Sprintf(`(function() local p = require("claude.diff").pending() return #p == 0 or p[1].file ~= %q end)()`, f),
					"", "the decision")
			}
			text, isErr := waitResult(t, res)
			rel, _ := filepath.Rel(h.dir, created)
			if isErr || !containsInOrder(text, []string{"applied code action", `"Extract declarations to new file"`, "in part; the user accepted 1 of 2 files:",
				"- fix/fix.go: rejected, unchanged", "- " + rel + " (new file): accepted, written", "(the edits came from the server command gopls.extract_to_new_file)"}) {
				t.Fatalf("isError %v:\n%s", isErr, text)
			}
			if got := readFile(t, filepath.Join(h.dir, "fix/fix.go")); got != fixGo {
				t.Fatalf("fix.go changed:\n%s", got)
			}
			if got := readFile(t, created); !strings.Contains(got, "func Greet(name string) string {") {
				t.Fatalf("%s:\n%s", rel, got)
			}
		}},
		{"the file changed during the review: nothing applied", func(t *testing.T, h *edHarness) {
			h.listActions(t, organize, "Organize Imports")
			res := h.callAsync(t, "apply_code_action", map[string]any{"file": "fix/fix.go", "line": 5, "action": "Organize Imports"})
			h.waitDiff(t, res)
			h.Exec(t, `local d = require("claude.diff").pending()[1]
				vim.api.nvim_buf_set_lines(vim.fn.bufnr(d.file), 7, 8, false, { "// Greet says hello." })
				vim.cmd("ClaudeDiffAccept")`)
			text, isErr := waitResult(t, res)
			if !isErr || !strings.Contains(text, "fix/fix.go changed in Neovim since the proposal was made; nothing was applied") {
				t.Fatalf("isError %v:\n%s", isErr, text)
			}
			if got := readFile(t, filepath.Join(h.dir, "fix/fix.go")); got != fixGo {
				t.Fatalf("fix.go changed:\n%s", got)
			}
		}},
		{"bad arguments and unknown actions", func(t *testing.T, h *edHarness) {
			h.listActions(t, organize, "Organize Imports")
			runEdCases(t, h, []edCase{
				{name: "no action", tool: "apply_code_action", args: map[string]any{"file": "fix/fix.go", "line": 5}, isError: true,
					want: []string{"invalid arguments: action is required"}},
				{name: "action 0", tool: "apply_code_action", args: map[string]any{"file": "fix/fix.go", "line": 5, "action": 0}, isError: true,
					want: []string{"action must be a 1-based number or a title"}},
				{name: "action of another type", tool: "apply_code_action", args: map[string]any{"file": "fix/fix.go", "line": 5, "action": true}, isError: true,
					want: []string{"action must be a number or a string"}},
				{name: "no such number", tool: "apply_code_action", args: map[string]any{"file": "fix/fix.go", "line": 5, "action": 99}, isError: true,
					want: []string{"there is no code action 99 here ("}},
				{name: "no such title", tool: "apply_code_action", args: map[string]any{"file": "fix/fix.go", "line": 5, "action": "Make it fast"}, isError: true,
					want: []string{`no code action titled "Make it fast" here; offered: 1. `, "Organize Imports"}},
				{name: "no language server", tool: "apply_code_action", args: map[string]any{"file": "notes.txt", "line": 1, "action": 1}, isError: true,
					want: []string{"no language server attached to notes.txt"}},
			})
			var n int
			h.Eval(t, `return #require("claude.diff").pending()`, &n)
			if n != 0 || readFile(t, filepath.Join(h.dir, "fix/fix.go")) != fixGo {
				t.Fatalf("%d diffs open, or fix.go changed", n)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startEdHarness(t, true)
			tc.run(t, h)
		})
	}
}
