//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// captureNotify replaces vim.notify with a recorder (_G.notes).
const captureNotify = `_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end`

type note struct {
	Msg   string `json:"msg"`
	Level int    `json:"level"`
}

func (e *editor) notes(t *testing.T) []note {
	t.Helper()
	var ns []note
	e.Eval(t, `return _G.notes or {}`, &ns)
	return ns
}

func (e *editor) serve(t *testing.T) status {
	t.Helper()
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeServe")`)
	st := e.status(t)
	if !st.Running || st.Port == 0 {
		t.Fatalf(":ClaudeServe: status %+v, notes %+v", st, e.notes(t))
	}
	killOnCleanup(t, e.hostPID(t))
	return st
}

func TestServeWritesLock(t *testing.T) {
	e := startEditor(t, editorOpts{})
	st := e.serve(t)

	wantPath := filepath.Join(e.cfgDir, "ide", strconv.Itoa(st.Port)+".lock")
	if st.LockFile != wantPath {
		t.Fatalf("lock_file = %q, want %q", st.LockFile, wantPath)
	}
	lock := readLock(t, st.LockFile)
	var nvimPID int
	var cwd string
	e.Eval(t, `return vim.fn.getpid()`, &nvimPID)
	e.Eval(t, `return vim.fn.getcwd()`, &cwd)
	if lock.PID != nvimPID {
		t.Errorf("lock pid = %d, want Neovim's %d", lock.PID, nvimPID)
	}
	if len(lock.WorkspaceFolders) != 1 || lock.WorkspaceFolders[0] != cwd {
		t.Errorf("workspaceFolders = %v, want [%s]", lock.WorkspaceFolders, cwd)
	}
	if !strings.HasPrefix(lock.IDEName, "Neovim (") || !strings.Contains(lock.IDEName, filepath.Base(cwd)) {
		t.Errorf("ideName = %q, want Neovim (<project>…)", lock.IDEName)
	}
	if lock.Transport != "ws" || lock.RunningInWindows {
		t.Errorf("transport/runningInWindows = %q/%v", lock.Transport, lock.RunningInWindows)
	}
	if len(lock.AuthToken) < 32 {
		t.Errorf("auth token too short: %d chars", len(lock.AuthToken))
	}
	for path, want := range map[string]os.FileMode{st.LockFile: 0o600, filepath.Dir(st.LockFile): 0o700} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}

	// The token stays out of what the user or a log can see.
	var text string
	e.Eval(t, `return require("claude").status_text()`, &text)
	for what, s := range map[string]string{"status text": text, "notes": fmt.Sprint(e.notes(t))} {
		if strings.Contains(s, lock.AuthToken) {
			t.Errorf("token leaked into %s", what)
		}
	}
	if !strings.Contains(text, strconv.Itoa(st.Port)) || !strings.Contains(text, st.LockFile) {
		t.Errorf("status text lacks port or lock path:\n%s", text)
	}

	// Changing the global cwd rewrites the lock's workspace folder.
	sub := filepath.Join(e.Dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	e.Exec(t, `vim.cmd("cd " .. vim.fn.fnameescape(...))`, sub)
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		l := readLock(t, st.LockFile)
		if len(l.WorkspaceFolders) == 1 && l.WorkspaceFolders[0] == sub {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after :cd, workspaceFolders = %v, want [%s]", l.WorkspaceFolders, sub)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A second :ClaudeServe keeps the same server.
	e.Exec(t, `vim.cmd("ClaudeServe")`)
	if st2 := e.status(t); st2.Port != st.Port {
		t.Errorf("second :ClaudeServe moved the port %d → %d", st.Port, st2.Port)
	}
	if b, err := os.ReadFile(e.logFile); err == nil && strings.Contains(string(b), lock.AuthToken) {
		t.Error("token leaked into the log file")
	}
}

func TestClientsAndEvents(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.Exec(t, `_G.events = {}
for _, ev in ipairs({ "ClaudeConnected", "ClaudeDisconnected" }) do
  vim.api.nvim_create_autocmd("User", { pattern = ev, callback = function(a)
    table.insert(_G.events, { ev = ev, pid = a.data and a.data.pid or -1 })
  end })
end`)
	st := e.serve(t)
	token := readLock(t, st.LockFile).AuthToken

	c1 := dialIDE(t, st.Port, token)
	c1.handshake(t, 4242)
	// ide_connected is a notification: wait until the first client's has been
	// handled, or the two connections race to be "first".
	e.WaitFor(t, 10*time.Second, `#_G.events == 1 and #require("claude").status().clients == 1`, `return _G.events`, "first client connected")
	c2 := dialIDE(t, st.Port, token)
	c2.handshake(t, 4343)
	e.WaitFor(t, 10*time.Second, `#require("claude").status().clients == 2`, `return require("claude").status()`, "two clients")
	got := e.status(t)
	if got.Clients[0].PID != 4242 || got.Clients[1].PID != 4343 {
		t.Fatalf("clients = %+v", got.Clients)
	}
	_ = c1.c.Close()
	e.WaitFor(t, 10*time.Second, `#require("claude").status().clients == 1`, `return require("claude").status()`, "one client left")

	var nv int
	e.Eval(t, `return vim.fn.has("nvim-0.8")`, &nv)
	type ev struct {
		Ev  string `json:"ev"`
		PID int    `json:"pid"`
	}
	var evs []ev
	e.WaitFor(t, 10*time.Second, `#_G.events == 3`, `return _G.events`, "three events")
	e.Eval(t, `return _G.events`, &evs)
	want := []ev{{"ClaudeConnected", 4242}, {"ClaudeConnected", 4343}, {"ClaudeDisconnected", 4242}}
	for i := range want {
		if nv == 0 {
			want[i].PID = -1 // 0.7 passes no data to User autocmds
		}
		if evs[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, evs[i], want[i])
		}
	}
}

func TestStopAndExit(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, e *editor)
	}{
		{":ClaudeStop", func(t *testing.T, e *editor) {
			e.Exec(t, `vim.cmd("ClaudeStop")`)
			if st := e.status(t); st.Running || st.Port != 0 {
				t.Errorf("after :ClaudeStop status = %+v", st)
			}
		}},
		{":qa", func(t *testing.T, e *editor) {
			_ = e.Command("qa!") // the connection may drop before the reply
		}},
		{"SIGTERM to Neovim", func(t *testing.T, e *editor) {
			signalNvim(t, e, syscall.SIGTERM)
		}},
		{"SIGHUP to Neovim", func(t *testing.T, e *editor) {
			signalNvim(t, e, syscall.SIGHUP)
		}},
		{"SIGTERM to the host", func(t *testing.T, e *editor) {
			if err := syscall.Kill(e.hostPID(t), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEditor(t, editorOpts{})
			st := e.serve(t)
			host := e.hostPID(t)
			tt.end(t, e)
			waitFile(t, st.LockFile, false)
			waitGone(t, host, "Go host")
		})
	}
}

func signalNvim(t *testing.T, e *editor, sig syscall.Signal) {
	t.Helper()
	var pid int
	e.Eval(t, `return vim.fn.getpid()`, &pid)
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "Neovim")
}

func TestHostDeathIsReportedOnce(t *testing.T) {
	e := startEditor(t, editorOpts{})
	st := e.serve(t)
	host := e.hostPID(t)
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, host, "Go host")
	e.WaitFor(t, 10*time.Second, `not require("claude").status().running`, `return require("claude").status()`, "status to show the host is gone")
	waitFile(t, st.LockFile, false) // removed by Lua: the host was killed too hard to do it
	e.WaitFor(t, 5*time.Second, `#_G.notes > 0`, `return _G.notes`, "a notification")
	time.Sleep(200 * time.Millisecond) // let any duplicate arrive before counting
	var errs []note
	for _, n := range e.notes(t) {
		if n.Level == 4 {
			errs = append(errs, n)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "exited") {
		t.Fatalf("want exactly one error notification about the exit, got %+v", errs)
	}
	// The next command restarts it.
	st2 := e.serve(t)
	if !st2.Running || e.hostPID(t) == host {
		t.Fatalf("restart: %+v", st2)
	}
	waitFile(t, st2.LockFile, true)
}

func TestSetupOptions(t *testing.T) {
	tests := []struct {
		name     string
		opts     string
		wantErr  []string // substrings of the one error message; none = no error
		check    string   // Lua expression that must be true afterwards
		checkMsg string
	}{
		{"defaults", `{}`, nil, `require("claude.config").options.terminal.width == 0.35 and require("claude.config").log_level() == "warn"`, "defaults"},
		{"log level name", `{ log_level = "DEBUG" }`, nil, `require("claude.config").log_level() == "debug"`, "debug"},
		{"log level number", `{ log_level = vim.log.levels.TRACE }`, nil, `require("claude.config").log_level() == "trace"`, "trace"},
		{"unknown option", `{ auto_strat = true, log_level = "info" }`, []string{"unknown option 'auto_strat'"}, `require("claude.config").log_level() == "info"`, "valid options still apply"},
		{"nested unknown", `{ terminal = { widht = 0.5 } }`, []string{"'terminal.widht'"}, `require("claude.config").options.terminal.width == 0.35`, "default kept"},
		{"wrong type", `{ auto_start = "yes" }`, []string{"'auto_start' must be a boolean, got string"}, `require("claude.config").options.auto_start == false`, "default kept"},
		{"bad enum", `{ terminal = { provider = "tmux" } }`, []string{"'terminal.provider' must be one of"}, `require("claude.config").options.terminal.provider == "native"`, "default kept"},
		{"bad level", `{ log_level = "loud" }`, []string{"'log_level'"}, `true`, ""},
		{"two problems, one message", `{ foo = 1, bar = 2 }`, []string{"'foo'", "'bar'"}, `true`, ""},
		{"terminal_cmd list", `{ terminal_cmd = { "claude", "--model", "opus" } }`, nil, `#require("claude.terminal").cmd({ "x" }) == 4`, "cmd + args"},
		{"terminal_cmd empty", `{ terminal_cmd = {} }`, []string{"'terminal_cmd' must not be an empty list"}, `true`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nvimtest.Start(t, nvimtest.Options{Init: captureNotify})
			n.Exec(t, `require("claude").setup(`+tt.opts+`)`)
			var ns []note
			n.Eval(t, `return _G.notes`, &ns)
			if len(tt.wantErr) == 0 {
				if len(ns) != 0 {
					t.Fatalf("unexpected messages: %+v", ns)
				}
			} else {
				if len(ns) != 1 || ns[0].Level != 4 {
					t.Fatalf("want one error message, got %+v", ns)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(ns[0].Msg, w) {
						t.Errorf("message %q lacks %q", ns[0].Msg, w)
					}
				}
			}
			var ok bool
			n.Eval(t, "return "+tt.check, &ok)
			if !ok {
				t.Errorf("after setup: %s is false (%s)", tt.check, tt.checkMsg)
			}
		})
	}
}

func TestSetupCostsNothingAndLoadOrder(t *testing.T) {
	// setup() before the plugin file is sourced, then the file: commands
	// exist once and nothing has started.
	n := nvimtest.Start(t, nvimtest.Options{NoPlugin: true})
	root := nvimtest.RepoRoot(t)
	n.Exec(t, `vim.opt.rtp:prepend(...) require("claude").setup({ bin = "/nonexistent" }) vim.cmd("runtime! plugin/claude.lua")`, root)
	var res struct {
		Cmds int  `json:"cmds"`
		Job  bool `json:"job"`
	}
	n.Eval(t, `local c = 0
for name in pairs(vim.api.nvim_get_commands({})) do if name:match("^Claude") then c = c + 1 end end
return { cmds = c, job = require("claude.server").state().chan ~= nil }`, &res)
	if res.Cmds != 25 || res.Job {
		t.Fatalf("after setup + plugin file: %+v (want 25 commands: 24 :ClaudeXxx and :Claude, no job)", res)
	}
}

func TestMissingBinary(t *testing.T) {
	n := nvimtest.Start(t, nvimtest.Options{Init: captureNotify})
	n.Exec(t, `require("claude").setup({ bin = "/nonexistent/nvim-claude" }) vim.cmd("ClaudeServe")`)
	var ns []note
	n.Eval(t, `return _G.notes`, &ns)
	if len(ns) != 1 || ns[0].Level != 4 || !strings.Contains(ns[0].Msg, "make") || !strings.Contains(ns[0].Msg, ":ClaudeInstall") || !strings.Contains(ns[0].Msg, "/nonexistent/nvim-claude") {
		t.Fatalf("want one error naming the binary, :ClaudeInstall and `make`, got %+v", ns)
	}
}

// TestHostOfAnotherVersionIsNotUsed: a host whose version is not the
// plugin's (left from an update) is reported and stopped, never used.
func TestHostOfAnotherVersionIsNotUsed(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.Exec(t, captureNotify)
	e.Exec(t, `package.loaded["claude.version"] = "9.9.9" vim.cmd("ClaudeServe")`)
	var res struct {
		Job     bool `json:"job"`
		Running bool `json:"running"`
	}
	e.Eval(t, `local s = require("claude.server") return { job = s.state().chan ~= nil, running = s.is_running() }`, &res)
	ns := e.notes(t)
	if res.Job || res.Running {
		t.Errorf("a host of another version still runs: %+v", res)
	}
	if len(ns) != 1 || ns[0].Level != 4 || !strings.Contains(ns[0].Msg, "is version "+pluginVersion(t)+", but the plugin is 9.9.9") || !strings.Contains(ns[0].Msg, ":ClaudeInstall") {
		t.Fatalf("want one error naming both versions and the fix, got %+v", ns)
	}
}

// auto_start starts the host with the server wanted at once; a host of
// another version must still be reported and stopped, never used, and no
// lock of it left behind.
func TestAutoStartHostOfAnotherVersion(t *testing.T) {
	cfg := t.TempDir()
	n := nvimtest.Start(t, nvimtest.Options{Init: captureNotify + fmt.Sprintf(`
package.loaded["claude.version"] = "9.9.9"
require("claude").setup({ bin = %q, auto_start = true, env = { CLAUDE_CONFIG_DIR = %q } })`, hostBin, cfg)})
	n.WaitFor(t, 10*time.Second, `#_G.notes > 0 and require("claude.server").state().chan == nil`, `return { notes = _G.notes, chan = require("claude.server").state().chan }`, "the version error")
	var ns []note
	n.Eval(t, `return _G.notes`, &ns)
	if len(ns) != 1 || ns[0].Level != 4 || !strings.Contains(ns[0].Msg, "but the plugin is 9.9.9") {
		t.Fatalf("want one error naming both versions, got %+v", ns)
	}
	if ents, _ := os.ReadDir(filepath.Join(cfg, "ide")); len(ents) != 0 {
		t.Errorf("a lock is left in %s: %v", cfg, ents)
	}
}

// Starting the server loads neither vim.lsp nor vim.diagnostic: loading
// them held Neovim's main loop for 20 ms at every start, and before they
// are loaded no language server runs and no buffer has diagnostics.
func TestServeLoadsNoLspOrDiagnostic(t *testing.T) {
	e := startEditor(t, editorOpts{})
	e.Exec(t, `vim.cmd("ClaudeServe")`)
	var loaded map[string]bool
	e.Eval(t, `return { running = require("claude.server").is_running(), lsp = package.loaded["vim.lsp"] ~= nil, diagnostic = package.loaded["vim.diagnostic"] ~= nil }`, &loaded)
	if !loaded["running"] || loaded["lsp"] || loaded["diagnostic"] {
		t.Fatalf("after :ClaudeServe: %v, want the server running and neither module loaded", loaded)
	}
}

func TestLockGoesWhereTheCLILooks(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	tests := []struct {
		name    string
		optsEnv string // CLAUDE_CONFIG_DIR in setup{env}
		nvimEnv string // Neovim's own CLAUDE_CONFIG_DIR
		want    string
	}{
		{"opts.env wins", filepath.Join(tmp, "opt"), filepath.Join(tmp, "own"), filepath.Join(tmp, "opt")},
		{"Neovim's environment", "", filepath.Join(tmp, "own"), filepath.Join(tmp, "own")},
		{"default ~/.claude", "", "", filepath.Join(home, ".claude")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fmt.Sprintf(`{ CLAUDE_CONFIG_DIR = %q }`, tt.optsEnv)
			if tt.optsEnv == "" {
				env = `{}`
			}
			n := nvimtest.Start(t, nvimtest.Options{
				Env:  []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + tt.nvimEnv},
				Init: captureNotify + fmt.Sprintf("\nrequire('claude').setup({ bin = %q, env = %s })", hostBin, env),
			})
			n.Exec(t, `vim.cmd("ClaudeServe")`)
			var st status
			n.Eval(t, `return require("claude").status()`, &st)
			if !st.Running {
				var ns []note
				n.Eval(t, `return _G.notes`, &ns)
				t.Fatalf("not running: %+v", ns)
			}
			var pid int
			n.Eval(t, `return vim.fn.jobpid(require("claude.server").state().chan)`, &pid)
			killOnCleanup(t, pid)
			if filepath.Dir(filepath.Dir(st.LockFile)) != tt.want {
				t.Fatalf("lock at %s, want under %s/ide", st.LockFile, tt.want)
			}
			n.Exec(t, `vim.cmd("ClaudeStop")`)
			waitFile(t, st.LockFile, false)
		})
	}
}

func TestDeadLocksAreSwept(t *testing.T) {
	e := startEditor(t, editorOpts{})
	dir := filepath.Join(e.cfgDir, "ide")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A pid that is certainly dead: a process we started and reaped.
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "1.lock")
	if err := os.WriteFile(stale, []byte(fmt.Sprintf(`{"pid":%d,"workspaceFolders":[],"ideName":"Neovim","transport":"ws","authToken":"x"}`, p.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.serve(t)
	waitFile(t, stale, false)
}

func TestTerminal(t *testing.T) {
	// A stand-in CLI that prints what the real one would see, then waits.
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"ARGS=$*\"\necho \"PORT=$CLAUDE_CODE_SSE_PORT\"\necho \"IDE=$ENABLE_IDE_INTEGRATION\"\necho \"NOPROXY=$no_proxy|$NO_PROXY\"\necho \"EXTRA=$EXTRA_VAR\"\necho \"PWD=$(pwd)\"\nenv | grep -c -i token | sed 's/^/TOKENVARS=/'\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{
		env:   map[string]string{"EXTRA_VAR": "yes", "no_proxy": "corp.example"},
		extra: fmt.Sprintf(`, terminal_cmd = { %q, "--permission-mode", "default" }, terminal = { width = 0.8 }`, script),
		nvim:  []string{"NO_PROXY=internal.example"},
	})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart --verbose")`)
	st := e.status(t)
	if !st.Running || st.Terminal == nil {
		t.Fatalf("status after :ClaudeStart: %+v notes %+v", st, e.notes(t))
	}
	killOnCleanup(t, st.Terminal.PID)
	killOnCleanup(t, e.hostPID(t))
	e.WaitFor(t, 10*time.Second, fmt.Sprintf(`table.concat(vim.api.nvim_buf_get_lines(%d, 0, -1, false), "\n"):find("TOKENVARS=")`, st.Terminal.Bufnr),
		fmt.Sprintf(`return vim.api.nvim_buf_get_lines(%d, 0, -1, false)`, st.Terminal.Bufnr), "the fake CLI's output")
	out := e.Lines(t, st.Terminal.Bufnr)
	var cwd string
	e.Eval(t, `return vim.fn.getcwd()`, &cwd)
	for _, want := range []string{
		"ARGS=--permission-mode default --verbose",
		"PORT=" + strconv.Itoa(st.Port),
		"IDE=true",
		"NOPROXY=corp.example,localhost,127.0.0.1,::1|internal.example,localhost,127.0.0.1,::1",
		"EXTRA=yes",
		"PWD=" + cwd,
		"TOKENVARS=0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, out)
		}
	}
	var ft string
	e.Eval(t, `return vim.bo[...].filetype`, &ft, st.Terminal.Bufnr)
	if ft != "claude" {
		t.Errorf("terminal filetype = %q", ft)
	}

	// :ClaudeToggle: focused → hidden → shown and focused → (other window) focused.
	winOf := `return #vim.fn.win_findbuf(` + strconv.Itoa(st.Terminal.Bufnr) + `)`
	curIsTerm := `return vim.api.nvim_get_current_buf() == ` + strconv.Itoa(st.Terminal.Bufnr)
	steps := []struct {
		pre       string
		wantWins  int
		wantFocus bool
	}{
		{"", 0, false},
		{"", 1, true},
		{"vim.cmd('wincmd p')", 1, true},
	}
	e.Exec(t, `vim.cmd("stopinsert")`)
	for i, s := range steps {
		if s.pre != "" {
			e.Exec(t, s.pre)
		}
		e.Exec(t, `vim.cmd("ClaudeToggle")`)
		var wins int
		var focus bool
		e.Eval(t, winOf, &wins)
		e.Eval(t, curIsTerm, &focus)
		if wins != s.wantWins || (s.wantWins > 0 && focus != s.wantFocus) {
			t.Errorf("toggle step %d: windows=%d focus=%v, want %d/%v", i, wins, focus, s.wantWins, s.wantFocus)
		}
	}
	// The terminal keeps running while hidden, and :ClaudeStop ends it.
	e.Exec(t, `vim.cmd("ClaudeStop")`)
	waitGone(t, st.Terminal.PID, "CLI")
	waitFile(t, st.LockFile, false)
	if st := e.status(t); st.Terminal != nil || st.Running {
		t.Errorf("after :ClaudeStop: %+v", st)
	}
}

func TestCheckhealth(t *testing.T) {
	tests := []struct {
		name  string
		bin   string
		extra string
		want  []string
	}{
		{"good host", "", "", []string{"host binary " + hostBin, "not running"}},
		{"missing host", "/nonexistent/nvim-claude", "", []string{"host binary missing: /nonexistent/nvim-claude", "make"}},
		{"review mode", "", `, terminal = { permission_mode = "manual" }`, []string{":ClaudeStart starts Claude in manual mode (option)"}},
		{"unreviewed mode", "", `, terminal = { permission_mode = "acceptEdits" }`,
			[]string{"in acceptEdits mode (option): edits land on disk without the diff review", `permission_mode = "manual"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := tt.bin
			if bin == "" {
				bin = hostBin
			}
			n := nvimtest.Start(t, nvimtest.Options{Init: fmt.Sprintf(`require("claude").setup({ bin = %q, terminal_cmd = "true" %s })`, bin, tt.extra)})
			n.Exec(t, `vim.cmd("checkhealth claude")`)
			out := n.Lines(t, 0)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("checkhealth output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// :ClaudeStart with arguments while Claude runs says
// they were not used and how to restart with them; :ClaudeStart! restarts
// the CLI with them (the server stays); :ClaudeStop says what it stopped,
// or that nothing runs; setup() called again keeps what it does not name.
func TestStartRestartStopAndSetupTwice(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"ARGS=$*\"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{extra: fmt.Sprintf(`, terminal_cmd = { %q }, selection = { debounce_ms = 77 }`, script)})
	e.Exec(t, captureNotify)

	// setup() again: the named option changes, the others stay.
	e.Exec(t, `require("claude").setup({ log_level = "info" })`)
	var kept struct {
		Cmd      []string `json:"cmd"`
		Debounce int      `json:"debounce"`
		Level    string   `json:"level"`
	}
	e.Eval(t, `local o = require("claude.config").options
		return { cmd = o.terminal_cmd, debounce = o.selection.debounce_ms, level = o.log_level }`, &kept)
	if len(kept.Cmd) != 1 || kept.Cmd[0] != script || kept.Debounce != 77 || kept.Level != "info" {
		t.Fatalf("after a second setup(): %+v", kept)
	}

	e.Exec(t, `vim.cmd("ClaudeStop")`)
	if n := e.notes(t); len(n) == 0 || !strings.Contains(n[len(n)-1].Msg, "nothing is running") {
		t.Errorf(":ClaudeStop with nothing running: %+v", n)
	}

	e.Exec(t, `vim.cmd("ClaudeStart --first")`)
	st := e.status(t)
	if st.Terminal == nil {
		t.Fatalf(":ClaudeStart: %+v", st)
	}
	killOnCleanup(t, st.Terminal.PID)
	killOnCleanup(t, e.hostPID(t))
	first := st.Terminal.PID
	e.Exec(t, `vim.cmd("ClaudeStart --second")`)
	if n := e.notes(t); len(n) == 0 || !strings.Contains(n[len(n)-1].Msg, ":ClaudeStart! --second") {
		t.Errorf(":ClaudeStart with arguments while running: %+v", n)
	}
	if st := e.status(t); st.Terminal == nil || st.Terminal.PID != first {
		t.Fatalf("the running CLI was replaced without !: %+v", st)
	}

	e.Exec(t, `vim.cmd("ClaudeStart! --third")`)
	waitGone(t, first, "the first CLI")
	st2 := e.status(t)
	if st2.Terminal == nil || st2.Terminal.PID == first || st2.Port != st.Port {
		t.Fatalf(":ClaudeStart!: %+v (before %+v)", st2, st)
	}
	killOnCleanup(t, st2.Terminal.PID)
	e.WaitFor(t, 10*time.Second, fmt.Sprintf(`table.concat(vim.api.nvim_buf_get_lines(%d, 0, -1, false), "\n"):find("ARGS=--third", 1, true)`, st2.Terminal.Bufnr),
		fmt.Sprintf(`return vim.api.nvim_buf_get_lines(%d, 0, -1, false)`, st2.Terminal.Bufnr), "the restarted CLI's arguments")

	e.Exec(t, `vim.cmd("ClaudeStop")`)
	n := e.notes(t)
	if len(n) == 0 || !strings.Contains(n[len(n)-1].Msg, "stopped the Claude terminal") || !strings.Contains(n[len(n)-1].Msg, fmt.Sprintf("the IDE server (port %d)", st.Port)) {
		t.Errorf(":ClaudeStop: %+v", n)
	}
}

// :ClaudeServe names each way to connect once.
func TestServeHintNamesEachWayOnce(t *testing.T) {
	e := startEditor(t, editorOpts{})
	st := e.serve(t)
	msg := e.notes(t)[len(e.notes(t))-1].Msg
	for want, n := range map[string]int{"claude --ide": 1, fmt.Sprintf("CLAUDE_CODE_SSE_PORT=%d claude", st.Port): 1, "/ide inside a running claude": 1} {
		if got := strings.Count(msg, want); got != n {
			t.Errorf("%q appears %d times, want %d:\n%s", want, got, n, msg)
		}
	}
}

// TestAutoStart: setup({ auto_start = true }) starts the IDE server (not a
// terminal) by itself once Neovim has started, whether setup() runs in the
// config (before VimEnter) or later (a lazy-loaded plugin), and only once.
func TestAutoStart(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("setup after VimEnter %v", late), func(t *testing.T) {
			cfg := t.TempDir()
			setup := fmt.Sprintf(`require("claude").setup({ bin = %q, auto_start = true, env = { CLAUDE_CONFIG_DIR = %q } })`, hostBin, cfg)
			init := setup
			if late {
				init = ""
			}
			n := nvimtest.Start(t, nvimtest.Options{Init: init})
			if late {
				n.Exec(t, setup)
			}
			n.WaitFor(t, 10*time.Second, `require("claude.server").is_running()`, `return require("claude").status()`, "the server running")
			e := &editor{Nvim: n, cfgDir: cfg}
			st := e.status(t)
			killOnCleanup(t, e.hostPID(t))
			if st.Terminal != nil {
				t.Errorf("auto_start opened a terminal: %+v", st.Terminal)
			}
			if _, err := os.Stat(st.LockFile); err != nil || !strings.HasPrefix(st.LockFile, cfg) {
				t.Errorf("lock file %s: %v", st.LockFile, err)
			}
			var jobs int
			n.Eval(t, `local k = 0 for _, c in ipairs(vim.api.nvim_list_chans()) do if c.stream == "job" then k = k + 1 end end return k`, &jobs)
			if jobs != 1 {
				t.Errorf("%d jobs, want the one host", jobs)
			}
		})
	}
}

// :ClaudeStop while auto_start's host is still starting stays stopped: the
// early start's fallback timer (1 s, for a host that never says it has
// started) must not start the server again once the user stopped it.
func TestAutoStartStoppedWhileStarting(t *testing.T) {
	cfg := t.TempDir()
	// headless: the host process starts at setup(), and the stop comes
	// before the host can have said it started (that needs a later turn)
	n := nvimtest.Start(t, nvimtest.Options{Init: fmt.Sprintf(`require("claude").setup({ bin = %q, auto_start = true, env = { CLAUDE_CONFIG_DIR = %q } })
vim.cmd("ClaudeStop")`, hostBin, cfg)})
	// past the fallback timer
	time.Sleep(1500 * time.Millisecond)
	var got struct {
		Chan any  `msgpack:"chan"`
		Jobs int  `msgpack:"jobs"`
		Run  bool `msgpack:"running"`
	}
	n.Eval(t, `local k = 0 for _, c in ipairs(vim.api.nvim_list_chans()) do if c.stream == "job" then k = k + 1 end end
return { chan = require("claude.server").state().chan, jobs = k, running = require("claude.server").is_running() }`, &got)
	if got.Chan != nil || got.Jobs != 0 || got.Run {
		t.Errorf("after :ClaudeStop during auto_start: %+v, want no host", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(cfg, "ide")); len(ents) != 0 {
		t.Errorf("a lock is left in %s: %v", cfg, ents)
	}
}
