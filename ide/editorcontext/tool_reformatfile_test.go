package editorcontext

import (
	"testing"

	"github.com/nvim-claude/nvim-claude/internal/testkit"
	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// goplsOnFileType starts gopls (Lua args: the binary, the root) for every
// Go buffer, as lspconfig does: vim.lsp.start on Neovim 0.8+, one client
// attached with buf_attach_client on 0.7.
const goplsOnFileType = `local bin, root = ...
local function start(buf)
  local cfg = { name = "gopls", cmd = { bin }, root_dir = root }
  if vim.lsp.start then
    vim.lsp.start(cfg, { bufnr = buf })
    return
  end
  _G.gopls_id = _G.gopls_id or vim.lsp.start_client(cfg)
  vim.lsp.buf_attach_client(buf, _G.gopls_id)
end
vim.api.nvim_create_autocmd("FileType", { pattern = "go", callback = function(a) start(a.buf) end })`

// goplsReady is true once a client is attached to the current buffer and
// initialized.
const goplsReady = `(function() local cs = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = 0 }) or vim.lsp.buf_get_clients(0) for _, c in pairs(cs) do if c.initialized then return true end end return false end)()`

func TestToolReformatFileNoFormatter(t *testing.T) {
	h := startCtxHarness(t, map[string]string{"a.txt": "a\n"})
	tr := testkit.SendCall(1, "reformat_file", testkit.Obj{"file_path", "a.txt"}) +
		testkit.WantErrText(1, "No formatter: no language server is attached to "+h.path("a.txt")) + `
# a file that was not open is not left loaded
check: not vim.api.nvim_buf_is_loaded(vim.fn.bufnr("a.txt"))
` + testkit.SendCall(2, "reformat_file", testkit.Obj{"file_path", "missing.go"}) +
		testkit.WantErrText(2, "File not found: "+h.path("missing.go")) +
		testkit.SendCall(3, "reformat_file", testkit.Obj{}) +
		testkit.WantErrText(3, "invalid arguments: file_path is required")
	h.run(t, tr)
}

func TestToolReformatFileGopls(t *testing.T) {
	bin := nvimtest.Gopls(t)
	h := startCtxHarness(t, map[string]string{
		"go.mod":   "module example.com/fmt\n\ngo 1.22\n",
		"open.go":  "package fmt\nfunc  Open( ) {}\n",
		"other.go": "package fmt\nfunc   Other( ) {   }\n",
		"dirty.go": "package fmt\nfunc Dirty( ) {}\n",
	})
	h.Exec(t, goplsOnFileType, bin, h.dir)
	tr := `lua: vim.cmd("edit open.go")
wait: ` + goplsReady + `
# an open file: formatted and written
` + testkit.SendCall(1, "reformat_file", testkit.Obj{"file_path", "open.go"}) +
		testkit.WantText(1, "OK") + `
check: table.concat(vim.fn.readfile("open.go"), "\n") == "package fmt\n\nfunc Open() {}" and not vim.bo.modified
# a file not open: loaded, gopls attaches, formatted, written
` + testkit.SendCall(2, "reformat_file", testkit.Obj{"file_path", h.path("other.go")}) +
		testkit.WantText(2, "OK") + `
check: table.concat(vim.fn.readfile("other.go"), "\n") == "package fmt\n\nfunc Other() {}"
# unsaved changes: formatted in the editor only
lua: vim.cmd("edit dirty.go") vim.api.nvim_buf_set_lines(0, 1, 2, false, { "func  Dirty( ) { }" })
wait: ` + goplsReady + `
` + testkit.SendCall(3, "reformat_file", testkit.Obj{"file_path", "dirty.go"}) +
		testkit.WantText(3, "OK (formatted in the editor; not written, since the buffer has unsaved changes)") + `
check: vim.api.nvim_buf_get_lines(0, 0, -1, false)[3] == "func Dirty() {}" and vim.bo.modified
check: vim.fn.readfile("dirty.go")[2] == "func Dirty( ) {}"`
	h.run(t, tr)
}
