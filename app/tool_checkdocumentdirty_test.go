package app

import (
	"os"
	"testing"
)

func TestToolCheckDocumentDirty(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if err := os.Symlink(h.path("b.txt"), h.path("link.txt")); err != nil {
		t.Fatal(err)
	}
	state := func(name string, dirty bool) obj {
		return obj{"success", true, "filePath", h.path(name), "isDirty", dirty, "isUntitled", false}
	}
	tr := `lua: vim.cmd("edit a.txt | edit b.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "changed" })
` + sendCall(1, "checkDocumentDirty", obj{"filePath", h.path("a.txt")}) +
		wantJSONText(1, state("a.txt", false)) +
		sendCall(2, "checkDocumentDirty", obj{"filePath", "b.txt"}) +
		wantJSONText(2, state("b.txt", true)) + `
# through a symlink: the buffer of the file it leads to
` + sendCall(3, "checkDocumentDirty", obj{"filePath", "link.txt"}) +
		wantJSONText(3, state("link.txt", true)) + `
# not open
` + sendCall(4, "checkDocumentDirty", obj{"filePath", "c.txt"}) +
		wantJSONText(4, obj{"success", false, "message", "Document not open: " + h.path("c.txt")}) +
		sendCall(5, "checkDocumentDirty", obj{}) +
		wantErrText(5, "invalid arguments: filePath is required")
	h.run(t, tr)
}
