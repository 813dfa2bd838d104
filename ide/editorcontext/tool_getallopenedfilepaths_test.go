package editorcontext

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
)

func TestToolGetAllOpenedFilePaths(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	tr := testkit.SendCall(1, "get_all_opened_file_paths", testkit.Obj{}) +
		testkit.WantText(1, "") + `
lua: vim.cmd("edit a.txt | edit b.txt | help")
lua: local s = vim.api.nvim_create_buf(false, true) vim.api.nvim_buf_set_name(s, "scratch")
` + testkit.SendCall(2, "get_all_opened_file_paths", testkit.Obj{}) +
		testkit.WantText(2, h.path("a.txt")+"\n"+h.path("b.txt"))
	h.run(t, tr)
}
