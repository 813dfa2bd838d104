//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nvim-claude/nvim-claude/nvimbridge/nvimtest"
)

// TestMarkdownTreesitter: the Neovim the tests run behaves like a normal
// install where its runtime expects tree-sitter parsers (it ships queries
// for them): the parsers of Neovim's own runtime — markdown,
// markdown_inline, lua, vim, vimdoc, query, c — load, and opening a
// markdown file (what a chat transcript is) starts tree-sitter with no
// error from Neovim's markdown ftplugin. A Neovim whose runtime has no
// markdown queries (0.7) expects no parser: skipped.
func TestMarkdownTreesitter(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "chat.md")
	if err := os.WriteFile(md, []byte("# Chat\n\nSome *text* and `code`:\n\n```lua\nprint('hi')\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nvimtest.Start(t, nvimtest.Options{Dir: dir})
	var expects bool
	n.Eval(t, `return #vim.api.nvim_get_runtime_file("queries/markdown/highlights.scm", true) > 0 and vim.treesitter.start ~= nil`, &expects)
	if !expects {
		t.Skip("this Neovim's runtime ships no markdown queries: it expects no parser")
	}
	var missing []string
	n.Eval(t, `
		local missing = {}
		for _, lang in ipairs({ "markdown", "markdown_inline", "lua", "vim", "vimdoc", "query", "c" }) do
		  local ok, err = pcall(function()
		    local b = vim.api.nvim_create_buf(false, true)
		    vim.treesitter.get_parser(b, lang):parse()
		    vim.api.nvim_buf_delete(b, { force = true })
		  end)
		  if not ok then table.insert(missing, lang .. ": " .. tostring(err)) end
		end
		return missing`, &missing)
	for _, m := range missing {
		t.Errorf("parser does not load: %s", m)
	}
	var res struct {
		Errmsg string `json:"errmsg"`
		Ok     bool   `json:"ok"`
		Err    string `json:"err"`
		Active bool   `json:"active"`
		Ft     string `json:"ft"`
	}
	n.Eval(t, `
		vim.v.errmsg = ""
		vim.cmd("filetype plugin on")
		vim.cmd("edit " .. vim.fn.fnameescape(...))
		local buf = vim.api.nvim_get_current_buf()
		local ok, err = pcall(vim.treesitter.start, buf, "markdown")
		return { errmsg = vim.v.errmsg, ok = ok, err = tostring(err or ""), ft = vim.bo[buf].filetype,
		  active = vim.treesitter.highlighter.active[buf] ~= nil }`, &res, md)
	if !res.Ok || res.Errmsg != "" || !res.Active || res.Ft != "markdown" {
		t.Errorf("opening a markdown file: %+v", res)
	}
}
