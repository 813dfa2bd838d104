//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// session is Neovim with the plugin, the real CLI in its terminal, and the
// fake Messages API behind the CLI.
type session struct {
	*editor
	api     *fakeapi.Server
	env     *clienv.Env
	project string
	st      status // after the CLI connected
}

type sessionOpts struct {
	permissionMode string // default "default"; "none": no --permission-mode in terminal_cmd
	files          map[string]string
	extra          string // more setup options
	userSettings   string // the CLI's user settings.json, when set
	// before runs in the project before Neovim starts (git init …).
	before func(t *testing.T, project string)
}

// startSession runs :ClaudeStart with the real CLI and waits until the CLI
// has connected to our server and shows its prompt.
func startSession(t *testing.T, o sessionOpts) *session {
	t.Helper()
	cli := clienv.Binary(t)
	api := fakeapi.New(t)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range o.files {
		p := filepath.Join(project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if o.before != nil {
		o.before(t, project)
	}
	env := clienv.New(t, api.URL(), project)
	if o.userSettings != "" {
		if err := os.WriteFile(filepath.Join(env.ConfigDir, "settings.json"), []byte(o.userSettings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mode := o.permissionMode
	if mode == "" {
		mode = "default"
	}
	opts := editorOpts{
		dir:   project,
		env:   env.Map(),
		extra: fmt.Sprintf(`, terminal_cmd = { %q, "--permission-mode", %q }, terminal = { width = 0.6 } %s`, cli, mode, o.extra),
	}
	if mode == "none" { // no --permission-mode: the options and the CLI's settings decide
		opts.extra = fmt.Sprintf(`, terminal_cmd = { %q }, terminal = { width = 0.6 } %s`, cli, o.extra)
	}
	e := startEditor(t, opts)
	// The CLI's own log of the IDE connection helps when a test fails.
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
		`return { status = require("claude").status(), screen = vim.api.nvim_buf_get_lines(require("claude").status().terminal.bufnr, 0, -1, false) }`,
		"the CLI to connect with its pid")
	s.st = e.status(t)
	// The footer of a ready prompt: "? for shortcuts" in default mode,
	// "accept edits on" in acceptEdits mode, "plan mode on" in plan mode.
	s.waitScreen(t, 60*time.Second, "? for shortcuts", "accept edits on", "plan mode on")
	return s
}

// screen is the terminal's current text.
func (s *session) screen(t *testing.T) string {
	t.Helper()
	return s.Lines(t, s.st.Terminal.Bufnr)
}

// waitScreen waits until the terminal shows want (or any of also).
func (s *session) waitScreen(t *testing.T, timeout time.Duration, want string, also ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen := s.screen(t)
		for _, w := range append([]string{want}, also...) {
			if strings.Contains(screen, w) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal never showed %q; screen:\n%s", want, s.screen(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// typeKeys sends raw bytes to the CLI's terminal.
func (s *session) typeKeys(t *testing.T, keys string) {
	t.Helper()
	s.Exec(t, `vim.api.nvim_chan_send(...)`, s.st.Terminal.JobID, keys)
}

// submit types a prompt, waits for it to show, then presses Enter.
func (s *session) submit(t *testing.T, prompt string) {
	t.Helper()
	s.typeKeys(t, prompt)
	s.waitScreen(t, 20*time.Second, prompt)
	s.typeKeys(t, "\r")
}

// waitMain waits for the n-th main request (1-based) and returns it.
func (s *session) waitMain(t *testing.T, n int) fakeapi.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reqs, err := s.api.WaitMainRequests(ctx, n)
	if err != nil {
		t.Fatalf("waiting for main request %d: %v (got %d); screen:\n%s", n, err, len(reqs), s.screen(t))
	}
	return reqs[n-1]
}

func TestCLIConnectsAndAnswers(t *testing.T) {
	s := startSession(t, sessionOpts{})
	s.api.Script(fakeapi.Reply(fakeapi.Text("Scripted answer: the editor is Neovim.")))

	// The lock the CLI found is ours, and it connected over it.
	lock := readLock(t, s.st.LockFile)
	var nvimPID int
	s.Eval(t, `return vim.fn.getpid()`, &nvimPID)
	if lock.PID != nvimPID || lock.WorkspaceFolders[0] != s.project {
		t.Fatalf("lock = %+v", lock)
	}
	if len(s.st.Clients) != 1 || s.st.Clients[0].PID != s.st.Terminal.PID {
		t.Fatalf("clients = %+v, want the CLI's pid %d", s.st.Clients, s.st.Terminal.PID)
	}

	s.submit(t, "which editor is this")
	req := s.waitMain(t, 1)
	if !strings.Contains(req.Text(), "which editor is this") {
		t.Fatalf("the main request lacks the prompt:\n%s", req.Text())
	}
	s.waitScreen(t, 30*time.Second, "Scripted answer: the editor is Neovim.")

	// :ClaudeStop leaves no lock file and no process.
	host := s.hostPID(t)
	cli := s.st.Terminal.PID
	s.Exec(t, `vim.cmd("ClaudeStop")`)
	waitFile(t, s.st.LockFile, false)
	waitGone(t, cli, "the CLI")
	waitGone(t, host, "the Go host")
	entries, _ := os.ReadDir(filepath.Join(s.cfgDir, "ide"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("lock file left behind: %s", e.Name())
		}
	}
}
