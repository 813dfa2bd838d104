-- The open diffs: the registry every part of claude.diff shares (by id, in
-- the order they opened), the diff.* options as the user set them, and
-- which diff a command means.
local config = require("claude.config")

local api = vim.api

local M = {}

-- Open diffs by id, in the order they opened: every diff whose windows are
-- on screen. A decided diff stays here only until its windows are closed.
local diffs = {}
local order = {}

local function options()
  local o = (config.options and config.options.diff) or {}
  local keys = o.keymaps or {}
  local function key(v, default)
    if v == nil then
      return default
    end
    return v
  end
  return {
    layout = o.layout == "horizontal" and "horizontal" or "vertical",
    -- true, false, or "session": a tab page per Claude session
    open_in_new_tab = (o.open_in_new_tab == "session" and "session") or o.open_in_new_tab == true,
    keep_terminal_focus = o.keep_terminal_focus == true,
    accept = key(keys.accept, "<leader>ca"),
    reject = key(keys.reject, "<leader>cr"),
    accept_hunk = key(keys.accept_hunk, "ga"),
    reject_hunk = key(keys.reject_hunk, "gr"),
    hint = o.hint ~= false,
  }
end

-- shared_orig reports whether buf is the current side of an open diff.
local function shared_orig(buf)
  for _, other in pairs(diffs) do
    if other.orig_buf == buf then
      return true
    end
  end
  return false
end

local function forget(d)
  diffs[d.id] = nil
  for i, id in ipairs(order) do
    if id == d.id then
      table.remove(order, i)
      break
    end
  end
end

-- current finds the diff a command means: the one whose window or buffer
-- the cursor is in, else the only pending one.
local function current()
  local win, buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  local pending = {}
  for _, id in ipairs(order) do
    local d = diffs[id]
    if not d.decided then
      if win == d.prop_win or win == d.orig_win or buf == d.prop_buf then
        return d
      end
      table.insert(pending, d)
    end
  end
  for _, d in ipairs(pending) do
    if buf == d.orig_buf then
      return d
    end
  end
  if #pending == 1 then
    return pending[1]
  elseif #pending == 0 then
    return nil, "nvim-claude: no Claude diff is waiting for a decision"
  end
  return nil,
    string.format("nvim-claude: %d Claude diffs are open; run this in the one you mean", #pending)
end

M.diffs = diffs
M.order = order
M.options = options
M.shared_orig = shared_orig
M.forget = forget
M.current = current

return M
