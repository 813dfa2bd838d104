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
