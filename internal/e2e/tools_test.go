//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// The editor tools and workspace methods through the whole product: the
// plugin set up as a user would, :ClaudeStart with its terminal, the real
// host binary, and a WebSocket client in place of the CLI (which calls none
// of these itself; other MCP clients do).

type toolsEnv struct {
	*editor
	st      status
	c       *ideClient
	frames  *frameReader
	project string
	id      int
}

func startToolsEnv(t *testing.T, files map[string]string) *toolsEnv {
	t.Helper()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The "CLI" in the terminal is cat: the terminal exists, nothing connects.
	e := startEditor(t, editorOpts{dir: project, extra: `, terminal_cmd = { "cat" }, editor_tools = { enable = false }, sessions = { hooks = false }`}) // cat takes no --mcp-config, no --settings
	e.Exec(t, captureNotify)
	e.Exec(t, `vim.cmd("ClaudeStart")`)
	st := e.status(t)
	if !st.Running || st.Terminal == nil {
		t.Fatalf(":ClaudeStart: %+v, notes %+v", st, e.notes(t))
	}
	killOnCleanup(t, st.Terminal.PID)
	killOnCleanup(t, e.hostPID(t))
	lock := readLock(t, st.LockFile)
	c := dialIDE(t, st.Port, lock.AuthToken)
	c.handshake(t, os.Getpid())
	return &toolsEnv{editor: e, st: st, c: c, frames: readFrames(t, c), project: project}
}

// call sends a request and returns its answer frame.
func (e *toolsEnv) call(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	e.id++
	id := e.id
	p, _ := json.Marshal(params)
	e.c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p))
	return e.frames.until(t, fmt.Sprintf("the answer to %s", method), func(m map[string]any) bool { return m["id"] == float64(id) })
}

// tool calls a tool and returns its text; isError results fail the test
// unless wantErr.
func (e *toolsEnv) tool(t *testing.T, name string, args any, wantErr bool) string {
	t.Helper()
	res := e.call(t, "tools/call", map[string]any{"name": name, "arguments": args})
	r, _ := res["result"].(map[string]any)
	if isErr, _ := r["isError"].(bool); isErr != wantErr {
		t.Fatalf("%s: isError=%v: %v", name, isErr, res)
	}
	return toolText(t, res)
}

func (e *toolsEnv) path(name string) string { return filepath.Join(e.project, name) }

// layout names the windows of the current tab: file names, TERM for the
// Claude terminal, * before the current one.
func (e *toolsEnv) layout(t *testing.T) string {
	t.Helper()
	var s string
	e.Eval(t, `local out = {}
for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
  local b = vim.api.nvim_win_get_buf(w)
  local name = vim.b[b].claude_terminal and "TERM" or vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":t")
  if w == vim.api.nvim_get_current_win() then name = "*" .. name end
  table.insert(out, name)
end
return table.concat(out, " ")`, &s)
	return s
}

func TestToolsThroughThePlugin(t *testing.T) {
	e := startToolsEnv(t, map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n", "notes.md": "# notes\n"})

	// The focus is in the Claude terminal: openFile shows the file in the
	// editor window beside it and selects the text.
	if got := e.layout(t); got != " *TERM" {
		t.Fatalf("layout after :ClaudeStart = %q", got)
	}
	e.WaitFor(t, 10*time.Second, `vim.api.nvim_get_mode().mode == "t"`, "", "Terminal mode in the Claude terminal")
	if got := e.tool(t, "openFile", map[string]any{"filePath": "main.go", "startText": "func main", "endText": "}"}, false); got != "Opened file: "+e.path("main.go") {
		t.Fatalf("openFile = %q", got)
	}
	e.WaitFor(t, 10*time.Second, `vim.api.nvim_get_mode().mode == "v"`, `return vim.api.nvim_get_mode()`, "Visual mode in main.go")
	if got := e.layout(t); got != "*main.go TERM" {
		t.Fatalf("layout after openFile = %q", got)
	}
	var sel struct {
		Mode  string `json:"mode"`
		Start int    `json:"start"`
		End   int    `json:"end"`
	}
	e.Eval(t, `return { mode = vim.api.nvim_get_mode().mode, start = vim.fn.getpos("v")[2], ["end"] = vim.fn.line(".") }`, &sel)
	if sel.Mode != "v" || sel.Start != 3 || sel.End != 5 {
		t.Fatalf("selection after openFile = %+v, want lines 3-5 in Visual mode", sel)
	}
	e.Exec(t, `vim.cmd("normal! \27")`)

	// Back in the terminal, main.go is still the active editor.
	e.Exec(t, `vim.cmd("wincmd l | startinsert")`)
	var editors struct {
		Tabs []struct {
			URI      string `json:"uri"`
			IsActive bool   `json:"isActive"`
			Language string `json:"languageId"`
		} `json:"tabs"`
	}
	if err := json.Unmarshal([]byte(e.tool(t, "getOpenEditors", map[string]any{}, false)), &editors); err != nil {
		t.Fatal(err)
	}
	if len(editors.Tabs) != 1 || editors.Tabs[0].URI != "file://"+e.path("main.go") || !editors.Tabs[0].IsActive || editors.Tabs[0].Language != "go" {
		t.Fatalf("getOpenEditors = %+v", editors)
	}

	// Diagnostics set in Neovim are pushed, and answered.
	e.Exec(t, `vim.diagnostic.set(vim.api.nvim_create_namespace("t"), vim.fn.bufnr("main.go"), {{ lnum = 3, col = 1, message = "planted" }})`)
	e.frames.until(t, "diagnostics_changed", func(m map[string]any) bool {
		f, ok := asDiagFrame(m)
		return ok && f.URI == "file://"+e.path("main.go") && len(f.Diagnostics) == 1 && f.Diagnostics[0].Message == "planted"
	})
	if got := e.tool(t, "getDiagnostics", map[string]any{}, false); !strings.Contains(got, `"message":"planted"`) {
		t.Fatalf("getDiagnostics = %s", got)
	}

	// saveDocument refuses to overwrite a change made on disk.
	e.Exec(t, `vim.api.nvim_buf_set_lines(vim.fn.bufnr("main.go"), 0, 1, false, { "package main // mine" })`)
	if got := e.tool(t, "checkDocumentDirty", map[string]any{"filePath": "main.go"}, false); !strings.Contains(got, `"isDirty":true`) {
		t.Fatalf("checkDocumentDirty = %s", got)
	}
	if err := os.WriteFile(e.path("main.go"), []byte("package main // theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := e.tool(t, "saveDocument", map[string]any{"filePath": "main.go"}, true); !strings.Contains(got, "changed on disk since it was read") {
		t.Fatalf("saveDocument = %s", got)
	}
	if b, _ := os.ReadFile(e.path("main.go")); string(b) != "package main // theirs\n" {
		t.Fatalf("main.go = %q", b)
	}

	// The workspace methods: writeFile through the open buffer, readFile,
	// listFiles, and the confinement.
	res := e.call(t, "writeFile", map[string]any{"path": "notes.md", "content": "# notes\n\nwritten\n"})
	if r, _ := res["result"].(map[string]any); r["success"] != true || r["throughBuffer"] != false {
		t.Fatalf("writeFile = %v", res)
	}
	e.Exec(t, `vim.cmd("badd notes.md") vim.fn.bufload(vim.fn.bufnr("notes.md"))`)
	res = e.call(t, "writeFile", map[string]any{"path": "notes.md", "content": "# notes\n\nagain\n"})
	if r, _ := res["result"].(map[string]any); r["success"] != true || r["throughBuffer"] != true {
		t.Fatalf("writeFile through the buffer = %v", res)
	}
	res = e.call(t, "readFile", map[string]any{"path": "notes.md"})
	if r, _ := res["result"].(map[string]any); r["content"] != "# notes\n\nagain\n" {
		t.Fatalf("readFile = %v", res)
	}
	res = e.call(t, "listFiles", map[string]any{"pattern": "*.md"})
	if b, _ := json.Marshal(res["result"]); string(b) != `{"files":["notes.md"],"truncated":false}` {
		t.Fatalf("listFiles = %s", b)
	}
	res = e.call(t, "readFile", map[string]any{"path": "../outside.txt"})
	if er, _ := res["error"].(map[string]any); er["code"] != float64(-32602) {
		t.Fatalf("readFile ../outside.txt = %v", res)
	}
}

// The lock file lists the cwd and the language servers' folders; after a
// :cd, App rewrites it with the new cwd and the plugin follows with the
// whole list again.
func TestToolsWorkspaceFoldersInLock(t *testing.T) {
	e := startToolsEnv(t, map[string]string{"a.txt": "a\n"})
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	waitLock := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * nvimtest.Slack * time.Second)
		for {
			got := readLock(t, e.st.LockFile).WorkspaceFolders
			if strings.Join(got, "|") == strings.Join(want, "|") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("lock workspaceFolders = %v, want %v", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitLock(e.project)
	// A stand-in language server rooted outside the cwd (gopls in
	// TestGoplsDiagnostics is the real one).
	e.Exec(t, `local root = ...
		local clients = { { name = "fake", workspace_folders = { { uri = vim.uri_from_fname(root), name = root } } } }
		vim.lsp.get_clients = function() return clients end
		vim.lsp.get_active_clients = vim.lsp.get_clients
		vim.api.nvim_exec_autocmds(vim.fn.exists("##LspAttach") == 1 and "LspAttach" or "BufEnter", { modeline = false })`, other)
	waitLock(e.project, other)
	sub := e.path("sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	e.Exec(t, `vim.cmd("cd " .. vim.fn.fnameescape(...))`, sub)
	waitLock(sub, other)
}
