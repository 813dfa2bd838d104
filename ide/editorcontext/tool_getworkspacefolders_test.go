package editorcontext

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

func TestToolGetWorkspaceFolders(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n"})
	folder := func(p string) testkit.Obj {
		return testkit.Obj{"name", filepath.Base(p), "uri", "file://" + p, "path", p}
	}
	var lspEvents bool
	h.Eval(t, `return vim.fn.exists("##LspAttach") == 1`, &lspEvents)
	h.run(t, testkit.SendCall(1, "getWorkspaceFolders", testkit.Obj{})+
		testkit.WantJSONText(1, testkit.Obj{"success", true, "folders", []testkit.Obj{folder(h.dir)}, "rootPath", h.dir}))

	// Language servers' folders follow the cwd; one inside the cwd adds
	// nothing.
	h.run(t, "lua: "+testkit.LuaCall(fakeLSPClients, []string{h.out, h.path("sub")}))
	if lspEvents {
		// From Neovim 0.8 Lua pushes the list when a server attaches, and
		// the call answers from it: wait until it has arrived.
		h.Exec(t, `vim.api.nvim_exec_autocmds("LspAttach", { modeline = false })`)
		waitLockFolders(t, h.app, h.dir, h.out)
	}
	// On 0.7 nothing fires: the call asks Neovim, and that is what puts the
	// server's folder in the lock file.
	h.run(t, testkit.SendCall(2, "getWorkspaceFolders", testkit.Obj{})+
		testkit.WantJSONText(2, testkit.Obj{"success", true, "folders", []testkit.Obj{folder(h.dir), folder(h.out)}, "rootPath", h.dir}))
	l, err := mcp.ReadLockFile(h.app.Server().LockPath())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := testkit.MustJSONString(l.WorkspaceFolders), testkit.MustJSONString([]string{h.dir, h.out}); got != want {
		t.Fatalf("lock workspaceFolders = %s, want %s", got, want)
	}
}

// waitLockFolders waits until the lock file lists want.
func waitLockFolders(t *testing.T, app *core.App, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
	for {
		l, err := mcp.ReadLockFile(app.Server().LockPath())
		if err == nil && strings.Join(l.WorkspaceFolders, "|") == strings.Join(want, "|") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock workspaceFolders = %v (%v), want %v", l.WorkspaceFolders, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workspaceEditor answers Workspace as configured and counts the calls;
// the rest of Editor is never called.
type workspaceEditor struct {
	Editor
	ws     nvimbridge.Workspace
	calls  atomic.Int64
	during func() // runs while Neovim is asked
}

func (e *workspaceEditor) Workspace(context.Context) (nvimbridge.Workspace, error) {
	e.calls.Add(1)
	if e.during != nil {
		e.during()
	}
	return e.ws, nil
}

// When getWorkspaceFolders answers from the folders Lua pushed and when it
// asks Neovim: never before a push, never on 0.7 (no LspAttach), never
// when the push is for another cwd than the host's; the answer is the same
// either way.
func TestGetWorkspaceFoldersFromPush(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(cwd, "..", "elsewhere")
	lsp := "/srv/lsp-root"
	tests := []struct {
		name    string
		version string   // Neovim's, as the first (asking) call learns it
		push    []string // the workspace_folders push; nil for none
		cd      string   // a cwd_changed after the push
		stop    bool     // the server stopped and started again
		quick   bool     // answered from the push
	}{
		{name: "no push yet", version: "0.10.4"},
		{name: "pushed", version: "0.10.4", push: []string{cwd, lsp}, quick: true},
		{name: "pushed, 0.12", version: "0.12.0", push: []string{cwd, lsp}, quick: true},
		{name: "pushed, 1.0", version: "1.0.0", push: []string{cwd, lsp}, quick: true},
		{name: "0.7 has no LspAttach", version: "0.7.2", push: []string{cwd, lsp}},
		{name: "unknown version", version: "", push: []string{cwd, lsp}},
		{name: "cwd changed since the push", version: "0.10.4", push: []string{cwd, lsp}, cd: filepath.Clean(other)},
		{name: "server restarted", version: "0.10.4", push: []string{cwd, lsp}, stop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed := &workspaceEditor{ws: nvimbridge.Workspace{Cwd: cwd, Folders: []string{cwd}, Version: tt.version}}
			var feat *Context
			ws := workspace.New()
			app := core.New(core.Options{Editor: nil, Workspace: ws, Features: func(h host.Host) []host.Feature {
				feat = New(h, ed, ws, "test")
				return []host.Feature{feat}
			}})
			t.Cleanup(func() { _ = app.Close() })
			start := func() {
				app.SetOptions(host.Options{})
				if err := app.Start(context.Background(), core.StartParams{PID: os.Getpid(), Cwd: cwd, ConfigDir: t.TempDir()}); err != nil {
					t.Fatal(err)
				}
			}
			start()
			ec := feat
			tool := ec.WorkspaceFoldersTool()
			// The first call asks Neovim.
			if _, ok := ec.pushedFoldersAnswer(); ok {
				t.Fatal("answered before anything was known")
			}
			if _, err := tool.Handler(context.Background(), &mcp.ToolRequest{}); err != nil {
				t.Fatal(err)
			}
			if tt.push != nil {
				ec.handleWorkspaceFolders(foldersParams{Folders: tt.push})
			}
			if tt.cd != "" {
				ws.SetCwd(tt.cd)
			}
			if tt.stop {
				if err := app.StopServer(); err != nil {
					t.Fatal(err)
				}
				start()
			}
			calls := ed.calls.Load()
			res, ok := ec.pushedFoldersAnswer()
			if ok != tt.quick {
				t.Fatalf("answered from the push: %v, want %v", ok, tt.quick)
			}
			if !ok {
				return
			}
			if ed.calls.Load() != calls {
				t.Fatal("the answer from the push called Neovim")
			}
			// The same answer as asking Neovim when it reports that list.
			ed.ws.Folders = tt.push
			want, err := tool.Handler(context.Background(), &mcp.ToolRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := testkit.MustJSONString(res), testkit.MustJSONString(want); got != want {
				t.Fatalf("answer from the push %s, from Neovim %s", got, want)
			}
		})
	}
}

// A push that arrives while getWorkspaceFolders asks Neovim wins over the
// answer: Lua pushes after every change, so the last push is current.
func TestGetWorkspaceFoldersPushDuringQuery(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ed := &workspaceEditor{ws: nvimbridge.Workspace{Cwd: cwd, Folders: []string{cwd}, Version: "0.10.4"}}
	var feat *Context
	ws := workspace.New()
	app := core.New(core.Options{Editor: nil, Workspace: ws, Features: func(h host.Host) []host.Feature {
		feat = New(h, ed, ws, "test")
		return []host.Feature{feat}
	}})
	t.Cleanup(func() { _ = app.Close() })
	app.SetOptions(host.Options{})
	if err := app.Start(context.Background(), core.StartParams{PID: os.Getpid(), Cwd: cwd, ConfigDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	ec := feat
	pushed := []string{cwd, "/srv/lsp-root"}
	ed.during = func() {
		ec.handleWorkspaceFolders(foldersParams{Folders: pushed})
	}
	tool := ec.WorkspaceFoldersTool()
	if _, err := tool.Handler(context.Background(), &mcp.ToolRequest{}); err != nil {
		t.Fatal(err)
	}
	res, ok := ec.pushedFoldersAnswer()
	if !ok || !strings.Contains(res.Content[0].Text, "/srv/lsp-root") {
		t.Fatalf("after a push during the query: %v, %+v", ok, res)
	}
	waitLockFolders(t, app, pushed...)
}

func TestHasLspEvents(t *testing.T) {
	for v, want := range map[string]bool{
		"0.7.2": false, "0.8.0": true, "0.10.4": true, "0.12.0": true, "1.0.0": true,
		"": false, "0.x": false, "dev": false, "0.9": true,
	} {
		if got := hasLspEvents(v); got != want {
			t.Errorf("hasLspEvents(%q) = %v, want %v", v, got, want)
		}
	}
}
