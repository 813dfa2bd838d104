package app

import (
	"os"
	"testing"
)

func TestToolSaveDocument(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	saved := func(name, msg string) obj {
		return obj{"success", true, "filePath", h.path(name), "saved", true, "message", msg}
	}
	failed := func(name, msg string) obj {
		return obj{"success", false, "filePath", h.path(name), "saved", false, "message", msg}
	}
	tr := `lua: vim.cmd("edit a.txt | edit b.txt | edit c.txt") vim.api.nvim_buf_set_lines(vim.fn.bufnr("a.txt"), 0, -1, false, { "saved by Claude" })
` + sendCall(1, "saveDocument", obj{"filePath", "a.txt"}) +
		wantJSONText(1, saved("a.txt", "Document saved successfully")) + `
check: not vim.bo[vim.fn.bufnr("a.txt")].modified and vim.fn.readfile("a.txt")[1] == "saved by Claude"
` + sendCall(2, "saveDocument", obj{"filePath", "b.txt"}) +
		wantJSONText(2, saved("b.txt", "Document saved successfully (it had no unsaved changes)")) + `
# the file changed on disk since the buffer read it: refused, the disk kept, the user told
lua: vim.api.nvim_buf_set_lines(vim.fn.bufnr("c.txt"), 0, -1, false, { "mine" })
lua: local f = io.open("c.txt", "w") f:write("theirs\nlonger\n") f:close()
` + sendCall(3, "saveDocument", obj{"filePath", "c.txt"}) +
		wantErrText(3, mustJSONString(failed("c.txt", h.path("c.txt")+" changed on disk since it was read; not saved (the change on disk was kept)"))) + `
check: vim.fn.readfile("c.txt")[1] == "theirs" and vim.bo[vim.fn.bufnr("c.txt")].modified
wait: #_G.notes == 1 and _G.notes[1].msg:find("not saving c.txt", 1, true)
check: vim.api.nvim_get_mode().mode == "n"
# a failed write: Neovim's error
lua: vim.cmd("edit nodir/new.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "x" })
` + sendCall(4, "saveDocument", obj{"filePath", "nodir/new.txt"}) +
		likeText(wantErrText(4, mustJSONString(obj{"success", false, "filePath", h.path("nodir/new.txt"), "saved", false,
			"message", "could not write " + h.path("nodir/new.txt") + ": E212: Can't open file for writing(*)"}))) + `
# not open
` + sendCall(5, "saveDocument", obj{"filePath", "d.txt"}) +
		wantErrText(5, mustJSONString(failed("d.txt", "Document not open: "+h.path("d.txt"))))
	h.run(t, tr)
	if b, _ := os.ReadFile(h.path("c.txt")); string(b) != "theirs\nlonger\n" {
		t.Fatalf("c.txt = %q", b)
	}
}
