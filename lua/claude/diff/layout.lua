-- The layout of a diff: which window shows the file, the proposal split
-- beside it (or a tab of their own), the window options and sizes diff
-- mode changes, and the layout, sizes and focus put back when it ends.
local editor = require("claude.editor")
local util = require("claude.util")

local api = vim.api

local M = {}

-- Window options diff mode changes; restored by hand because :diffoff leaves
-- 'foldenable' off (and diff folds behind) when 'foldmethod' was manual.
local WIN_OPTS = { "foldenable", "foldmethod", "foldcolumn", "foldlevel", "wrap", "scrollbind", "cursorbind" }

local function win_ok(win)
  return win ~= nil and api.nvim_win_is_valid(win)
end

local function buf_ok(buf)
  return buf ~= nil and api.nvim_buf_is_valid(buf)
end

local floating = util.floating

-- editor_window: a window we may borrow for the current side — one a tool
-- may show a file in (claude.editor.editing_window: not a terminal,
-- sidebar, preview, float or someone's diff) whose buffer survives being
-- hidden there.
local function editor_window(win)
  if not editor.editing_window(win) then
    return false
  end
  local bh = vim.bo[api.nvim_win_get_buf(win)].bufhidden
  return bh == "" or bh == "hide"
end

-- tab_has_diffs: a tab already showing diff windows (the user's, or another
-- of ours) would merge with a new diff: Neovim diffs every diff window of a
-- tab together.
local function tab_has_diffs(tab)
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if vim.wo[w].diff then
      return true
    end
  end
  return false
end

-- pick_window is the window of tab to borrow: the active editor's
-- (claude.editor) when it may be borrowed, else the largest that may.
local function pick_window(tab)
  return editor.show_window(tab, editor_window)
end

-- layout_window is a window of tab that can be split: the current one, or
-- (when that floats, e.g. the Claude terminal as a float) the largest one
-- that does not.
local function layout_window(tab)
  local cur = api.nvim_get_current_win()
  if api.nvim_win_get_tabpage(cur) == tab and not floating(cur) then
    return cur
  end
  return util.largest_window(tab, function(w)
    return not floating(w)
  end)
end

local function save_win_opts(win)
  local saved = {}
  for _, name in ipairs(WIN_OPTS) do
    saved[name] = vim.wo[win][name]
  end
  return saved
end

-- show_buf puts buf in win without touching the alternate file or the
-- jumplist. The buffer it replaces is hidden, never unloaded: with
-- 'nohidden' (0.7's default) :buffer! would unload it and throw away its
-- undo history.
local function show_buf(win, buf)
  api.nvim_win_call(win, function()
    vim.cmd("keepalt keepjumps hide buffer " .. buf)
  end)
end

local function split(win, cmd)
  local new
  api.nvim_win_call(win, function()
    vim.cmd(cmd)
    new = api.nvim_get_current_win()
  end)
  return new
end

-- back_to puts the cursor in win (in tab), and back in terminal mode when
-- it was there: a user typing to Claude keeps typing.
local function back_to(tab, win, term_mode)
  if tab and api.nvim_tabpage_is_valid(tab) and tab ~= api.nvim_get_current_tabpage() then
    api.nvim_set_current_tabpage(tab)
  end
  if not win_ok(win) then
    return
  end
  if win ~= api.nvim_get_current_win() then
    api.nvim_set_current_win(win)
  end
  if term_mode and vim.bo[api.nvim_win_get_buf(win)].buftype == "terminal" and api.nvim_get_mode().mode ~= "t" then
    vim.cmd("startinsert")
  end
end

-- Closing --------------------------------------------------------------------

local function close_window(win, fallback_buf)
  if not win_ok(win) then
    return
  end
  if #api.nvim_list_wins() == 1 then
    -- the last window cannot close: show something that is not ours
    if buf_ok(fallback_buf) then
      show_buf(win, fallback_buf)
    else
      api.nvim_win_call(win, function()
        vim.cmd("enew")
      end)
    end
    return
  end
  pcall(api.nvim_win_close, win, true)
end

local function restore_window(d)
  local win = d.orig_win
  if not win_ok(win) then
    return
  end
  api.nvim_win_call(win, function()
    if vim.wo.diff then
      vim.cmd("diffoff")
    end
    local saved = d.win_opts
    if saved then
      if saved.foldmethod == "manual" then
        pcall(vim.cmd, "normal! zE") -- the folds diff mode left behind
      end
      for _, name in ipairs(WIN_OPTS) do
        if vim.wo[name] ~= saved[name] then
          vim.wo[name] = saved[name]
        end
      end
    end
    if d.swapped and buf_ok(d.swapped.buf) then
      vim.cmd("keepalt keepjumps hide buffer " .. d.swapped.buf)
      pcall(vim.fn.winrestview, d.swapped.view)
    elseif d.view and api.nvim_win_get_buf(win) == d.orig_buf then
      pcall(vim.fn.winrestview, d.view)
    end
  end)
end

-- take_over: the user closed the file's pane (:q, :close, :only in the
-- proposal …) of a window that was theirs before the diff. The proposal's
-- pane, which got its room, becomes that window again — the buffer it
-- showed, its options and view, its size — so closing either pane leaves
-- the layout as it was before the diff. Reports whether it did (not when
-- the proposal's pane is gone too, or the user deleted their buffer).
local function take_over(d)
  local old, win = d.orig_win, d.prop_win
  if win_ok(old) or not win_ok(win) or d.win_created then
    return false
  end
  local swapped = d.swapped and buf_ok(d.swapped.buf)
  if not swapped and (d.orig_scratch or not buf_ok(d.orig_buf) or not api.nvim_buf_is_loaded(d.orig_buf)) then
    return false
  end
  -- (restore_window puts the view back)
  show_buf(win, swapped and d.swapped.buf or d.orig_buf)
  d.orig_win, d.prop_win = win, nil
  if d.sizes[old] then
    d.sizes[win], d.sizes[old] = d.sizes[old], nil
  end
  if d.prev_win == old then
    d.prev_win = win
  end
  return true
end

-- apply_sizes gives the windows of the tab the diff opened from the sizes in
-- sizes (win -> {width, height}). Splitting or closing a window with
-- 'equalalways' (the default) equalizes every window, and a new tab's
-- tabline takes a row; this puts them back. ('equalalways' cannot be
-- switched off around a split: switching it on equalizes too.)
local function apply_sizes(d, sizes)
  -- (sizes of another tab's windows cannot be set safely from here)
  if not sizes or d.prev_tab ~= api.nvim_get_current_tabpage() then
    return
  end
  -- Twice: setting one window's size moves its neighbours.
  for _ = 1, 2 do
    for win, size in pairs(sizes) do
      if win_ok(win) and api.nvim_win_get_tabpage(win) == d.prev_tab then
        pcall(api.nvim_win_set_width, win, size[1])
        pcall(api.nvim_win_set_height, win, size[2])
      end
    end
  end
end

-- diff_on puts both windows in diff mode; the second :diffthis computes the
-- diff (seconds for a proposal of 20 MB).
local function diff_on(d)
  api.nvim_win_call(d.orig_win, function()
    vim.cmd("diffthis")
  end)
  api.nvim_win_call(d.prop_win, function()
    vim.cmd("diffthis")
  end)
end

-- place opens the windows: the current side in a window of the current tab
-- (the file's own window if it shows, else a borrowed editor window, else a
-- new split) or of a new tab, and the proposal split next to it.
local function place(d, o, new_tab)
  local split_cmd = o.layout == "vertical" and "rightbelow vsplit" or "rightbelow split"
  local W
  if new_tab then
    local tab = api.nvim_get_current_tabpage()
    local from = pick_window(tab) or layout_window(tab)
    if from and from ~= api.nvim_get_current_win() then
      api.nvim_set_current_win(from)
    end
    vim.cmd("tab split")
    d.tab = api.nvim_get_current_tabpage()
    d.new_tab = true
    W = api.nvim_get_current_win()
    d.win_created = true
    show_buf(W, d.orig_buf)
  else
    d.tab = api.nvim_get_current_tabpage()
    for _, w in ipairs(api.nvim_tabpage_list_wins(d.tab)) do
      if api.nvim_win_get_buf(w) == d.orig_buf and editor_window(w) then
        W = w
        break
      end
    end
    if W then
      d.view = api.nvim_win_call(W, vim.fn.winsaveview)
    else
      W = pick_window(d.tab)
      if W then
        d.swapped = { buf = api.nvim_win_get_buf(W), view = api.nvim_win_call(W, vim.fn.winsaveview) }
        show_buf(W, d.orig_buf)
      else
        -- only terminals and sidebars here: a new window beside the current one
        W = split(layout_window(d.tab), o.layout == "vertical" and "leftabove vsplit" or "leftabove split")
        d.win_created = true
        show_buf(W, d.orig_buf)
      end
    end
  end
  d.orig_win = W
  d.win_opts = save_win_opts(W)
  local before = d.sizes[W] or { api.nvim_win_get_width(W), api.nvim_win_get_height(W) }
  d.prop_win = split(W, split_cmd)
  api.nvim_win_set_buf(d.prop_win, d.prop_buf)
  -- The split takes half of W and nothing else moves (no 'equalalways'
  -- surprise for the terminal or the user's other windows).
  local sizes = {}
  for w, size in pairs(d.sizes) do
    if w ~= W then
      sizes[w] = size
    end
  end
  if o.layout == "vertical" then
    local half = math.max(math.floor((before[1] - 1) / 2), 1)
    sizes[W] = { half, before[2] }
    sizes[d.prop_win] = { before[1] - 1 - half, before[2] }
  else
    local half = math.max(math.floor((before[2] - 1) / 2), 1)
    sizes[W] = { before[1], half }
    sizes[d.prop_win] = { before[1], before[2] - 1 - half }
  end
  apply_sizes(d, sizes)
  if not d.staged then
    diff_on(d)
  end
end

local function undo_place(d)
  d.closing = true
  if win_ok(d.prop_win) then
    pcall(api.nvim_win_close, d.prop_win, true)
  end
  if d.win_created then
    if win_ok(d.orig_win) and #api.nvim_list_wins() > 1 then
      pcall(api.nvim_win_close, d.orig_win, true)
    end
  else
    pcall(restore_window, d)
  end
  apply_sizes(d, d.sizes)
  d.prop_win, d.orig_win, d.win_created, d.swapped, d.view, d.new_tab = nil, nil, nil, nil, nil, nil
  d.closing = false
  back_to(d.prev_tab, d.prev_win, false)
end

local function focus(d, o)
  if o.keep_terminal_focus then
    back_to(d.prev_tab, d.prev_win, d.prev_term)
    return
  end
  api.nvim_set_current_win(d.prop_win)
  -- the cursor on the first change
  api.nvim_win_set_cursor(d.prop_win, { 1, 0 })
  if vim.fn.diff_hlID(1, 1) == 0 then
    pcall(vim.cmd, "normal! ]c")
  end
end

M.win_ok = win_ok
M.buf_ok = buf_ok
M.floating = floating
M.tab_has_diffs = tab_has_diffs
M.back_to = back_to
M.close_window = close_window
M.restore_window = restore_window
M.take_over = take_over
M.apply_sizes = apply_sizes
M.place = place
M.diff_on = diff_on
M.undo_place = undo_place
M.focus = focus

return M
