package editorcontext

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// ctxHarness is the editor-context path but the CLI: a real Neovim with the
// plugin's Lua attached as when the server runs (claude.diagnostics on the
// host's channel), the App on a real Bridge to it, its IDE server on a real
// socket, and one connection that talks like the CLI.
type ctxHarness struct {
	*nvimtest.Nvim
	app *core.App
	ws  *workspace.Workspace
	dir string // the workspace (Neovim's cwd), symlinks resolved
	out string // a directory outside the workspace
	*testkit.CLI
	pings int
}

func startCtxHarness(t testing.TB, files map[string]string) *ctxHarness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, strings.ReplaceAll(name, "{{out}}/", "../"+filepath.Base(out)+"/"))
		if strings.HasPrefix(name, "{{out}}/") {
			p = filepath.Join(out, strings.TrimPrefix(name, "{{out}}/"))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	init := `vim.o.columns = 200 vim.o.lines = 50
_G.notes = {}
vim.notify = function(msg, level) table.insert(_G.notes, { msg = msg, level = level or 2 }) end
require("claude").setup({})`
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: init})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	ws := workspace.New()
	app := core.New(core.Options{Editor: b, Workspace: ws, Features: func(h host.Host) []host.Feature {
		return []host.Feature{New(h, b, ws, "test")}
	}})
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	var pid int
	n.Eval(t, `return vim.fn.getpid()`, &pid)
	app.SetOptions(*testkit.LuaOptions(t, n))
	if err := app.Start(context.Background(), core.StartParams{PID: pid, Cwd: dir, ConfigDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	h := &ctxHarness{Nvim: n, app: app, ws: ws, dir: dir, out: out}
	// What server.lua does after "start": claude.diagnostics feeds the host.
	n.Exec(t, `require("claude.server").state().chan = ... require("claude.diagnostics").attach()`, n.ChannelID())
	t.Cleanup(func() { _ = n.TryEval(`require("claude.diagnostics").detach()`, nil) })
	h.connect(t)
	return h
}

// connect dials the server and does the CLI's handshake.
func (h *ctxHarness) connect(t testing.TB) {
	t.Helper()
	srv := h.app.Server()
	h.CLI = testkit.DialCLI(t, srv.Port(), srv.Token(), 256)
	h.Send(t, testkit.CLIInitialize)
	if f := h.next(t); !strings.Contains(f, `"id":0,"result"`) {
		t.Fatalf("initialize: %s", f)
	}
	h.Send(t, testkit.CLIInitialized)
	h.Send(t, testkit.CLIIDEConnected(os.Getpid()))
	h.quiet(t)
}

// next is the next frame, response or notification.
func (h *ctxHarness) next(t testing.TB) string {
	t.Helper()
	select {
	case f, ok := <-h.Frames:
		if !ok {
			t.Fatal("connection closed")
		}
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("no frame")
	}
	return ""
}

// quiet checks that no frame is on its way: a ping's reply must be next.
func (h *ctxHarness) quiet(t testing.TB) {
	t.Helper()
	h.pings++
	id := fmt.Sprintf(`"quiet-%d"`, h.pings)
	h.Send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	if got, want := h.next(t), `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`; got != want {
		t.Fatalf("stray frame: %s", got)
	}
}

// run plays a transcript, one step a line:
//
//	# comment
//	-> frame                  sent as the CLI
//	<- frame                  the next frame must be exactly this
//	<~ frame                  the same, "(*)" standing for text without a backslash
//	lua: code                 run in Neovim
//	wait: lua condition       wait until it holds
//	check: lua condition      must hold now
//
// {{dir}} and {{out}} stand for the workspace and the outside directory.
// After the last line no frame may be pending.
func (h *ctxHarness) run(t testing.TB, transcript string) {
	t.Helper()
	for i, line := range strings.Split(transcript, "\n") {
		line = strings.TrimSpace(line)
		line = strings.ReplaceAll(line, "{{dir}}", h.dir)
		line = strings.ReplaceAll(line, "{{out}}", h.out)
		step := func(prefix string) (string, bool) {
			if strings.HasPrefix(line, prefix) {
				return strings.TrimPrefix(line, prefix), true
			}
			return "", false
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if frame, ok := step("-> "); ok {
			h.Send(t, frame)
		} else if want, ok := step("<- "); ok {
			if got := h.next(t); got != want {
				t.Fatalf("transcript line %d:\n got %s\nwant %s", i+1, got, want)
			}
		} else if like, ok := step("<~ "); ok {
			// "(*)" stands for any text without a backslash (e.g. the end
			// of a message that differs between Neovim versions, but no
			// stack trace)
			parts := strings.Split(like, "(*)")
			for j := range parts {
				parts[j] = regexp.QuoteMeta(parts[j])
			}
			re := regexp.MustCompile("^" + strings.Join(parts, `[^\\]*`) + "$")
			if got := h.next(t); !re.MatchString(got) {
				t.Fatalf("transcript line %d:\n got %s\nwant %s", i+1, got, like)
			}
		} else if code, ok := step("lua: "); ok {
			h.Exec(t, code)
		} else if cond, ok := step("wait: "); ok {
			h.WaitFor(t, 10*time.Second, cond, "", "transcript line "+fmt.Sprint(i+1))
		} else if cond, ok := step("check: "); ok {
			var okv bool
			h.Eval(t, "return not not ("+cond+")", &okv)
			if !okv {
				var dbg any
				_ = h.TryEval(`return { mode = vim.api.nvim_get_mode().mode, buf = vim.api.nvim_buf_get_name(0), notes = _G.notes }`, &dbg)
				t.Fatalf("transcript line %d: %s does not hold (%v)", i+1, cond, dbg)
			}
		} else {
			t.Fatalf("transcript line %d: unknown step %q", i+1, line)
		}
	}
	h.quiet(t)
}

func (h *ctxHarness) path(name string) string { return filepath.Join(h.dir, name) }

// The workspace folders Lua reports (cwd plus language servers' roots) go
// into the lock file; a cwd change (App rewrites the lock with the cwd
// alone) is followed by the full list again.
func TestWorkspaceFoldersInLock(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n"})
	lock := func() []string {
		l, err := mcp.ReadLockFile(h.app.Server().LockPath())
		if err != nil {
			t.Fatal(err)
		}
		return l.WorkspaceFolders
	}
	if got := lock(); testkit.MustJSONString(got) != testkit.MustJSONString([]string{h.dir}) {
		t.Fatalf("lock folders at start = %v", got)
	}
	// A language server with a root outside the cwd, and one inside it.
	h.Exec(t, fakeLSPClients, []string{h.out, h.path("sub")})
	// (Neovim 0.7 has no LspAttach; there the folders are looked at on BufEnter.)
	h.Exec(t, `vim.api.nvim_exec_autocmds(vim.fn.exists("##LspAttach") == 1 and "LspAttach" or "BufEnter", { modeline = false })`)
	want := testkit.MustJSONString([]string{h.dir, h.out})
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for testkit.MustJSONString(lock()) != want {
		if time.Now().After(deadline) {
			t.Fatalf("lock folders = %v, want %s", lock(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// :cd elsewhere: App writes the new cwd alone (server.lua's
	// cwd_changed), then the whole list follows: the new cwd, and the root
	// no longer inside it.
	h.Exec(t, `vim.cmd("cd " .. vim.fn.fnameescape(...))
		require("claude.server").notify("cwd_changed", { cwd = vim.fn.getcwd(-1, -1) })`, h.out)
	want = testkit.MustJSONString([]string{h.out, h.path("sub")})
	deadline = time.Now().Add(10 * nvimtest.Slack * time.Second)
	for testkit.MustJSONString(lock()) != want {
		if time.Now().After(deadline) {
			t.Fatalf("lock folders after :cd = %v, want %s", lock(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeLSPClients makes the LSP client listings return clients whose
// workspace folders are the given directories (Lua arg: list of paths).
// The first has workspace_folders, the second only a root_dir.
const fakeLSPClients = `local dirs = ...
local clients = {}
for i, d in ipairs(dirs) do
  if i == 1 then
    table.insert(clients, { name = "fake" .. i, workspace_folders = { { uri = vim.uri_from_fname(d), name = d } } })
  else
    table.insert(clients, { name = "fake" .. i, config = { root_dir = d } })
  end
end
vim.lsp.get_clients = function() return clients end
vim.lsp.get_active_clients = vim.lsp.get_clients`

// Transcript lines built from Go values.
