package editorcontext

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/workspace/pathmap"
)

// A Claude elsewhere (an SSH host, a container) sees the workspace under
// its own path: open editors, diagnostics_changed and getDiagnostics speak
// the far path; a file outside the mapping is left out, and a local path
// the CLI names is not taken as one of its own.
func TestFarMapEditorsAndDiagnostics(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.go": "package a\n", "{{out}}/o.txt": "o\n"})
	m, err := pathmap.New("/workspaces/app", h.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	h.ws.SetMap(m)
	far := "file:///workspaces/app/a.go"
	e1 := diag("bad", "Error", 0, 0, 0, 1, "fakelint", "")
	tr := `lua: vim.cmd("edit " .. vim.fn.fnameescape(` + luaStr(h.out+"/o.txt") + `)) vim.cmd("edit a.go")
` + testkit.SendCall(1, "getOpenEditors", testkit.Obj{}) +
		testkit.WantJSONText(1, testkit.Obj{"tabs", []testkit.Obj{{"uri", far, "isActive", true, "label", "a.go", "languageId", "go", "isDirty", false}}}) + `
lua: _G.ns = vim.api.nvim_create_namespace("fakelint") vim.diagnostic.set(_G.ns, 0, {{ lnum = 0, col = 0, end_col = 1, message = "bad", source = "fakelint" }})
` + testkit.WantNotification("diagnostics_changed", testkit.Obj{"uri", far, "diagnostics", []diagnostic{e1}}) +
		testkit.SendCall(2, "getDiagnostics", testkit.Obj{"uri", far}) +
		testkit.WantJSONText(2, []testkit.Obj{{"uri", far, "diagnostics", []diagnostic{e1}}}) +
		testkit.SendCall(3, "getDiagnostics", testkit.Obj{}) +
		testkit.WantJSONText(3, []testkit.Obj{{"uri", far, "diagnostics", []diagnostic{e1}}}) +
		testkit.SendCall(4, "getDiagnostics", testkit.Obj{"uri", "file://" + h.path("a.go")}) +
		testkit.WantText(4, "[]")
	h.run(t, tr)
}

func luaStr(s string) string { return "[==[" + s + "]==]" }

// openFile with a Claude elsewhere: the far path opens the local file and
// the answer names the far path; a far path outside the mapping is refused
// naming it, and a local path the CLI names is not taken as its own.
func TestFarMapOpenFile(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.go": "package a\n"})
	m, err := pathmap.New("/workspaces/app", h.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	h.ws.SetMap(m)
	tr := testkit.SendCall(1, "openFile", testkit.Obj{"filePath", "/workspaces/app/a.go"}) +
		testkit.WantText(1, "Opened file: /workspaces/app/a.go") + `
check: vim.api.nvim_buf_get_name(0) == ` + luaStr(h.path("a.go")) + `
` + testkit.SendCall(2, "openFile", testkit.Obj{"filePath", "/workspaces/app/a.go", "makeFrontmost", false}) +
		testkit.WantJSONText(2, testkit.Obj{"success", true, "filePath", "/workspaces/app/a.go", "languageId", "go", "lineCount", 1}) +
		testkit.SendCall(3, "openFile", testkit.Obj{"filePath", "/workspaces/app/missing.txt"}) +
		testkit.WantErrText(3, "File not found: /workspaces/app/missing.txt") +
		testkit.SendCall(4, "openFile", testkit.Obj{"filePath", "/etc/hostname"}) +
		testkit.WantErrText(4, `path outside the mapping: "/etc/hostname" is not under the far directory "/workspaces/app"`)
	h.run(t, tr)
}
