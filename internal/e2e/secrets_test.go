//go:build unix

package e2e

// Secrets: the lock file's auth token opens the editor to whoever holds
// it. It lives in the lock file (mode 0600) and in the host's memory, and
// nowhere else a user, another local user or a log could see it.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// secProcFiles returns, for every process, the contents of one of its
// /proc files (cmdline, environ), keyed by "pid (comm)". Processes that
// end meanwhile or cannot be read are skipped, and counted.
func secProcFiles(name string) (files map[string]string, unreadable int) {
	files = map[string]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), name))
		if err != nil {
			unreadable++
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		files[e.Name()+" ("+strings.TrimSpace(string(comm))+")"] = string(b)
	}
	return files, unreadable
}

// TestTokenStaysSecret runs the real CLI against the editor with logging
// at trace level, goes through the paths that log (connections, a refused
// attempt, tool calls, a diff, :checkhealth, :ClaudeStatus, :ClaudeStop),
// and then looks for the token everywhere it must not be: every process's
// argv and environment (the CLI's above all), the log file, the messages
// and notifications the user sees, status(), the statusline, the
// terminal's screen and Neovim's own environment.
func TestTokenStaysSecret(t *testing.T) {
	s := startSession(t, sessionOpts{files: map[string]string{"hello.txt": "alpha\nbeta\n"}, extra: `, log_level = "trace"`})
	token := readLock(t, s.st.LockFile).AuthToken
	if len(token) < 32 {
		t.Fatalf("token %q is too short to be a secret", token)
	}
	cli := s.st.Terminal.PID
	host := s.hostPID(t)

	// Paths that log: a refused attempt whose header holds the token, a
	// tool call, an edit through a diff.
	for _, bad := range []string{token + "x", "x" + token, strings.ToUpper(token)} {
		h := http.Header{}
		h.Set("X-Claude-Code-Ide-Authorization", bad)
		if ws, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/", s.st.Port), h); err == nil {
			_ = ws.Close()
			t.Fatalf("a wrong token %q was accepted", bad)
		}
	}
	c := dialIDE(t, s.st.Port, token)
	c.handshake(t, 4242)
	c.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getWorkspaceFolders","arguments":{}}}`)
	c.recv(t, 1)
	s.Exec(t, `vim.cmd("stopinsert") vim.cmd("wincmd p") vim.cmd("edit hello.txt")`)
	file := filepath.Join(s.project, "hello.txt")
	s.api.Script(
		fakeapi.Reply(fakeapi.ToolUse("Read", map[string]any{"file_path": file})),
		fakeapi.Reply(fakeapi.ToolUse("Edit", map[string]any{"file_path": file, "old_string": "beta", "new_string": "BETA"})),
		fakeapi.Reply(fakeapi.Text("Edited.")),
	)
	s.submit(t, "make beta loud")
	s.WaitFor(t, 60*time.Second, `#require("claude.diff").pending() == 1`, `return require("claude.diff").pending()`, "the diff")

	// Every process on the machine, while the session runs.
	cmdlines, skipped := secProcFiles("cmdline")
	environs, skippedEnv := secProcFiles("environ")
	if _, ok := environs[fmt.Sprint(cli)+" (claude)"]; !ok {
		found := false
		for k := range environs {
			found = found || strings.HasPrefix(k, fmt.Sprint(cli)+" ")
		}
		if !found {
			t.Fatalf("could not read the CLI's environment (pid %d)", cli)
		}
	}
	for what, files := range map[string]map[string]string{"argv": cmdlines, "environment": environs} {
		for proc, text := range files {
			if strings.Contains(text, token) {
				t.Errorf("the token is in the %s of process %s", what, proc)
			}
		}
	}
	cliEnv, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cli))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cliEnv), "CLAUDE_CODE_SSE_PORT="+strconv.Itoa(s.st.Port)) {
		t.Errorf("read the wrong environment: the CLI's lacks CLAUDE_CODE_SSE_PORT")
	}
	t.Logf("searched the argv of %d processes and the environment of %d (%d and %d unreadable)", len(cmdlines), len(environs), skipped, skippedEnv)

	// What the user sees.
	var seen struct {
		Status     string `json:"status"`
		StatusText string `json:"status_text"`
		Statusline string `json:"statusline"`
		Messages   string `json:"messages"`
		Notes      string `json:"notes"`
		Health     string `json:"health"`
		Env        string `json:"env"`
		Screen     string `json:"screen"`
		Vars       string `json:"vars"`
	}
	s.Eval(t, `local term = ...
vim.cmd("ClaudeStatus")
local st = require("claude").status()
vim.cmd("checkhealth claude")
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
vim.cmd("close")
return {
  status = vim.inspect(st),
  status_text = require("claude").status_text(),
  statusline = require("claude").statusline(),
  messages = vim.fn.execute("messages"),
  notes = vim.inspect(_G.notes),
  health = health,
  env = vim.inspect(vim.fn.environ()),
  screen = table.concat(vim.api.nvim_buf_get_lines(term, 0, -1, false), "\n"),
  vars = vim.inspect({ g = vim.g, env_server = require("claude.server").state() }),
}`, &seen, s.st.Terminal.Bufnr)
	if !strings.Contains(seen.Health, strconv.Itoa(s.st.Port)) {
		t.Errorf(":checkhealth claude did not run its live check:\n%s", seen.Health)
	}
	for what, text := range map[string]string{
		"status()": seen.Status, ":ClaudeStatus / status_text()": seen.StatusText, "the statusline": seen.Statusline,
		":messages": seen.Messages, "notifications": seen.Notes, ":checkhealth claude": seen.Health,
		"Neovim's environment": seen.Env, "the terminal": seen.Screen, "g: variables and the server state": seen.Vars,
	} {
		if strings.Contains(text, token) {
			t.Errorf("the token is in %s", what)
		}
	}

	// The log, after a stop (everything flushed), at trace level.
	s.Exec(t, `vim.cmd("ClaudeStop")`)
	waitGone(t, host, "the Go host")
	waitGone(t, cli, "the CLI")
	log, err := os.ReadFile(s.logFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) == 0 || !strings.Contains(string(log), "refused connection") || !strings.Contains(string(log), "diff opened") {
		t.Errorf("the trace log does not cover the session (%d bytes)", len(log))
	}
	if strings.Contains(string(log), token) {
		t.Errorf("the token is in the log file %s", s.logFile)
	}
	t.Logf("log file: %d bytes at trace level, token absent", len(log))
}
