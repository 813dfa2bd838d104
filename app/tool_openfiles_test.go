package app

import "testing"

func TestToolOpenFiles(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/x.txt": "x\n"})
	tr := `lua: vim.cmd("botright vsplit | terminal") vim.b.claude_terminal = true
` + sendCall(1, "open_files", obj{"file_paths", []string{"a.txt", h.path("b.txt"), "missing.txt", "dir"}}) +
		wantJSONText(1, obj{"opened_files", []string{h.path("a.txt"), h.path("b.txt")}, "not_opened", []obj{
			{"path", h.path("missing.txt"), "error", "File not found: " + h.path("missing.txt")},
			{"path", h.path("dir"), "error", h.path("dir") + " is a directory, not a file"},
		}}) + `
# listed; the last one shown in the editor window; the focus stays in the terminal
check: vim.bo[vim.fn.bufnr("a.txt")].buflisted and vim.bo[vim.fn.bufnr("b.txt")].buflisted
check: vim.b.claude_terminal and vim.fn.fnamemodify(vim.fn.bufname(vim.fn.winbufnr(vim.fn.winnr("#"))), ":t") == "b.txt"
` + sendCall(2, "open_files", obj{"file_paths", []string{}}) +
		wantJSONText(2, obj{"opened_files", []string{}}) +
		sendCall(3, "open_files", obj{}) +
		wantErrText(3, "invalid arguments: file_paths is required") +
		sendCall(4, "open_files", obj{"file_paths", "a.txt"}) +
		wantErrText(4, "invalid arguments: file_paths must be an array")
	h.run(t, tr)
}
