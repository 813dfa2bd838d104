//go:build unix

package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// The executeCode tests run a real Jupyter kernel (Debian's
// python3-ipykernel and python3-jupyter-client; scripts/install-jupyter)
// behind a real Neovim, as the CLI would: the handler, the confirmation
// float driven with nvim_input, the kernel helper.

// tinyPNG is a 1x1 PNG.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// requireJupyter skips nothing: a machine without the packages fails the
// test with the command that installs them (make test runs it).
func requireJupyter(t *testing.T) {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import jupyter_client, ipykernel").Run() == nil {
			return
		}
	}
	t.Fatal("no Python with jupyter_client and ipykernel: run scripts/install-jupyter (apt-get install " + jupyterPackagesDebian + ")")
}

// execHarness is a real Neovim (analysis.py in the editor window, a
// terminal standing in for Claude's), an App on a Bridge to it, and the
// execute component on that App.
type execHarness struct {
	*nvimtest.Nvim
	app *core.App
	k   *Kernels
	dir string
}

func startExecHarness(t *testing.T, executeOpts string, files map[string]string) *execHarness {
	t.Helper()
	requireJupyter(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if files == nil {
		files = map[string]string{"analysis.py": "# %%\nx = 1\n"}
	}
	first := ""
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if first == "" || name < first {
			first = name
		}
	}
	if !strings.Contains(executeOpts, "grace_ms") {
		// Most tests answer at once; the grace has tests of its own.
		executeOpts = "grace_ms = 0, " + executeOpts
	}
	init := `vim.o.columns = 160 vim.o.lines = 40
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({ terminal_cmd = { "cat" }, execute = { ` + executeOpts + ` } })
vim.cmd("edit ` + first + `")
vim.cmd("botright vsplit | terminal cat")
vim.b.claude_terminal = true
vim.cmd("startinsert")`
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	var k *Kernels
	app := core.New(core.Options{Editor: b, Features: func(h host.Host) []host.Feature {
		k = New(h, b)
		return []host.Feature{k}
	}})
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	// What Lua sends when it starts the host: the options as setup() made them.
	k.setOptions(*testkit.LuaOptions(t, n))
	return &execHarness{Nvim: n, app: app, k: k, dir: dir}
}

// call runs executeCode for client "cli-1" and returns its result.
func (h *execHarness) call(t *testing.T, ctx context.Context, code string) *mcp.ToolResult {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": code})
	res, err := h.k.executeCode(ctx, &mcp.ToolRequest{Client: mcp.ClientInfo{ID: "cli-1"}, Name: "executeCode", Arguments: args})
	if err != nil {
		t.Fatalf("executeCode(%q): %v", code, err)
	}
	return res
}

// callAsync runs executeCode on a goroutine; the result arrives on the
// channel (nil when the handler returned an error).
func (h *execHarness) callAsync(ctx context.Context, code string) <-chan *mcp.ToolResult {
	out := make(chan *mcp.ToolResult, 1)
	args, _ := json.Marshal(map[string]string{"code": code})
	go func() {
		res, err := h.k.executeCode(ctx, &mcp.ToolRequest{Client: mcp.ClientInfo{ID: "cli-1"}, Arguments: args})
		if err != nil {
			res = nil
		}
		out <- res
	}()
	return out
}

func wait(t *testing.T, ch <-chan *mcp.ToolResult) *mcp.ToolResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(120 * time.Second):
		t.Fatal("executeCode did not return")
		return nil
	}
}

// texts is the result's text items joined.
func texts(r *mcp.ToolResult) string {
	var sb strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			sb.WriteString(c.Text)
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func images(r *mcp.ToolResult) []mcp.Content {
	var out []mcp.Content
	for _, c := range r.Content {
		if c.Type == "image" {
			out = append(out, c)
		}
	}
	return out
}

// kernelPID is the pid of the kernel of the buffer named name.
func (h *execHarness) kernelPID(t *testing.T) int {
	t.Helper()
	h.k.mu.Lock()
	defer h.k.mu.Unlock()
	for _, b := range h.k.bufs {
		if b.proc != nil {
			return b.proc.pid()
		}
	}
	return 0
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie is gone for our purposes.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for pidAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// State kept between calls, a PNG comes back as an image item,
// an exception returns the traceback, an infinite loop hits the timeout and
// the kernel survives with its state; stdout, stderr and results in order.
func TestExecuteCodeRuns(t *testing.T) {
	h := startExecHarness(t, `confirm = false, timeout_ms = 3000`, nil)
	ctx := context.Background()
	steps := []struct {
		name     string
		code     string
		want     []string // in the text items, in this order
		notWant  []string
		isError  bool
		wantPNG  bool
		wantText int // number of text items, when > 0
	}{
		{name: "define", code: "x = 41\nimport sys", want: []string{"(the code ran and printed nothing)"}},
		{name: "state kept", code: "print('x is', x)\nprint('oops', file=sys.stderr)\nx + 1",
			want: []string{"x is 41\n", "[stderr]\noops\n", "42\n"}, wantText: 3},
		{name: "png", code: "import base64\nfrom IPython.display import Image, display\n" +
			"display(Image(data=base64.b64decode('" + tinyPNG + "')))\nprint('shown')", want: []string{"shown"}, wantPNG: true},
		{name: "traceback", code: "def f():\n    return 1 / 0\nf()",
			want: []string{"ZeroDivisionError", "----> 3 f()", "return 1 / 0"}, notWant: []string{"\x1b["}, isError: true},
		{name: "timeout", code: "print('looping', flush=True)\nwhile True:\n    pass",
			want: []string{"looping", "Execution timed out after 3s (execute.timeout_ms = 3000): the kernel was interrupted"}, isError: true},
		{name: "kernel survives", code: "x * 2", want: []string{"82\n"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := h.call(t, ctx, s.code)
			text := texts(r)
			if r.IsError != s.isError {
				t.Fatalf("isError = %v, want %v; result:\n%s", r.IsError, s.isError, text)
			}
			at := 0
			for _, w := range s.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("result lacks %q (after offset %d):\n%s", w, at, text)
				}
				at += i + len(w)
			}
			for _, w := range s.notWant {
				if strings.Contains(text, w) {
					t.Fatalf("result has %q:\n%s", w, text)
				}
			}
			imgs := images(r)
			if s.wantPNG {
				if len(imgs) != 1 || imgs[0].MimeType != "image/png" || imgs[0].Data != tinyPNG {
					t.Fatalf("want the PNG as an image item, got %+v", r.Content)
				}
			} else if len(imgs) != 0 {
				t.Fatalf("unexpected images: %+v", imgs)
			}
			if s.wantText > 0 && len(r.Content) != s.wantText {
				t.Fatalf("want %d items, got %+v", s.wantText, r.Content)
			}
		})
	}
}

// The output cap keeps the head of the text and says how much was cut.
func TestExecuteCodeOutputCap(t *testing.T) {
	h := startExecHarness(t, `confirm = false, max_output = 100`, nil)
	r := h.call(t, context.Background(), "print('a' * 5000)")
	text := texts(r)
	if !strings.Contains(text, strings.Repeat("a", 100)) || strings.Contains(text, strings.Repeat("a", 101)) {
		t.Fatalf("the output is not cut at 100 characters:\n%.300s", text)
	}
	if !strings.Contains(text, "[output truncated: 4901 more characters not shown (execute.max_output = 100)]") {
		t.Fatalf("no truncation note:\n%.400s", text)
	}
}

// floatOpen waits for the confirmation float, goes to it as the user does
// from the terminal (:ClaudeExecute), and returns its text.
func (h *execHarness) floatOpen(t *testing.T) string {
	t.Helper()
	h.WaitFor(t, 30*time.Second, `#require("claude.execute").pending() > 0`, "", "the confirmation float")
	h.Exec(t, `vim.cmd("ClaudeExecute")`)
	var text string
	h.Eval(t, `local w = vim.api.nvim_get_current_win()
		if vim.api.nvim_win_get_config(w).relative == "" then return "not focused" end
		return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")`, &text)
	return text
}

// Before anything runs the user sees the code in a float and
// answers with r/<CR> (run), a (always for this CLI session) or c/<Esc>/q
// (cancel → the declined error). Nothing runs on cancel: not even the
// kernel starts.
func TestExecuteCodeConfirm(t *testing.T) {
	cases := []struct {
		key      string
		declined bool
	}{
		{"c", true}, {"<Esc>", true}, {"q", true}, {"r", false}, {"<CR>", false},
	}
	h := startExecHarness(t, ``, nil)
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			code := fmt.Sprintf("print('ran with %s')", c.key)
			ch := h.callAsync(ctx, code)
			if text := h.floatOpen(t); !strings.Contains(text, code) {
				t.Fatalf("the float does not show the code:\n%s", text)
			}
			if _, err := h.Input(c.key); err != nil {
				t.Fatal(err)
			}
			r := wait(t, ch)
			if r == nil {
				t.Fatal("executeCode failed")
			}
			if c.declined {
				if !r.IsError || texts(r) != declinedMessage+"\n" {
					t.Fatalf("want the declined error, got %+v", r)
				}
				if pid := h.kernelPID(t); c.key == "c" && pid != 0 {
					t.Fatalf("a kernel started though the user declined (pid %d)", pid)
				}
			} else if r.IsError || !strings.Contains(texts(r), "ran with "+c.key) {
				t.Fatalf("want the output, got %+v", r)
			}
			// The float is gone and the focus is back in the terminal.
			var st struct {
				Floats  int  `json:"floats"`
				Term    bool `json:"term"`
				Pending int  `json:"pending"`
			}
			h.Eval(t, `local n = 0
				for _, w in ipairs(vim.api.nvim_list_wins()) do if vim.api.nvim_win_get_config(w).relative ~= "" then n = n + 1 end end
				return { floats = n, term = vim.bo.buftype == "terminal", pending = #require("claude.execute").pending() }`, &st)
			if st.Floats != 0 || !st.Term || st.Pending != 0 {
				t.Fatalf("after the answer: %+v", st)
			}
		})
	}

	t.Run("always", func(t *testing.T) {
		ch := h.callAsync(ctx, "y = 7")
		h.floatOpen(t)
		if _, err := h.Input("ay"); err != nil { // always, then yes
			t.Fatal(err)
		}
		if r := wait(t, ch); r == nil || r.IsError {
			t.Fatalf("first run: %+v", r)
		}
		// No float now: the next call runs at once.
		r := h.call(t, ctx, "y * 6")
		if !strings.Contains(texts(r), "42") {
			t.Fatalf("second run: %+v", r)
		}
		// A new CLI session asks again.
		h.k.clientDisconnected(mcp.ClientInfo{ID: "cli-1"})
		ch = h.callAsync(ctx, "y")
		h.floatOpen(t)
		if _, err := h.Input("c"); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, ch); r == nil || !r.IsError {
			t.Fatalf("after the disconnect: %+v", r)
		}
	})

	t.Run("closed with :close", func(t *testing.T) {
		ch := h.callAsync(ctx, "print(1)")
		h.floatOpen(t)
		h.Exec(t, `vim.cmd("close")`)
		if r := wait(t, ch); r == nil || texts(r) != declinedMessage+"\n" {
			t.Fatalf("want the declined error, got %+v", r)
		}
	})

	t.Run("CLI cancels", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		ch := h.callAsync(cctx, "print(1)")
		h.floatOpen(t)
		cancel()
		if r := wait(t, ch); r != nil {
			t.Fatalf("want the cancelled request to end without a result, got %+v", r)
		}
		h.WaitFor(t, 10*time.Second, `#require("claude.execute").pending() == 0 and vim.api.nvim_win_get_config(0).relative == ""`, "", "the float to close")
	})
}

// No Python with the Jupyter packages: a clear error naming them.
func TestExecuteCodeNoJupyter(t *testing.T) {
	dir := t.TempDir()
	noSite := filepath.Join(dir, "python-nosite")
	// -S hides dist-packages: a Python without jupyter_client.
	if err := os.WriteFile(noSite, []byte("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		python string
		want   string
	}{
		{noSite, noSite + ": no module jupyter_client"},
		{filepath.Join(dir, "missing-python"), filepath.Join(dir, "missing-python") + ": not found"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.python), func(t *testing.T) {
			h := startExecHarness(t, fmt.Sprintf(`confirm = false, python = %q`, c.python), nil)
			r := h.call(t, context.Background(), "1")
			text := texts(r)
			for _, w := range []string{c.want, "apt-get install python3-ipykernel python3-jupyter-client", "pip install ipykernel jupyter_client", "execute.python"} {
				if !r.IsError || !strings.Contains(text, w) {
					t.Fatalf("want an error with %q, got %+v", w, r)
				}
			}
		})
	}
}

// A notebook's metadata names its kernel: a kernel that is not installed
// is a clear error listing the installed ones; python3 runs.
func TestExecuteCodeNotebookKernel(t *testing.T) {
	nb := func(kernel string) string {
		return `{"cells": [], "metadata": {"kernelspec": {"name": "` + kernel + `", "display_name": "K", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}`
	}
	h := startExecHarness(t, `confirm = false`, map[string]string{"a.ipynb": nb("no-such-kernel"), "b.ipynb": nb("python3")})
	r := h.call(t, context.Background(), "1")
	if !r.IsError || !strings.Contains(texts(r), "no Jupyter kernel named 'no-such-kernel' is installed (installed: ") {
		t.Fatalf("want the missing kernel error, got %+v", r)
	}
	h.Exec(t, `vim.cmd("wincmd t | edit b.ipynb")`)
	r = h.call(t, context.Background(), "import os; print(os.getcwd())")
	if r.IsError || !strings.Contains(texts(r), h.dir) {
		t.Fatalf("want the notebook's kernel in its directory, got %+v", r)
	}
}

// :ClaudeKernel restart | interrupt | stop | status, and the kernel stops
// with its buffer and with the host.
func TestKernelLifecycle(t *testing.T) {
	h := startExecHarness(t, `confirm = false, timeout_ms = 0`, map[string]string{"a.py": "", "b.py": ""})
	ctx := context.Background()
	command := func(action string) string {
		t.Helper()
		var msg string
		h.Eval(t, `vim.cmd("wincmd t") local r = require("claude.execute").kernel(...) return r and r.message or ""`, &msg, action)
		return msg
	}
	// :ClaudeKernel needs the host's channel: in this harness the Lua side
	// talks to the test's Bridge, so point claude.server at it, handshake
	// done (the Bridge answers no options request: a request would
	// otherwise handshake first, find no version and stop the "host").
	h.Exec(t, `local chans = vim.api.nvim_list_chans()
		local st = require("claude.server").state()
		for _, c in ipairs(chans) do if c.mode == "rpc" then st.chan = c.id end end
		st.handshaken = true`)

	if got := command("status"); !strings.Contains(got, "no kernel is running") {
		t.Fatalf("status before: %q", got)
	}
	if got := command("restart"); !strings.Contains(got, "no kernel runs for this buffer") {
		t.Fatalf("restart without a kernel: %q", got)
	}
	h.call(t, ctx, "z = 5")
	pid := h.kernelPID(t)
	if !pidAlive(pid) {
		t.Fatalf("no kernel process (pid %d)", pid)
	}
	if got := command("status"); !strings.Contains(got, "the python3 kernel of a.py") {
		t.Fatalf("status: %q", got)
	}

	t.Run("interrupt", func(t *testing.T) {
		res := h.callAsync(ctx, "import time\nprint('sleeping', flush=True)\ntime.sleep(600)")
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := command("interrupt")
			if strings.Contains(got, "interrupted the run") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("interrupt: %q", got)
			}
			time.Sleep(200 * time.Millisecond)
		}
		r := wait(t, res)
		if r == nil || !r.IsError || !strings.Contains(texts(r), "The user interrupted the execution") {
			t.Fatalf("interrupted run: %+v", r)
		}
		if r := h.call(t, ctx, "z"); !strings.Contains(texts(r), "5") {
			t.Fatalf("state after interrupt: %+v", r)
		}
	})

	t.Run("restart", func(t *testing.T) {
		if got := command("restart"); !strings.Contains(got, "restarted the python3 kernel of a.py") {
			t.Fatalf("restart: %q", got)
		}
		r := h.call(t, ctx, "z")
		if !r.IsError || !strings.Contains(texts(r), "NameError") {
			t.Fatalf("z after restart: %+v", r)
		}
	})

	t.Run("stop", func(t *testing.T) {
		pid := h.kernelPID(t)
		if got := command("stop"); !strings.Contains(got, "stopped the python3 kernel of a.py") {
			t.Fatalf("stop: %q", got)
		}
		waitDead(t, pid, "the stopped kernel")
		if r := h.call(t, ctx, "print('again')"); r.IsError || !strings.Contains(texts(r), "again") {
			t.Fatalf("a run after stop: %+v", r)
		}
	})

	t.Run("buffer deleted", func(t *testing.T) {
		pid := h.kernelPID(t)
		h.Exec(t, `vim.cmd("wincmd t | edit b.py | bwipeout! a.py")`)
		waitDead(t, pid, "the kernel of the wiped buffer")
	})

	t.Run("host exits", func(t *testing.T) {
		h.call(t, ctx, "1")
		pid := h.kernelPID(t)
		if !pidAlive(pid) {
			t.Fatal("no kernel for b.py")
		}
		h.k.close()
		waitDead(t, pid, "the kernel after close")
	})
}

// typeAtPace feeds keys to Neovim one by one, gap apart, as a person types.
func (h *execHarness) typeAtPace(t *testing.T, keys []string, gap time.Duration) {
	t.Helper()
	for _, k := range keys {
		if _, err := h.Input(k); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(gap)
	}
}

// confirmState is what the user sees of a confirmation.
type confirmState struct {
	Pending int    `json:"pending"`
	Focused bool   `json:"focused"` // the current window is the float
	Term    bool   `json:"term"`    // the current buffer is the terminal
	Footer  string `json:"footer"`  // the float's hint (footer, or last line before 0.10)
	Typed   string `json:"typed"`   // the terminal's text
}

func (h *execHarness) confirmState(t *testing.T) confirmState {
	t.Helper()
	var st confirmState
	h.Eval(t, `local ex = require("claude.execute")
		local st = { pending = #ex.pending(), typed = "", footer = "" }
		st.focused = vim.api.nvim_win_get_config(0).relative ~= ""
		st.term = vim.bo.buftype == "terminal"
		for _, w in ipairs(vim.api.nvim_list_wins()) do
			local b = vim.api.nvim_win_get_buf(w)
			if vim.bo[b].buftype == "terminal" then
				st.typed = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
			end
			local c = vim.api.nvim_win_get_config(w)
			if c.relative ~= "" then
				if c.footer then
					for _, chunk in ipairs(type(c.footer) == "table" and c.footer or { { c.footer } }) do st.footer = st.footer .. chunk[1] end
				else
					local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
					st.footer = lines[#lines] or ""
				end
			end
		end
		return st`, &st)
	return st
}

// With the focus in the Claude terminal, the user types
// `ls -la<CR>` at a normal pace while an executeCode request arrives. The
// float must not take the focus, the terminal must get every key, and
// nothing runs until the user goes to the float and presses a key after
// the grace.
func TestExecuteConsentCannotBeTypedAhead(t *testing.T) {
	h := startExecHarness(t, `grace_ms = 400`, nil)
	ctx := context.Background()
	keys := []string{"l", "s", " ", "-", "l", "a", "<CR>"}
	typed := make(chan struct{})
	go func() {
		defer close(typed)
		h.typeAtPace(t, keys, 90*time.Millisecond)
	}()
	time.Sleep(150 * time.Millisecond) // the request arrives mid-word
	ch := h.callAsync(ctx, "print('ran it')")
	<-typed
	h.WaitFor(t, 30*time.Second, `#require("claude.execute").pending() > 0`, "", "the confirmation float")
	h.WaitFor(t, 10*time.Second, `(function() for _, w in ipairs(vim.api.nvim_list_wins()) do local b = vim.api.nvim_win_get_buf(w) if vim.bo[b].buftype == "terminal" and table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find("ls %-la") then return true end end return false end)()`,
		"", "the terminal to echo what was typed")
	st := h.confirmState(t)
	if st.Pending != 1 || st.Focused || !st.Term {
		t.Fatalf("while typing in the terminal: %+v (want one confirmation waiting, the focus kept in the terminal)", st)
	}
	select {
	case r := <-ch:
		t.Fatalf("the code ran (or ended) without a deliberate answer: %+v", r)
	default:
	}
	var notes string
	h.Eval(t, `return vim.inspect(_G.notes)`, &notes)
	if !strings.Contains(notes, ":ClaudeExecute") {
		t.Errorf("the user was not told how to reach the float: %s", notes)
	}

	// The user goes to it; a key at once is too soon, one after a pause runs.
	h.Exec(t, `vim.cmd("ClaudeExecute")`)
	if _, err := h.Input("r"); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, 10*time.Second, `(function() local c = vim.api.nvim_win_get_config(0) local f = c.footer and vim.inspect(c.footer) or table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), " ") return f:find("too soon") ~= nil end)()`,
		"", "the float to say the key came too soon")
	if st := h.confirmState(t); st.Pending != 1 {
		t.Fatalf("a key pressed at once answered: %+v", st)
	}
	time.Sleep(800 * time.Millisecond)
	if _, err := h.Input("r"); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, ch); r == nil || r.IsError || !strings.Contains(texts(r), "ran it") {
		t.Fatalf("the deliberate run: %+v", r)
	}
	if st := h.confirmState(t); !st.Term {
		t.Errorf("the focus did not go back to the terminal: %+v", st)
	}
}

// "Always" takes two deliberate keys, and holds for one CLI connection only.
func TestExecuteAlwaysIsTwoStepsAndPerConnection(t *testing.T) {
	h := startExecHarness(t, `grace_ms = 300`, nil)
	ctx := context.Background()
	pause := func() { time.Sleep(700 * time.Millisecond) }
	call := func(client, code string) <-chan *mcp.ToolResult {
		out := make(chan *mcp.ToolResult, 1)
		args, _ := json.Marshal(map[string]string{"code": code})
		go func() {
			res, err := h.k.executeCode(ctx, &mcp.ToolRequest{Client: mcp.ClientInfo{ID: client}, Arguments: args})
			if err != nil {
				res = nil
			}
			out <- res
		}()
		return out
	}
	press := func(k string) {
		t.Helper()
		pause()
		if _, err := h.Input(k); err != nil {
			t.Fatal(err)
		}
	}

	// "a" alone asks again; "n" steps back; "r" runs this once.
	ch := call("conn-1", "z = 1")
	h.floatOpen(t)
	press("a")
	if st := h.confirmState(t); st.Pending != 1 || !strings.Contains(st.Footer, "without asking") {
		t.Fatalf("after a: %+v", st)
	}
	press("n")
	press("r")
	if r := wait(t, ch); r == nil || r.IsError {
		t.Fatalf("run once: %+v", r)
	}
	ch = call("conn-1", "z + 1")
	h.floatOpen(t) // asked again: a single "a" enabled nothing
	press("a")
	press("y")
	if r := wait(t, ch); r == nil || r.IsError {
		t.Fatalf("always: %+v", r)
	}
	// The same connection runs without asking …
	if r := wait(t, call("conn-1", "print(z * 42)")); r == nil || !strings.Contains(texts(r), "42") {
		t.Fatalf("after always, same connection: %+v", r)
	}
	// … another connection is asked.
	ch = call("conn-2", "print('other')")
	h.floatOpen(t)
	press("c")
	if r := wait(t, ch); r == nil || !r.IsError {
		t.Fatalf("another connection ran without asking: %+v", r)
	}
}
