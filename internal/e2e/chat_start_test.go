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
)

// A chat whose CLI never speaks (chat.cmd points at a program that sleeps)
// must not freeze Neovim: :ClaudeChat! returns with the panel open and
// "starting", Neovim answers meanwhile, and within the host's bound the
// transcript says what to check; the program does not outlive it. With the
// old synchronous chat_open the command held Neovim for 60 s.
func TestChatSilentCLIDoesNotFreezeNeovim(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "silent-claude")
	pidFile := filepath.Join(dir, "silent.pid")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startEditor(t, editorOpts{dir: dir, extra: fmt.Sprintf(`, chat = { cmd = %q }`, script)})
	var ok bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &ok)
	if !ok {
		t.Skip("the chat needs Neovim 0.8+")
	}
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeChat!")`)
	killOnCleanup(t, e.hostPID(t))
	var st struct {
		State  string `json:"state"`
		Header string `json:"header"`
	}
	e.Eval(t, `local c = require("claude.chat").current()
return { state = c.state, header = vim.wo[vim.fn.win_findbuf(c.tbuf)[1]].winbar }`, &st)
	if st.State != "starting" || !strings.Contains(st.Header, "starting") {
		t.Fatalf("right after :ClaudeChat!: %+v (notes %v)", st, e.notes(t))
	}
	// The silent program runs; Neovim is not waiting for it.
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err = os.ReadFile(pidFile); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the silent CLI never started: %v", err)
		}
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	killOnCleanup(t, pid)
	var n int
	e.Eval(t, `return 6 * 7`, &n)
	if n != 42 {
		t.Fatal("Neovim did not answer while the chat was starting")
	}
	e.WaitFor(t, 40*time.Second, `require("claude.chat").current().state == "failed"`,
		`return require("claude.chat").current().state`, "the chat to say its CLI did not start")
	var transcript string
	e.Eval(t, `return table.concat(vim.api.nvim_buf_get_lines(require("claude.chat").current().tbuf, 0, -1, false), "\n")`, &transcript)
	for _, want := range []string{"did not start within 15s", "chat.cmd", script + " --version", ":checkhealth claude"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the silent CLI (pid %d) still runs after the failed start", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A chat that cannot open says why in one sentence with one prefix (it
// read "nvim-claude: chat_open: chat_open: …").
func TestChatOpenErrorReadsAsOneSentence(t *testing.T) {
	e := startEditor(t, editorOpts{})
	var ok bool
	e.Eval(t, `return vim.fn.has("nvim-0.8") == 1`, &ok)
	if !ok {
		t.Skip("the chat needs Neovim 0.8+")
	}
	e.Exec(t, captureNotify)
	e.Exec(t, `require("claude.chat").open({ new = true, cwd = "/nonexistent-dir" })`)
	killOnCleanup(t, e.hostPID(t))
	notes := e.notes(t)
	if len(notes) != 1 || notes[0].Msg != "nvim-claude: could not open a chat: cwd /nonexistent-dir is not a directory" {
		t.Errorf("notes %+v", notes)
	}
}
