package editorcontext

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func TestToolOpenFiles(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/x.txt": "x\n"})
	tr := `lua: vim.cmd("botright vsplit | terminal") vim.b.claude_terminal = true
` + testkit.SendCall(1, "open_files", testkit.Obj{"file_paths", []string{"a.txt", h.path("b.txt"), "missing.txt", "dir"}}) +
		testkit.WantJSONText(1, testkit.Obj{"opened_files", []string{h.path("a.txt"), h.path("b.txt")}, "not_opened", []testkit.Obj{
			{"path", h.path("missing.txt"), "error", "File not found: " + h.path("missing.txt")},
			{"path", h.path("dir"), "error", h.path("dir") + " is a directory, not a file"},
		}}) + `
# listed; the last one shown in the editor window; the focus stays in the terminal
check: vim.bo[vim.fn.bufnr("a.txt")].buflisted and vim.bo[vim.fn.bufnr("b.txt")].buflisted
check: vim.b.claude_terminal and vim.fn.fnamemodify(vim.fn.bufname(vim.fn.winbufnr(vim.fn.winnr("#"))), ":t") == "b.txt"
` + testkit.SendCall(2, "open_files", testkit.Obj{"file_paths", []string{}}) +
		testkit.WantJSONText(2, testkit.Obj{"opened_files", []string{}}) +
		testkit.SendCall(3, "open_files", testkit.Obj{}) +
		testkit.WantErrText(3, "invalid arguments: file_paths is required") +
		testkit.SendCall(4, "open_files", testkit.Obj{"file_paths", "a.txt"}) +
		testkit.WantErrText(4, "invalid arguments: file_paths must be an array")
	h.run(t, tr)
}
