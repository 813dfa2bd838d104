-- Small helpers shared by the Lua modules, with the compatibility shims
-- Neovim 0.7 needs.
local M = {}

--- vim.notify with the plugin's title, now: for code on the main loop whose
--- message must come before what it does next (a warning beside a diff
--- that closes, an error before the command returns). The one place the
--- plugin calls vim.notify (outside the chat, which titles its own).
function M.notify_now(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = "nvim-claude" })
end

--- vim.notify with the plugin's title, safe from fast contexts and callbacks.
function M.notify(msg, level)
  vim.schedule(function()
    M.notify_now(msg, level)
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

local unsafe_cp = {
  [0x061C] = true, [0x200E] = true, [0x200F] = true, [0x2028] = true, [0x2029] = true, [0xFEFF] = true,
  [0x202A] = true, [0x202B] = true, [0x202C] = true, [0x202D] = true, [0x202E] = true,
  [0x2066] = true, [0x2067] = true, [0x2068] = true, [0x2069] = true,
}

-- utf8_at decodes the character at byte i of s: its code point and length,
-- or nil for a byte that starts no valid UTF-8 sequence (as Go decodes:
-- no overlong forms, no surrogates, nothing above U+10FFFF).
local function utf8_at(s, i)
  local c = s:byte(i)
  if c < 0x80 then
    return c, 1
  end
  local n, cp, lo, hi
  if c >= 0xC2 and c <= 0xDF then
    n, cp = 2, c - 0xC0
  elseif c >= 0xE0 and c <= 0xEF then
    n, cp = 3, c - 0xE0
    lo, hi = c == 0xE0 and 0xA0 or 0x80, c == 0xED and 0x9F or 0xBF
  elseif c >= 0xF0 and c <= 0xF4 then
    n, cp = 4, c - 0xF0
    lo, hi = c == 0xF0 and 0x90 or 0x80, c == 0xF4 and 0x8F or 0xBF
  else
    return nil
  end
  for k = 1, n - 1 do
    local b = s:byte(i + k)
    if not b or b < ((k == 1 and lo) or 0x80) or b > ((k == 1 and hi) or 0xBF) then
      return nil
    end
    cp = cp * 64 + (b - 0x80)
  end
  return cp, n
end

--- Text from outside the plugin (a directory name, a buffer name, an
--- error from a job) as one displayable line of at most max characters
--- (nil or <= 0: no cap): the same rules as the host's display.Line — a
--- newline shown as "⏎", a tab as a space, other control characters in
--- caret notation (^[), C1 controls and direction marks as <U+XXXX>,
--- invalid UTF-8 as U+FFFD; cut with "…".
function M.display(s, max)
  s = tostring(s or "")
  if max and max <= 0 then
    max = nil
  end
  if not s:find("[^\32-\126]") and (not max or #s <= max) then
    return s -- printable ASCII that fits: the common case
  end
  -- no vim.fn here: callable from a fast event
  local out, n, i, len = {}, 0, 1, #s
  while i <= len do
    local cp, size = utf8_at(s, i)
    local shown, w = nil, 1
    if not cp then
      shown, size = "\239\191\189", 1 -- U+FFFD
    elseif cp == 10 then
      shown = "⏎"
    elseif cp == 9 then
      shown = " "
    elseif cp < 0x20 then
      shown, w = "^" .. string.char(cp + 64), 2
    elseif cp == 0x7F then
      shown, w = "^?", 2
    elseif (cp >= 0x80 and cp < 0xA0) or unsafe_cp[cp] then
      shown = ("<U+%X>"):format(cp)
      w = #shown
    else
      shown = s:sub(i, i + size - 1)
    end
    if max and n + w > max then
      -- what fits of max - 1 (a form such as <U+202E> is not split, so
      -- fewer may be there)
      return table.concat(out, "", 1, math.min(#out, math.max(max - 1, 0))) .. "…"
    end
    n = n + w
    if w == 1 then
      table.insert(out, shown)
    else
      for k = 1, w do -- one character each (these forms are ASCII)
        table.insert(out, shown:sub(k, k))
      end
    end
    i = i + size
  end
  return table.concat(out)
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

--- Maps lhs to fn in buf (mode opts.mode, "n" unless given) with the
--- description "nvim-claude: <desc>"; an empty or false lhs (a key the user
--- turned off) maps nothing. In a buffer of ours it waits for nothing
--- (nowait: a global `gr…` would hold `gr` back for 'timeoutlen'); in the
--- user's own buffer (opts.theirs) it never replaces a buffer-local mapping
--- of theirs, and waits as usual for their longer ones. Returns whether it
--- mapped.
function M.map(buf, lhs, fn, desc, opts)
  opts = opts or {}
  if not lhs or lhs == "" then
    return false
  end
  local mode = opts.mode or "n"
  if opts.theirs then
    local taken = vim.api.nvim_buf_call(buf, function()
      local m = vim.fn.maparg(lhs, mode, false, true)
      return type(m) == "table" and m.buffer == 1 and not (m.desc or ""):find("^nvim%-claude:")
    end)
    if taken then
      return false
    end
  end
  if not desc:find("^nvim%-claude: ") then
    desc = "nvim-claude: " .. desc
  end
  vim.keymap.set(mode, lhs, fn, { buffer = buf, silent = true, nowait = not opts.theirs, desc = desc })
  return true
end

--- Whether win floats (a float has a 'relative' position; a split has none).
function M.floating(win)
  return vim.api.nvim_win_get_config(win).relative ~= ""
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
