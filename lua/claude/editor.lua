--- The one owner of the editor facts every module asks about: is this
--- buffer a file, which buffer holds a path, is this window one the user
--- edits in, which window is the active editor, and how a byte column
--- counts in UTF-16 (or UTF-32) units.
---
--- The plugin's modules and the host's bridge Lua (lua/claude/bridge/,
--- which reaches this module through `require`) all ask here, so
--- getCurrentSelection, getOpenEditors' `isActive`, executeCode's target,
--- openFile and openDiff cannot disagree about them. Nothing here holds
--- state but the hint `note_active` leaves; loading it costs no autocmd.
local M = {}
local H = {}

local util = require("claude.util")
local api = vim.api
local uv = vim.uv or vim.loop

-- Buffer options --------------------------------------------------------------

-- H.buf_opt reads a buffer option without vim.bo's per-access table
-- (file_path runs on every cursor move and on every buffer of
-- getOpenEditors): nvim_get_option_value takes {buf} since 0.8;
-- nvim_buf_get_option, deprecated there, serves 0.7.
if pcall(api.nvim_get_option_value, "buftype", { buf = 0 }) then
  H.opt_scope = { buf = 0 }
  H.buf_opt = function(buf, name)
    H.opt_scope.buf = buf
    return api.nvim_get_option_value(name, H.opt_scope)
  end
else
  H.buf_opt = api.nvim_buf_get_option
end

--- Reads a buffer option, fast (for hot paths): buf_opt(buf, name).
---@type fun(buf: integer, name: string): any
M.buf_opt = H.buf_opt

-- On 0.10+ getbufvar(buf, "&name") reads an option in about half the time
-- of nvim_get_option_value (getOpenEditors reads three of each of 500
-- buffers: make bench, scenario 7); it gives a flag as 0/1.
H.str_opt, H.flag_opt = H.buf_opt, H.buf_opt
if vim.fn.has("nvim-0.10") == 1 then
  local getbufvar = vim.fn.getbufvar
  local keys = setmetatable({}, {
    __index = function(t, name)
      t[name] = "&" .. name
      return t[name]
    end,
  })
  H.str_opt = function(buf, name)
    return getbufvar(buf, keys[name])
  end
  H.flag_opt = function(buf, name)
    return getbufvar(buf, keys[name]) == 1
  end
end

--- Reads a string buffer option, fastest way for this Neovim.
---@type fun(buf: integer, name: string): string
M.buf_str = H.str_opt

--- Reads a boolean buffer option, fastest way for this Neovim.
---@type fun(buf: integer, name: string): boolean
M.buf_flag = H.flag_opt

-- Files -------------------------------------------------------------------------

--- The absolute path of the file buf holds, or nil when it holds none:
--- terminals, help, quickfix, scratch ('buftype' set), unnamed buffers and
--- buffers named by a URL (`oil://`, `fugitive://`, diff proposals …).
--- Called on every cursor move: string checks only, for a name Neovim
--- keeps absolute.
---@param buf integer
---@return string|nil
function M.file_path(buf)
  if not api.nvim_buf_is_valid(buf) or H.str_opt(buf, "buftype") ~= "" then
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

--- The buffer holding the file at path (made absolute), or nil: by name,
--- else by the file it resolves to (a buffer opened through a symlink).
--- Only buffers that hold a file (`file_path`) count; none is created.
--- (Not bufnr(): it takes a pattern, and file names may hold pattern
--- characters.)
---@param path string
---@param by_name? boolean by name only (the real-path compare costs a system call per buffer: for lookups of many paths)
---@return integer|nil
function M.find_buf(path, by_name)
  if not (path:sub(1, 1) == "/" or path:match("^%a:[\\/]")) then
    path = vim.fn.fnamemodify(path, ":p")
  end
  local bufs = api.nvim_list_bufs()
  for _, b in ipairs(bufs) do
    if api.nvim_buf_get_name(b) == path and M.file_path(b) then
      return b
    end
  end
  local real = not by_name and uv.fs_realpath(path)
  if not real then
    return nil
  end
  for _, b in ipairs(bufs) do
    local p = M.file_path(b)
    if p and uv.fs_realpath(p) == real then
      return b
    end
  end
  return nil
end

--- Whether buf is the Claude terminal (ours, or one marked with
--- b:claude_terminal / filetype `claude`).
---@param buf integer
---@return boolean
function M.is_claude_terminal(buf)
  local ok, v = pcall(api.nvim_buf_get_var, buf, "claude_terminal")
  return (ok and v and v ~= 0) or H.buf_opt(buf, "filetype") == "claude"
end

-- Windows -----------------------------------------------------------------------

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

--- Whether win is a window a tool may show a file in: not a float, the
--- Claude terminal, a diff, a preview, a 'winfixbuf' window, a sidebar or
--- another special buffer.
---@param win integer
---@return boolean
function M.editing_window(win)
  if not api.nvim_win_is_valid(win) or util.floating(win) then
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
  if H.buf_opt(buf, "buftype") ~= "" or M.is_claude_terminal(buf) then
    return false
  end
  return not M.sidebar_filetypes[H.buf_opt(buf, "filetype")]
end

-- H.last is the window a file was last worked on in, as note_active heard.
H.last = nil

--- Notes that the user works on a file in win (the selection tracker says
--- so when the cursor rests there or a selection ends): while the focus is
--- elsewhere, that window stays the active editor.
---@param win integer|nil
function M.note_active(win)
  H.last = win
end

-- H.shows_file: win shows a file (and is no float, unless floats).
function H.shows_file(win, floats)
  if not api.nvim_win_is_valid(win) or M.file_path(api.nvim_win_get_buf(win)) == nil then
    return false
  end
  return floats or not util.floating(win)
end

--- The active editor: the window of the file the user works on. The
--- current window when it shows a file; while the focus is elsewhere (the
--- Claude terminal, a sidebar, a prompt …) the one `note_active` last named,
--- else the previous window (`wincmd p`), else the first window of the tab
--- showing a file; nil when no window of the current tab shows one.
--- getCurrentSelection reads this window, getOpenEditors marks its buffer
--- `isActive`, executeCode runs in its buffer.
---@return integer|nil
function M.active_window()
  local cur = api.nvim_get_current_win()
  if H.shows_file(cur, true) then
    return cur
  end
  local tab = api.nvim_get_current_tabpage()
  local last = H.last
  if last and H.shows_file(last, true) and api.nvim_win_get_tabpage(last) == tab then
    return last
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and H.shows_file(prev, true) then
    return prev
  end
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if H.shows_file(w, false) then
      return w
    end
  end
  return nil
end

--- Where a tool shows a file in tab (0: the current one): the active editor
--- when it is in tab and accept(win) takes it, else the largest window of
--- tab that accept takes; nil when none does. accept defaults to
--- `editing_window`.
---@param tab integer
---@param accept? fun(win: integer): boolean
---@return integer|nil
function M.show_window(tab, accept)
  accept = accept or M.editing_window
  if tab == 0 then
    tab = api.nvim_get_current_tabpage()
  end
  local active = M.active_window()
  if active and api.nvim_win_get_tabpage(active) == tab and accept(active) then
    return active
  end
  return util.largest_window(tab, accept)
end

-- Columns -----------------------------------------------------------------------

-- H.seq_len is the byte length of the UTF-8 sequence at byte i of s (1-based),
-- 1 for a byte that starts none (Neovim, and Go's decoder, count such a byte
-- as one character).
function H.seq_len(s, i)
  local c = s:byte(i)
  local n = (c >= 0xC2 and c <= 0xDF) and 2 or (c >= 0xE0 and c <= 0xEF) and 3 or (c >= 0xF0 and c <= 0xF4) and 4 or 1
  for k = i + 1, i + n - 1 do
    local b = s:byte(k)
    if not b or b < 0x80 or b > 0xBF then
      return 1
    end
  end
  return n
end

--- Counts the first col bytes of line (a 0-based byte column) in the code
--- units of enc: "utf-16" (LSP's and VS Code's default; a 4-byte character
--- is two units), "utf-32" (characters) or "utf-8" (bytes). A column inside
--- a character points at that character; one past the end counts as the end.
---@param line string
---@param col integer
---@param enc? "utf-8"|"utf-16"|"utf-32" default "utf-16"
---@return integer
function M.units(line, col, enc)
  local n = #line
  local stop = col < n and col or n
  if stop <= 0 then
    return 0
  end
  if enc == "utf-8" then
    return stop
  end
  local astral = enc == "utf-32" and 1 or 2
  local units, i = 0, 1
  while i <= stop do
    local j = line:find("[\128-\255]", i)
    if not j or j > stop then
      return units + stop - i + 1
    end
    units = units + (j - i)
    local len = H.seq_len(line, j)
    if j + len - 1 > stop then
      break
    end
    units = units + (len == 4 and astral or 1)
    i = j + len
  end
  return units
end

--- The 0-based byte column of line that units code units of enc (see
--- `units`) reach; a count inside a 4-byte character ends after it, one past
--- the end gives the end.
---@param line string
---@param units integer
---@param enc? "utf-8"|"utf-16"|"utf-32" default "utf-16"
---@return integer
function M.byte_col(line, units, enc)
  local n = #line
  if enc == "utf-8" then
    return math.max(math.min(units, n), 0)
  end
  local astral = enc == "utf-32" and 1 or 2
  local u, i = 0, 1
  while i <= n and u < units do
    local j = line:find("[\128-\255]", i)
    if not j then
      return math.min(i - 1 + units - u, n)
    end
    if j - i >= units - u then
      return i - 1 + units - u
    end
    u = u + (j - i)
    local len = H.seq_len(line, j)
    u = u + (len == 4 and astral or 1)
    i = j + len
  end
  return math.min(i - 1, n)
end

--- Sets a window-local option of win only (never the global value, which
--- :set or vim.wo would change too): 'winbar' and the like.
---@param win integer
---@param name string
---@param value any
function M.set_win_local(win, name, value)
  if vim.fn.has("nvim-0.10") == 1 then
    api.nvim_set_option_value(name, value, { win = win, scope = "local" })
  else
    api.nvim_win_call(win, function()
      vim.opt_local[name] = value
    end)
  end
end

return M
