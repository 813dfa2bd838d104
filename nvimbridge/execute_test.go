package nvimbridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// startExecuteNvim is a Neovim with a.py in the editor window and a
// terminal marked as Claude's beside it, focused in Terminal mode; the
// notifications Lua sends come out on the returned channel.
func startExecuteNvim(t *testing.T, files map[string]string, first string) (*nvimtest.Nvim, *nvimbridge.Bridge, <-chan string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: `vim.o.columns = 120 vim.o.lines = 40
require("claude").setup({ terminal_cmd = { "cat" } })
vim.cmd("edit ` + first + ` | botright vsplit | terminal cat")
vim.b.claude_terminal = true
vim.cmd("startinsert")`})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	got := make(chan string, 16)
	for _, m := range []string{nvimbridge.ExecuteDecisionMethod, nvimbridge.KernelBufferGoneMethod} {
		m := m
		if err := b.HandleNotification(m, func(p json.RawMessage) { got <- m + " " + string(p) }); err != nil {
			t.Fatal(err)
		}
	}
	return n, b, got
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * nvimtest.Slack * time.Second):
		t.Fatal("no notification from Lua")
		return ""
	}
}

// The target is the editor's buffer even while the Claude terminal has the
// focus; a notebook names its kernel; the options come with their defaults
// and a wrong one is a clear error.
func TestExecuteTarget(t *testing.T) {
	nb := `{"cells": [], "metadata": {"kernelspec": {"name": "ir", "language": "R"}}, "nbformat": 4}`
	n, b, _ := startExecuteNvim(t, map[string]string{"a.py": "x = 1\n", "nb.ipynb": nb}, "a.py")
	ctx := context.Background()
	tgt, err := b.ExecuteTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(tgt.Name) != "a.py" || tgt.Kernel != "" || tgt.Dir != n.Dir {
		t.Fatalf("target = %+v", tgt)
	}
	n.Exec(t, `vim.cmd("wincmd t | edit nb.ipynb | wincmd l")`)
	if tgt, err = b.ExecuteTarget(ctx); err != nil || tgt.Kernel != "ir" || filepath.Base(tgt.Name) != "nb.ipynb" {
		t.Fatalf("notebook target = %+v, %v", tgt, err)
	}
}

// The float shows the code; opened while the user types in the terminal it
// leaves the focus there, and :ClaudeExecute goes to it in Normal mode;
// each key sends its decision ("always" takes a then y); closing it
// otherwise is a cancel; CloseExecuteConfirm closes it without a decision;
// focus and Terminal mode come back. (The grace for keys has its own tests
// in kernel/tool_executecode_test.go; here it is 0.)
func TestExecuteConfirmFloat(t *testing.T) {
	n, b, got := startExecuteNvim(t, map[string]string{"a.py": ""}, "a.py")
	n.Exec(t, `require("claude.config").options.execute.grace_ms = 0`)
	ctx := context.Background()
	cases := []struct {
		key, want string
	}{
		{"r", "run"}, {"<CR>", "run"}, {"ay", "always"}, {"c", "cancel"}, {"q", "cancel"}, {"<Esc>", "cancel"},
		{":close<CR>", "cancel"}, {"", ""},
	}
	for i, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			id := "exec-" + string(rune('a'+i))
			code := "for i in range(3):\n    print(i)\n"
			if err := b.ExecuteConfirm(ctx, nvimbridge.ExecuteConfirmRequest{ID: id, Code: code, Kernel: "python3", Language: "python", Bufnr: 1}); err != nil {
				t.Fatal(err)
			}
			var st struct {
				Float bool   `json:"float"`
				Mode  string `json:"mode"`
				Text  string `json:"text"`
			}
			n.WaitFor(t, 5*time.Second, `#require("claude.execute").pending() == 1`, "", "the float")
			var mode string
			n.Eval(t, `return vim.api.nvim_get_mode().mode`, &mode)
			if mode != "t" {
				t.Fatalf("the float took the focus from Terminal mode (mode %q)", mode)
			}
			n.Exec(t, `vim.cmd("ClaudeExecute")`)
			n.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "n"`, `return vim.api.nvim_get_mode()`, "Normal mode in the float")
			n.Eval(t, `return { float = vim.api.nvim_win_get_config(0).relative ~= "", mode = vim.api.nvim_get_mode().mode,
				text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") }`, &st)
			if !st.Float || !strings.Contains(st.Text, "for i in range(3):\n    print(i)") {
				t.Fatalf("the float: %+v", st)
			}
			if c.key == "" {
				if err := b.CloseExecuteConfirm(ctx, id); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := n.Input(c.key); err != nil {
					t.Fatal(err)
				}
				if s := next(t, got); s != nvimbridge.ExecuteDecisionMethod+` {"id":"`+id+`","decision":"`+c.want+`"}` &&
					s != nvimbridge.ExecuteDecisionMethod+` {"decision":"`+c.want+`","id":"`+id+`"}` {
					t.Fatalf("notification %s, want %s for %s", s, c.want, id)
				}
			}
			n.WaitFor(t, 5*time.Second, `vim.api.nvim_win_get_config(0).relative == "" and #require("claude.execute").pending() == 0`,
				`return vim.api.nvim_list_wins()`, "the float to close")
			if c.key != "" && c.key != ":close<CR>" {
				n.WaitFor(t, 5*time.Second, `vim.bo.buftype == "terminal" and vim.api.nvim_get_mode().mode == "t"`, `return vim.api.nvim_get_mode()`, "Terminal mode in the terminal again")
			}
			n.Exec(t, `vim.cmd("wincmd l | startinsert")`)
		})
	}
	select {
	case s := <-got:
		t.Fatalf("unexpected notification: %s", s)
	default:
	}
}

// The float takes the focus only from Normal mode; from Terminal, Insert,
// Visual and Command-line mode it opens unfocused and says how to reach
// it. Keys typed within the grace (here 2 s) after it is drawn or entered
// are swallowed, whatever they are, and the float says so.
func TestExecuteConfirmFocusAndGrace(t *testing.T) {
	cases := []struct {
		name    string
		setup   string // Lua putting the user in a mode
		mode    string // nvim_get_mode().mode then
		focused bool
	}{
		{"terminal", `vim.cmd("wincmd l | startinsert")`, "t", false},
		{"insert", `vim.cmd("wincmd t | startinsert")`, "i", false},
		{"visual", `vim.cmd("wincmd t") vim.api.nvim_input("v")`, "v", false},
		{"cmdline", `vim.cmd("wincmd t") vim.api.nvim_input(":")`, "c", false},
		{"normal", `vim.cmd("wincmd t")`, "n", true},
		{"terminal normal", `vim.cmd("wincmd l")`, "nt", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, b, got := startExecuteNvim(t, map[string]string{"a.py": "x = 1\n"}, "a.py")
			n.Exec(t, `vim.cmd("stopinsert | wincmd t") require("claude.config").options.execute.grace_ms = 2000
				_G.notes = {} vim.notify = function(msg) table.insert(_G.notes, msg) end`)
			n.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "n"`, `return vim.api.nvim_get_mode()`, "Normal mode")
			n.Exec(t, c.setup)
			n.WaitFor(t, 5*time.Second, `vim.api.nvim_get_mode().mode == "`+c.mode+`"`, `return vim.api.nvim_get_mode()`, c.mode+" mode")
			if err := b.ExecuteConfirm(context.Background(), nvimbridge.ExecuteConfirmRequest{ID: "exec-1", Code: "print(1)", Kernel: "python3", Bufnr: 1}); err != nil {
				t.Fatal(err)
			}
			var st struct {
				InFloat bool     `json:"inFloat"`
				Mode    string   `json:"mode"`
				Notes   []string `json:"notes"`
			}
			n.Eval(t, `return { inFloat = vim.api.nvim_win_get_config(0).relative ~= "", mode = vim.api.nvim_get_mode().mode, notes = _G.notes }`, &st)
			wantMode := c.mode
			if c.focused {
				wantMode = "n" // in the float
			}
			if st.InFloat != c.focused || st.Mode != wantMode {
				t.Fatalf("after the float opened: %+v, want focused=%v", st, c.focused)
			}
			if !c.focused {
				n.WaitFor(t, 5*time.Second, `#_G.notes > 0 and _G.notes[1]:find(":ClaudeExecute", 1, true) ~= nil`, `return _G.notes`, "a note naming :ClaudeExecute")
				if _, err := n.Input("<Esc>"); err != nil {
					t.Fatal(err)
				}
				n.Exec(t, `require("claude.execute").focus()`)
			}
			// Keys at typing pace inside the grace: nothing answers, nothing
			// leaves the float.
			for _, k := range []string{"r", "a", "y", "<CR>", "<C-w>", "w", ":", "q", "<CR>", "<Esc>"} {
				if _, err := n.Input(k); err != nil {
					t.Fatal(err)
				}
				time.Sleep(80 * time.Millisecond)
			}
			var after struct {
				InFloat bool     `json:"inFloat"`
				Mode    string   `json:"mode"`
				Pending []string `json:"pending"`
				Prompt  string   `json:"prompt"`
			}
			n.Eval(t, `return { inFloat = vim.api.nvim_win_get_config(0).relative ~= "", mode = vim.api.nvim_get_mode().mode,
				pending = require("claude.execute").pending(), prompt = vim.b.claude_execute_prompt or "" }`, &after)
			if !after.InFloat || after.Mode != "n" || len(after.Pending) != 1 || !strings.Contains(after.Prompt, "Keys ignored") {
				t.Fatalf("keys typed in the grace: %+v", after)
			}
			select {
			case s := <-got:
				t.Fatalf("keys in the grace answered: %s", s)
			default:
			}
		})
	}
}

// Deleting or wiping a buffer with a kernel tells the host.
func TestWatchKernelBuffer(t *testing.T) {
	for _, cmd := range []string{"bdelete!", "bwipeout!"} {
		t.Run(cmd, func(t *testing.T) {
			n, b, got := startExecuteNvim(t, map[string]string{"a.py": "", "b.py": ""}, "a.py")
			var buf int
			n.Eval(t, `return vim.fn.bufnr("a.py")`, &buf)
			if err := b.WatchKernelBuffer(context.Background(), buf); err != nil {
				t.Fatal(err)
			}
			// Watching twice sends one notification.
			if err := b.WatchKernelBuffer(context.Background(), buf); err != nil {
				t.Fatal(err)
			}
			n.Exec(t, `vim.cmd("wincmd t | edit b.py | `+cmd+` a.py")`)
			want := nvimbridge.KernelBufferGoneMethod + ` {"bufnr":` + itoa(buf) + `}`
			if s := next(t, got); s != want {
				t.Fatalf("notification %q, want %q", s, want)
			}
			select {
			case s := <-got:
				if cmd == "bdelete!" {
					t.Fatalf("a second notification: %s", s)
				}
			case <-time.After(300 * time.Millisecond): // a failure guard only: none is expected
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// A confirmation that takes long to open — a slow FileType handler, Neovim
// busy for longer than the host waited — is closed by the close the host
// sends after giving up, however late Neovim reaches it: a cleanup carries
// no deadline. Before, the close had expired by then and the float stayed
// open for good.
func TestExecuteConfirmClosedWhenReachedLate(t *testing.T) {
	n, b, _ := startExecuteNvim(t, map[string]string{"a.py": ""}, "a.py")
	n.Exec(t, `vim.api.nvim_create_autocmd("FileType", { pattern = "python", callback = function()
		local t = vim.loop.hrtime() while vim.loop.hrtime() - t < 1.5e9 do end
	end })`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.ExecuteConfirm(ctx, nvimbridge.ExecuteConfirmRequest{ID: "late", Code: "x", Kernel: "python3", Language: "python", Bufnr: 1}); err == nil {
		// The float's filetype was set without its FileType handler
		// running on this line (0.7): nothing was slow to clean up after.
		t.Skip("opening the confirmation ran no FileType handler on this Neovim line")
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer ccancel()
	_ = b.CloseExecuteConfirm(cctx, "late") // abandoned too: Neovim is still opening
	n.WaitFor(t, 5*time.Second, `(function()
		for _, w in ipairs(vim.api.nvim_list_wins()) do
			if vim.api.nvim_win_get_config(w).relative ~= "" then return false end
		end
		return true end)()`, "", "the late confirmation float to be closed")
}
