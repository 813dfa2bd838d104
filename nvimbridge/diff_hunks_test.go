//go:build unix

package nvimbridge_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Per-hunk answers: the hunk under the cursor is accepted (kept,
// marked) or rejected (the current text back in the proposal), the counter
// says where the user is, the accepted file is the assembled text in the
// file's own line endings, and a proposal whose every hunk was rejected is
// answered "reject", not an empty accept.
func TestDiffHunks(t *testing.T) {
	type step struct {
		line int    // proposal line to put the cursor on (0: leave it)
		keys string // "ga", "gr", or a Lua statement run in the proposal
	}
	// The file has three hunks in the proposal: line 2, lines 5-6, line 11.
	orig := diffText
	prop := strings.NewReplacer("two\n", "TWO\n", "five\nsix\n", "FIVE\nSIX\n", "eleven\n", "ELEVEN\n").Replace(orig)
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	// Too large to count (over 256 KiB): the keys still work on the hunk
	// under the cursor.
	var big, bigProp, bigWant strings.Builder
	for i := 1; i <= 6000; i++ {
		line := fmt.Sprintf("line %d of a large file, long enough to pass the limit\n", i)
		big.WriteString(line)
		switch i {
		case 10, 3000:
			bigProp.WriteString("CHANGED " + line)
			if i == 10 {
				bigWant.WriteString("CHANGED " + line)
			} else {
				bigWant.WriteString(line)
			}
		default:
			bigProp.WriteString(line)
			bigWant.WriteString(line)
		}
	}
	tests := []struct {
		name       string
		orig, prop string
		steps      []step
		counter    string // the counter after the steps
		decision   string
		contents   string
	}{
		{"reject the middle hunk", orig, prop, []step{{5, "gr"}}, "hunk 2/3 · 0 accepted · 1 rejected", "accept",
			strings.NewReplacer("two\n", "TWO\n", "eleven\n", "ELEVEN\n").Replace(orig)},
		{"accept one, reject one", orig, prop, []step{{2, "ga"}, {0, "gr"}}, "hunk 2/3 · 1 accepted · 1 rejected", "accept",
			strings.NewReplacer("two\n", "TWO\n", "eleven\n", "ELEVEN\n").Replace(orig)},
		{"every hunk rejected", orig, prop, []step{{2, "gr"}, {0, "gr"}, {0, "gr"}}, "no changes left · 3 rejected", "reject", ""},
		{"undo a reject", orig, prop, []step{{2, "gr"}, {0, "undo"}}, "/3 · 0 accepted · 0 rejected", "accept", prop},
		{"undo and redo a reject", orig, prop, []step{{2, "gr"}, {0, "undo"}, {0, "redo"}}, "/3 · 0 accepted · 1 rejected", "accept",
			strings.Replace(prop, "TWO\n", "two\n", 1)},
		// A reject undone and then a change of the user's: the undone
		// reject is on an abandoned branch of the undo tree.
		{"undo a reject, then edit", orig, prop, []step{{2, "gr"}, {0, "undo"}, {1, "vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'ONE' }) vim.cmd('doautocmd TextChanged')"}},
			"hunk 1/3 · 0 accepted · 0 rejected", "accept", strings.Replace(prop, "one\n", "ONE\n", 1)},
		{"CRLF file", crlf(orig), crlf(prop), []step{{11, "gr"}}, "", "accept",
			crlf(strings.NewReplacer("two\n", "TWO\n", "five\nsix\n", "FIVE\nSIX\n").Replace(orig))},
		{"no final newline", strings.TrimSuffix(orig, "\n"), strings.TrimSuffix(prop, "\n"), []step{{11, "gr"}, {2, "gr"}}, "", "accept",
			strings.TrimSuffix(strings.NewReplacer("five\nsix\n", "FIVE\nSIX\n").Replace(orig), "\n")},
		{"off a change nothing happens", orig, prop, []step{{3, "gr"}, {4, "ga"}}, "hunk –/3 · 0 accepted · 0 rejected", "accept", prop},
		{"large file", big.String(), bigProp.String(), []step{{3000, "gr"}, {10, "ga"}}, "1 accepted · 1 rejected", "accept", bigWant.String()},
		{"new file, rejected", "", "a\nb\n", []step{{1, "gr"}}, "no changes left · 1 rejected", "reject", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startDiffEnv(t, diffEnvOpts{})
			path := filepath.Join(e.Dir, "h.txt")
			if tt.orig != "" {
				if err := os.WriteFile(path, []byte(tt.orig), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, v := e.open(t, path, tt.prop)
			for _, s := range tt.steps {
				lua := `local buf, line, keys = ...
local win = vim.fn.win_findbuf(buf)[1]
vim.api.nvim_set_current_win(win)
if line > 0 then vim.api.nvim_win_set_cursor(win, { line, 0 }) end
if keys == "undo" or keys == "redo" then vim.cmd(keys) vim.cmd("doautocmd TextChanged")
elseif keys:find("^vim%.") then assert(loadstring(keys))()
else vim.api.nvim_feedkeys(keys, "mx", false) end`
				e.Exec(t, lua, v.ProposalBuf, s.line, s.keys)
			}
			if tt.counter != "" {
				var bar string
				e.Eval(t, `local buf = ... local win = vim.fn.win_findbuf(buf)[1]
if vim.fn.has("nvim-0.8") == 0 then return require("claude.hunks").counter(require("claude.diff")._get(buf)) end
-- what the bar shows, in a pane wide enough for the whole counter
vim.api.nvim_win_set_width(win, 170)
return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str`, &bar, v.ProposalBuf)
				if !strings.Contains(bar, tt.counter) {
					t.Errorf("counter %q, want %q", bar, tt.counter)
				}
			}
			e.Exec(t, `local buf = ... vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1]) vim.cmd("write")`, v.ProposalBuf)
			d := e.decision(t)
			if d.Decision != tt.decision {
				t.Fatalf("decision %q, want %q", d.Decision, tt.decision)
			}
			if tt.decision == "accept" && (d.Contents == nil || *d.Contents != tt.contents) {
				got := "<nil>"
				if d.Contents != nil {
					got = *d.Contents
				}
				t.Fatalf("accepted %q, want %q", got, tt.contents)
			}
			e.waitClosed(t, v)
		})
	}
}

// Neovim 0.11 maps grn, grr, gra … globally: in the proposal buffer the hunk
// keys must not wait 'timeoutlen' for them (nowait), while in the user's own
// buffer those mappings go on working (no nowait there).
func TestDiffHunkKeysDoNotWait(t *testing.T) {
	e := startDiffEnv(t, diffEnvOpts{})
	e.Exec(t, `vim.keymap.set("n", "grn", "<Nop>") vim.keymap.set("n", "gaX", "<Nop>")`)
	_, v := e.open(t, e.file, strings.Replace(diffText, "twelve", "TWELVE", 1))
	var got map[string]int
	e.Eval(t, `local p, o = ...
local function nowait(buf, lhs)
  return vim.api.nvim_buf_call(buf, function() return vim.fn.maparg(lhs, "n", false, true).nowait or -1 end)
end
return { prop_gr = nowait(p, "gr"), prop_ga = nowait(p, "ga"), orig_gr = nowait(o, "gr"), orig_ga = nowait(o, "ga") }`,
		&got, v.ProposalBuf, v.OriginalBuf)
	want := map[string]int{"prop_gr": 1, "prop_ga": 1, "orig_gr": 0, "orig_ga": 0}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: nowait = %d, want %d (all: %v)", k, got[k], w, got)
		}
	}
}
