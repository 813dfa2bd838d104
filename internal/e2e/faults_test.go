//go:build unix

package e2e

// Faults: parts of the system killed, blocked or starved at the worst
// moment, each followed by checks that the rest recovers and that nothing
// the user owns was touched. RELIABILITY.md reports them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/internal/soak/toolargs"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// fltUserState is what the user owns in the editor, outside the CLI's
// terminal: tabs, windows and their buffers, layout, unsaved text, their
// own diff windows.
type fltUserState struct {
	Tabs []struct {
		Layout string   `json:"layout"`
		Wins   []string `json:"wins"` // buffer name, diff flag
	} `json:"tabs"`
	Current  string            `json:"current"`
	Modified map[string]string `json:"modified"` // buffer name → text
}

// fltSnapshotUser records the user's state; the CLI's terminal windows are
// left out (the CLI's death may close them).
const fltSnapshotUser = `local function user_win(w)
  local b = vim.api.nvim_win_get_buf(w)
  return vim.bo[b].buftype ~= "terminal" and vim.api.nvim_win_get_config(w).relative == ""
end
local out = { tabs = {}, modified = vim.empty_dict() }
for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
  local t = { wins = {} }
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    if user_win(w) then
      local b = vim.api.nvim_win_get_buf(w)
      table.insert(t.wins, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":t") .. (vim.wo[w].diff and " [diff]" or ""))
    end
  end
  t.layout = vim.inspect(vim.fn.winlayout(vim.api.nvim_tabpage_get_number(tab)))
  table.insert(out.tabs, t)
end
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified and vim.bo[b].buftype == "" then
    out.modified[vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":t")] = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
  end
end
local cur = vim.api.nvim_get_current_win()
out.current = user_win(cur) and vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":t") or "(terminal)"
return out`

// snapshotUserDebug shows the user's state when a wait fails.
const snapshotUserDebug = fltSnapshotUser

func (e *editor) fltUserState(t *testing.T) fltUserState {
	t.Helper()
	var s fltUserState
	e.Eval(t, fltSnapshotUser, &s)
	return s
}

// stripTerminal drops the terminal's window ids from winlayout text, which
// change when the terminal closes: only the user's windows are compared.
func fltSameUser(a, b fltUserState) bool {
	ja, _ := json.Marshal(a.Modified)
	jb, _ := json.Marshal(b.Modified)
	if len(a.Tabs) != len(b.Tabs) || string(ja) != string(jb) || a.Current != b.Current {
		return false
	}
	for i := range a.Tabs {
		if strings.Join(a.Tabs[i].Wins, "|") != strings.Join(b.Tabs[i].Wins, "|") {
			return false
		}
	}
	return true
}

// fltSetUpUserState gives the editor a user's everyday state: hello.txt in
// the editor window, notes.txt with unsaved edits in a split below it, and
// in a second tab the user's own :diffthis of two scratch buffers.
const fltSetUpUserState = `vim.cmd("stopinsert")
for _, w in ipairs(vim.api.nvim_list_wins()) do
  if vim.bo[vim.api.nvim_win_get_buf(w)].buftype ~= "terminal" then vim.api.nvim_set_current_win(w) break end
end
vim.cmd("edit hello.txt")
vim.cmd("belowright split notes.txt")
vim.api.nvim_buf_set_lines(0, -1, -1, false, { "an unsaved line" })
vim.cmd("wincmd k")
vim.cmd("tabnew")
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "mine", "one" })
vim.cmd("diffthis")
vim.cmd("vnew")
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "mine", "two" })
vim.cmd("diffthis")
vim.cmd("tabprevious")`

// TestFaultCLIKilledWhileDiffPending kills the real CLI with SIGKILL while
// its openDiff waits for the user: the diff windows close, and the user's
// windows, tabs, unsaved text, own diff and files are as they were.
func TestFaultCLIKilledWhileDiffPending(t *testing.T) {
	s := startDiffSession(t, "")
	if err := os.WriteFile(filepath.Join(s.project, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Exec(t, fltSetUpUserState)
	before := s.fltUserState(t)
	s.scriptEdit(s.file, "beta", "BETA", "Edited.")
	s.submit(t, "make beta loud")
	s.waitDiff(t)
	if during := s.fltUserState(t); fltSameUser(before, during) {
		t.Fatalf("the diff did not change the layout: %+v", during)
	}
	cli := s.st.Terminal.PID
	if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cli)); !strings.Contains(string(cmd), "claude") {
		t.Fatalf("pid %d is not the CLI: %q", cli, cmd)
	}
	start := time.Now()
	if err := syscall.Kill(cli, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The user's own :diffthis in tab 2 stays; our diff in tab 1 goes.
	s.WaitFor(t, 30*time.Second, `#require("claude.diff").pending() == 0 and (function()
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(vim.api.nvim_list_tabpages()[1])) do
    if vim.wo[w].diff then return false end
  end
  return true end)()`, snapshotUserDebug, "our diff windows to close")
	t.Logf("diff closed %v after SIGKILL to the CLI", time.Since(start).Round(time.Millisecond))
	waitGone(t, cli, "the CLI")
	s.WaitFor(t, 10*time.Second, `#require("claude").status().clients == 0`, `return require("claude").status()`, "the CLI to be gone from the clients")
	after := s.fltUserState(t)
	if !fltSameUser(before, after) {
		t.Errorf("the user's state changed:\nbefore %+v\n after %+v", before, after)
	}
	if b, _ := os.ReadFile(s.file); string(b) != diffFileText {
		t.Errorf("%s = %q, want it untouched", s.file, b)
	}
	if b, _ := os.ReadFile(filepath.Join(s.project, "notes.txt")); string(b) != "notes\n" {
		t.Errorf("notes.txt = %q, want it untouched", b)
	}
	if !s.status(t).Running {
		t.Error("the server stopped with the CLI")
	}
	for _, n := range s.notes(t) {
		if n.Level >= 4 {
			t.Errorf("error message: %s", n.Msg)
		}
	}
}

// TestFaultPeerVanishesWithRST: a stand-in CLI whose connection ends with
// a TCP reset (what a peer host that rebooted sends) while its diff waits:
// the diff closes and the layout is back.
func TestFaultPeerVanishesWithRST(t *testing.T) {
	r := startDiffRig(t)
	var before string
	r.Eval(t, `return vim.fn.winrestcmd() .. vim.fn.bufname()`, &before)
	c := r.cli(t, 4242)
	c.send(t, diffOpenMsg(1, filepath.Join(r.dir, "a.txt"), "✻ [Claude Code] a.txt (1) ⧉", "x\n"))
	r.waitPending(t, 1)
	tcp := c.c.UnderlyingConn().(*net.TCPConn)
	if err := tcp.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	_ = tcp.Close()
	r.waitPending(t, 0)
	r.WaitFor(t, 10*time.Second, `#vim.api.nvim_list_wins() == 1 and not vim.wo.diff`, `return vim.fn.winrestcmd()`, "the layout back")
	var after string
	r.Eval(t, `return vim.fn.winrestcmd() .. vim.fn.bufname()`, &after)
	if after != before {
		t.Fatalf("layout %q, was %q", after, before)
	}
}

// fltFakeCLI is a stand-in for the CLI in the terminal: it waits.
func fltFakeCLI(t *testing.T) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho fake claude on port $CLAUDE_CODE_SSE_PORT\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestFaultHostKilled kills the Go host with SIGKILL while a CLI is
// connected and its diff is open: Lua notices (the test logs how soon),
// tells the user once, removes the lock and closes the diff; the CLI's
// connection drops; :ClaudeStart then starts a new host that serves.
func TestFaultHostKilled(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a1\na2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{dir: dir, extra: fmt.Sprintf(`, terminal_cmd = { %q }`, fltFakeCLI(t))})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("edit a.txt") vim.cmd("ClaudeStart")`)
	st := e.status(t)
	if !st.Running || st.Terminal == nil {
		t.Fatalf(":ClaudeStart: %+v, notes %+v", st, e.notes(t))
	}
	killOnCleanup(t, st.Terminal.PID)
	host := e.hostPID(t)
	killOnCleanup(t, host)
	c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
	c.handshake(t, 4242)
	c.send(t, diffOpenMsg(1, filepath.Join(dir, "a.txt"), "✻ [Claude Code] a.txt (1) ⧉", "A1\na2\n"))
	e.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 1`, `return require("claude.diff").pending()`, "the diff")

	start := time.Now()
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var noticed time.Duration
	for deadline := start.Add(10 * nvimtest.Slack * time.Second); ; {
		if !e.status(t).Running {
			noticed = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Lua never noticed the host's death")
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("Lua noticed the host's death %v after SIGKILL", noticed.Round(time.Millisecond))
	waitGone(t, host, "the Go host")
	waitFile(t, st.LockFile, false)
	e.WaitFor(t, 10*time.Second, `#require("claude.diff").pending() == 0 and not vim.wo.diff and #vim.api.nvim_list_wins() == 2`,
		`return { pending = require("claude.diff").pending(), wins = #vim.api.nvim_list_wins() }`, "the diff to close")
	_ = c.c.SetReadDeadline(time.Now().Add(10 * nvimtest.Slack * time.Second))
	for {
		if _, _, err := c.c.ReadMessage(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the CLI's connection outlived the host")
			}
			break
		}
	}
	time.Sleep(300 * time.Millisecond) // a duplicate message would come now
	var errs []string
	for _, n := range e.notes(t) {
		if n.Level >= 4 {
			errs = append(errs, n.Msg)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "exited") || !strings.Contains(errs[0], "ClaudeStart") {
		t.Fatalf("want one error telling the host exited and what to do, got %q", errs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a1\na2\n" {
		t.Errorf("a.txt = %q", b)
	}

	// :ClaudeStart works again: a new host, a new lock, a server that
	// serves tools.
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	st2 := e.status(t)
	if !st2.Running || st2.LockFile == "" {
		t.Fatalf("after :ClaudeStart: %+v, notes %+v", st2, e.notes(t))
	}
	host2 := e.hostPID(t)
	killOnCleanup(t, host2)
	if host2 == host {
		t.Fatal("the same host pid")
	}
	waitFile(t, st2.LockFile, true)
	c2 := dialIDE(t, st2.Port, readLock(t, st2.LockFile).AuthToken)
	c2.handshake(t, 4343)
	c2.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"getWorkspaceFolders","arguments":{}}}`)
	if res := c2.recv(t, 9); res["result"] == nil || !strings.Contains(fmt.Sprint(res), dir) {
		t.Fatalf("getWorkspaceFolders after the restart: %v", res)
	}
}

// fltCLIEditor starts a Neovim in project whose :ClaudeStart runs the
// real CLI with env (several editors may share one env, and so one config
// dir), and waits until that CLI has connected and shows its prompt.
func fltCLIEditor(t *testing.T, project string, env *clienv.Env, api *fakeapi.Server) *session {
	t.Helper()
	cli := clienv.Binary(t)
	e := startEditor(t, editorOpts{
		dir:   project,
		env:   env.Map(),
		extra: fmt.Sprintf(`, terminal_cmd = { %q, "--permission-mode", "default" }, terminal = { width = 0.6 }`, cli),
	})
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	st := e.status(t)
	if !st.Running || st.Terminal == nil {
		t.Fatalf(":ClaudeStart: status %+v, notes %+v", st, e.notes(t))
	}
	killOnCleanup(t, st.Terminal.PID)
	killOnCleanup(t, e.hostPID(t))
	s := &session{editor: e, api: api, env: env, project: project}
	e.WaitFor(t, 60*time.Second,
		fmt.Sprintf(`(function() for _, c in ipairs(require("claude").status().clients) do if c.pid == %d then return true end end end)()`, st.Terminal.PID),
		`return require("claude").status()`, "the CLI to connect")
	s.st = e.status(t)
	s.waitScreen(t, 60*time.Second, "? for shortcuts")
	return s
}

// fltOnlyClient checks that s's server has exactly the client pid.
func fltOnlyClient(t *testing.T, e *editor, pid int) {
	t.Helper()
	e.WaitFor(t, 30*time.Second, fmt.Sprintf(`(function() local cs = require("claude").status().clients return #cs == 1 and cs[1].pid == %d end)()`, pid),
		`return require("claude").status().clients`, fmt.Sprintf("exactly client %d", pid))
}

// fltFreezeAndKill kills an editor and its host with SIGKILL so that neither
// can clean up: Neovim is stopped first, so that it cannot run its job's
// exit handler (which removes the lock) between the two kills.
func fltFreezeAndKill(t *testing.T, e *editor) (nvimPID, hostPID int) {
	t.Helper()
	e.Eval(t, `return vim.fn.getpid()`, &nvimPID)
	hostPID = e.hostPID(t)
	for _, step := range []struct {
		pid int
		sig syscall.Signal
	}{{nvimPID, syscall.SIGSTOP}, {hostPID, syscall.SIGKILL}, {nvimPID, syscall.SIGKILL}} {
		if err := syscall.Kill(step.pid, step.sig); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, hostPID, "the Go host")
	waitGone(t, nvimPID, "Neovim")
	// Reap it, as a user's shell would: a zombie still answers signal 0,
	// and the CLI would take its lock for a live editor's.
	_ = e.Nvim.Close()
	return nvimPID, hostPID
}

// TestFaultNeovimKilled runs two editors in one directory sharing a
// config dir, each with the real CLI from :ClaudeStart (each CLI reaches
// its own editor), then kills one editor and its host with SIGKILL. The
// stale lock stays; a CLI that auto-connects (claude --ide, no port)
// discards it and reaches the live editor, never the dead port (a trap
// listens there); and the next editor to start sweeps such a lock.
func TestFaultNeovimKilled(t *testing.T) {
	api := fakeapi.New(t)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := clienv.New(t, api.URL(), project)

	// Two instances, one directory: two locks, two ports, each CLI on its
	// own editor.
	a := fltCLIEditor(t, project, env, api)
	b := fltCLIEditor(t, project, env, api)
	if a.st.Port == b.st.Port || a.st.LockFile == b.st.LockFile {
		t.Fatalf("same port or lock: %+v %+v", a.st, b.st)
	}
	fltOnlyClient(t, a.editor, a.st.Terminal.PID)
	fltOnlyClient(t, b.editor, b.st.Terminal.PID)
	la, lb := readLock(t, a.st.LockFile), readLock(t, b.st.LockFile)
	if la.IDEName == lb.IDEName {
		t.Errorf("both editors are %q in /ide", la.IDEName)
	}
	t.Logf("two editors in one directory: ports %d and %d, each CLI connected to its own", a.st.Port, b.st.Port)

	// Kill editor a and its host: the lock stays behind, naming a dead
	// pid and a dead port.
	staleLock := a.st.LockFile
	deadNvim, _ := fltFreezeAndKill(t, a.editor)
	waitGone(t, a.st.Terminal.PID, "editor a's CLI")
	if l := readLock(t, staleLock); l.PID != deadNvim {
		t.Fatalf("stale lock pid %d, want the dead Neovim's %d", l.PID, deadNvim)
	}
	fltOnlyClient(t, b.editor, b.st.Terminal.PID)
	t.Logf("editor a and its host killed with SIGKILL: lock %s left behind, naming dead pid %d", filepath.Base(staleLock), deadNvim)

	// A trap on the dead port records any connection attempt.
	trap, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(a.st.Port))
	if err != nil {
		t.Fatalf("listen on the dead port: %v", err)
	}
	defer trap.Close()
	trapped := make(chan string, 16)
	go func() {
		for {
			c, err := trap.Accept()
			if err != nil {
				return
			}
			trapped <- c.RemoteAddr().String()
			_ = c.Close()
		}
	}()

	// A CLI that picks its editor by directory: only b qualifies.
	cli := clienv.Binary(t)
	vars := env.Map()
	delete(vars, "CLAUDE_CODE_SSE_PORT")
	varsJSON, _ := json.Marshal(vars)
	var job, pid int
	b.Eval(t, `local cmd, cwd, env = ...
vim.cmd("tabnew")
local job
if vim.fn.has("nvim-0.11") == 1 then job = vim.fn.jobstart(cmd, { term = true, cwd = cwd, env = vim.json.decode(env) })
else job = vim.fn.termopen(cmd, { cwd = cwd, env = vim.json.decode(env) }) end
return { job, vim.fn.jobpid(job) }`, &[]any{&job, &pid}, []string{cli, "--ide", "--permission-mode", "default"}, project, string(varsJSON))
	killOnCleanup(t, pid)
	b.WaitFor(t, 60*time.Second, fmt.Sprintf(`(function() for _, c in ipairs(require("claude").status().clients) do if c.pid == %d then return true end end end)()`, pid),
		`return vim.api.nvim_buf_get_lines(0, 0, -1, false)`, "claude --ide to reach the live editor")
	waitFile(t, staleLock, false) // the CLI discards locks of dead pids
	select {
	case from := <-trapped:
		t.Fatalf("a CLI connected to the dead editor's port (from %s)", from)
	default:
	}
	t.Logf("claude --ide discarded the stale lock and connected to the live editor; the dead port saw no connection")
	_ = syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid, "claude --ide")

	// The next editor to start sweeps a stale lock itself.
	if err := os.WriteFile(staleLock, fltJSON(t, la), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startEditor(t, editorOpts{dir: project, env: env.Map()})
	c.serve(t)
	waitFile(t, staleLock, false)
	if _, err := os.Stat(b.st.LockFile); err != nil {
		t.Errorf("the live editor's lock was swept too: %v", err)
	}
	if log, _ := os.ReadFile(c.logFile); !strings.Contains(string(log), "removed stale lock file") {
		t.Errorf("the new editor's log does not record the sweep:\n%s", log)
	}
	select {
	case from := <-trapped:
		t.Fatalf("a CLI connected to the dead editor's port (from %s)", from)
	default:
	}
	t.Logf("a new editor swept the stale lock at start and left the live one")
}

func fltJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fltLongByDesign are the tools whose calls last as long as their job:
// openDiff waits for the user (PROTOCOL.md §4), executeCode for the code
// it runs (bounded by execute.timeout_ms).
var fltLongByDesign = map[string]bool{"openDiff": true, "executeCode": true}

// TestFaultToolCallsWhileNeovimBlocked opens the prompts that can block
// Neovim's main loop (a UI is attached, as for a real user) and calls every
// tool at once meanwhile: each call is answered — a result or an isError
// result, never a hang (the test logs how long each took) — and once the
// prompt is answered the editor serves again. A save reported as failed
// must not happen behind the user's back once the prompt is gone.
func TestFaultToolCallsWhileNeovimBlocked(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.txt")
	for p, text := range map[string]string{a: "alpha\n", filepath.Join(out, "outside.txt"): "outside\n"} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := startEditor(t, editorOpts{dir: dir})
	if err := e.RegisterHandler("redraw", func(...any) {}); err != nil {
		t.Fatal(err)
	}
	if err := e.AttachUI(120, 40, map[string]any{"ext_linegrid": true}); err != nil {
		t.Fatal(err)
	}
	st := e.serve(t)
	host := e.hostPID(t)
	e.Exec(t, `vim.cmd("edit a.txt")`)
	c := dialIDE(t, st.Port, readLock(t, st.LockFile).AuthToken)
	c.handshake(t, 4242)
	tools := fltTools(t, c)
	fx := toolargs.Fixture{File: a, Outside: filepath.Join(out, "outside.txt"), Workspace: dir, Marker: filepath.Join(out, "pwned")}

	prompts := []struct {
		name, keys string
		up         func(fltMode) bool
		dismiss    string
	}{
		// The host's first call loads bridge.lua into Neovim: here during
		// the prompt.
		{"hit-enter, first call", `:echo "one\ntwo\nthree"<CR>`, func(m fltMode) bool { return m.Blocking }, "<CR>"},
		{"hit-enter", `:echo "one\ntwo\nthree"<CR>`, func(m fltMode) bool { return m.Blocking }, "<CR>"},
		// Neovim serves RPC requests while input() and confirm() wait.
		{"confirm()", `:call confirm("sure?", "&Yes\n&No")<CR>`, func(m fltMode) bool { return m.Mode == "r?" || m.Blocking }, "<Esc>"},
		{"input()", `:call input("name? ")<CR>`, func(m fltMode) bool { return m.Mode == "c" }, "<Esc>"},
	}
	id := 100
	for round, p := range prompts {
		t.Run(p.name, func(t *testing.T) {
			unsaved := fmt.Sprintf("unsaved %d", round)
			e.Exec(t, `vim.api.nvim_buf_set_lines(vim.fn.bufnr(...), 0, -1, false, { select(2, ...) })`, a, unsaved)
			onDisk, err := os.ReadFile(a)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Input(p.keys); err != nil {
				t.Fatal(err)
			}
			fltWaitMode(t, e, p.up, "the prompt")
			m, _ := e.Mode()
			t.Logf("prompt up: mode %q blocking %v", m.Mode, m.Blocking)

			// Every tool at once, as a busy CLI would.
			sent := map[int]string{}
			saveFailed := false
			start := time.Now()
			var slowest time.Duration
			for _, tool := range tools {
				if fltLongByDesign[tool.Name] {
					continue
				}
				id++
				args, _ := json.Marshal(toolargs.Valid(tool, fx))
				sent[id] = tool.Name
				c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool.Name, args))
			}
			_ = c.c.SetReadDeadline(time.Now().Add(60 * time.Second))
			for len(sent) > 0 {
				_, b, err := c.c.ReadMessage()
				if err != nil {
					t.Fatalf("no answer for %v: %v", sent, err)
				}
				var res map[string]any
				if err := json.Unmarshal(b, &res); err != nil {
					t.Fatal(err)
				}
				n, ok := res["id"].(float64)
				name, mine := sent[int(n)]
				if !ok || !mine {
					continue
				}
				delete(sent, int(n))
				took := time.Since(start)
				slowest = max(slowest, took)
				text, isErr := fltResultText(res)
				if res["error"] != nil {
					t.Errorf("%s: JSON-RPC error %v", name, res["error"])
				}
				if isErr && text == "" {
					t.Errorf("%s: an error without a message", name)
				}
				if name == "saveDocument" && isErr {
					saveFailed = true
				}
				t.Logf("%-26s after %-8v error=%-5v %.110q", name, took.Round(time.Millisecond), isErr, text)
			}
			t.Logf("every call answered within %v", slowest.Round(time.Millisecond))
			if !alive(host) {
				t.Fatal("the host died")
			}
			if _, err := e.Input(p.dismiss); err != nil {
				t.Fatal(err)
			}
			fltWaitMode(t, e, func(m fltMode) bool { return m.Mode == "n" && !m.Blocking }, "normal mode")
			// Requests Neovim queued during the prompt run now, before this
			// one (one main-loop queue).
			e.Exec(t, `vim.cmd("redraw")`)
			if b, _ := os.ReadFile(a); saveFailed && string(b) != string(onDisk) {
				t.Errorf("saveDocument was reported as failed, yet a.txt was saved once the prompt was answered: %q", b)
			}
			// The editor serves again.
			id++
			c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"checkDocumentDirty","arguments":{"filePath":%q}}}`, id, a))
			if text, isErr := fltResultText(c.recv(t, id)); isErr || !strings.Contains(text, `"success":true`) {
				t.Errorf("checkDocumentDirty after the prompt: %q", text)
			}
		})
	}
	if b, _ := os.ReadFile(fx.Outside); string(b) != "outside\n" {
		t.Errorf("outside.txt = %q", b)
	}
}

type fltMode struct {
	Mode     string
	Blocking bool
}

// fltWaitMode polls nvim_get_mode, which Neovim answers even when blocked.
func fltWaitMode(t *testing.T, e *editor, ok func(fltMode) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		m, err := e.Mode()
		if err != nil {
			t.Fatal(err)
		}
		if ok(fltMode{m.Mode, m.Blocking}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: mode %q blocking %v", what, m.Mode, m.Blocking)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fltResultText is a tool result's text and isError flag (or the JSON-RPC
// error's message).
func fltResultText(frame map[string]any) (string, bool) {
	if e, ok := frame["error"].(map[string]any); ok {
		return fmt.Sprint(e["message"]), true
	}
	res, _ := frame["result"].(map[string]any)
	var parts []string
	items, _ := res["content"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			parts = append(parts, fmt.Sprint(m["text"]))
		}
	}
	isErr, _ := res["isError"].(bool)
	return strings.Join(parts, "\n"), isErr
}

// fltTools asks the server for its tools.
func fltTools(t *testing.T, c *ideClient) []toolargs.Tool {
	t.Helper()
	c.send(t, `{"jsonrpc":"2.0","id":77,"method":"tools/list"}`)
	res := c.recv(t, 77)
	b, _ := json.Marshal(res["result"])
	var r struct {
		Tools []toolargs.Tool `json:"tools"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Tools) == 0 {
		t.Fatalf("tools/list: %s (%v)", b, err)
	}
	return r.Tools
}

// fltLockDirFault prepares <cfg>/ide in a broken state; it returns "" when it
// could, else why the case cannot run here.
type fltLockDirFault struct {
	name    string
	prepare func(t *testing.T, ide string) string
	want    string // in the error message
}

func fltMountTmpfs(t *testing.T, dir, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "mounting a tmpfs needs root"
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Sprintf("mount -t tmpfs -o %s: %v %s", opts, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return ""
}

// TestFaultLockDirUnwritable starts the server where the lock cannot be
// written: a read-only directory, a full disk, a file where the directory
// should be. Each gives one clear error message and leaves no lock file,
// whole or partial, and no temporary file.
func TestFaultLockDirUnwritable(t *testing.T) {
	faults := []fltLockDirFault{
		{"read-only directory", func(t *testing.T, ide string) string {
			if err := os.MkdirAll(ide, 0o700); err != nil {
				t.Fatal(err)
			}
			if os.Geteuid() != 0 {
				if err := os.Chmod(ide, 0o500); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Chmod(ide, 0o700) })
				return ""
			}
			return fltMountTmpfs(t, ide, "ro,size=64k,mode=0700") // root ignores mode bits
		}, "read-only file system|permission denied"},
		{"disk full", func(t *testing.T, ide string) string {
			if err := os.MkdirAll(ide, 0o700); err != nil {
				t.Fatal(err)
			}
			if why := fltMountTmpfs(t, ide, "size=16k,mode=0700"); why != "" {
				return why
			}
			f, err := os.Create(filepath.Join(ide, "filler"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			chunk := make([]byte, 4096)
			for {
				if _, err := f.Write(chunk); err != nil {
					break // ENOSPC: the disk is full
				}
			}
			return ""
		}, "no space left on device"},
		{"a file where the directory goes", func(t *testing.T, ide string) string {
			if err := os.MkdirAll(filepath.Dir(ide), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ide, []byte("not a directory"), 0o600); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "not a directory"},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			e := startEditor(t, editorOpts{})
			ide := filepath.Join(e.cfgDir, "ide")
			if why := f.prepare(t, ide); why != "" {
				t.Skip(why)
			}
			before := fltDirList(ide)
			e.Exec(t, captureNotify)
			e.Exec(t, `vim.cmd("ClaudeServe")`)
			st := e.status(t)
			if pid := e.hostPID(t); pid > 0 {
				killOnCleanup(t, pid)
			}
			if st.Running || st.LockFile != "" {
				t.Fatalf("running without a lock: %+v", st)
			}
			ns := e.notes(t)
			if len(ns) != 1 || ns[0].Level != 4 {
				t.Fatalf("want one error message, got %+v", ns)
			}
			t.Logf("the user sees: %s", ns[0].Msg)
			msg := strings.ToLower(ns[0].Msg)
			matched := false
			for _, w := range strings.Split(f.want, "|") {
				matched = matched || strings.Contains(msg, w)
			}
			if !matched || !strings.Contains(ns[0].Msg, "lock") {
				t.Errorf("the message %q should name the lock and say %q", ns[0].Msg, f.want)
			}
			if strings.Contains(ns[0].Msg, "stack traceback") || strings.Contains(ns[0].Msg, "goroutine") {
				t.Errorf("a stack trace in the message: %q", ns[0].Msg)
			}
			if strings.Contains(ns[0].Msg, "Invoking") || strings.Contains(ns[0].Msg, "on channel") {
				t.Errorf("Neovim's RPC wrapping in the message: %q", ns[0].Msg)
			}
			if after := fltDirList(ide); after != before {
				t.Errorf("the lock directory changed from %q to %q", before, after)
			}
			// A later start, once the problem is gone, works.
			if f.name == "a file where the directory goes" {
				if err := os.Remove(ide); err != nil {
					t.Fatal(err)
				}
				e.serve(t)
			}
		})
	}
}

// fltDirList is the names in dir, or what went wrong reading it.
func fltDirList(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}
