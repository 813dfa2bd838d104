package app

import "testing"

func TestToolGetOpenEditors(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.go": "package a\n", "b.sh": "echo\n", "c.txt": "c\n", "d.txt": "d\n"})
	tab := func(name, lang string, active, dirty bool) obj {
		return obj{"uri", "file://" + h.path(name), "isActive", active, "label", name, "languageId", lang, "isDirty", dirty}
	}
	tr := sendCall(1, "getOpenEditors", obj{}) +
		wantJSONText(1, obj{"tabs", []obj{}}) + `
# listed file buffers, in buffer order; not help, terminals, scratch or unlisted buffers
lua: vim.cmd("edit a.go | edit b.sh | edit c.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "changed" })
lua: vim.cmd("help") vim.cmd("wincmd p")
lua: local s = vim.api.nvim_create_buf(false, true) vim.api.nvim_buf_set_name(s, "scratch")
lua: local u = vim.fn.bufadd(vim.fn.fnamemodify("d.txt", ":p")) vim.fn.bufload(u)
` + sendCall(2, "getOpenEditors", obj{}) +
		wantJSONText(2, obj{"tabs", []obj{tab("a.go", "go", false, false), tab("b.sh", "shellscript", false, false), tab("c.txt", "plaintext", true, true)}}) + `
# with the focus in the Claude terminal, the editor used last stays active
lua: vim.cmd("buffer a.go | botright vsplit | terminal") vim.b.claude_terminal = true vim.cmd("startinsert")
` + sendCall(3, "getOpenEditors", obj{}) +
		wantJSONText(3, obj{"tabs", []obj{tab("a.go", "go", true, false), tab("b.sh", "shellscript", false, false), tab("c.txt", "plaintext", false, true)}})
	h.run(t, tr)
}
