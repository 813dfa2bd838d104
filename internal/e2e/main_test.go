//go:build unix

// Package e2e holds the end-to-end tests: real headless Neovim with the
// plugin from this checkout, the real Go host, and — in the CLI tests — the
// real Claude Code CLI talking to a fake Messages API.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// hostBin is the nvim-claude binary built for this test run.
var hostBin string

func TestMain(m *testing.M) {
	path, cleanup, err := nvimtest.BuildHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// editor is a headless Neovim with the plugin set up.
type editor struct {
	*nvimtest.Nvim
	cfgDir  string // CLAUDE_CONFIG_DIR the plugin writes locks to
	logFile string
}

type editorOpts struct {
	dir   string
	env   map[string]string // setup{env=…}
	extra string            // more setup options, Lua table fields
	nvim  []string          // Neovim's own environment additions
}

func startEditor(t *testing.T, o editorOpts) *editor {
	t.Helper()
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "claude-config")
	logFile := filepath.Join(tmp, "nvim-claude.log")
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg}
	for k, v := range o.env {
		env[k] = v
	}
	cfg = env["CLAUDE_CONFIG_DIR"]
	envJSON, _ := json.Marshal(env)
	init := fmt.Sprintf(`require("claude").setup({ bin = %q, log_file = %q, log_level = "debug", env = vim.json.decode(%q) %s })`,
		hostBin, logFile, string(envJSON), o.extra)
	// A wide screen, so terminal output is not wrapped.
	init = "vim.o.columns = 240 vim.o.lines = 60\n" + init
	n := nvimtest.Start(t, nvimtest.Options{Dir: o.dir, Init: init, Env: o.nvim})
	e := &editor{Nvim: n, cfgDir: cfg, logFile: logFile}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(logFile); err == nil {
				t.Logf("host log:\n%s", b)
			}
		}
	})
	return e
}

// status is require("claude").status().
type status struct {
	Running  bool   `json:"running"`
	Port     int    `json:"port"`
	LockFile string `json:"lock_file"`
	Clients  []struct {
		PID int `json:"pid"`
	} `json:"clients"`
	Terminal *struct {
		Bufnr int `json:"bufnr"`
		JobID int `json:"job_id"`
		PID   int `json:"pid"`
	} `json:"terminal"`
}

func (e *editor) status(t *testing.T) status {
	t.Helper()
	var st status
	e.Eval(t, `return require("claude").status()`, &st)
	return st
}

func (e *editor) hostPID(t *testing.T) int {
	t.Helper()
	var pid int
	e.Eval(t, `local c = require("claude.server").state().chan return c and vim.fn.jobpid(c) or 0`, &pid)
	return pid
}

// lockFile is the lock file's JSON.
type lockFile struct {
	PID              int      `json:"pid"`
	WorkspaceFolders []string `json:"workspaceFolders"`
	IDEName          string   `json:"ideName"`
	Transport        string   `json:"transport"`
	RunningInWindows bool     `json:"runningInWindows"`
	AuthToken        string   `json:"authToken"`
}

func readLock(t *testing.T, path string) lockFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read lock: %v", err)
	}
	var l lockFile
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("lock %s is not JSON: %v\n%s", path, err, b)
	}
	return l
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err == nil {
		// A zombie still answers signal 0; look at its state.
		b, rerr := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if rerr == nil {
			f := strings.Fields(string(b))
			if len(f) > 2 && f[2] == "Z" {
				return false
			}
		}
		return true
	}
	return err == syscall.EPERM
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			// what it is now (state, parent; its command line) tells a
			// process that hangs from one that took the pid over
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Fatalf("%s (pid %d) still running: %.300s; %q", what, pid, stat, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killOnCleanup makes sure a process a test caused to exist is gone when
// the test ends, whatever happened.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// killTreeOnCleanup is killOnCleanup for pid and everything it started,
// including children in their own process groups (the chat's CLIs): when
// the test ends they are killed and gone before its temporary directories
// are removed, so none of them writes there after the test.
func killTreeOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		pids := append(descendants(pid), pid)
		for _, p := range pids {
			_ = syscall.Kill(-p, syscall.SIGKILL) // its group, if it leads one
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		deadline := time.Now().Add(5 * nvimtest.Slack * time.Second)
		for _, p := range pids {
			for alive(p) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
}

// descendants lists the processes below pid (children first seen first).
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func waitFile(t *testing.T, path string, exist bool) {
	t.Helper()
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		_, err := os.Stat(path)
		if (err == nil) == exist {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: exists=%v, want %v", path, err == nil, exist)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ideClient is a minimal stand-in for the CLI's WebSocket client.
type ideClient struct {
	c *websocket.Conn
}

func dialIDE(t *testing.T, port int, token string) *ideClient {
	t.Helper()
	h := http.Header{}
	h.Set("X-Claude-Code-Ide-Authorization", token)
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: 5 * nvimtest.Slack * time.Second}
	c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/", port), h)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, code)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &ideClient{c: c}
}

func (c *ideClient) send(t *testing.T, msg string) {
	t.Helper()
	if err := c.c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// recv reads frames until one has the given id (responses) and returns it.
func (c *ideClient) recv(t *testing.T, id int) map[string]any {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * nvimtest.Slack * time.Second))
	// The deadline guards this wait only: left set, it would end every later
	// read of the connection (a frame reader started after the handshake)
	// 30 s on, which a loaded machine reaches in a slow test.
	defer func() { _ = c.c.SetReadDeadline(time.Time{}) }()
	for {
		_, b, err := c.c.ReadMessage()
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("bad frame %s: %v", b, err)
		}
		if v, ok := m["id"].(float64); ok && int(v) == id {
			return m
		}
	}
}

// handshake performs the CLI's opening exchange (PROTOCOL.md §3).
func (c *ideClient) handshake(t *testing.T, pid int) {
	t.Helper()
	c.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}`)
	res := c.recv(t, 0)
	if res["result"] == nil {
		t.Fatalf("initialize: %v", res)
	}
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":%d}}`, pid))
}
