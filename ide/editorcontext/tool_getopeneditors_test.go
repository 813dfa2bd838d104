package editorcontext

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func TestToolGetOpenEditors(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.go": "package a\n", "b.sh": "echo\n", "c.txt": "c\n", "d.txt": "d\n"})
	tab := func(name, lang string, active, dirty bool) testkit.Obj {
		return testkit.Obj{"uri", "file://" + h.path(name), "isActive", active, "label", name, "languageId", lang, "isDirty", dirty}
	}
	tr := testkit.SendCall(1, "getOpenEditors", testkit.Obj{}) +
		testkit.WantJSONText(1, testkit.Obj{"tabs", []testkit.Obj{}}) + `
# listed file buffers, in buffer order; not help, terminals, scratch or unlisted buffers
lua: vim.cmd("edit a.go | edit b.sh | edit c.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "changed" })
lua: vim.cmd("help") vim.cmd("wincmd p")
lua: local s = vim.api.nvim_create_buf(false, true) vim.api.nvim_buf_set_name(s, "scratch")
lua: local u = vim.fn.bufadd(vim.fn.fnamemodify("d.txt", ":p")) vim.fn.bufload(u)
` + testkit.SendCall(2, "getOpenEditors", testkit.Obj{}) +
		testkit.WantJSONText(2, testkit.Obj{"tabs", []testkit.Obj{tab("a.go", "go", false, false), tab("b.sh", "shellscript", false, false), tab("c.txt", "plaintext", true, true)}}) + `
# with the focus in the Claude terminal, the editor used last stays active
lua: vim.cmd("buffer a.go | botright vsplit | terminal") vim.b.claude_terminal = true vim.cmd("startinsert")
` + testkit.SendCall(3, "getOpenEditors", testkit.Obj{}) +
		testkit.WantJSONText(3, testkit.Obj{"tabs", []testkit.Obj{tab("a.go", "go", true, false), tab("b.sh", "shellscript", false, false), tab("c.txt", "plaintext", false, true)}})
	h.run(t, tr)
}
