package editorcontext

import (
	"os"
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func TestToolSaveDocument(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	saved := func(name, msg string) testkit.Obj {
		return testkit.Obj{"success", true, "filePath", h.path(name), "saved", true, "message", msg}
	}
	failed := func(name, msg string) testkit.Obj {
		return testkit.Obj{"success", false, "filePath", h.path(name), "saved", false, "message", msg}
	}
	tr := `lua: vim.cmd("edit a.txt | edit b.txt | edit c.txt") vim.api.nvim_buf_set_lines(vim.fn.bufnr("a.txt"), 0, -1, false, { "saved by Claude" })
` + testkit.SendCall(1, "saveDocument", testkit.Obj{"filePath", "a.txt"}) +
		testkit.WantJSONText(1, saved("a.txt", "Document saved successfully")) + `
check: not vim.bo[vim.fn.bufnr("a.txt")].modified and vim.fn.readfile("a.txt")[1] == "saved by Claude"
` + testkit.SendCall(2, "saveDocument", testkit.Obj{"filePath", "b.txt"}) +
		testkit.WantJSONText(2, saved("b.txt", "Document saved successfully (it had no unsaved changes)")) + `
# the file changed on disk since the buffer read it: refused, the disk kept, the user told
lua: vim.api.nvim_buf_set_lines(vim.fn.bufnr("c.txt"), 0, -1, false, { "mine" })
lua: local f = io.open("c.txt", "w") f:write("theirs\nlonger\n") f:close()
` + testkit.SendCall(3, "saveDocument", testkit.Obj{"filePath", "c.txt"}) +
		testkit.WantErrText(3, testkit.MustJSONString(failed("c.txt", h.path("c.txt")+" changed on disk since it was read; not saved (the change on disk was kept)"))) + `
check: vim.fn.readfile("c.txt")[1] == "theirs" and vim.bo[vim.fn.bufnr("c.txt")].modified
wait: #_G.notes == 1 and _G.notes[1].msg:find("not saving c.txt", 1, true)
check: vim.api.nvim_get_mode().mode == "n"
# a failed write: Neovim's error
lua: vim.cmd("edit nodir/new.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "x" })
` + testkit.SendCall(4, "saveDocument", testkit.Obj{"filePath", "nodir/new.txt"}) +
		testkit.LikeText(testkit.WantErrText(4, testkit.MustJSONString(testkit.Obj{"success", false, "filePath", h.path("nodir/new.txt"), "saved", false,
			"message", "could not write " + h.path("nodir/new.txt") + ": E212: Can't open file for writing(*)"}))) + `
# not open
` + testkit.SendCall(5, "saveDocument", testkit.Obj{"filePath", "d.txt"}) +
		testkit.WantErrText(5, testkit.MustJSONString(failed("d.txt", "Document not open: "+h.path("d.txt"))))
	h.run(t, tr)
	if b, _ := os.ReadFile(h.path("c.txt")); string(b) != "theirs\nlonger\n" {
		t.Fatalf("c.txt = %q", b)
	}
}
