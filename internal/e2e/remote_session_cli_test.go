//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
	"github.com/nvim-claude/nvim-claude/remote"
	"github.com/nvim-claude/nvim-claude/remote/sshtest"
)

// remoteSession is Neovim with the remote option set for a throwaway
// sshd whose sessions see the project under another path.
type remoteSession struct {
	*session
	srv     *sshtest.Server
	farCfg  string // the far CLI's config dir
	farLock func(port int) string
}

// startRemoteEditor starts Neovim in a local project that the far side
// (real OpenSSH, its own mount and network namespaces) sees at another
// path, with the remote option naming everything but the destination,
// which the test's :ClaudeStart --ssh gives. The far CLI is a wrapper
// that sets the fake API's environment there (no secret on any command
// line).
func startRemoteEditor(t *testing.T, files map[string]string) *remoteSession {
	t.Helper()
	cli := clienv.Binary(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "local", "app")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(local, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := sshtest.Start(t, local, filepath.Join(root, "far", "workspaces", "app"))
	api := fakeapi.New(t)
	env := clienv.New(t, api.URL(), srv.Far) // the far machine's HOME and config dir
	forwardAPI(t, srv, api.URL())
	wrapper := farCLI(t, root, cli, env)
	opts := make([]string, len(srv.Options))
	for i, o := range srv.Options {
		opts[i] = fmt.Sprintf("%q", o)
	}
	e := startEditor(t, editorOpts{
		dir: local,
		extra: fmt.Sprintf(`, terminal = { width = 0.6, permission_mode = "default" },
remote = { options = { %s }, claude = %q, config_dir = %q, dir = %q }`, strings.Join(opts, ", "), wrapper, env.ConfigDir, srv.Far),
	})
	e.Exec(t, captureNotify)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(env.Home, ".cache", "claude-cli-nodejs", "*", "mcp-logs-ide", "*"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil {
				t.Logf("CLI IDE log %s:\n%s", l, b)
			}
		}
	})
	s := &session{editor: e, api: api, env: env, project: local}
	return &remoteSession{session: s, srv: srv, farCfg: env.ConfigDir, farLock: func(port int) string {
		return filepath.Join(env.ConfigDir, "ide", strconv.Itoa(port)+".lock")
	}}
}

// farCLI is the far side's claude: the CLI with env's variables (the fake
// API's address and key, the far HOME) set by a wrapper, so that they are
// on no command line.
func farCLI(t *testing.T, dir, cli string, env *clienv.Env) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("#!/bin/sh\n")
	vars := env.Map()
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sb.WriteString("export " + k + "=" + remote.Quote(vars[k]) + "\n")
	}
	sb.WriteString("exec " + remote.Quote(cli) + ` "$@"` + "\n")
	wrapper := filepath.Join(dir, "claude-far")
	if err := os.WriteFile(wrapper, []byte(sb.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// forwardAPI gives the far side (its own loopback) a way to the fake API
// at the same address, as a real far machine reaches the real one: an
// ssh -N -R of its port, for the test's life.
func forwardAPI(t *testing.T, srv *sshtest.Server, apiURL string) {
	t.Helper()
	u, err := url.Parse(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	args := append([]string{"-N", "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:" + port + ":127.0.0.1:" + port}, srv.Options...)
	cmd := exec.Command("ssh", append(args, "--", srv.Dest)...)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tg := remote.Target{Kind: remote.SSH, Dest: srv.Dest, Options: srv.Options}
	argv, _ := tg.Exec([]string{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port}, nil, false, 0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := exec.Command(argv[0], argv[1:]...)
		c.WaitDelay = 2 * time.Second
		if c.Run() == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the far side never reached the fake API through the forward")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// remoteState is claude.remote's state().
type remoteState struct {
	Label   string `json:"label"`
	Far     string `json:"far"`
	Port    int    `json:"port"`
	HoldPID int    `json:"hold_pid"`
}

// claudeStart runs :ClaudeStart --ssh dest:far and waits for the hold
// (off the main loop) and the terminal.
func (s *remoteSession) claudeStart(t *testing.T) remoteState {
	t.Helper()
	s.Exec(t, `vim.cmd("ClaudeStart --ssh " .. ...)`, s.srv.Dest+":"+s.srv.Far)
	killTreeOnCleanup(t, s.hostPID(t))
	s.WaitFor(t, 60*time.Second, `require("claude.remote").state() ~= nil and require("claude").status().terminal ~= nil`,
		`return _G.notes`, "the far side's hold and the terminal")
	var rs remoteState
	s.Eval(t, `return require("claude.remote").state()`, &rs)
	s.st = s.status(t)
	killTreeOnCleanup(t, s.st.Terminal.PID)
	killOnCleanup(t, rs.HoldPID)
	return rs
}

// farRead reads a file on the far side, over its own ssh.
func (s *remoteSession) farRead(t *testing.T, path string) string {
	t.Helper()
	tg := remote.Target{Kind: remote.SSH, Dest: s.srv.Dest, Options: s.srv.Options}
	argv, err := tg.Exec([]string{"cat", path}, nil, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.WaitDelay = 2 * time.Second
	out, err := c.Output()
	if err != nil {
		t.Fatalf("far cat %s: %v", path, err)
	}
	return string(out)
}

// TestRemoteSSHSession: a whole session with the CLI on the far side of
// real OpenSSH (the far side sees the project at another path), started
// with :ClaudeStart --ssh: it connects through the hold's forward; a
// visual selection reaches the model with the far path; :ClaudeSend's
// mention names the far file; a diagnostic is fetched by its far URI; the
// CLI's openDiff opens the local file and :w writes the accepted text,
// which the far side reads; the review queue says it is not available;
// :ClaudeStop removes the far lock and ends the forward's ssh.
func TestRemoteSSHSession(t *testing.T) {
	s := startRemoteEditor(t, map[string]string{"sample.go": selSampleGo, "hello.txt": diffFileText})
	rs := s.claudeStart(t)
	if rs.Far != s.srv.Far || !strings.Contains(rs.Label, s.srv.Dest) {
		t.Fatalf("remote state %+v", rs)
	}
	farLock := s.farLock(rs.Port)
	if l := readLock(t, farLock); l.PID <= 0 || len(l.WorkspaceFolders) != 1 || l.WorkspaceFolders[0] != s.srv.Far {
		t.Fatalf("far lock %+v", l)
	}
	s.WaitFor(t, 90*time.Second, `#require("claude").status().clients >= 1`,
		`return vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false)`, "the far CLI to connect")
	s.waitScreen(t, 60*time.Second, "? for shortcuts")
	cliPID := s.status(t).Clients[0].PID

	// A visual selection: the model reads the far path and the lines.
	s.api.Script(fakeapi.Reply(fakeapi.Text("Noted the selection.")))
	s.editInOtherWindow(t, "sample.go")
	s.selInput(t, "2GVj")
	s.selInput(t, "<Esc>")
	s.toTerminal(t)
	s.waitScreen(t, 20*time.Second, "2 lines selected")
	s.submit(t, "explain this")
	text := s.waitMain(t, 1).Text()
	if want := "The user selected the lines 2 to 3 from " + filepath.Join(s.srv.Far, "sample.go"); !strings.Contains(text, want) {
		t.Fatalf("the request lacks %q:\n%s", want, text)
	}
	if strings.Contains(text, s.project) {
		t.Fatalf("the local path reached the far CLI:\n%s", text)
	}
	s.waitScreen(t, 30*time.Second, "Noted the selection.")

	// :ClaudeSend: the mention names the file as the far side does (from
	// its directory, which is the far path of the project).
	s.editInOtherWindow(t, "sample.go")
	s.selInput(t, "5GVj")
	s.selInput(t, ":ClaudeSend<CR>")
	s.waitScreen(t, 20*time.Second, "@sample.go#L5-6")
	s.typeKeys(t, "\x15") // ^U: the prompt is empty again

	// A diagnostic fetched by its far URI.
	const msg = "undefined: c (planted by the test)"
	s.Exec(t, diagSetLua, filepath.Join(s.project, "sample.go"), 2, 0, msg)
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("ToolSearch", map[string]any{"query": "select:mcp__ide__getDiagnostics"})),
		fakeapi.Reply(fakeapi.ToolUse("mcp__ide__getDiagnostics", map[string]any{"uri": "file://" + filepath.Join(s.srv.Far, "sample.go")})),
		fakeapi.Reply(fakeapi.Text("Diagnostics read.")),
	)
	s.submit(t, "check the diagnostics")
	s.approveTool(t, "GetDiagnostics", 4)
	last := s.waitMain(t, 4)
	if b := string(last.Body); !strings.Contains(b, msg) || !strings.Contains(b, "file://"+filepath.Join(s.srv.Far, "sample.go")) {
		t.Fatalf("the diagnostic did not come back under its far URI:\n%s", last.Text())
	}
	s.waitScreen(t, 30*time.Second, "Diagnostics read.")

	// openDiff: the local file opens, :w writes what the far side reads.
	d := &diffSession{session: s.session, file: filepath.Join(s.project, "hello.txt")}
	d.scriptEdit(filepath.Join(s.srv.Far, "hello.txt"), "beta", "BETA", "Edited.")
	s.submit(t, "make beta loud")
	p := d.waitDiff(t)
	if p.File != d.file {
		t.Fatalf("the diff is of %q, want the local %q", p.File, d.file)
	}
	want := "alpha\nBETA\ngamma\ndelta\n"
	s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, p.ProposalBuf)
	d.waitFileText(t, want)
	if got := s.farRead(t, filepath.Join(s.srv.Far, "hello.txt")); got != want {
		t.Fatalf("the far side reads %q, want %q", got, want)
	}
	d.waitNoDiff(t)
	s.waitScreen(t, 30*time.Second, "Edited.")

	// The review queue says why it cannot list the far CLI's edits.
	s.Exec(t, `_G.notes = {} vim.cmd("ClaudeReview")`)
	if ns := s.notes(t); len(ns) != 1 || !strings.Contains(ns[0].Msg, "review queue is not available") || !strings.Contains(ns[0].Msg, s.srv.Dest) {
		t.Fatalf("notes %+v", ns)
	}

	// A chat over the same far side (stream-json through ssh): its edit
	// of the far file is reviewed in a diff of the local one.
	var chatOK bool
	s.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &chatOK)
	if chatOK {
		s.Exec(t, chatRecorder)
		cs := &chatSession{chatUI: &chatUI{s.editor}, project: s.project, api: s.api}
		s.Exec(t, `vim.cmd("ClaudeChat --ssh " .. ...)`, s.srv.Dest+":"+s.srv.Far)
		s.WaitFor(t, 30*time.Second, `#require("claude.chat").list() == 1`, `return _G.notes`, "the chat to open")
		var id string
		s.Eval(t, `return require("claude.chat").list()[1].id`, &id)
		cs.scriptEdit(filepath.Join(s.srv.Far, "hello.txt"), "gamma", "GAMMA", "Chat edited.")
		cs.send(t, id, "make gamma loud")
		cs.waitPermission(t, id, 1)
		cp := d.waitDiff(t)
		if cp.File != d.file {
			t.Fatalf("the chat's diff is of %q, want the local %q", cp.File, d.file)
		}
		s.Exec(t, `vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1]) vim.cmd("write")`, cp.ProposalBuf)
		want = "alpha\nBETA\nGAMMA\ndelta\n"
		d.waitFileText(t, want)
		cs.waitTranscript(t, id, "Chat edited.")
	}

	// :ClaudeStop: the far lock and the forward's ssh are gone, and the
	// far CLI with its terminal.
	term := s.st.Terminal.PID
	s.Exec(t, `vim.cmd("ClaudeStop")`)
	waitFile(t, farLock, false)
	waitGone(t, rs.HoldPID, "the hold's ssh")
	waitGone(t, term, "the terminal's ssh")
	waitGone(t, cliPID, "the far CLI")
}

// TestRemoteSSHKilled: ssh killed in the middle of a session (the hold's
// and the terminal's) leaves Neovim responsive, says what happened, and
// leaves nothing behind: no far lock, no far CLI, no ssh.
func TestRemoteSSHKilled(t *testing.T) {
	s := startRemoteEditor(t, map[string]string{"hello.txt": diffFileText})
	// :checkhealth first: the option names the destination, the far CLI
	// answers with its version, the mapping resolves.
	s.Exec(t, `require("claude.config").options.remote.ssh = ... vim.cmd("checkhealth claude")`, s.srv.Dest)
	out := s.Lines(t, 0)
	s.Exec(t, `vim.cmd("bwipeout!") require("claude.config").options.remote.ssh = nil`)
	i := strings.Index(out, "nvim-claude: where Claude runs")
	if i < 0 {
		t.Fatalf("no remote section:\n%s", out)
	}
	sec := strings.ReplaceAll(out[i:], "OK: ", "OK ") // Neovim 0.7 says "OK:"
	if j := strings.Index(sec[1:], "nvim-claude:"); j > 0 {
		sec = sec[:j+1]
	}
	for _, want := range []string{"OK far CLI: " + clienv.Version, "OK mapping: " + s.srv.Far + " (far) = " + s.project + " (here)", "OK engine: "} {
		if !strings.Contains(sec, want) {
			t.Errorf("checkhealth lacks %q:\n%s", want, sec)
		}
	}
	rs := s.claudeStart(t)
	farLock := s.farLock(rs.Port)
	waitFile(t, farLock, true)
	term := s.st.Terminal.PID
	s.WaitFor(t, 90*time.Second, `#require("claude").status().clients >= 1`,
		`return vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false)`, "the far CLI to connect")
	cliPID := s.status(t).Clients[0].PID
	for _, pid := range []int{rs.HoldPID, term} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	s.WaitFor(t, 30*time.Second, `(function() for _, n in ipairs(_G.notes) do if n.msg:find("lost the connection", 1, true) then return true end end end)()`,
		`return _G.notes`, "the message about the lost connection")
	var msg string
	s.Eval(t, `for _, n in ipairs(_G.notes) do if n.msg:find("lost the connection", 1, true) then return n.msg end end`, &msg)
	if !strings.Contains(msg, s.srv.Dest) || !strings.Contains(msg, ":ClaudeStart") {
		t.Fatalf("message %q", msg)
	}
	// Neovim answers (the loop never waited on ssh) and knows the far side is gone.
	var gone bool
	s.Eval(t, `return require("claude.remote").state() == nil`, &gone)
	if !gone {
		t.Fatal("the far session is still listed")
	}
	waitFile(t, farLock, false)
	waitGone(t, cliPID, "the far CLI")
	waitGone(t, rs.HoldPID, "the hold's ssh")
	s.WaitFor(t, 30*time.Second, `require("claude").status().terminal == nil`, `return require("claude").status()`, "the terminal's job to end")
}

// TestRemoteContainerSession: the container path through its exec command
// template, with a stand-in for docker (no daemon here) that enters a mount
// namespace in which the far path shows the project, on this machine's
// network (as a container with host networking): :ClaudeStart --container
// writes the far lock over docker exec -i, runs the CLI with docker exec
// -it -w <far dir>, the CLI connects, a selection reaches the model with
// the far path, and :ClaudeStop removes the far lock.
func TestRemoteContainerSession(t *testing.T) {
	cli := clienv.Binary(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "src", "app")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "sample.go"), []byte(selSampleGo), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := sshtest.StartRuntime(t, local, filepath.Join(root, "workspaces", "app"))
	api := fakeapi.New(t)
	env := clienv.New(t, api.URL(), rt.Far)
	wrapper := farCLI(t, root, cli, env)
	e := startEditor(t, editorOpts{
		dir: local,
		extra: fmt.Sprintf(`, terminal = { width = 0.6, permission_mode = "default" },
remote = { container = %q, bin = %q, claude = %q, config_dir = %q, map = { remote = %q, ["local"] = %q } }`,
			rt.Name, rt.Bin, wrapper, env.ConfigDir, rt.Far, local),
	})
	e.Exec(t, captureNotify)
	s := &remoteSession{session: &session{editor: e, api: api, env: env, project: local}}
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	killTreeOnCleanup(t, e.hostPID(t))
	e.WaitFor(t, 60*time.Second, `require("claude.remote").state() ~= nil and require("claude").status().terminal ~= nil`,
		`return _G.notes`, "the far side's hold and the terminal")
	var rs remoteState
	e.Eval(t, `return require("claude.remote").state()`, &rs)
	s.st = e.status(t)
	killTreeOnCleanup(t, s.st.Terminal.PID)
	farLock := filepath.Join(env.ConfigDir, "ide", strconv.Itoa(rs.Port)+".lock")
	if l := readLock(t, farLock); len(l.WorkspaceFolders) != 1 || l.WorkspaceFolders[0] != rt.Far {
		t.Fatalf("far lock %+v", l)
	}
	// the terminal's job is started before the stand-in has logged its
	// call: wait for the third call (or fail on what came)
	calls := rt.Calls(t)
	for deadline := time.Now().Add(10 * time.Second * nvimtest.Slack); len(calls) < 3 && time.Now().Before(deadline); calls = rt.Calls(t) {
		time.Sleep(50 * time.Millisecond)
	}
	layer := filepath.Join(env.ConfigDir, "ide", "nvim-claude-"+strconv.Itoa(rs.Port), "t1.json")
	want := fmt.Sprintf("exec -i -t -w %s -e CLAUDE_CODE_SSE_PORT=%d -e CLAUDE_CONFIG_DIR=%s -e ENABLE_IDE_INTEGRATION=true -- %s %s --permission-mode default --settings %s",
		rt.Far, rs.Port, env.ConfigDir, rt.Name, wrapper, layer)
	shc := "exec -i -w " + rt.Far + " -- " + rt.Name + " sh -c "
	if len(calls) != 3 || !strings.HasPrefix(calls[0], shc) || !strings.HasPrefix(calls[1], shc) || !strings.Contains(calls[1], "t1.json") ||
		calls[2] != want || strings.Contains(strings.Join(calls, "\n"), "Bearer") {
		t.Fatalf("docker calls:\n%s\nwant the hold's, the settings layer's, then\n%s", strings.Join(calls, "\n"), want)
	}
	if b, err := os.ReadFile(layer); err != nil || !strings.Contains(string(b), "Bearer ") {
		t.Fatalf("the far settings layer (%v): %s", err, b)
	}
	e.WaitFor(t, 90*time.Second, `#require("claude").status().clients >= 1`,
		`return vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false)`, "the CLI in the container to connect")
	s.waitScreen(t, 60*time.Second, "? for shortcuts")
	s.api.Script(fakeapi.Reply(fakeapi.Text("Noted.")))
	s.editInOtherWindow(t, "sample.go")
	s.selInput(t, "3GV")
	s.selInput(t, "<Esc>")
	s.toTerminal(t)
	s.waitScreen(t, 20*time.Second, "1 line selected")
	s.submit(t, "explain this")
	if text, want := s.waitMain(t, 1).Text(), "from "+filepath.Join(rt.Far, "sample.go"); !strings.Contains(text, want) {
		t.Fatalf("the request lacks %q:\n%s", want, text)
	}
	// The CLI in the container reports its turn through its hooks (done,
	// or idle at once when its terminal is in sight; the CLI's session id
	// comes only from them).
	e.WaitFor(t, 60*time.Second, `(function() local x = require("claude").sessions()[1]
		return x ~= nil and x.claude_session ~= nil and (x.state == "done" or x.state == "idle") end)()`,
		`return require("claude").sessions()`, "the container's session to be done")
	cliPID := s.status(t).Clients[0].PID
	e.Exec(t, `vim.cmd("ClaudeStop")`)
	waitFile(t, farLock, false)
	waitGone(t, cliPID, "the CLI in the container")

	// Started again, then Neovim quits: the far lock goes too.
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	e.WaitFor(t, 60*time.Second, `require("claude.remote").state() ~= nil and require("claude").status().terminal ~= nil`,
		`return _G.notes`, "the far side's hold again")
	e.Eval(t, `return require("claude.remote").state()`, &rs)
	killTreeOnCleanup(t, e.status(t).Terminal.PID)
	killTreeOnCleanup(t, e.hostPID(t))
	farLock = filepath.Join(env.ConfigDir, "ide", strconv.Itoa(rs.Port)+".lock")
	waitFile(t, farLock, true)
	_ = e.Command("qa!")
	waitFile(t, farLock, false)
	waitGone(t, rs.HoldPID, "the hold's docker exec")
}

// TestRemoteSSHSessionHooks: a far terminal session (real OpenSSH) gets
// the sessions' HTTP hooks: its settings layer, with the hooks' token, is
// a private file on the far side (the terminal's command line names only
// its path), the far CLI posts its hooks through the forward; the
// dashboard shows the session needing input with the request the far CLI
// asks, :ClaudeAnswer allow from Neovim answers the far prompt, the turn's
// end makes it `done` (noticed, as it was out of sight), and the session
// keeps its local directory. :ClaudeStop removes the far layer.
func TestRemoteSSHSessionHooks(t *testing.T) {
	s := startRemoteEditor(t, map[string]string{"hello.txt": diffFileText})
	rs := s.claudeStart(t)
	s.WaitFor(t, 90*time.Second, `#require("claude").status().clients >= 1`,
		`return vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false)`, "the far CLI to connect")
	s.waitScreen(t, 60*time.Second, "? for shortcuts")
	layerDir := filepath.Join(s.farCfg, "ide", "nvim-claude-"+strconv.Itoa(rs.Port))
	layer := filepath.Join(layerDir, "t1.json")
	b, err := os.ReadFile(layer)
	if err != nil || !strings.Contains(string(b), "/hook/Stop/t1\"") || !strings.Contains(string(b), `"Authorization":"Bearer `) {
		t.Fatalf("the far settings layer (%v): %s", err, b)
	}
	if fi, err := os.Stat(layer); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the far layer is not private: %v", err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.st.Terminal.PID))
	if err != nil {
		t.Fatal(err)
	}
	if argv := strings.ReplaceAll(string(cmdline), "\x00", " "); !strings.Contains(argv, "--settings "+layer) || strings.Contains(argv, "Bearer") {
		t.Fatalf("the terminal's command line: %s", argv)
	}

	s.Exec(t, `_G.states = {}
		vim.api.nvim_create_autocmd("User", { pattern = "ClaudeSessionState", callback = function(ev)
			local d = ev.data or { state = require("claude").sessions()[1].state }
			table.insert(_G.states, d.state)
		end })`)
	bash := fakeapi.ToolUse("Bash", map[string]any{"command": "touch far-made.txt", "description": "Create a file"})
	s.api.Script(fakeapi.Reply(bash), fakeapi.Reply(fakeapi.Text("All done.")))
	s.submit(t, "make a file")
	s.WaitFor(t, 60*time.Second, waitingRequest,
		`return { sessions = require("claude").sessions(), notes = _G.notes, screen = vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false) }`,
		"the far prompt in Neovim's queue")
	var dash []struct {
		ID, State, Mode, Dir string
		Request              struct{ Tool, Summary string }
	}
	s.Eval(t, `return require("claude").sessions()`, &dash)
	if len(dash) != 1 || dash[0].ID != "t1" || dash[0].Mode != "terminal" || dash[0].Dir != s.project ||
		!strings.Contains(dash[0].Request.Summary, "touch far-made.txt") {
		t.Fatalf("the dashboard: %+v", dash)
	}
	s.waitScreen(t, 30*time.Second, "Do you want to proceed?")
	// Answered from Neovim, out of the terminal's sight (another tab
	// page): the far CLI runs the command, the turn ends, it is noticed.
	s.Exec(t, `vim.cmd("tabnew") _G.notes = {} vim.cmd("ClaudeAnswer allow")`)
	if r, ok := s.waitMain(t, 2).ToolResult(bash.ID); !ok || r.IsError {
		t.Fatalf("the far CLI did not run the command allowed in Neovim: %v %s", ok, r.ResultText())
	}
	s.WaitFor(t, 60*time.Second, `require("claude").sessions()[1].state == "done"`,
		`return { sessions = require("claude").sessions(), states = _G.states }`, "the far session to be done")
	if _, err := os.Stat(filepath.Join(s.project, "far-made.txt")); err != nil {
		t.Fatalf("the command did not run on the far side: %v", err)
	}
	s.WaitFor(t, 30*time.Second, `(function() for _, n in ipairs(_G.notes) do if n.msg:find("is done", 1, true) then return true end end end)()`,
		`return _G.notes`, "the notice that the far session is done")
	s.Eval(t, `return require("claude").sessions()`, &dash)
	if dash[0].Dir != s.project {
		t.Fatalf("the far session's directory became %q", dash[0].Dir)
	}

	// :ClaudeStop: the far layer goes with the hold.
	s.Exec(t, `vim.cmd("ClaudeStop")`)
	waitFile(t, layerDir, false)
}
