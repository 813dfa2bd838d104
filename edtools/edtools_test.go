package edtools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/app/core"
	"github.com/nvim-claude/nvim-claude/diff"
	"github.com/nvim-claude/nvim-claude/edtools/discovery"
	"github.com/nvim-claude/nvim-claude/host"
	"github.com/nvim-claude/nvim-claude/ide/editorcontext"
	"github.com/nvim-claude/nvim-claude/ide/selection"
	"github.com/nvim-claude/nvim-claude/mcp"
	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
	"github.com/nvim-claude/nvim-claude/workspace"
)

// The bridge must answer the editor tools (main.go hands it over as the
// Editor).
var _ Editor = (*nvimbridge.Bridge)(nil)

// A small Go module: an interface, a type implementing it, callers.
var edFixture = map[string]string{
	"go.mod": "module example.com/calc\n\ngo 1.22\n",
	"calc/calc.go": `package calc

// Adder adds.
type Adder interface {
	Add(a, b int) int
}

// Calc is a calculator.
type Calc struct{ total int }

// Add returns a + b and keeps a running total.
func (c *Calc) Add(a, b int) int {
	c.total += a + b
	return a + b
}

// Sum adds numbers with an Adder.
func Sum(ad Adder, xs ...int) int {
	s := 0
	for _, x := range xs {
		s = ad.Add(s, x)
	}
	return s
}
`,
	"main.go": `package main

import (
	"fmt"

	"example.com/calc/calc"
)

func main() {
	c := &calc.Calc{}
	fmt.Println(calc.Sum(c, 1, 2, 3))
	fmt.Println(c.Add(1, 2))
}
`,
	// apply_code_action: an unused import (Organize Imports), a call to
	// split (a lazily resolved action), a declaration to move to a new file
	// (a server command).
	"fix/fix.go": "package fix\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n// Greet greets.\nfunc Greet(name string) string {\n\treturn fmt.Sprintf(\"hi %s\", name)\n}\n",
	"fix/use.go": "package fix\n\nfunc use() string {\n\treturn Greet(\"x\")\n}\n",
	"notes.txt":  "plain text, no language server\n",
	"init.lua":   "local M = {}\n\nfunction M.greet(name)\n  return \"hi \" .. name\nend\n\nreturn M\n",
}

type edHarness struct {
	*nvimtest.Nvim
	app *core.App
	ed  *Tools
	dir string
}

// startEdHarness runs Neovim on the fixture with the App and the editor
// tools component; gopls (when asked) is attached to main.go only, so that
// the other files exercise attaching a running server to a file not open.
func startEdHarness(t *testing.T, gopls bool) *edHarness {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range edFixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir, Init: `require("claude").setup({})`})
	b := nvimbridge.Wrap(n.Nvim, nil)
	t.Cleanup(b.CloseProposals)
	// The editor tools with the peers app gives them: the diff review
	// (apply_code_action), the path rule and the IDE server's tools.
	var e *Tools
	ws := workspace.New()
	app := core.New(core.Options{Editor: b, Workspace: ws, Features: func(h host.Host) []host.Feature {
		sel := selection.New(h, b)
		ctx := editorcontext.New(h, b, ws, "test")
		rev := diff.New(h, b)
		e = New(h, b, Peers{Review: rev, Paths: ctx, IDETools: func() []mcp.Tool {
			return []mcp.Tool{ctx.OpenEditorsTool(), ctx.WorkspaceFoldersTool(), ctx.CheckDocumentDirtyTool(), sel.CurrentSelectionTool()}
		}}, "test")
		return []host.Feature{sel, ctx, rev, e}
	}})
	t.Cleanup(func() { _ = app.Close() })
	// The user's diff decisions (apply_code_action) come back as requests.
	if err := app.Register(b); err != nil {
		t.Fatal(err)
	}
	ws.SetCwd(dir)
	h := &edHarness{Nvim: n, app: app, ed: e, dir: dir}
	if gopls {
		bin := nvimtest.Gopls(t)
		n.Exec(t, `local path, bin, root = ...
			vim.cmd("edit " .. vim.fn.fnameescape(path))
			local cfg = { name = "gopls", cmd = { bin }, root_dir = root }
			if vim.lsp.start then vim.lsp.start(cfg) else vim.lsp.buf_attach_client(0, vim.lsp.start_client(cfg)) end`,
			filepath.Join(dir, "main.go"), bin, dir)
		n.WaitFor(t, 60*time.Second,
			`(function() for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do if c.server_capabilities then return true end end end)()`,
			"", "gopls to start")
	}
	return h
}

// call runs a tool the way the MCP server would.
func (h *edHarness) call(t *testing.T, tool string, args any) (string, bool) {
	t.Helper()
	raw, _ := json.Marshal(args)
	for _, tl := range h.ed.edTools() {
		if tl.Name != tool {
			continue
		}
		res, err := tl.Handler(context.Background(), &mcp.ToolRequest{Name: tool, Arguments: raw})
		if err != nil {
			return err.Error(), true
		}
		var b strings.Builder
		for _, c := range res.Content {
			b.WriteString(c.Text)
		}
		return b.String(), res.IsError
	}
	t.Fatalf("no tool %s", tool)
	return "", false
}

type edCase struct {
	name    string
	tool    string
	args    map[string]any
	isError bool
	want    []string // substrings, in order
	not     []string
}

func runEdCases(t *testing.T, h *edHarness, cases []edCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// gopls may still be loading the workspace: a first empty answer
			// is retried (not a timing assertion: a failure guard).
			var text string
			var isErr bool
			deadline := time.Now().Add(30 * time.Second)
			for {
				text, isErr = h.call(t, tc.tool, tc.args)
				if isErr == tc.isError && containsInOrder(text, tc.want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			if isErr != tc.isError {
				t.Fatalf("isError = %v, want %v; result:\n%s", isErr, tc.isError, text)
			}
			if !containsInOrder(text, tc.want) {
				t.Fatalf("result lacks %q (in order):\n%s", tc.want, text)
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Fatalf("result has %q:\n%s", n, text)
				}
			}
			t.Logf("%s %v →\n%s", tc.tool, tc.args, text)
		})
	}
}

func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

func TestEditorToolsGopls(t *testing.T) {
	h := startEdHarness(t, true)
	runEdCases(t, h, []edCase{
		{name: "definition by symbol (text search)", tool: "definition", args: map[string]any{"file": "main.go", "symbol": "Sum"},
			want: []string{"1 definition of Sum (main.go:11:19):", "calc/calc.go:18:6: func Sum(ad Adder, xs ...int) int {"}},
		{name: "definition by position", tool: "definition", args: map[string]any{"file": "main.go", "line": 12, "col": 16},
			want: []string{"of Add (main.go:12:16)", "calc/calc.go:12:16: func (c *Calc) Add(a, b int) int {"}},
		{name: "references by document symbol", tool: "references", args: map[string]any{"file": "calc/calc.go", "symbol": "Sum"},
			want: []string{"2 references of Sum (calc/calc.go:18:6):", "calc/calc.go:18:6: func Sum", "main.go:11:19: fmt.Println(calc.Sum(c, 1, 2, 3))"}},
		{name: "references of a method named Type.Method", tool: "references", args: map[string]any{"file": "calc/calc.go", "symbol": "Calc.Add"},
			want: []string{"calc/calc.go:12:16: func (c *Calc) Add", "main.go:12:16: fmt.Println(c.Add(1, 2))"}},
		{name: "implementations of an interface", tool: "implementations", args: map[string]any{"file": "calc/calc.go", "symbol": "Adder"},
			want: []string{"calc/calc.go:9:6: type Calc struct{ total int }"}},
		{name: "type definition", tool: "type_definition", args: map[string]any{"file": "main.go", "line": 10, "col": 2},
			want: []string{"calc/calc.go:9:6: type Calc struct"}},
		{name: "hover", tool: "hover", args: map[string]any{"file": "main.go", "symbol": "Sum"},
			want: []string{"hover for Sum (main.go:11:19):", "func calc.Sum(ad calc.Adder, xs ...int) int", "Sum adds numbers with an Adder."}},
		{name: "document symbols", tool: "document_symbols", args: map[string]any{"file": "calc/calc.go"},
			want: []string{"symbols in calc/calc.go", "Interface Adder", "Struct Calc", "Add", "Function Sum"}},
		{name: "workspace symbols", tool: "workspace_symbols", args: map[string]any{"query": "Sum"},
			want: []string{`match "Sum"`, "Sum", "calc/calc.go:18:6"}},
		{name: "incoming calls", tool: "call_hierarchy", args: map[string]any{"file": "calc/calc.go", "symbol": "Sum"},
			want: []string{"1 caller of Function Sum (calc/calc.go:18):", "Function main — main.go:9:6", "call at main.go:11:19:"}},
		{name: "outgoing calls", tool: "call_hierarchy", args: map[string]any{"file": "calc/calc.go", "symbol": "Sum", "direction": "outgoing"},
			want: []string{"Function Sum (calc/calc.go:18) calls", "Add", "call at calc/calc.go:21:10: s = ad.Add(s, x)"}},
		{name: "rename preview", tool: "rename_preview", args: map[string]any{"file": "calc/calc.go", "symbol": "Sum", "new_name": "Total"},
			want: []string{"renaming Sum (calc/calc.go:18:6) to Total would make 3 edits in 2 files (preview only, nothing applied):",
				"--- a/calc/calc.go", "+++ b/calc/calc.go", "@@ -15,6 +15,6 @@", "-// Sum adds", "-func Sum(ad Adder", "+// Total adds", "+func Total(ad Adder",
				"--- a/main.go", "-\tfmt.Println(calc.Sum(", "+\tfmt.Println(calc.Total("}},
		{name: "code actions", tool: "code_actions", args: map[string]any{"file": "calc/calc.go", "line": 18},
			want: []string{"at calc/calc.go:18"}},
		{name: "open buffers show gopls", tool: "open_buffers", args: map[string]any{},
			want: []string{"main.go (go)", "lsp: gopls"}},
		{name: "no language server for text", tool: "references", args: map[string]any{"file": "notes.txt", "line": 1}, isError: true,
			want: []string{"no language server attached to notes.txt", "supports textDocument/references"}},
		{name: "unknown symbol", tool: "definition", args: map[string]any{"file": "main.go", "symbol": "Nope"}, isError: true,
			want: []string{`symbol "Nope" not found in main.go`}},
		{name: "line past the end", tool: "hover", args: map[string]any{"file": "main.go", "line": 99}, isError: true,
			want: []string{"line 99 is past the end of main.go (13 lines)"}},
		{name: "no such file", tool: "definition", args: map[string]any{"file": "nope.go", "line": 1}, isError: true,
			want: []string{"no such file: nope.go"}},
	})
	// Nothing the read-only tools did may leave a change behind.
	var modified int
	h.Eval(t, `local n = 0 for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.bo[b].modified then n = n + 1 end end return n`, &modified)
	if modified != 0 {
		t.Fatalf("%d modified buffers after read-only tools", modified)
	}
	b, _ := os.ReadFile(filepath.Join(h.dir, "calc/calc.go"))
	if string(b) != edFixture["calc/calc.go"] {
		t.Fatal("rename_preview changed the file")
	}
}

// Without gopls: argument errors, tools that need no language server, and
// the options.
func TestEditorToolsBasics(t *testing.T) {
	h := startEdHarness(t, false)
	runEdCases(t, h, []edCase{
		{name: "missing file", tool: "definition", args: map[string]any{"line": 1}, isError: true, want: []string{"file is required"}},
		{name: "missing position", tool: "definition", args: map[string]any{"file": "main.go"}, isError: true, want: []string{"give line (and col) or symbol"}},
		{name: "bad type", tool: "hover", args: map[string]any{"file": "main.go", "line": "one"}, isError: true, want: []string{"line must be a number"}},
		{name: "rename without name", tool: "rename_preview", args: map[string]any{"file": "main.go", "line": 1}, isError: true, want: []string{"new_name is required"}},
		{name: "bad direction", tool: "call_hierarchy", args: map[string]any{"file": "main.go", "line": 1, "direction": "up"}, isError: true, want: []string{`direction must be "incoming" or "outgoing"`}},
		{name: "workspace symbols without a server", tool: "workspace_symbols", args: map[string]any{"query": "x"}, isError: true, want: []string{"no running language server supports workspace/symbol"}},
		{name: "no server for go either", tool: "definition", args: map[string]any{"file": "main.go", "line": 10}, isError: true,
			want: []string{"no language server attached to main.go (filetype go) that supports textDocument/definition"}},
		{name: "open_file_at", tool: "open_file_at", args: map[string]any{"file": "calc/calc.go", "line": 18, "col": 6},
			want: []string{"showing calc/calc.go:18:6 to the user (24 lines): func Sum(ad Adder, xs ...int) int {"}},
		{name: "open buffers", tool: "open_buffers", args: map[string]any{}, want: []string{"1 file open:", "calc/calc.go (go) 24 lines [current]"}},
		{name: "open_file_at missing", tool: "open_file_at", args: map[string]any{"file": "gone.go"}, isError: true, want: []string{"no such file: gone.go"}},
		{name: "open_file_at without file", tool: "open_file_at", args: map[string]any{"line": 3}, isError: true, want: []string{"invalid arguments: file is required; line and col are 1-based"}},
		{name: "treesitter_node without line", tool: "treesitter_node", args: map[string]any{"file": "calc/calc.go"}, isError: true, want: []string{"invalid arguments: file and line (1-based) are required"}},
		{name: "treesitter_node bad type", tool: "treesitter_node", args: map[string]any{"file": "calc/calc.go", "line": "one"}, isError: true, want: []string{"line must be a number"}},
		{name: "hidden VS Code tool", tool: "checkDocumentDirty", args: map[string]any{"filePath": "calc/calc.go"}, want: []string{`"isDirty":false`}},
		{name: "workspace folders", tool: "getWorkspaceFolders", args: map[string]any{}, want: []string{`"success":true`, h.dir}},
	})
	var cur struct {
		Name string `json:"name"`
		Line int    `json:"line"`
	}
	h.Eval(t, `return { name = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }`, &cur)
	if cur.Name != filepath.Join(h.dir, "calc/calc.go") || cur.Line != 18 {
		t.Fatalf("open_file_at left the editor at %+v", cur)
	}
}

func TestEditorToolsTreesitter(t *testing.T) {
	h := startEdHarness(t, false)
	var has bool
	h.Eval(t, `return (pcall(vim.treesitter.get_parser, vim.fn.bufadd("x.lua"), "lua"))`, &has)
	if !has {
		// Neovim 0.7 as packaged here ships no tree-sitter parsers.
		text, isErr := h.call(t, "treesitter_node", map[string]any{"file": "init.lua", "line": 4, "col": 10})
		if !isErr || !strings.Contains(text, "no tree-sitter parser for lua") {
			t.Fatalf("without a parser: %v %s", isErr, text)
		}
		t.Skip("this Neovim has no Lua tree-sitter parser: the clear error is checked; the node is not")
	}
	runEdCases(t, h, []edCase{
		{name: "lua node", tool: "treesitter_node", args: map[string]any{"file": "init.lua", "line": 4, "col": 10},
			want: []string{"lua node string", "init.lua:4:10", "ancestors:", "inside function_declaration M.greet — init.lua:3-5: function M.greet(name)"}},
		{name: "line outside", tool: "treesitter_node", args: map[string]any{"file": "init.lua", "line": 40}, isError: true, want: []string{"line 40 is outside init.lua (7 lines)"}},
		{name: "no filetype", tool: "treesitter_node", args: map[string]any{"file": "notes.txt", "line": 1}, isError: true, want: []string{"no tree-sitter parser"}},
	})
}

func TestEditorToolsOptions(t *testing.T) {
	h := startEdHarness(t, false)
	ask := func(cfg string) EdtoolsInfo {
		t.Helper()
		// Lua sends the options (setup()); its terminal.attach()
		// then asks for the server.
		var o host.Options
		if err := json.Unmarshal([]byte(`{"editor_tools":`+cfg+`}`), &o); err != nil {
			t.Fatal(err)
		}
		h.ed.setOptions(o)
		res, err := host.Request("edtools", h.ed.handleConfig)(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.(EdtoolsInfo)
	}
	// The IDE server is not running: nothing listens yet.
	if info := ask(`{"enable":true}`); info.Enabled {
		t.Fatalf("listening without the IDE server: %+v", info)
	}
	// A dead Neovim's files are swept when a server starts.
	dir, err := discovery.PrivateDir()
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "2147483646-dead.json")
	if err := discovery.WritePrivateJSON(stale, discovery.Discovery{Socket: strings.TrimSuffix(stale, ".json") + ".sock", Token: "x", Workspace: h.dir, PID: 2147483646}); err != nil {
		t.Fatal(err)
	}
	// What App.Start and Lua's terminal.attach() do.
	h.app.SetOptions(host.Options{})
	if err := h.app.Start(context.Background(), core.StartParams{PID: os.Getpid(), Cwd: h.dir, ConfigDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	info := ask(`{"enable":true}`)
	want := []string{"definition", "references", "implementations", "type_definition", "hover", "document_symbols", "workspace_symbols",
		"call_hierarchy", "rename_preview", "code_actions", "treesitter_node", "open_buffers", "open_file_at"}
	if !info.Enabled || !containsInOrder(strings.Join(info.Tools, ","), want) {
		t.Fatalf("tools: %+v", info)
	}
	st, err := os.Stat(info.Socket)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v %v", info.Socket, st, err)
	}
	dst, err := os.Stat(filepath.Dir(info.Socket))
	if err != nil || dst.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir: %v %v", dst, err)
	}
	token := h.ed.srv.Token()
	if tok, err := discovery.Token(info.Socket); err != nil || tok != token {
		t.Fatalf("EditorSocketToken = %q, %v", tok, err)
	}
	if st, err := os.Stat(strings.TrimSuffix(info.Socket, ".sock") + ".json"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("discovery file: %v %v", st, err)
	}
	if strings.Contains(info.MCPConfig, token) || !strings.Contains(info.MCPConfig, `"args":["mcp"]`) ||
		!strings.HasPrefix(info.AddCommand, "claude mcp add nvim -- ") || strings.Contains(info.AddCommand, token) {
		t.Fatalf("config or command carries the secret, or is wrong: %s / %s", info.MCPConfig, info.AddCommand)
	}
	// The discovery file finds it by directory (and a subdirectory).
	for _, cwd := range []string{h.dir, filepath.Join(h.dir, "calc")} {
		sock, tok, err := discovery.Find(cwd)
		if err != nil || sock != info.Socket || tok != token {
			t.Fatalf("discovery.Find(%s) = %s, %v", cwd, sock, err)
		}
	}
	if _, _, err := discovery.Find("/nowhere/else"); err == nil {
		t.Fatal("found a socket for another directory")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale discovery file not swept: %v", err)
	}
	// allow narrows the set; unknown names are reported.
	info = ask(`{"enable":true,"allow":["references","hover","bogus"]}`)
	if fmt.Sprint(info.Tools) != "[references hover]" || fmt.Sprint(info.Unknown) != "[bogus]" {
		t.Fatalf("allow: %+v", info)
	}
	// enable=false stops the server and removes its files.
	old := info.Socket
	info = ask(`{"enable":false}`)
	if info.Enabled {
		t.Fatalf("still enabled: %+v", info)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if _, err := os.Stat(strings.TrimSuffix(old, ".sock") + ".json"); !os.IsNotExist(err) {
		t.Fatalf("discovery file left behind: %v", err)
	}
}
