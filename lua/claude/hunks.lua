-- Per-hunk answers in a proposal diff: the hunks as Neovim's diff mode
-- shows them (its own ]c blocks, so what is counted is what is on screen),
-- accepting or rejecting the hunk under the cursor, and the counter over the
-- proposal ("hunk 2/5 · 1 accepted · 1 rejected"). A rejected hunk gets the
-- current text back into the proposal (:diffget, one undo step); an
-- accepted one is marked and kept. claude.diff owns the diff itself; this
-- module reads and changes only the proposal buffer of the diff it is given.
local api = vim.api

local M = {}

local ns = api.nvim_create_namespace("claude_hunks")

-- Proposals larger than this get no counter (counting diffs the two texts
-- again, which for a file of many megabytes would hold Neovim up); the keys
-- still answer the hunk under the cursor.
local COUNT_LIMIT = 256 * 1024

local function valid_win(w)
  return w ~= nil and api.nvim_win_is_valid(w)
end

-- in_hunk: line lnum of the current window is changed, added, or has
-- deleted lines shown just above it.
local function in_hunk(lnum)
  return vim.fn.diff_hlID(lnum, 1) ~= 0 or vim.fn.diff_filler(lnum) > 0
end

local function text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

-- diff options as 'diffopt' sets them for diff mode, for vim.diff.
local function diff_opts()
  local o = { result_type = "indices" }
  for _, item in ipairs(vim.split(vim.o.diffopt, ",", { plain = true })) do
    local alg = item:match("^algorithm:(%w+)$")
    if alg then
      o.algorithm = alg
    elseif item == "indent-heuristic" then
      o.indent_heuristic = true
    end
  end
  return o
end

--- The proposal lines where the hunks start, in order, or nil when the
--- proposal is too large to count them. Cached on d until either side
--- changes.
---@return integer[]|nil
function M.starts(d)
  local tick = api.nvim_buf_get_changedtick(d.prop_buf)
    .. ":"
    .. (api.nvim_buf_is_valid(d.orig_buf) and api.nvim_buf_get_changedtick(d.orig_buf) or 0)
  if d.hunk_tick == tick then
    return d.hunk_starts
  end
  d.hunk_tick, d.hunk_starts, d.hunk_set = tick, nil, nil
  local size = api.nvim_buf_call(d.prop_buf, function()
    return vim.fn.line2byte(vim.fn.line("$") + 1)
  end)
  if size > COUNT_LIMIT or not api.nvim_buf_is_valid(d.orig_buf) then
    return nil
  end
  local ok, idx = pcall(vim.diff, text(d.orig_buf), text(d.prop_buf), diff_opts())
  if not ok then
    return nil
  end
  local starts = {}
  for _, h in ipairs(idx) do
    -- {start_a, count_a, start_b, count_b}; lines deleted from the proposal
    -- show as filler above the line after start_b
    table.insert(starts, h[4] > 0 and h[3] or h[3] + 1)
  end
  d.hunk_starts = starts
  d.hunk_set = {}
  for _, l in ipairs(starts) do
    d.hunk_set[l] = true
  end
  return starts
end

-- hunk_start is the first proposal line of the hunk holding lnum, or nil:
-- counted hunks when there are, else the changed lines around lnum.
local function hunk_start(d, lnum)
  return api.nvim_win_call(d.prop_win, function()
    if not in_hunk(lnum) then
      return nil
    end
    local l = lnum
    while l > 1 and vim.fn.diff_filler(l) == 0 and vim.fn.diff_hlID(l - 1, 1) ~= 0 do
      l = l - 1
    end
    return l
  end)
end

-- index of the hunk holding proposal line lnum among the counted ones
-- (0: none; nil: not counted).
local function hunk_index(d, lnum)
  local starts = M.starts(d)
  if not starts then
    return nil
  end
  local inside = api.nvim_win_call(d.prop_win, function()
    return in_hunk(lnum)
  end)
  if not inside then
    return 0
  end
  local lo, hi, best = 1, #starts, 0
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    if starts[mid] <= lnum then
      best, lo = mid, mid + 1
    else
      hi = mid - 1
    end
  end
  return best
end

-- The proposal line the user is on: the proposal window's cursor (diff mode
-- binds the cursors, so from the current side it is the same place).
local function cursor_line(d)
  return api.nvim_win_get_cursor(d.prop_win)[1]
end

-- undo_state is the proposal's undo tree: where it is (seq_cur) and the
-- undo states of its current branch.
local function undo_state(buf)
  local tree = api.nvim_buf_call(buf, function()
    return vim.fn.undotree()
  end)
  local on = {}
  for _, e in ipairs(tree.entries or {}) do
    on[e.seq] = true
  end
  return tree.seq_cur or 0, on
end

-- rejected_count counts the rejects still in effect: a reject undone (or
-- left on an abandoned branch of the undo tree) is not one any more. Each
-- reject is the undo state its :diffget made (true: made without undo,
-- 'undolevels' -1, so it stays).
local function rejected_count(d)
  local rs = d.rejects
  if not rs or #rs == 0 or not api.nvim_buf_is_valid(d.prop_buf) then
    return 0
  end
  local tick = api.nvim_buf_get_changedtick(d.prop_buf)
  if d.rejected_tick ~= tick then
    local cur, on = undo_state(d.prop_buf)
    local n = 0
    for _, r in ipairs(rs) do
      if r == true or (on[r] and r <= cur) then
        n = n + 1
      end
    end
    d.rejected_tick, d.rejected_n = tick, n
  end
  return d.rejected_n
end

-- accepted_count counts the marks still at a hunk's start.
local function accepted_count(d)
  local n = 0
  for _, m in ipairs(api.nvim_buf_get_extmarks(d.prop_buf, ns, 0, -1, {})) do
    if d.hunk_set[m[2] + 1] then
      n = n + 1
    end
  end
  return n
end

--- The counter: "hunk 2/5 · 1 accepted · 1 rejected" ("hunk –/5" off a
--- change; "no changes left" when every hunk is rejected); for a proposal
--- too large to count, what was answered so far.
function M.counter(d)
  if not valid_win(d.prop_win) or not api.nvim_buf_is_valid(d.prop_buf) then
    return ""
  end
  local starts = M.starts(d)
  local rejected = rejected_count(d)
  if not starts then
    local accepted = #api.nvim_buf_get_extmarks(d.prop_buf, ns, 0, -1, {})
    return string.format("%d accepted · %d rejected", accepted, rejected)
  end
  if #starts == 0 then
    return rejected > 0 and string.format("no changes left · %d rejected", rejected) or "no changes"
  end
  local i = hunk_index(d, cursor_line(d))
  return string.format(
    "hunk %s/%d · %d accepted · %d rejected",
    i > 0 and tostring(i) or "–",
    #starts + rejected,
    accepted_count(d),
    rejected
  )
end

-- next_hunk puts the proposal's cursor on the next change after line from.
local function next_hunk(d, from)
  local starts = M.starts(d)
  if starts then
    for _, l in ipairs(starts) do
      if l > from then
        api.nvim_win_set_cursor(d.prop_win, { l, 0 })
        return
      end
    end
    return
  end
  api.nvim_win_call(d.prop_win, function()
    api.nvim_win_set_cursor(0, { math.max(from, 1), 0 })
    pcall(vim.cmd, "silent keepjumps normal! ]c")
  end)
end

-- target is the proposal line under the cursor and the first line of its
-- hunk, or nil when the cursor is not on a change.
local function target(d)
  local l = cursor_line(d)
  local start = hunk_start(d, l)
  if not start then
    return nil
  end
  return l, start
end

local OFF_CHANGE = "the cursor is not on a change"

--- Rejects the hunk under the cursor: the current text goes back into the
--- proposal (:diffget, undoable). Returns nil, or a message when the cursor
--- is not on a change.
function M.reject(d)
  local l, start = target(d)
  if not l then
    return OFF_CHANGE
  end
  local before = undo_state(d.prop_buf)
  api.nvim_win_call(d.prop_win, function()
    api.nvim_win_set_cursor(0, { l, 0 })
    vim.cmd("diffget " .. d.orig_buf)
    vim.cmd("diffupdate")
  end)
  local after = undo_state(d.prop_buf)
  d.rejects = d.rejects or {}
  table.insert(d.rejects, after ~= before and after or true)
  next_hunk(d, start - 1)
end

--- Accepts the hunk under the cursor: it is marked (✓ in the sign column)
--- and kept; the cursor moves to the next hunk. Returns nil or a message.
function M.accept(d)
  local l, start = target(d)
  if not l then
    return OFF_CHANGE
  end
  local starts = M.starts(d)
  if starts then
    -- the counted hunk's own start (a hunk may hold unchanged-looking lines)
    local i = hunk_index(d, l)
    if i and i > 0 then
      start = starts[i]
    end
  end
  local marks = api.nvim_buf_get_extmarks(d.prop_buf, ns, { start - 1, 0 }, { start - 1, -1 }, {})
  if #marks == 0 then
    api.nvim_buf_set_extmark(d.prop_buf, ns, start - 1, 0, { sign_text = "✓", sign_hl_group = "DiffAdd" })
  end
  next_hunk(d, start)
end

--- Whether every hunk of the proposal was rejected (nothing differs any
--- more, and something was rejected): accepting it then means "no".
function M.all_rejected(d)
  if rejected_count(d) == 0 or not api.nvim_buf_is_valid(d.orig_buf) then
    return false
  end
  local starts = M.starts(d)
  if starts then
    return #starts == 0
  end
  return text(d.orig_buf) == text(d.prop_buf)
end

return M
