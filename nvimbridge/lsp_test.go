package nvimbridge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nvim-claude/nvim-claude/nvimbridge"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// A small Go module for gopls.
var lspFiles = map[string]string{
	"go.mod":     "module example.com/m\n\ngo 1.22\n",
	"lib/lib.go": "package lib\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n// Twice doubles n.\nfunc Twice(n int) int {\n\treturn 2 * n\n}\n\n// Show prints n.\nfunc Show(n int) { fmt.Println(Twice(n)) }\n",
	"main.go":    "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() {\n\tlib.Show(lib.Twice(2))\n}\n",
	"notes.txt":  "no language server here\n",
	"init.lua":   "local M = {}\n\nfunction M.hi()\n  return 1\nend\n\nreturn M\n",
	"crlf.go":    "package main\r\n\r\nvar x = 1\r\n",
}

// startLSPEnv is startCtxEnv on lspFiles with gopls attached to main.go.
func startLSPEnv(t *testing.T) *ctxEnv {
	t.Helper()
	bin := nvimtest.Gopls(t)
	e := startCtxEnv(t, lspFiles)
	e.Exec(t, `local path, bin, root = ...
		vim.cmd("edit " .. vim.fn.fnameescape(path))
		local cfg = { name = "gopls", cmd = { bin }, root_dir = root }
		if vim.lsp.start then vim.lsp.start(cfg) else vim.lsp.buf_attach_client(0, vim.lsp.start_client(cfg)) end`,
		filepath.Join(e.dir, "main.go"), bin, e.dir)
	e.WaitFor(t, 60*time.Second,
		`(function() for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do if c.server_capabilities then return true end end end)()`,
		"", "gopls to start")
	return e
}

// lspUntil runs q until check passes (gopls may still be loading the
// module: an early empty answer is retried; a failure guard).
func lspUntil(t *testing.T, e *ctxEnv, q nvimbridge.LSPQuery, check func(nvimbridge.LSPResult) bool) nvimbridge.LSPResult {
	t.Helper()
	var r nvimbridge.LSPResult
	deadline := time.Now().Add(30 * nvimtest.Slack * time.Second)
	for {
		var err error
		r, err = e.b.LSP(context.Background(), q)
		if err != nil {
			t.Fatalf("LSP(%+v): %v", q, err)
		}
		if check(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestBridgeLSP(t *testing.T) {
	e := startLSPEnv(t)
	lib, main := filepath.Join(e.dir, "lib/lib.go"), filepath.Join(e.dir, "main.go")
	type tc struct {
		name  string
		q     nvimbridge.LSPQuery
		check func(r nvimbridge.LSPResult) bool
	}
	loc := func(r nvimbridge.LSPResult, i int, path string, line, col int) bool {
		return len(r.Locations) > i && r.Locations[i].Path == path && r.Locations[i].Line == line && r.Locations[i].Col == col
	}
	cases := []tc{
		{"definition at a position", nvimbridge.LSPQuery{Op: "definition", File: main, Line: 6, Col: 15},
			func(r nvimbridge.LSPResult) bool {
				return r.Error == "" && r.Total == 1 && loc(r, 0, lib, 9, 6) && r.Locations[0].Text == "func Twice(n int) int {" &&
					r.Resolved != nil && r.Resolved.Word == "Twice" && r.Client == "gopls"
			}},
		{"references by symbol, in a file not open", nvimbridge.LSPQuery{Op: "references", File: lib, Symbol: "Twice"},
			func(r nvimbridge.LSPResult) bool {
				return r.Total == 3 && loc(r, 0, lib, 9, 6) && loc(r, 1, lib, 14, 32) && loc(r, 2, main, 6, 15) &&
					r.Resolved.How == "document symbol"
			}},
		{"limit bounds the list, not the total", nvimbridge.LSPQuery{Op: "references", File: lib, Symbol: "Twice", Limit: 1},
			func(r nvimbridge.LSPResult) bool { return r.Total == 3 && len(r.Locations) == 1 }},
		{"hover", nvimbridge.LSPQuery{Op: "hover", File: lib, Symbol: "Show"},
			func(r nvimbridge.LSPResult) bool {
				return strings.Contains(r.Hover, "func Show(n int)") && strings.Contains(r.Hover, "Show prints n.")
			}},
		{"document symbols", nvimbridge.LSPQuery{Op: "document_symbols", File: lib},
			func(r nvimbridge.LSPResult) bool {
				return r.Total == 2 && len(r.Symbols) == 2 && r.Symbols[0].Name == "Twice" && r.Symbols[0].Kind == "Function" &&
					r.Symbols[0].Line == 9 && r.Symbols[0].EndLine == 11
			}},
		{"workspace symbols", nvimbridge.LSPQuery{Op: "workspace_symbols", Query: "Twice"},
			func(r nvimbridge.LSPResult) bool {
				return len(r.Symbols) > 0 && r.Symbols[0].Name == "Twice" && r.Symbols[0].Path == lib && r.Symbols[0].Line == 9
			}},
		{"incoming calls", nvimbridge.LSPQuery{Op: "call_hierarchy", File: lib, Symbol: "Twice"},
			func(r nvimbridge.LSPResult) bool {
				return r.Item != nil && r.Item.Name == "Twice" && r.Total == 2 && len(r.Calls) == 2 && len(r.Calls[0].Sites) == 1
			}},
		{"outgoing calls", nvimbridge.LSPQuery{Op: "call_hierarchy", File: lib, Symbol: "Show", Direction: "outgoing"},
			func(r nvimbridge.LSPResult) bool {
				names := ""
				for _, c := range r.Calls {
					names += c.Name + ","
				}
				return strings.Contains(names, "Twice,") && strings.Contains(names, "Println,")
			}},
		{"rename preview", nvimbridge.LSPQuery{Op: "rename_preview", File: lib, Symbol: "Twice", NewName: "Double"},
			func(r nvimbridge.LSPResult) bool {
				return len(r.Files) == 2 && r.Total == 4 && r.Files[0].Path == lib && strings.Contains(r.Files[0].Diff, "+func Double(n int) int {") &&
					r.Files[1].Path == main && strings.Contains(r.Files[1].Diff, "+\tlib.Show(lib.Double(2))")
			}},
		{"code actions", nvimbridge.LSPQuery{Op: "code_actions", File: lib, Line: 5},
			func(r nvimbridge.LSPResult) bool {
				return len(r.Actions) > 0 && r.Actions[0].Title == "Organize Imports" && r.Actions[0].Kind == "source.organizeImports"
			}},
		{"a code action's edit", nvimbridge.LSPQuery{Op: "code_action_edit", File: lib, Line: 5, Action: "Organize Imports"},
			func(r nvimbridge.LSPResult) bool {
				return r.Action != nil && r.Action.Index == 1 && len(r.Edits) == 1 && r.Edits[0].Path == lib && r.Edits[0].Exists &&
					r.Edits[0].Before == lspFiles["lib/lib.go"] && r.Edits[0].After == strings.Replace(lspFiles["lib/lib.go"], "\t\"strings\"\n", "", 1)
			}},
		// Errors the model reads.
		{"no client", nvimbridge.LSPQuery{Op: "definition", File: filepath.Join(e.dir, "notes.txt"), Line: 1},
			func(r nvimbridge.LSPResult) bool {
				return r.Error == "no language server attached to "+filepath.Join(e.dir, "notes.txt")+" (filetype text) that supports textDocument/definition"
			}},
		{"line past the end", nvimbridge.LSPQuery{Op: "hover", File: main, Rel: "main.go", Line: 99},
			func(r nvimbridge.LSPResult) bool { return r.Error == "line 99 is past the end of main.go (7 lines)" }},
		{"no position", nvimbridge.LSPQuery{Op: "hover", File: main},
			func(r nvimbridge.LSPResult) bool { return r.Error == "give either line (1-based, with col) or symbol" }},
		{"unknown symbol", nvimbridge.LSPQuery{Op: "definition", File: main, Rel: "main.go", Symbol: "Nope"},
			func(r nvimbridge.LSPResult) bool { return r.Error == `symbol "Nope" not found in main.go` }},
		{"no such file", nvimbridge.LSPQuery{Op: "definition", File: filepath.Join(e.dir, "gone.go"), Rel: "gone.go", Line: 1},
			func(r nvimbridge.LSPResult) bool { return r.Error == "no such file: gone.go" }},
		{"unknown operation", nvimbridge.LSPQuery{Op: "format", File: main},
			func(r nvimbridge.LSPResult) bool { return r.Error == "unknown operation format" }},
		{"no code action of that number", nvimbridge.LSPQuery{Op: "code_action_edit", File: lib, Line: 5, Action: "999"},
			func(r nvimbridge.LSPResult) bool {
				return strings.HasPrefix(r.Error, "there is no code action 999 here (")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lspUntil(t, e, c.q, c.check)
			if !c.check(r) {
				t.Fatalf("LSP(%+v) = %+v", c.q, r)
			}
		})
	}
	// Nothing above changed a buffer or a file.
	var modified int
	e.Eval(t, `local n = 0 for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.bo[b].modified then n = n + 1 end end return n`, &modified)
	if b, _ := os.ReadFile(lib); modified != 0 || string(b) != lspFiles["lib/lib.go"] {
		t.Fatalf("%d modified buffers; lib.go: %q", modified, b)
	}
}

// A server that never answers: the query times out with a message that
// says so, within the timeout it was given.
func TestBridgeLSPTimeout(t *testing.T) {
	e := startCtxEnv(t, lspFiles)
	var ok bool
	e.Eval(t, `return vim.fn.has("nvim-0.10") == 1`, &ok)
	if !ok {
		t.Skip("an in-process language server (cmd as a function) needs Neovim ≥ 0.10; the timeout path is the same Lua")
	}
	e.Exec(t, `local path = ...
		vim.cmd("edit " .. vim.fn.fnameescape(path))
		vim.lsp.start({ name = "mute", root_dir = vim.fn.getcwd(), cmd = function(d)
			local closing = false
			return {
				request = function(method, params, callback)
					if method == "initialize" then
						callback(nil, { capabilities = { definitionProvider = true } })
					elseif method == "shutdown" then
						callback(nil, vim.NIL)
					end -- anything else: never answered
					return true, 1
				end,
				notify = function(method) if method == "exit" then closing = true end return true end,
				is_closing = function() return closing end,
				terminate = function() closing = true end,
			}
		end })`, filepath.Join(e.dir, "main.go"))
	e.WaitFor(t, 10*time.Second, `(function() for _, c in ipairs(vim.lsp.get_clients()) do if c.server_capabilities then return true end end end)()`, "", "the server")
	r, err := e.b.LSP(context.Background(), nvimbridge.LSPQuery{Op: "definition", File: filepath.Join(e.dir, "main.go"), Line: 6, Col: 6, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Error, "textDocument/definition timed out after ") {
		t.Fatalf("%+v", r)
	}
	// A server without the capability is named as such.
	r, err = e.b.LSP(context.Background(), nvimbridge.LSPQuery{Op: "hover", File: filepath.Join(e.dir, "main.go"), Rel: "main.go", Line: 6})
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != "no language server attached to main.go that supports textDocument/hover (attached: mute)" {
		t.Fatalf("%+v", r)
	}
	// The caller's context bounds the call too.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.b.LSP(ctx, nvimbridge.LSPQuery{Op: "definition", File: filepath.Join(e.dir, "main.go"), Line: 6, Timeout: 5 * time.Second}); err == nil {
		t.Fatal("no error past the context's deadline")
	}
}

func TestBridgeLSPApplyFiles(t *testing.T) {
	e := startCtxEnv(t, lspFiles)
	lib := filepath.Join(e.dir, "lib/lib.go")
	newFile := filepath.Join(e.dir, "new/dir/n.go")
	after := strings.Replace(lspFiles["lib/lib.go"], "Twice doubles", "Twice multiplies", 1)
	// A stale "before" applies nothing, not even the other file.
	r, err := e.b.LSPApplyFiles(context.Background(), []nvimbridge.LSPFileEdit{
		{Path: newFile, After: "package dir\n"},
		{Path: lib, Before: "package lib\n", After: after, Exists: true},
	})
	if err != nil || r.Error != lib+" changed on disk since the proposal was made; nothing was applied" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := os.Stat(newFile); !os.IsNotExist(err) {
		t.Fatal("the new file was written")
	}
	// Both: the buffer gets the text and is written; the new file and its
	// directories are created.
	r, err = e.b.LSPApplyFiles(context.Background(), []nvimbridge.LSPFileEdit{
		{Path: lib, Before: lspFiles["lib/lib.go"], After: after, Exists: true},
		{Path: newFile, After: "package dir\n"},
	})
	if err != nil || r.Error != "" || len(r.Files) != 2 || !r.Files[0].Written || !r.Files[1].Written {
		t.Fatalf("%+v %v", r, err)
	}
	for p, want := range map[string]string{lib: after, newFile: "package dir\n"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Fatalf("%s: %q", p, b)
		}
	}
	var mod bool
	e.Eval(t, `return vim.bo[vim.fn.bufnr(...)].modified`, &mod, lib)
	if mod {
		t.Fatal("lib.go's buffer left modified")
	}
	// A file created meanwhile is not overwritten.
	r, err = e.b.LSPApplyFiles(context.Background(), []nvimbridge.LSPFileEdit{{Path: newFile, After: "x\n"}})
	if err != nil || r.Error != newFile+" was created meanwhile; nothing was applied" {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestBridgeLSPBuffersAndOpenFileAt(t *testing.T) {
	e := startCtxEnv(t, lspFiles)
	main := filepath.Join(e.dir, "main.go")
	o, err := e.b.OpenFileAt(context.Background(), main, "main.go", 6, 2)
	if err != nil || o.Error != "" || o.Path != main || o.Line != 6 || o.Col != 2 || o.Lines != 7 || o.Text != "lib.Show(lib.Twice(2))" {
		t.Fatalf("%+v %v", o, err)
	}
	o, err = e.b.OpenFileAt(context.Background(), filepath.Join(e.dir, "gone.go"), "gone.go", 1, 0)
	if err != nil || o.Error != "no such file: gone.go" {
		t.Fatalf("%+v %v", o, err)
	}
	bufs, err := e.b.LSPBuffers(context.Background())
	if err != nil || len(bufs) != 1 || bufs[0].Path != main || bufs[0].Filetype != "go" || !bufs[0].Current || bufs[0].Lines != 7 || len(bufs[0].Clients) != 0 {
		t.Fatalf("%+v %v", bufs, err)
	}
}

func TestBridgeTreesitterNode(t *testing.T) {
	e := startCtxEnv(t, lspFiles)
	lua := filepath.Join(e.dir, "init.lua")
	n, err := e.b.TreesitterNode(context.Background(), lua, "init.lua", 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(n.Error, "no tree-sitter parser for lua") {
		t.Skip("this Neovim ships no Lua parser: " + n.Error)
	}
	if n.Error != "" || n.Lang != "lua" || n.Line != 4 || len(n.Scopes) == 0 || n.Scopes[0].Name != "M.hi" || n.Scopes[0].Line != 3 || n.Scopes[0].EndLine != 5 {
		t.Fatalf("%+v", n)
	}
	for _, c := range []struct {
		line int
		want string
	}{{40, "line 40 is outside init.lua (7 lines)"}, {0, "line 0 is outside init.lua (7 lines)"}} {
		n, err := e.b.TreesitterNode(context.Background(), lua, "init.lua", c.line, 1)
		if err != nil || n.Error != c.want {
			t.Fatalf("line %d: %+v %v", c.line, n, err)
		}
	}
}
