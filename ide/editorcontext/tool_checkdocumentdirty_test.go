package editorcontext

import (
	"os"
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func TestToolCheckDocumentDirty(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if err := os.Symlink(h.path("b.txt"), h.path("link.txt")); err != nil {
		t.Fatal(err)
	}
	state := func(name string, dirty bool) testkit.Obj {
		return testkit.Obj{"success", true, "filePath", h.path(name), "isDirty", dirty, "isUntitled", false}
	}
	tr := `lua: vim.cmd("edit a.txt | edit b.txt") vim.api.nvim_buf_set_lines(0, 0, -1, false, { "changed" })
` + testkit.SendCall(1, "checkDocumentDirty", testkit.Obj{"filePath", h.path("a.txt")}) +
		testkit.WantJSONText(1, state("a.txt", false)) +
		testkit.SendCall(2, "checkDocumentDirty", testkit.Obj{"filePath", "b.txt"}) +
		testkit.WantJSONText(2, state("b.txt", true)) + `
# through a symlink: the buffer of the file it leads to
` + testkit.SendCall(3, "checkDocumentDirty", testkit.Obj{"filePath", "link.txt"}) +
		testkit.WantJSONText(3, state("link.txt", true)) + `
# not open
` + testkit.SendCall(4, "checkDocumentDirty", testkit.Obj{"filePath", "c.txt"}) +
		testkit.WantJSONText(4, testkit.Obj{"success", false, "message", "Document not open: " + h.path("c.txt")}) +
		testkit.SendCall(5, "checkDocumentDirty", testkit.Obj{}) +
		testkit.WantErrText(5, "invalid arguments: filePath is required")
	h.run(t, tr)
}
