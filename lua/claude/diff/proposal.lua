-- The proposal buffer and the file's (current) side: Claude's text in a
-- buffer that writes it back byte for byte, named after the CLI's tab.
local editor = require("claude.editor")
local util = require("claude.util")
local watch = require("claude.diff.watch")

local api = vim.api
local uv = util.uv
local read_file, hold_autoread, find_buf = watch.read_file, watch.hold_autoread, editor.find_buf

local M = {}

-- Contents <-> lines ---------------------------------------------------------

-- split_lines splits s at each "\n" (twice as fast as vim.split, which
-- matters for a proposal of many MB).
local function split_lines(s)
  local find, sub = string.find, string.sub
  local lines, n, pos = {}, 0, 1
  while true do
    local e = find(s, "\n", pos, true)
    n = n + 1
    if not e then
      lines[n] = sub(s, pos)
      return lines
    end
    lines[n] = sub(s, pos, e - 1)
    pos = e + 1
  end
end

-- split_contents turns file contents into buffer lines plus the options that
-- write them back byte for byte: 'eol' for the final newline, 'fileformat'
-- dos when every line ends in CRLF (mixed endings stay visible as ^M).
local function split_contents(s)
  local eol = s:sub(-1) == "\n"
  local ff = "unix"
  if s:find("\r\n", 1, true) then
    local _, lf = s:gsub("\n", "")
    local _, crlf = s:gsub("\r\n", "")
    if lf == crlf then
      ff = "dos"
      s = s:gsub("\r\n", "\n")
    end
  end
  if eol then
    s = s:sub(1, -2)
  end
  return split_lines(s), eol, ff
end

-- proposal_text is Claude's proposal as it came, byte for byte.
local function proposal_text(d)
  if not d.src then
    return d.contents
  end
  local s = read_file(d.src.file)
  if s and d.src.ff == "dos" then
    s = s:gsub("\n", "\r\n")
  end
  return s
end

local function full_path(path)
  return vim.fn.fnamemodify(path, ":p")
end

-- set_name names a buffer of ours after the CLI's tab name, made
-- displayable: the statusline, tabline and :ls show it.
local function set_name(buf, name)
  name = util.display(name)
  if pcall(api.nvim_buf_set_name, buf, name) then
    return
  end
  -- a buffer of that name exists (left over, or the user's): number ours
  for i = 2, 100 do
    if pcall(api.nvim_buf_set_name, buf, string.format("%s (%d)", name, i)) then
      return
    end
  end
end

local function detect_filetype(buf, path)
  api.nvim_buf_call(buf, function()
    pcall(vim.cmd, "silent doautocmd filetypedetect BufRead " .. vim.fn.fnameescape(path))
  end)
end

-- fill_proposal puts Claude's text into the proposal buffer (again, for
-- :e!), with the options that write it back byte for byte. The host hands
-- a proposal over as a file it wrote (d.src = {file, eol, ff}: the text
-- with CRLF turned into LF when ff is "dos"), which Neovim reads natively —
-- a large proposal then never becomes Lua strings — or, when it could not
-- write one, as a string (d.contents).
local function fill_proposal(d)
  local buf = d.prop_buf
  local lines, eol, ff
  if d.src then
    eol, ff = d.src.eol, d.src.ff
  else
    lines, eol, ff = split_contents(d.contents)
  end
  api.nvim_buf_call(buf, function()
    vim.cmd("setlocal undolevels=-1") -- Claude's text is not an undoable change
    if lines then
      api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    else
      api.nvim_buf_set_lines(buf, 0, -1, false, {})
      -- ++bin: no line-ending or encoding conversion, no BOM handling;
      -- :0read puts the lines above the buffer's one empty line. It also
      -- sets 'binary' (and with it 'textwidth' …): put that back.
      local binary = vim.bo[buf].binary
      vim.cmd("silent noautocmd keepalt keepjumps 0read ++bin " .. vim.fn.fnameescape(d.src.file))
      vim.bo[buf].binary = binary
      if api.nvim_buf_line_count(buf) > 1 then
        api.nvim_buf_set_lines(buf, -2, -1, false, {})
      end
      -- :read leaves an (unlisted, unloaded) buffer named after the file
      local name = vim.fn.fnamemodify(d.src.file, ":p")
      for _, b in ipairs(api.nvim_list_bufs()) do
        if b ~= buf and not api.nvim_buf_is_loaded(b) and api.nvim_buf_get_name(b) == name then
          pcall(api.nvim_buf_delete, b, { force = true })
        end
      end
    end
    vim.cmd("set undolevels<")
  end)
  vim.bo[buf].fileformat = ff
  vim.bo[buf].eol = eol
  -- exactly Claude's final newline (or its absence); :set eol adds one
  vim.bo[buf].fixeol = false
  vim.bo[buf].modified = false
end

local function make_proposal(d)
  local buf = api.nvim_create_buf(false, true)
  d.prop_buf = buf
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  set_name(buf, d.tab_name)
  fill_proposal(d)
  api.nvim_buf_set_var(buf, "claude_diff", { tab_name = d.tab_name, file = d.file })
  return buf
end

local function current_side(d)
  local buf = find_buf(d.old_file)
  if buf then
    d.orig_listed = vim.bo[buf].buflisted
    if not api.nvim_buf_is_loaded(buf) then
      vim.fn.bufload(buf)
      d.orig_loaded_by_us = true
    end
  elseif uv.fs_stat(d.old_file) then
    buf = vim.fn.bufadd(full_path(d.old_file))
    d.orig_listed = vim.bo[buf].buflisted
    vim.fn.bufload(buf)
    d.orig_created = true
  else
    -- a new file: the current side is empty
    buf = api.nvim_create_buf(false, true)
    d.orig_scratch = true
    d.new_file = true
    set_name(buf, d.tab_name .. " (new file)")
    vim.bo[buf].modifiable = false
    detect_filetype(buf, d.file)
  end
  d.orig_buf = buf
  d.modified = not d.orig_scratch and vim.bo[buf].modified or false
  if not d.orig_scratch then
    -- The CLI may write the file while the diff is still open (the user
    -- answered in its terminal): a checktime then reloads quietly instead
    -- of asking (W11).
    hold_autoread(buf)
    d.holds_autoread = true
  end
  return buf
end

M.proposal_text = proposal_text
M.full_path = full_path
M.detect_filetype = detect_filetype
M.fill_proposal = fill_proposal
M.make_proposal = make_proposal
M.current_side = current_side

return M
