//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests drive the real host (started by the plugin) with stand-in
// CLIs on real sockets: the decisions travel Lua → rpcnotify on the job's
// channel → host → the right connection.

type diffRig struct {
	*editor
	st    status
	token string
	dir   string
}

func startDiffRig(t *testing.T) *diffRig {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "a1\na2\n", "b.txt": "b1\nb2\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := startEditor(t, editorOpts{dir: dir})
	st := e.serve(t)
	e.Exec(t, `vim.cmd("edit a.txt")`)
	return &diffRig{editor: e, st: st, token: readLock(t, st.LockFile).AuthToken, dir: dir}
}

func (r *diffRig) cli(t *testing.T, pid int) *ideClient {
	t.Helper()
	c := dialIDE(t, r.st.Port, r.token)
	c.handshake(t, pid)
	return c
}

func diffOpenMsg(id int, path, tab, contents string) string {
	args, _ := json.Marshal(map[string]string{"old_file_path": path, "new_file_path": path, "new_file_contents": contents, "tab_name": tab})
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"openDiff","arguments":%s}}`, id, args)
}

// diffTexts is the text items of a tool result frame.
func diffTexts(t *testing.T, frame map[string]any) []string {
	t.Helper()
	res, ok := frame["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", frame)
	}
	var out []string
	for _, c := range res["content"].([]any) {
		out = append(out, c.(map[string]any)["text"].(string))
	}
	return out
}

func (r *diffRig) waitPending(t *testing.T, n int) {
	t.Helper()
	r.WaitFor(t, 10*time.Second, fmt.Sprintf(`#require("claude.diff").pending() == %d`, n),
		`return require("claude.diff").pending()`, fmt.Sprintf("%d pending diffs", n))
}

// decideIn runs cmd with the cursor in the proposal of the diff named tab.
func (r *diffRig) decideIn(t *testing.T, tab, cmd string) {
	t.Helper()
	r.Exec(t, `local tab, cmd = ...
for _, d in ipairs(require("claude.diff").pending()) do
  if d.tab_name == tab then
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(d.proposal_bufnr)[1])
    vim.cmd(cmd)
    return
  end
end
error("no diff " .. tab)`, tab, cmd)
}

// Two CLIs, one diff each (with the same request id): each is answered on
// its own connection.
func TestDiffTwoCLIs(t *testing.T) {
	r := startDiffRig(t)
	c1, c2 := r.cli(t, 4242), r.cli(t, 4343)
	a, b := filepath.Join(r.dir, "a.txt"), filepath.Join(r.dir, "b.txt")
	c1.send(t, diffOpenMsg(7, a, "✻ [Claude Code] a.txt (1) ⧉", "a1\nA2\n"))
	c2.send(t, diffOpenMsg(7, b, "✻ [Claude Code] b.txt (2) ⧉", "B1\nb2\n"))
	r.waitPending(t, 2)

	r.decideIn(t, "✻ [Claude Code] b.txt (2) ⧉", "write")
	if got := diffTexts(t, c2.recv(t, 7)); len(got) != 2 || got[0] != "FILE_SAVED" || got[1] != "B1\nb2\n" {
		t.Fatalf("CLI 2 got %q", got)
	}
	r.waitPending(t, 1)
	r.decideIn(t, "✻ [Claude Code] a.txt (1) ⧉", "quit")
	if got := diffTexts(t, c1.recv(t, 7)); len(got) != 1 || got[0] != "DIFF_REJECTED" {
		t.Fatalf("CLI 1 got %q", got)
	}
	r.waitPending(t, 0)
	for _, f := range []string{a, b} {
		if got, _ := os.ReadFile(f); !strings.Contains(string(got), "1\n") || strings.ContainsAny(string(got), "AB") {
			t.Fatalf("%s was written: %q", f, got)
		}
	}
}

// A CLI that disconnects while its diff is pending: the diff closes, the
// layout is back, and another CLI's diff stays.
func TestDiffDisconnectWhilePending(t *testing.T) {
	r := startDiffRig(t)
	var before string
	r.Eval(t, `return vim.fn.winrestcmd() .. vim.fn.bufname()`, &before)
	c1, c2 := r.cli(t, 4242), r.cli(t, 4343)
	c1.send(t, diffOpenMsg(1, filepath.Join(r.dir, "a.txt"), "✻ [Claude Code] a.txt (1) ⧉", "x\n"))
	r.waitPending(t, 1)
	c2.send(t, diffOpenMsg(1, filepath.Join(r.dir, "b.txt"), "✻ [Claude Code] b.txt (2) ⧉", "y\n"))
	r.waitPending(t, 2)
	_ = c1.c.Close()
	r.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 1 and require("claude.diff").pending()[1].tab_name:find("b.txt", 1, true)`,
		`return require("claude.diff").pending()`, "CLI 1's diff to close")
	r.decideIn(t, "✻ [Claude Code] b.txt (2) ⧉", "ClaudeDiffReject")
	if got := diffTexts(t, c2.recv(t, 1)); got[0] != "DIFF_REJECTED" {
		t.Fatalf("CLI 2 got %q", got)
	}
	r.waitPending(t, 0)
	r.WaitFor(t, 10*time.Second, `#vim.api.nvim_list_tabpages() == 1 and #vim.api.nvim_list_wins() == 1`, `return vim.fn.winrestcmd()`, "the layout back")
	var after string
	r.Eval(t, `return vim.fn.winrestcmd() .. vim.fn.bufname()`, &after)
	if after != before {
		t.Fatalf("layout %q, was %q", after, before)
	}
}

// :ClaudeStop with a diff open: the diff closes (nobody waits for it now).
func TestDiffClaudeStop(t *testing.T) {
	r := startDiffRig(t)
	c := r.cli(t, 4242)
	c.send(t, diffOpenMsg(1, filepath.Join(r.dir, "a.txt"), "✻ [Claude Code] a.txt (1) ⧉", "x\n"))
	r.waitPending(t, 1)
	r.Exec(t, `vim.cmd("ClaudeStop")`)
	r.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 0 and #vim.api.nvim_list_wins() == 1 and not vim.wo.diff`,
		`return require("claude.diff").pending()`, "the diff to close")
}

// TestDiffHint: a proposal says how to answer it: a winbar over the
// proposal (0.8+; a message on 0.7) with the keys as configured, first, gone
// with the diff; diff.hint = false turns it off.
func TestDiffHint(t *testing.T) {
	var v08 int
	for _, tt := range []struct {
		name, extra string
		want        string
	}{
		{"default keys", "", ":w accept · :q reject · <leader>ca accept · <leader>cr reject · ga accept hunk · gr reject hunk · ]c next change │ "},
		{"own keys", `, diff = { keymaps = { accept = "gA", reject = false, reject_hunk = false } }`, ":w accept · :q reject · gA accept · ga accept hunk · ]c next change │ "},
		{"off", `, diff = { hint = false }`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a1\na2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e := startEditor(t, editorOpts{dir: dir, extra: tt.extra})
			st := e.serve(t)
			e.Eval(t, `return vim.fn.has("nvim-0.8")`, &v08)
			e.Exec(t, `vim.cmd("edit a.txt") vim.cmd("messages clear")`)
			r := &diffRig{editor: e, st: st, token: readLock(t, st.LockFile).AuthToken, dir: dir}
			c := r.cli(t, 4242)
			c.send(t, diffOpenMsg(3, filepath.Join(dir, "a.txt"), "✻ [Claude Code] a.txt (1) ⧉", "a1\nA2\n"))
			r.waitPending(t, 1)
			var got struct {
				Winbar   string `json:"winbar"`
				Messages string `json:"messages"`
				Others   int    `json:"others"`
			}
			// the 0.7 message is scheduled: let it run
			e.Exec(t, `vim.wait(50)`)
			// (the bar as drawn, in a pane wide enough for all of it)
			e.Eval(t, `local d = require("claude.diff").pending()[1]
local w = vim.fn.win_findbuf(d.proposal_bufnr)[1]
local own = vim.fn.win_findbuf(d.original_bufnr)[1]
local others, bar = 0, ""
for _, x in ipairs(vim.api.nvim_list_wins()) do
  if x ~= w and x ~= own and vim.fn.has("nvim-0.8") == 1 and vim.wo[x].winbar ~= "" then others = others + 1 end
end
if vim.fn.has("nvim-0.8") == 1 and vim.wo[w].winbar ~= "" then
  vim.api.nvim_win_set_width(w, vim.o.columns - 10)
  bar = vim.api.nvim_eval_statusline(vim.wo[w].winbar, { winid = w, use_winbar = true }).str
end
return { winbar = bar, messages = vim.fn.execute("messages"), others = others }`, &got)
			shown := got.Winbar
			if v08 == 0 {
				shown = got.Messages
			}
			if tt.want == "" {
				if strings.Contains(shown, "Claude's proposal") {
					t.Errorf("hint shown with diff.hint = false: %q", shown)
				}
			} else if !strings.Contains(shown, tt.want) {
				t.Errorf("hint %q, want it to contain %q", shown, tt.want)
			}
			if got.Others != 0 {
				t.Errorf("%d other windows got a winbar", got.Others)
			}
			r.decideIn(t, "✻ [Claude Code] a.txt (1) ⧉", "quit")
			if got := diffTexts(t, c.recv(t, 3)); len(got) != 1 || got[0] != "DIFF_REJECTED" {
				t.Fatalf("got %q", got)
			}
			// (the diff closes a tick after the answer went out)
			e.WaitFor(t, 10*time.Second, `(function() for _, x in ipairs(vim.api.nvim_list_wins()) do
  if vim.fn.has("nvim-0.8") == 1 and vim.wo[x].winbar ~= "" then return false end
end return #vim.api.nvim_list_wins() == 1 end)()`,
				`return vim.tbl_map(function(x) return vim.wo[x].winbar end, vim.api.nvim_list_wins())`, "no winbar left after the diff closed")
		})
	}
}
