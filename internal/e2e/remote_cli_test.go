//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// TestRemoteCLIWithCopiedLock pins the README's recipe for a CLI on another
// machine: it reaches our port through an SSH forward of the same port
// number and uses a copy of the lock file whose pid is the tunnel's (a live
// process on the CLI's machine; the CLI discards locks of dead pids, even
// when CLAUDE_CODE_SSE_PORT names the port — a dead pid was tried with the
// real CLI and it never connected). The workspace folder need not match.
func TestRemoteCLIWithCopiedLock(t *testing.T) {
	cli := clienv.Binary(t)
	api := fakeapi.New(t)
	e := startEditor(t, editorOpts{})
	st := e.serve(t)

	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := clienv.New(t, api.URL(), project) // the "other machine": its own HOME and config dir
	lock := readLock(t, st.LockFile)
	// The stand-in for `ssh -N -L port:127.0.0.1:port host`.
	tunnel, err := os.StartProcess("/bin/sleep", []string{"sleep", "600"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tunnel.Kill(); _, _ = tunnel.Wait() })
	lock.PID = tunnel.Pid
	lock.WorkspaceFolders = []string{"/path/on/the/editor/host"}
	b, _ := json.Marshal(lock)
	dst := filepath.Join(env.ConfigDir, "ide", filepath.Base(st.LockFile))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := env.Map()
	vars["CLAUDE_CODE_SSE_PORT"] = fmt.Sprint(st.Port)
	varsJSON, _ := json.Marshal(vars)
	var job, pid int
	e.Eval(t, `local cmd, cwd, env = ...
vim.cmd("botright vsplit | enew")
local job
if vim.fn.has("nvim-0.11") == 1 then job = vim.fn.jobstart(cmd, { term = true, cwd = cwd, env = vim.json.decode(env) })
else job = vim.fn.termopen(cmd, { cwd = cwd, env = vim.json.decode(env) }) end
return { job, vim.fn.jobpid(job) }`, &[]any{&job, &pid}, []string{cli, "--permission-mode", "default"}, project, string(varsJSON))
	killOnCleanup(t, pid)
	e.WaitFor(t, 60*time.Second, fmt.Sprintf(`(function() for _, c in ipairs(require("claude").status().clients) do if c.pid == %d then return true end end end)()`, pid),
		`return vim.api.nvim_buf_get_lines(0, 0, -1, false)`, "the remote CLI to connect through the copied lock")
}
