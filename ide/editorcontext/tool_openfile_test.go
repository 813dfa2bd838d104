package editorcontext

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func TestToolOpenFile(t *testing.T) {
	h := startCtxHarness(t, map[string]string{
		"f.txt":     "first line\nsecond line\nthird line\n",
		"g.go":      "package g\n\nfunc G() {}\n",
		"run.sh":    "#!/bin/sh\necho hi\n",
		"sub/x.txt": "x\n",
		"other.txt": "other\n",
	})
	tr := `# the user edits other.txt; the Claude terminal is on the right and has the focus
lua: vim.cmd("edit other.txt | botright vsplit | terminal") vim.b.claude_terminal = true vim.cmd("startinsert")
` + testkit.SendCall(1, "openFile", testkit.Obj{"filePath", "f.txt", "startText", "second", "endText", "third"}) +
		testkit.WantText(1, "Opened file: "+h.path("f.txt")) + `
# shown in the editor window (not the terminal), focused, the range selected
# (from Terminal mode: once that mode is left, through the typeahead)
wait: vim.api.nvim_get_mode().mode == "v"
check: vim.fn.expand("%:t") == "f.txt" and vim.b.claude_terminal == nil
check: vim.fn.getpos("v")[2] == 2 and vim.fn.getpos("v")[3] == 1 and vim.api.nvim_win_get_cursor(0)[1] == 3 and vim.api.nvim_win_get_cursor(0)[2] == 4
check: #vim.api.nvim_tabpage_list_wins(0) == 2
lua: vim.cmd("normal! \27")
# in the background: loaded and listed, the focus stays; JSON answer
` + testkit.SendCall(2, "openFile", testkit.Obj{"filePath", h.path("g.go"), "makeFrontmost", false}) +
		testkit.WantJSONText(2, testkit.Obj{"success", true, "filePath", h.path("g.go"), "languageId", "go", "lineCount", 3}) + `
check: vim.fn.expand("%:t") == "f.txt" and vim.api.nvim_buf_is_loaded(vim.fn.bufnr("g.go")) and vim.bo[vim.fn.bufnr("g.go")].buflisted
` + testkit.SendCall(3, "openFile", testkit.Obj{"filePath", "run.sh", "makeFrontmost", false, "preview", true}) +
		testkit.WantJSONText(3, testkit.Obj{"success", true, "filePath", h.path("run.sh"), "languageId", "shellscript", "lineCount", 2}) + `
check: not vim.bo[vim.fn.bufnr("run.sh")].buflisted
# a file:// URI works too; the cursor lands on the start text
` + testkit.SendCall(4, "openFile", testkit.Obj{"filePath", "file://" + h.path("g.go"), "startText", "func"}) +
		testkit.WantText(4, "Opened file: "+h.path("g.go")) + `
check: vim.fn.expand("%:t") == "g.go" and vim.api.nvim_win_get_cursor(0)[1] == 3
lua: vim.cmd("normal! \27")
# bad input: error results a person can act on
` + testkit.SendCall(5, "openFile", testkit.Obj{"filePath", "missing.txt"}) +
		testkit.WantErrText(5, "File not found: "+h.path("missing.txt")) +
		testkit.SendCall(6, "openFile", testkit.Obj{"filePath", "sub"}) +
		testkit.WantErrText(6, h.path("sub")+" is a directory, not a file") +
		testkit.SendCall(7, "openFile", testkit.Obj{}) +
		testkit.WantErrText(7, "invalid arguments: filePath is required") +
		testkit.SendCall(8, "openFile", testkit.Obj{"filePath", 3}) +
		testkit.WantErrText(8, "invalid arguments: filePath must be a string")
	h.run(t, tr)
}
