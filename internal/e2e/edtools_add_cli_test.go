//go:build unix

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/internal/clienv"
	"github.com/nvim-claude/nvim-claude/internal/fakeapi"
)

// A user who runs `claude` outside Neovim registers the editor
// tools with the command :ClaudeStatus prints. That exact command, run by
// a shell with the real CLI as `claude`, registers a server the CLI then
// reaches: `claude mcp list` shows it connected, and a -p run's tool call
// to mcp__nvim__open_buffers gets our host's answer. The relay finds the
// host by working directory (no NVIM_CLAUDE_MCP_SOCKET in this CLI's
// environment).
func TestCLIEditorToolsAddCommand(t *testing.T) {
	cli := clienv.Binary(t)
	api := fakeapi.New(t)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("a note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := clienv.New(t, api.URL(), project)
	e := startEditor(t, editorOpts{dir: project})
	e.Exec(t, `vim.cmd("edit notes.txt") vim.cmd("ClaudeServe")`)
	killOnCleanup(t, e.hostPID(t))
	var text string
	e.Eval(t, `return require("claude").status_text()`, &text)
	const marker = "for a claude run elsewhere: "
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf(":ClaudeStatus names no command for a claude run elsewhere:\n%s", text)
	}
	add := strings.TrimSpace(strings.SplitN(text[i+len(marker):], "\n", 2)[0])
	if !strings.HasPrefix(add, "claude mcp add nvim -- ") {
		t.Fatalf("the command: %s", add)
	}

	// `claude` on PATH is the pinned CLI; the command runs as printed.
	binDir := t.TempDir()
	if err := os.Symlink(cli, filepath.Join(binDir, "claude")); err != nil {
		t.Fatal(err)
	}
	var vars []string
	for _, kv := range env.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			kv = "PATH=" + binDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
		if strings.HasPrefix(kv, "NVIM_CLAUDE_") {
			continue // a claude run elsewhere has none of ours
		}
		vars = append(vars, kv)
	}
	claude := filepath.Join(binDir, "claude")
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = project, vars
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the relays it started
		}
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out.String())
		}
		return out.String()
	}
	out := run("sh", "-c", add)
	t.Logf("%s\n%s", add, out)

	// The CLI reaches it.
	out = run(claude, "mcp", "list")
	if !strings.Contains(out, "nvim: ") || !strings.Contains(out, "Connected") {
		t.Fatalf("claude mcp list:\n%s", out)
	}

	// A model's call gets our answer.
	search := fakeapi.ToolUse("ToolSearch", map[string]any{"query": "select:mcp__nvim__open_buffers"})
	bufs := fakeapi.ToolUse("mcp__nvim__open_buffers", map[string]any{})
	api.Script(fakeapi.Reply(search), fakeapi.Reply(bufs), fakeapi.Reply(fakeapi.Text("Done.")))
	out = run(claude, "-p", "what is open", "--output-format", "text", "--allowedTools", "mcp__nvim__open_buffers")
	if !strings.Contains(out, "Done.") {
		t.Fatalf("claude -p:\n%s", out)
	}
	var res fakeapi.Content
	found := false
	for _, r := range api.MainRequests() {
		if c, ok := r.ToolResult(bufs.ID); ok {
			res, found = c, true
		}
	}
	if !found || res.IsError || res.ResultText() != "1 file open:\nnotes.txt (text) 1 lines [current]" {
		t.Fatalf("the open_buffers result (found %v, isError %v): %q", found, res.IsError, res.ResultText())
	}
}
