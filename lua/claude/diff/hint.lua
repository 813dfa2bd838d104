-- The bars over a proposal's panes (0.8+; a message on 0.7): how to answer
-- it, the hunk counter, whose pane is whose.
local editor = require("claude.editor")
local hunks = require("claude.hunks")
local layout = require("claude.diff.layout")
local state = require("claude.diff.state")
local util = require("claude.util")

local api = vim.api
local diffs, options, win_ok = state.diffs, state.options, layout.win_ok

local M = {}

-- The hint over a proposal ---------------------------------------------------
--
-- Both panes of a proposal get a 'winbar' (0.8+): the proposal's names the
-- keys that answer it, then the hunk counter, then what it is; the file's
-- says it is yours. Two bars, so the panes' first text rows stay in line.
-- The text is built when Neovim draws the bar, for the window's width at
-- that moment: parts are dropped (or shortened) least useful first, so a
-- narrow pane still shows `:w accept · :q reject`.

-- A bar is parts in display order, each {forms, prio, group}: forms[i]
-- is shown until everything of a higher prio than prio[i] is given up,
-- then forms[i+1] (or nothing). Parts join with " · " within a group and
-- " │ " between groups; a part whose last prio is 1 always stays.

-- hint_parts is the proposal's bar: the keys (group 1), the hunk counter,
-- what it is.
local function hint_parts(o, counter, name, session)
  local parts = {
    { forms = { ":w accept" }, prio = { 1 }, group = 1 },
    { forms = { ":q reject" }, prio = { 1 }, group = 1 },
  }
  local function key(lhs, what, prio)
    if lhs and lhs ~= "" then
      table.insert(parts, { forms = { lhs .. " " .. what }, prio = { prio }, group = 1 })
    end
  end
  key(o.accept, "accept", 8)
  key(o.reject, "reject", 8)
  key(o.accept_hunk, "accept hunk", 3)
  key(o.reject_hunk, "reject hunk", 3)
  table.insert(parts, { forms = { "]c next change", "]c next" }, prio = { 6, 5 }, group = 1 })
  if counter and counter ~= "" then
    -- "hunk 2/5 · 1 accepted · 1 rejected", "hunk 2/5 · 1✓ · 1✗", "hunk 2/5"
    local short = counter:gsub(" accepted", "✓"):gsub(" rejected", "✗")
    local forms, prio = { counter, short }, { 7, 4 }
    local head = counter:match("^(hunk [^ ]+) · ")
    if head then
      table.insert(forms, head)
      table.insert(prio, 2)
    end
    table.insert(parts, { forms = forms, prio = prio, group = 2 })
  end
  if session then
    -- several sessions propose at once: whose this is stays longest
    local who = "Claude (" .. session .. ")"
    local forms = { who .. "'s proposal" }
    if name then
      table.insert(forms, 1, who .. "'s proposal for " .. name)
    end
    table.insert(forms, session)
    table.insert(parts, { forms = forms, prio = name and { 9, 6, 2 } or { 6, 2 }, group = 3 })
  elseif name then
    table.insert(parts, { forms = { "Claude's proposal for " .. name, "Claude's proposal" }, prio = { 9, 6 }, group = 3 })
  else
    table.insert(parts, { forms = { "Claude's proposal" }, prio = { 6 }, group = 3 })
  end
  return parts
end

-- fit joins parts into at most width display columns, giving up the form
-- of the highest prio (the later part on a tie) until they fit.
local function fit(parts, width)
  local shown = {}
  for i, p in ipairs(parts) do
    shown[i] = { level = 1, w = vim.fn.strdisplaywidth(p.forms[1]), p = p }
  end
  local function total()
    local n, any = 0, false
    for _, s in ipairs(shown) do
      if s.level then
        n = n + s.w + (any and 3 or 0)
        any = true
      end
    end
    return n
  end
  while total() > width do
    local victim
    for _, s in ipairs(shown) do
      local pr = s.level and s.p.prio[s.level]
      if pr and (pr > 1 or s.level < #s.p.forms) and (not victim or pr >= victim.p.prio[victim.level]) then
        victim = s
      end
    end
    if not victim then
      break -- (the bar's "%<" cuts what is left)
    end
    if victim.level < #victim.p.forms then
      victim.level = victim.level + 1
      victim.w = vim.fn.strdisplaywidth(victim.p.forms[victim.level])
    else
      victim.level = nil
    end
  end
  local out, prev = {}, nil
  for _, s in ipairs(shown) do
    if s.level then
      if prev then
        table.insert(out, prev.p.group == s.p.group and " · " or " │ ")
      end
      table.insert(out, s.p.forms[s.level])
      prev = s
    end
  end
  return table.concat(out)
end

-- shown_name is path as the hint and messages show it: relative to the
-- working directory, made displayable (a file name is outside text).
local function shown_name(path, max)
  return util.display(vim.fn.fnamemodify(path, ":~:."), max)
end

--- The one-line hint over a proposal: how to answer it, with the keys as
--- configured (diff.hint = false turns it off), keys first. The 'winbar'
--- shows as much of it as its width allows.
---@return string
function M.hint_text(o)
  return fit(hint_parts(o or options()), math.huge)
end

-- own_bar_parts is the bar over the file's own pane: whose it is, and that
-- closing it answers the proposal too.
local function own_bar_parts(d)
  local name = shown_name(d.file, 80)
  if d.orig_scratch then
    return {
      { forms = { "new file " .. name, "new file" }, prio = { 3, 1 }, group = 1 },
      { forms = { "empty until you accept" }, prio = { 2 }, group = 1 },
    }
  end
  return {
    { forms = { "your " .. name .. " — edit freely", "your file — edit freely", "your file" }, prio = { 3, 1, 1 }, group = 1 },
    { forms = { ":q here rejects too", ":q rejects" }, prio = { 4, 2 }, group = 1 },
  }
end

-- bar_text is what the bar of win (a pane of d) shows at its width now; the
-- parts are rebuilt only when the width or the counter changed (Neovim
-- draws a bar often).
local function bar_text(d, win)
  local o = options()
  local width = api.nvim_win_get_width(win)
  local own = win == d.orig_win
  local key = (own and "o" or "p") .. width .. ":" .. (d.counter or "")
  d.bars = d.bars or {}
  local cached = d.bars[own and "own" or "prop"]
  if cached and cached.key == key then
    return cached.text
  end
  local parts = own and own_bar_parts(d) or hint_parts(o, d.counter, shown_name(d.file, 80), d.session and d.session.name)
  local text = fit(parts, width)
  d.bars[own and "own" or "prop"] = { key = key, text = text }
  return text
end

--- (the 'winbar' of a proposal's panes: claude.diff._bar) The bar's text
--- for window win.
function M.bar(win)
  -- Neovim evaluates a bar with the window it draws current: a window
  -- split off a pane copies its 'winbar' (and so this call), but is no pane
  if win ~= api.nvim_get_current_win() then
    return ""
  end
  local ok, text = pcall(function()
    for _, d in pairs(diffs) do
      if not d.closed and (win == d.prop_win or win == d.orig_win) then
        return bar_text(d, win)
      end
    end
    return ""
  end)
  return ok and text or ""
end

local function bar_option(win)
  return "%#Comment#%{v:lua.require'claude.diff'._bar(" .. win .. ")}%<"
end

-- local_winbar is win's own (window-local) 'winbar', to put back.
local function local_winbar(win)
  return api.nvim_win_call(win, function()
    return api.nvim_get_option_value("winbar", { scope = "local" })
  end)
end

-- show_hint puts the bars over both panes (0.8+; the file's pane keeps its
-- own bar to put back when the diff ends), or says the hint once on 0.7.
local function show_hint(d, o)
  if not o.hint then
    return
  end
  if vim.fn.has("nvim-0.8") == 1 then
    if win_ok(d.prop_win) then
      pcall(editor.set_win_local, d.prop_win, "winbar", bar_option(d.prop_win))
    end
    if win_ok(d.orig_win) then
      if d.own_winbar == nil then
        local ok, bar = pcall(local_winbar, d.orig_win)
        d.own_winbar = ok and bar or ""
      end
      pcall(editor.set_win_local, d.orig_win, "winbar", bar_option(d.orig_win))
    end
    d.bar_wins = { d.prop_win, d.orig_win }
  elseif not d.hint_said then
    d.hint_said = true
    local text = M.hint_text(o)
    vim.schedule(function()
      -- one screen line: a wider message would ask for Enter
      local line = "nvim-claude: " .. text
      local width = vim.o.columns - 12
      if vim.fn.strdisplaywidth(line) > width then
        line = vim.fn.strcharpart(line, 0, width - 1) .. "…"
      end
      api.nvim_echo({ { line, "Comment" } }, true, {})
    end)
  end
end

-- restore_winbar puts the user's own bar back on every window showing one
-- of d's: the file's pane (or the pane that takes its place), and any
-- window split off a pane (:split, :tab split copy the 'winbar').
local function restore_winbar(d)
  if not d.bar_wins then
    return
  end
  local ours = {}
  for _, w in ipairs(d.bar_wins) do
    ours[bar_option(w)] = true
  end
  for _, w in ipairs(api.nvim_list_wins()) do
    if ours[vim.wo[w].winbar] then
      pcall(editor.set_win_local, w, "winbar", d.own_winbar or "")
    end
  end
end

-- refresh_counter recomputes the hunk counter and shows it (the winbar on
-- 0.8+; 0.7 says it after a hunk is answered).
local function refresh_counter(d, o, say)
  if d.closed or not o.hint then
    return
  end
  local ok, text = pcall(hunks.counter, d)
  if not ok then
    return
  end
  -- (runs on every cursor move in the proposal: the bar is redrawn only
  -- when the counter changes)
  if text ~= d.counter then
    d.counter = text
    if vim.fn.has("nvim-0.8") == 1 and win_ok(d.prop_win) then
      pcall(editor.set_win_local, d.prop_win, "winbar", bar_option(d.prop_win))
    end
  end
  if say and vim.fn.has("nvim-0.8") == 0 then
    api.nvim_echo({ { ("nvim-claude: " .. text):sub(1, math.max(vim.o.columns - 12, 20)), "Comment" } }, false, {})
  end
end

M.shown_name = shown_name
M.show_hint = show_hint
M.restore_winbar = restore_winbar
M.refresh_counter = refresh_counter

return M
