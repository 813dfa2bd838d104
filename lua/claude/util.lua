-- Small helpers shared by the Lua modules, with the compatibility shims
-- Neovim 0.7 needs.
local M = {}

--- vim.notify with the plugin's title, safe from fast contexts and callbacks.
function M.notify(msg, level)
  vim.schedule(function()
    vim.notify(msg, level or vim.log.levels.INFO, { title = "nvim-claude" })
  end)
end

--- Fires `User <pattern>` with data (Neovim 0.8+ passes data to callbacks;
--- 0.7 fires the event without it). Scheduled, so user callbacks never run
--- inside an RPC call from the Go host.
function M.emit(pattern, data)
  vim.schedule(function()
    local ok = pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, modeline = false, data = data })
    if not ok then
      pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, modeline = false })
    end
  end)
end

M.uv = vim.uv or vim.loop

--- Text from outside the plugin (a directory name, a buffer name, an
--- error from a job) as one displayable line of at most max characters:
--- the same rules as the host's display.Line — a newline shown as "⏎", a
--- tab as a space, other control characters in caret notation (^[),
--- C1 controls and direction marks as <U+XXXX>; cut with "…".
function M.display(s, max)
  s = tostring(s or "")
  if not s:find("[%z\1-\31\127\194\225\226\239]") and (not max or #s <= max) then
    return s
  end
  s = s:gsub("\r?\n", "⏎"):gsub("\t", " ")
  s = s:gsub("[%z\1-\31]", function(c)
    return "^" .. string.char(c:byte() + 64)
  end):gsub("\127", "^?")
  -- C1 controls (U+0080–U+009F), direction marks, embeddings, overrides,
  -- isolates, line/paragraph separators and the BOM.
  s = s:gsub("\194([\128-\159])", function(c)
    return ("<U+%X>"):format(c:byte())
  end)
  for _, cp in ipairs({ 0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029, 0xFEFF }) do
    local ch = vim.fn.nr2char(cp)
    s = s:gsub(vim.pesc(ch), ("<U+%04X>"):format(cp))
  end
  if max and vim.fn.strchars(s) > max then
    s = vim.fn.strcharpart(s, 0, max - 1) .. "…"
  end
  return s
end

--- Brings buf's unmodified buffer up to date with its file: a local
--- 'autoread' for one :checktime (no W11 prompt; the old text stays in undo).
function M.checktime(buf)
  vim.bo[buf].autoread = true
  pcall(vim.cmd, "silent checktime " .. buf)
  pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("setlocal autoread<")
  end)
end

--- The largest window of tab (0: the current one) that keep(win) accepts,
--- or nil.
function M.largest_window(tab, keep)
  local api = vim.api
  local best, area = nil, -1
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if keep(w) then
      local a = api.nvim_win_get_width(w) * api.nvim_win_get_height(w)
      if a > area then
        best, area = w, a
      end
    end
  end
  return best
end

return M
