-- The one owner, on the plugin's side, of the editor facts every module
-- asks about: is this buffer a file, is this buffer the Claude terminal, is
-- this window one the user edits in, and which window is the active editor.
-- Selection sharing, the diagnostics and executeCode all ask here, so they
-- cannot disagree. (The host's bridge Lua, nvimbridge/lua/context.lua, runs
-- in Neovims without the plugin's Lua too and keeps the same rules itself.)
local M = {}

local api = vim.api

-- opt reads a buffer option without vim.bo's per-access table (file_path
-- runs on every cursor move): nvim_get_option_value takes {buf} since 0.8;
-- nvim_buf_get_option, deprecated there, serves 0.7.
local opt
if pcall(api.nvim_get_option_value, "buftype", { buf = 0 }) then
  local opts = { buf = 0 }
  opt = function(buf, name)
    opts.buf = buf
    return api.nvim_get_option_value(name, opts)
  end
else
  opt = api.nvim_buf_get_option
end
--- Reads a buffer option, fast (for hot paths): buf_opt(buf, name).
M.buf_opt = opt

--- The absolute path of the file buf holds, or nil when it holds none:
--- terminals, help, quickfix, scratch ('buftype' set) and buffers named by
--- a URL (`oil://`, `fugitive://`, diff proposals …). Called on every
--- cursor move: string checks only, for a name Neovim keeps absolute.
---@param buf integer
---@return string|nil
function M.file_path(buf)
  if not api.nvim_buf_is_valid(buf) or opt(buf, "buftype") ~= "" then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name:sub(1, 1) == "/" or name:match("^%a:[\\/]") then
    return name
  end
  if name == "" or name:match("^%a[%w+.-]*:[/\\]") then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

--- Whether buf is the Claude terminal (ours, or one marked with
--- b:claude_terminal / filetype `claude`).
---@param buf integer
---@return boolean
function M.is_claude_terminal(buf)
  local ok, v = pcall(api.nvim_buf_get_var, buf, "claude_terminal")
  return (ok and v and v ~= 0) or opt(buf, "filetype") == "claude"
end

--- Filetypes of sidebars and explorers whose windows keep their buffer.
M.sidebar_filetypes = {
  NvimTree = true,
  ["neo-tree"] = true,
  netrw = true,
  oil = true,
  minifiles = true,
  fern = true,
  dirvish = true,
  qf = true,
  help = true,
  Outline = true,
  aerial = true,
  undotree = true,
  dbui = true,
  ["claude"] = true,
}

--- Whether win is a window the user edits files in: not a float, the
--- Claude terminal, a diff, a preview, a 'winfixbuf' window, a sidebar or
--- another special buffer.
---@param win integer
---@return boolean
function M.editing_window(win)
  if not api.nvim_win_is_valid(win) or api.nvim_win_get_config(win).relative ~= "" then
    return false
  end
  if api.nvim_win_get_option(win, "diff") or api.nvim_win_get_option(win, "previewwindow") then
    return false
  end
  local ok, fixbuf = pcall(api.nvim_win_get_option, win, "winfixbuf")
  if ok and fixbuf then
    return false
  end
  local buf = api.nvim_win_get_buf(win)
  if opt(buf, "buftype") ~= "" or M.is_claude_terminal(buf) then
    return false
  end
  return not M.sidebar_filetypes[opt(buf, "filetype")]
end

--- The window of the editor the user works in: the current one, or — while
--- the Claude terminal (or a sidebar, a float …) has the focus — the one
--- used last, else the first editing window of the tab; nil when none.
---@return integer|nil
function M.active_window()
  local cur = api.nvim_get_current_win()
  if M.editing_window(cur) then
    return cur
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and M.editing_window(prev) then
    return prev
  end
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if M.editing_window(w) then
      return w
    end
  end
  return nil
end

return M
