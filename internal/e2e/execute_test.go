//go:build unix

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// executeCode through the whole product but the CLI: the plugin as a user
// sets it up, :ClaudeStart, the real host binary with its embedded kernel
// helper, a real Jupyter kernel, and a WebSocket client in place of the CLI.

// runConfirmed calls executeCode, answers the confirmation float with key,
// and returns the result frame.
func (e *toolsEnv) runConfirmed(t *testing.T, code, key string) map[string]any {
	t.Helper()
	e.id++
	id := e.id
	e.c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"executeCode","arguments":{"code":%q}}}`, id, code))
	if key != "" {
		e.WaitFor(t, 60*time.Second, `#require("claude.execute").pending() > 0`, `return require("claude").status()`, "the confirmation float")
		// The user goes to it (the terminal kept the focus); no grace here:
		// the key is pressed once the float has the focus.
		e.Exec(t, `require("claude.config").options.execute.grace_ms = 0 vim.cmd("ClaudeExecute")`)
		var shown string
		e.Eval(t, `return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")`, &shown)
		if !strings.Contains(shown, strings.Split(code, "\n")[0]) {
			t.Fatalf("the focused float does not show the code:\n%s", shown)
		}
		if _, err := e.Input(key); err != nil {
			t.Fatal(err)
		}
	}
	return e.frames.until(t, "the answer to executeCode", func(m map[string]any) bool { return m["id"] == float64(id) })
}

// resultText is the text items of a tools/call answer, and whether it is
// an error.
func resultText(res map[string]any) (string, bool) {
	r, _ := res["result"].(map[string]any)
	isErr, _ := r["isError"].(bool)
	var sb strings.Builder
	content, _ := r["content"].([]any)
	for _, c := range content {
		m, _ := c.(map[string]any)
		if m["type"] == "text" {
			sb.WriteString(fmt.Sprint(m["text"]))
		}
	}
	return sb.String(), isErr
}

// The confirm flow over the socket, the kernel's state between calls, and
// the kernel's end with the host: a clean stop (jobstop) or a SIGKILL (the
// helper sees its stdin close).
func TestExecuteCodeThroughThePlugin(t *testing.T) {
	for _, how := range []string{"jobstop", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			e := startToolsEnv(t, map[string]string{"analysis.py": "# %%\n"})
			e.Exec(t, `vim.cmd("wincmd t | edit analysis.py | wincmd l | startinsert")`)

			res := e.runConfirmed(t, "import os\nn = 6 * 7\nprint(os.getpid())", "c")
			if text, isErr := resultText(res); !isErr || text != "The user declined to run the code" {
				t.Fatalf("cancel: %v", res)
			}
			res = e.runConfirmed(t, "import os\nn = 6 * 7\nprint(os.getpid())", "r")
			text, isErr := resultText(res)
			pid, err := strconv.Atoi(strings.TrimSpace(text))
			if isErr || err != nil {
				t.Fatalf("run: %v", res)
			}
			killOnCleanup(t, pid)
			res = e.runConfirmed(t, "n", "<CR>")
			if text, isErr := resultText(res); isErr || strings.TrimSpace(text) != "42" {
				t.Fatalf("state: %v", res)
			}
			// Focus went back to the terminal, in Terminal mode.
			e.WaitFor(t, 10*time.Second, `vim.api.nvim_get_mode().mode == "t"`, `return vim.api.nvim_get_mode()`, "Terminal mode again")

			host := e.hostPID(t)
			if how == "jobstop" {
				e.Exec(t, `vim.fn.jobstop(require("claude.server").state().chan)`)
			} else if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitGone(t, host, "the host")
			waitGone(t, pid, "the kernel")
		})
	}
}

// setup() run again while the host runs takes effect at once: the execute
// options (here confirm) reach the host with the next call, not with the
// next :ClaudeStart.
func TestSetupAgainReachesTheRunningHost(t *testing.T) {
	e := startToolsEnv(t, map[string]string{"analysis.py": "# %%\n"})
	e.Exec(t, `vim.cmd("wincmd t | edit analysis.py | wincmd l")`)
	e.Exec(t, `require("claude").setup({ execute = { confirm = false } })`)
	res := e.runConfirmed(t, "print(6 * 7)", "")
	if text, isErr := resultText(res); isErr || strings.TrimSpace(text) != "42" {
		t.Fatalf("with confirm = false: %v", res)
	}
	e.Exec(t, `require("claude").setup({ execute = { confirm = true } })`)
	res = e.runConfirmed(t, "print(6 * 7)", "c")
	if text, isErr := resultText(res); !isErr || text != "The user declined to run the code" {
		t.Fatalf("with confirm = true again: %v", res)
	}
}
