//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckhealthFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) (opts string, env []string)
		want  []string
	}{
		{"host of another version", func(t *testing.T) (string, []string) {
			return fmt.Sprintf(`bin = %q`, script(t, `echo "nvim-claude 0.0.1"`)), nil
		}, []string{"host binary is version 0.0.1", "rebuild it with `make`"}},
		{"host that does not run", func(t *testing.T) (string, []string) {
			return fmt.Sprintf(`bin = %q`, script(t, `echo broken >&2; exit 3`)), nil
		}, []string{"host binary does not run", "rebuild"}},
		{"CLI missing", func(t *testing.T) (string, []string) {
			return `terminal_cmd = "/nonexistent/claude"`, nil
		}, []string{"`/nonexistent/claude` not found", "npm install -g @anthropic-ai/claude-code"}},
		{"lock dir readable by others", func(t *testing.T) (string, []string) {
			cfg := t.TempDir()
			if err := os.Mkdir(filepath.Join(cfg, "ide"), 0o755); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf(`env = { CLAUDE_CONFIG_DIR = %q }`, cfg), nil
		}, []string{"is readable by others", "chmod 700"}},
		{"stale lock", func(t *testing.T) (string, []string) {
			cfg := t.TempDir()
			dir := filepath.Join(cfg, "ide")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = p.Wait()
			if err := os.WriteFile(filepath.Join(dir, "9.lock"), []byte(fmt.Sprintf(`{"pid":%d}`, p.Pid)), 0o600); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf(`env = { CLAUDE_CONFIG_DIR = %q }`, cfg), nil
		}, []string{"1 stale lock file(s)", "9.lock"}},
		{"proxy capturing loopback", func(t *testing.T) (string, []string) {
			return "", []string{"https_proxy=http://proxy.invalid:3128", "no_proxy=", "NO_PROXY="}
		}, []string{"https_proxy is set and no_proxy does not exempt loopback", "export no_proxy=localhost,127.0.0.1,::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, env := tt.setup(t)
			if !strings.Contains(opts, "bin =") {
				opts = fmt.Sprintf(`bin = %q, `, hostBin) + opts
			}
			n := nvimtest.Start(t, nvimtest.Options{Env: env, Init: `require("claude").setup({ ` + opts + ` })`})
			n.Exec(t, `vim.cmd("checkhealth claude")`)
			out := n.Lines(t, 0)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("checkhealth lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestCheckhealthLiveHandshake(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.serve(t)
	e.Exec(t, `vim.cmd("checkhealth claude")`)
	out := e.Lines(t, 0)
	if !strings.Contains(out, "live handshake with the token: ping answered") {
		t.Fatalf("checkhealth lacks the live handshake:\n%s", out)
	}
}

func TestHelpTags(t *testing.T) {
	root := nvimtest.RepoRoot(t)
	doc := filepath.Join(t.TempDir(), "doc")
	if err := os.Mkdir(doc, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "doc", "nvim-claude.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(doc, "nvim-claude.txt"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	n := nvimtest.Start(t, nvimtest.Options{NoPlugin: true})
	// :helptags reports duplicate tags and other errors as exceptions.
	var errMsg string
	n.Eval(t, `local ok, err = pcall(vim.cmd, "helptags " .. vim.fn.fnameescape(...)) return ok and "" or tostring(err)`, &errMsg, doc)
	if errMsg != "" {
		t.Fatalf(":helptags: %s", errMsg)
	}
	n.Exec(t, `vim.opt.rtp:prepend(...)`, filepath.Dir(doc))
	for _, tag := range []string{"nvim-claude", ":ClaudeStart", "claude-config", ":ClaudeStatus", "claude.status()", "claude.statusline()", "claude-config-single_session"} {
		var res string
		n.Eval(t, `local ok, err = pcall(vim.cmd, "help " .. ...) local b = vim.fn.expand("%:t") vim.cmd("silent! helpclose") return ok and b or tostring(err)`, &res, tag)
		if res != "nvim-claude.txt" {
			t.Errorf(":help %s → %q", tag, res)
		}
	}
}

func TestStatusline(t *testing.T) {
	e := startEditor(t, editorOpts{})
	var s string
	e.Eval(t, `return require("claude").statusline()`, &s)
	if s != "" {
		t.Fatalf("statusline before start = %q, want empty", s)
	}
	st := e.serve(t)
	steps := []struct {
		do   func()
		want string
	}{
		{func() {}, "✻ waiting"},
		{func() {
			c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
			c.handshake(t, 5151)
			e.WaitFor(t, 10*time.Second, `#require("claude").status().clients == 1`, "", "a client")
		}, "✻ 1 session"},
		{func() { e.Exec(t, `vim.cmd("ClaudeShare off")`) }, "✻ 1 session · not sharing"},
	}
	for i, step := range steps {
		step.do()
		e.Eval(t, `return require("claude").statusline()`, &s)
		if s != step.want {
			t.Errorf("step %d: statusline = %q, want %q", i, s, step.want)
		}
	}
}

func TestTwoInstancesInOneDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "cfg")
	a := startEditor(t, editorOpts{dir: dir, env: map[string]string{"CLAUDE_CONFIG_DIR": cfg}})
	b := startEditor(t, editorOpts{dir: dir, env: map[string]string{"CLAUDE_CONFIG_DIR": cfg}})
	sa, sb := a.serve(t), b.serve(t)
	if sa.Port == sb.Port || sa.LockFile == sb.LockFile {
		t.Fatalf("same port or lock: %+v %+v", sa, sb)
	}
	la, lb := readLock(t, sa.LockFile), readLock(t, sb.LockFile)
	if la.IDEName == lb.IDEName {
		t.Errorf("both instances are called %q in /ide", la.IDEName)
	}
	// Each token opens only its own server.
	ca := dialIDE(t, sa.Port, la.AuthToken)
	ca.handshake(t, 1111)
	a.WaitFor(t, 10*time.Second, `#require("claude").status().clients == 1`, "", "client on a")
	var nb int
	b.Eval(t, `return #require("claude").status().clients`, &nb)
	if nb != 0 {
		t.Errorf("b sees %d clients", nb)
	}
}

func TestTerminalProviders(t *testing.T) {
	// A stand-in for snacks.nvim's terminal API (snacks is not reachable from
	// this machine's registries): open(cmd, opts) returns a window object
	// with buf/win and show/hide/focus/valid, as snacks.win does.
	snacksDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(snacksDir, "lua"), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := `local M = { terminal = {} }
_G.snacks_calls = {}
function M.terminal.open(cmd, opts)
  table.insert(_G.snacks_calls, { cmd = cmd, position = opts.win.position, cwd = opts.cwd, port = opts.env.CLAUDE_CODE_SSE_PORT })
  vim.cmd("botright vsplit")
  local buf = vim.api.nvim_create_buf(false, false)
  vim.api.nvim_win_set_buf(0, buf)
  if vim.fn.has("nvim-0.11") == 1 then vim.fn.jobstart(cmd, { term = true, cwd = opts.cwd, env = opts.env })
  else vim.fn.termopen(cmd, { cwd = opts.cwd, env = opts.env }) end
  local w = { buf = buf, win = vim.api.nvim_get_current_win() }
  function w:valid() return self.win and vim.api.nvim_win_is_valid(self.win) end
  function w:hide() if self:valid() then vim.api.nvim_win_close(self.win, true) end self.win = nil end
  function w:show() if not self:valid() then vim.cmd("botright vsplit") vim.api.nvim_win_set_buf(0, self.buf) self.win = vim.api.nvim_get_current_win() end end
  function w:focus() vim.api.nvim_set_current_win(self.win) end
  return w
end
return M`
	if err := os.WriteFile(filepath.Join(snacksDir, "lua", "snacks.lua"), []byte(fake), 0o644); err != nil {
		t.Fatal(err)
	}
	sleeper := script(t, "exec sleep 600")
	tests := []struct {
		name      string
		opts      string
		rtp       string
		wantNote  string
		wantSnack bool
		wantFloat bool
	}{
		{"snacks missing falls back", `provider = "snacks"`, "", "snacks.nvim is not installed; using the native terminal", false, false},
		{"snacks present", `provider = "snacks"`, snacksDir, "", true, false},
		{"native float", `layout = "float"`, "", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = %q, terminal = { %s }`, sleeper, tt.opts)})
			if tt.rtp != "" {
				e.Exec(t, `vim.opt.rtp:append(...)`, tt.rtp)
			}
			e.Exec(t, captureNotify)
			e.Exec(t, `vim.cmd("ClaudeStart")`)
			st := e.status(t)
			if st.Terminal == nil {
				t.Fatalf("no terminal: %+v %+v", st, e.notes(t))
			}
			killOnCleanup(t, st.Terminal.PID)
			killOnCleanup(t, e.hostPID(t))
			e.WaitFor(t, 5*time.Second, "true", "", "")
			time.Sleep(100 * time.Millisecond) // scheduled notifications
			notes := fmt.Sprint(e.notes(t))
			if tt.wantNote != "" && !strings.Contains(notes, tt.wantNote) {
				t.Errorf("notes %s lack %q", notes, tt.wantNote)
			}
			var calls int
			e.Eval(t, `return #(_G.snacks_calls or {})`, &calls)
			if (calls == 1) != tt.wantSnack {
				t.Errorf("snacks used %d times, want used=%v", calls, tt.wantSnack)
			}
			var float bool
			e.Eval(t, `local w = vim.fn.win_findbuf(...)[1] return w ~= nil and vim.api.nvim_win_get_config(w).relative ~= ""`, &float, st.Terminal.Bufnr)
			if float != tt.wantFloat {
				t.Errorf("floating = %v, want %v", float, tt.wantFloat)
			}
			// Toggle hides and shows through whichever provider is in use.
			e.Exec(t, `vim.cmd("ClaudeToggle")`)
			var wins int
			e.Eval(t, `return #vim.fn.win_findbuf(...)`, &wins, st.Terminal.Bufnr)
			if wins != 0 {
				t.Errorf("after toggle from the focused terminal: %d windows", wins)
			}
			e.Exec(t, `vim.cmd("ClaudeToggle")`)
			e.Eval(t, `return #vim.fn.win_findbuf(...)`, &wins, st.Terminal.Bufnr)
			if wins != 1 {
				t.Errorf("after second toggle: %d windows", wins)
			}
		})
	}
}

func TestLazyLoadingOnCommand(t *testing.T) {
	// What lazy.nvim's `cmd = "ClaudeStart"` does: a stub command that adds
	// the plugin to 'runtimepath', sources its plugin/ files, runs setup(opts)
	// and re-runs the command.
	root := nvimtest.RepoRoot(t)
	n := nvimtest.Start(t, nvimtest.Options{NoPlugin: true, Init: captureNotify})
	n.Exec(t, fmt.Sprintf(`vim.api.nvim_create_user_command("ClaudeServe", function()
  vim.api.nvim_del_user_command("ClaudeServe")
  vim.opt.rtp:prepend(%q)
  vim.cmd("runtime! plugin/claude.lua")
  require("claude").setup({ bin = %q, env = { CLAUDE_CONFIG_DIR = %q } })
  vim.cmd("ClaudeServe")
end, {})`, root, hostBin, filepath.Join(t.TempDir(), "cfg")))
	n.Exec(t, `vim.cmd("ClaudeServe")`)
	var st status
	n.Eval(t, `return require("claude").status()`, &st)
	if !st.Running {
		var ns []note
		n.Eval(t, `return _G.notes`, &ns)
		t.Fatalf("lazy-loaded :ClaudeServe did not start: %+v", ns)
	}
	var pid int
	n.Eval(t, `return vim.fn.jobpid(require("claude.server").state().chan)`, &pid)
	killOnCleanup(t, pid)
}

func TestNeedsInput(t *testing.T) {
	sleeper := script(t, "exec sleep 600")
	tests := []struct {
		name      string
		layout    string
		hide      bool // :ClaudeToggle the terminal away before the diff
		wantEvent bool
	}{
		{"terminal hidden", "split", true, true},
		{"terminal in view", "split", false, false},
		{"float moves aside", "float", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = %q, terminal = { layout = %q }`, sleeper, tt.layout)})
			e.Exec(t, captureNotify+`
_G.needs = 0
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeNeedsInput", callback = function() _G.needs = _G.needs + 1 end })`)
			e.Exec(t, `vim.cmd("ClaudeStart")`)
			st := e.status(t)
			killOnCleanup(t, st.Terminal.PID)
			killOnCleanup(t, e.hostPID(t))
			e.Exec(t, `vim.cmd("stopinsert")`)
			if tt.hide {
				e.Exec(t, `vim.cmd("ClaudeToggle")`)
			}
			file := filepath.Join(e.Dir, "a.txt")
			if err := os.WriteFile(file, []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
			c.handshake(t, 4242)
			c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"openDiff","arguments":{"old_file_path":%q,"new_file_path":%q,"new_file_contents":"two\n","tab_name":"✻ [Claude Code] a.txt (abc123) ⧉"}}}`, file, file))
			e.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 1`, "", "the diff to open")
			time.Sleep(200 * time.Millisecond) // the User events are scheduled
			var needs, termWins int
			e.Eval(t, `return _G.needs`, &needs)
			e.Eval(t, `return #vim.fn.win_findbuf(...)`, &termWins, st.Terminal.Bufnr)
			if (needs == 1) != tt.wantEvent {
				t.Errorf("ClaudeNeedsInput fired %d times, want fired=%v", needs, tt.wantEvent)
			}
			if tt.wantEvent && !strings.Contains(fmt.Sprint(e.notes(t)), "Claude proposes a change to a.txt: review the diff") {
				t.Errorf("no notification: %+v", e.notes(t))
			}
			if tt.layout == "float" && termWins != 0 {
				t.Errorf("the float stayed over the diff")
			}
			c.send(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"close_tab","arguments":{"tab_name":"✻ [Claude Code] a.txt (abc123) ⧉"}}}`)
			c.recv(t, 7)
			if tt.layout == "float" {
				e.WaitFor(t, 10*time.Second, fmt.Sprintf(`#vim.fn.win_findbuf(%d) == 1`, st.Terminal.Bufnr), "", "the float to come back")
			}
		})
	}
}

func TestCheckhealthAllOKOnAGoodSetup(t *testing.T) {
	cli := clienv.Binary(t)
	e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = { %q }`, cli), nvim: []string{"http_proxy=", "https_proxy=", "HTTP_PROXY=", "HTTPS_PROXY=", "all_proxy=", "ALL_PROXY="}})
	e.serve(t)
	e.Exec(t, `vim.cmd("checkhealth claude")`)
	out := e.Lines(t, 0)
	// Dictation's section reports this machine's audio (a recorder with no
	// input device, the engine installed): not part of the plugin's setup.
	plugin := out
	if i := strings.Index(plugin, "nvim-claude: dictation"); i >= 0 {
		rest := plugin[i:]
		end := len(rest)
		if j := strings.Index(rest[1:], "nvim-claude: "); j >= 0 {
			end = j + 1
		}
		plugin = plugin[:i] + rest[end:]
	}
	for _, bad := range []string{"WARNING", "ERROR"} {
		if strings.Contains(plugin, bad) {
			t.Errorf("checkhealth on a good setup reports %s:\n%s", bad, out)
		}
	}
	// The version the CLI itself reports ("2.1.331 (Claude Code)"), whichever is pinned.
	v, err := exec.Command(cli, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", cli, err)
	}
	if ver := strings.Fields(string(v)); len(ver) == 0 || !strings.Contains(out, ver[0]) {
		t.Errorf("checkhealth does not show the CLI's version %q:\n%s", v, out)
	}
}

func TestProviderNoneAndStoppedEvent(t *testing.T) {
	e := startEditor(t, editorOpts{extra: `, terminal = { provider = "none" }`})
	e.Exec(t, captureNotify+`
_G.stopped = 0
vim.api.nvim_create_autocmd("User", { pattern = "ClaudeStopped", callback = function() _G.stopped = _G.stopped + 1 end })`)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	st := e.status(t)
	killOnCleanup(t, e.hostPID(t))
	if !st.Running || st.Terminal != nil {
		t.Fatalf("provider none: %+v", st)
	}
	notes := fmt.Sprint(e.notes(t))
	for _, want := range []string{fmt.Sprintf("CLAUDE_CODE_SSE_PORT=%d claude", st.Port), "claude --ide"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the message lacks %q: %s", want, notes)
		}
	}
	host := e.hostPID(t)
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(t, 10*time.Second, `_G.stopped == 1`, `return _G.stopped`, "User ClaudeStopped")
}
