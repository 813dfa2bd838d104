//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
	"github.com/nvim-claude/nvim-claude/remote"
	"github.com/nvim-claude/nvim-claude/remote/sshtest"
)

// TestRemoteSSHCLIConnects pins what the SSH path relies on in the real
// CLI, through real OpenSSH: on a far side that sees the workspace under
// another path, a lock written by the hold (its pid the far holding shell,
// its workspace folder the far path, CLAUDE_CODE_SSE_PORT naming the far
// forwarded port, the same number as ours on its own loopback) is found by the CLI started in the far directory by the
// terminal's command line (ssh -t … claude), which connects to our server
// through the forward. Closing the hold removes the far lock.
func TestRemoteSSHCLIConnects(t *testing.T) {
	cli := clienv.Binary(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "local", "app")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, local, filepath.Join(root, "far", "workspaces", "app"))
	api := fakeapi.New(t)
	e := startEditor(t, editorOpts{dir: local})
	st := e.serve(t)
	env := clienv.New(t, api.URL(), srv.Far) // the far machine's HOME and config dir
	tg := remote.Target{Kind: remote.SSH, Dest: srv.Dest, Dir: srv.Far, ConfigDir: env.ConfigDir,
		Options: srv.Options, Claude: cli} // the far port is ours: the far side has its own loopback

	lock := readLock(t, st.LockFile)
	lock.PID = 0
	lock.WorkspaceFolders = []string{srv.Far}
	b, _ := json.Marshal(lock)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := tg.Start(ctx, st.Port, b)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	farLock := filepath.Join(env.ConfigDir, "ide", strconv.Itoa(st.Port)+".lock")
	if _, err := os.Stat(farLock); err != nil {
		t.Fatal(err)
	}

	vars := env.Map()
	for k, v := range tg.Env(st.Port) {
		vars[k] = v
	}
	argv, err := tg.Exec([]string{cli, "--permission-mode", "default"}, vars, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	var job, pid int
	e.Eval(t, `local cmd = ...
vim.cmd("botright vsplit | enew")
local job
if vim.fn.has("nvim-0.11") == 1 then job = vim.fn.jobstart(cmd, { term = true }) else job = vim.fn.termopen(cmd) end
return { job, vim.fn.jobpid(job) }`, &[]any{&job, &pid}, argv)
	killOnCleanup(t, pid)
	e.WaitFor(t, 90*time.Second, `#require("claude").status().clients >= 1`,
		`return vim.api.nvim_buf_get_lines(0, 0, -1, false)`, "the far CLI to connect through the SSH forward")
	e.Exec(t, fmt.Sprintf(`vim.fn.jobstop(%d)`, job))
	h.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(farLock); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the far lock outlived the hold")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
