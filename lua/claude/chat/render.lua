-- The chat transcript buffer: what the chat's events look like as text.
--
-- Every write goes through put(), which keeps a fold level per line beside
-- the buffer's lines (chat.levels: "0", ">1" or "1"). Neovim evaluates
-- 'foldexpr' while nvim_buf_set_lines runs, so the levels must be right
-- before the lines exist — extmarks placed afterwards would come too late.
-- Thinking, tool calls and tool results are one closed fold each: their
-- first line is the one-line summary, the rest expands with the fold.
--
-- 'foldexpr' is Vimscript reading a sparse map (b:claude_chat_folds, line
-- number → level) whose default "=" continues the line above: only the
-- lines where the level changes are in it (two per fold) and a checkpoint
-- every 64 lines (see CHECKPOINT). Neovim evaluates
-- 'foldexpr' for every line of the buffer when a window shows it and for
-- every line written; a Lua foldexpr (v:lua) costs about 3 µs a line
-- there, this one under 0.5 µs — the difference between a 100k-line
-- resumed session showing at once or after a third of a second.
--
-- The lines after the map's last entry (b:claude_chat_last) get their
-- level as a number (b:claude_chat_tail), not "=": after a change Neovim
-- walks up from it while the level is "=" and then evaluates down again,
-- which at the end of the buffer, where every streamed delta writes,
-- would be up to two checkpoints' worth of lines per delta — most of the
-- delta's cost. With a number it evaluates the changed line and the one
-- above.
local api = vim.api

local M = {}

M.ns = api.nvim_create_namespace("claude-chat")

--- The transcript windows' 'foldexpr' (see the header comment).
M.FOLDEXPR = "v:lnum > b:claude_chat_last ? b:claude_chat_tail : get(b:claude_chat_folds, v:lnum, '=')"

-- chats by transcript buffer, for M.foldexpr.
local by_buf = {}

local long_transcript, write_map -- (below)

function M.attach(chat)
  by_buf[chat.tbuf] = chat
  chat.levels = chat.levels or { "0" }
  chat.folds = chat.folds or {}
  chat.r = chat.r or { cur = nil, in_turn = false }
  write_map(chat)
  long_transcript(chat, api.nvim_buf_line_count(chat.tbuf))
end

function M.detach(buf)
  by_buf[buf] = nil
end

--- The fold level of line lnum of the current buffer's chat (what
--- M.FOLDEXPR gives).
function M.foldexpr(lnum)
  local chat = by_buf[api.nvim_get_current_buf()]
  if not chat then
    return "0"
  end
  return chat.levels[lnum] or "0"
end

--- 'foldtext' of transcript windows: the summary line and the size.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  local n = vim.v.foldend - vim.v.foldstart
  if n <= 0 then
    return first
  end
  return string.format("%s  [+%d line%s]", first, n, n == 1 and "" or "s")
end

-- Low level -----------------------------------------------------------------

local function line_count(chat)
  return api.nvim_buf_line_count(chat.tbuf)
end

-- empty: the buffer is the one empty line a new buffer has.
local function empty(chat)
  return line_count(chat) == 1 and api.nvim_buf_get_lines(chat.tbuf, 0, 1, false)[1] == ""
end

-- windows showing the transcript whose view follows the end: not the
-- current one unless its cursor is already on the last line (the user
-- reading back must not be yanked down).
local function followers(chat)
  local out = {}
  local last = line_count(chat)
  local cur = api.nvim_get_current_win()
  for _, w in ipairs(vim.fn.win_findbuf(chat.tbuf)) do
    if w ~= cur or api.nvim_win_get_cursor(w)[1] >= last then
      table.insert(out, w)
    end
  end
  return out
end

-- shift moves t[from..n] by d places (d may be negative), in place.
local function shift(t, from, n, d)
  if d > 0 then
    for i = n, from, -1 do
      t[i + d] = t[i]
    end
  elseif d < 0 then
    for i = from, n do
      t[i + d] = t[i]
    end
    for i = n + d + 1, n do
      t[i] = nil
    end
  end
end

local DEPTH = { ["0"] = 0, ["1"] = 1, [">1"] = 1 }

-- Every CHECKPOINT-th line has its level in the fold map even where "="
-- would give it: to update the folds after a change, Neovim walks up from
-- the change to a line whose level is not "=" (fold.c, foldUpdateIEMS),
-- which without them is the top of a 100k-line transcript, at every
-- streamed delta.
local CHECKPOINT = 64

-- fold_entry is line r's entry in the sparse fold map: its level where "="
-- (the level of the line above) would not give it or at a checkpoint, else
-- nil.
local function fold_entry(levels, r)
  local v = levels[r]
  if v == nil or v == "0" and r == 1 then
    return nil
  end
  if v == ">1" or r % CHECKPOINT == 0 or DEPTH[v] ~= DEPTH[levels[r - 1] or "0"] then
    return v
  end
  return nil
end

-- set_levels puts the levels of rows [s, e) (0-based) replaced by #lv new
-- ones into chat.levels and the sparse map b:claude_chat_folds, in place:
-- an append costs what it appends, not the transcript's length.
local function set_levels(chat, s, e, lv)
  local levels, folds = chat.levels, chat.folds
  local n = #levels
  local d = #lv - (e - s)
  shift(levels, e + 1, n, d)
  for i, v in ipairs(lv) do
    levels[s + i] = v
  end
  -- the map: entries below the change move with their lines; those of the
  -- new lines and of the line after them are computed again (at the end
  -- of the buffer, where streaming writes, that is all there is to do)
  local changed = false
  if d ~= 0 and not (e == n and d >= -1) then
    local moved = {}
    for r, v in pairs(folds) do
      if r > e then
        moved[r + d] = v
        changed = true
      elseif r <= s then
        moved[r] = v
      else
        changed = true
      end
    end
    folds = moved
    chat.folds = folds
  end
  for r = s + 1, s + #lv + 1 do
    local v = fold_entry(levels, r)
    if folds[r] ~= v then
      folds[r] = v
      changed = true
    end
  end
  if changed then
    write_map(chat)
  end
end

-- write_map gives the buffer the fold map of chat.folds, with its last
-- line and the level of the lines after it (the depth of the last entry:
-- what "=" would give them).
function write_map(chat)
  local map, last = {}, 0
  for r, v in pairs(chat.folds) do
    map[tostring(r)] = v
    if r > last then
      last = r
    end
  end
  local b = vim.b[chat.tbuf]
  b.claude_chat_folds = next(map) and map or vim.empty_dict()
  b.claude_chat_last = last
  b.claude_chat_tail = last > 0 and tostring(DEPTH[chat.folds[last]]) or "0"
end

-- long_transcript makes a transcript that is to have n lines leave
-- treesitter highlighting for Vim's markdown syntax once n passes
-- chat.treesitter_max_lines (by default 0: from the start). Neovim's
-- treesitter markdown re-parses the buffer at every edit, 3–5 ms a
-- streamed delta here, more as the buffer grows (benchmarks 20–22: the
-- stream lags tens of ms behind at 200 deltas/s, seconds in a long
-- transcript), while the syntax is drawn from the lines on screen.
function long_transcript(chat, n)
  if chat.syntax_only then
    return
  end
  local max = require("claude.config").options.chat.treesitter_max_lines
  if type(max) ~= "number" or n <= max then
    return
  end
  chat.syntax_only = true
  local hl = package.loaded["vim.treesitter.highlighter"]
  if hl and hl.active and hl.active[chat.tbuf] then
    -- stop() gives the buffer back to 'syntax' (markdown)
    pcall(vim.treesitter.stop, chat.tbuf)
  end
end

-- bufopt sets a buffer option through the API: vim.bo's accessor costs a
-- few µs more per write, paid twice per streamed delta.
local function bufopt(buf, name, value)
  if api.nvim_buf_set_option then
    api.nvim_buf_set_option(buf, name, value)
  else
    api.nvim_set_option_value(name, value, { buf = buf })
  end
end

-- put replaces rows [s, e) (0-based, end exclusive) with lines whose fold
-- levels are levels (a list, or one value for all) and highlights hls (a
-- group per line, or one group, or nil).
local function put(chat, s, e, lines, levels, hls)
  local buf = chat.tbuf
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  long_transcript(chat, line_count(chat) + #lines - (e - s))
  local follow = followers(chat)
  local lv = {}
  for i = 1, #lines do
    lv[i] = type(levels) == "table" and (levels[i] or "0") or (levels or "0")
  end
  -- the levels first (see the header comment)
  set_levels(chat, s, e, lv)
  bufopt(buf, "modifiable", true)
  api.nvim_buf_set_lines(buf, s, e, false, lines)
  bufopt(buf, "modifiable", false)
  bufopt(buf, "modified", false)
  if hls then
    for i = 1, #lines do
      local g
      if type(hls) == "table" then
        g = hls[i]
      else
        g = hls
      end
      if g then
        api.nvim_buf_add_highlight(buf, M.ns, g, s + i - 1, 0, -1)
      end
    end
  end
  local last = line_count(chat)
  for _, w in ipairs(follow) do
    pcall(api.nvim_win_set_cursor, w, { last, 0 })
  end
end

--- Appends lines at the end; returns the 0-based row of the first one.
function M.append(chat, lines, levels, hls)
  chat.r.cur = nil
  if empty(chat) then
    put(chat, 0, 1, lines, levels, hls)
    return 0
  end
  local row = line_count(chat)
  put(chat, row, row, lines, levels, hls)
  return row
end

--- Replaces rows [s, e) with lines (level "0").
function M.replace(chat, s, e, lines, hls)
  put(chat, s, e, lines, "0", hls)
end

-- A mark that follows its line as the buffer changes.
function M.mark(chat, row)
  return api.nvim_buf_set_extmark(chat.tbuf, M.ns, row, 0, {})
end

function M.mark_row(chat, id)
  local pos = api.nvim_buf_get_extmark_by_id(chat.tbuf, M.ns, id, {})
  return pos[1]
end

local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

local function indent(lines, prefix)
  local out = {}
  for i, l in ipairs(lines) do
    out[i] = prefix .. l
  end
  return out
end

-- turn_header starts the assistant's part of a turn once.
local function turn_header(chat)
  if chat.r.in_turn then
    return
  end
  chat.r.in_turn = true
  M.append(chat, { "## Claude" }, "0", "ClaudeChatAssistant")
end

-- Streaming -----------------------------------------------------------------

-- append_text appends text without a line break to the last line, row
-- last (1-based): the write of most streamed deltas. Only the end of the
-- line changes, so the fold levels stay as they are and nvim_buf_set_text
-- touches nothing else (no read-back and rewrite of the line). A thinking
-- line's highlight already runs to the line's end, past the new text.
local function append_text(chat, last, text)
  local buf = chat.tbuf
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  local follow = followers(chat)
  local col = #api.nvim_buf_get_lines(buf, last - 1, last, false)[1]
  bufopt(buf, "modifiable", true)
  api.nvim_buf_set_text(buf, last - 1, col, last - 1, col, { text })
  bufopt(buf, "modifiable", false)
  bufopt(buf, "modified", false)
  for _, w in ipairs(follow) do
    pcall(api.nvim_win_set_cursor, w, { last, 0 })
  end
end

-- stream appends delta to the block key (a text or thinking block). The
-- block continues while it is the last thing in the buffer; anything
-- appended in between makes a later delta start a new block.
local function stream(chat, kind, key, delta)
  if delta == nil or delta == "" then
    return
  end
  turn_header(chat)
  if chat.r.cur ~= key then
    if kind == "thinking" then
      M.append(chat, { "▸ Thinking" }, ">1", "ClaudeChatThinking")
    else
      M.append(chat, { "" }, "0")
    end
    chat.r.cur = key
    chat.r.fresh = kind == "thinking"
  end
  local last = line_count(chat)
  if not chat.r.fresh and not delta:find("\n", 1, true) then
    append_text(chat, last, delta)
    return
  end
  local parts = split(delta)
  local tail = api.nvim_buf_get_lines(chat.tbuf, last - 1, last, false)[1]
  local level = kind == "thinking" and "1" or "0"
  local hl = kind == "thinking" and "ClaudeChatThinking" or nil
  local lines = { tail .. parts[1] }
  local levels = { chat.levels[last] or level }
  if chat.r.fresh then
    -- the header keeps its line; the thinking itself goes below it
    lines = { tail, parts[1] }
    levels = { ">1", "1" }
  end
  for i = 2, #parts do
    table.insert(lines, parts[i])
    table.insert(levels, level)
  end
  put(chat, last - 1, last, lines, levels, hl)
  chat.r.fresh = false
end

function M.text(chat, d)
  stream(chat, "text", "t:" .. tostring(d.message_id) .. ":" .. tostring(d.index), d.delta)
end

function M.thinking(chat, d)
  stream(chat, "thinking", "k:" .. tostring(d.message_id) .. ":" .. tostring(d.index), d.delta)
end

-- Blocks --------------------------------------------------------------------

-- input_lines shows a tool's input as "key: value" lines, the way a person
-- reads it (multi-line values indented below their key).
local function input_lines(input)
  if type(input) ~= "table" then
    return input ~= nil and split(tostring(input)) or {}
  end
  local keys = vim.tbl_keys(input)
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    local v = input[k]
    if type(v) == "table" then
      v = vim.json.encode(v)
    elseif v == vim.NIL then
      v = "null"
    end
    local parts = split(tostring(v))
    if #parts == 1 then
      table.insert(out, string.format("%s: %s", k, parts[1]))
    else
      table.insert(out, k .. ":")
      vim.list_extend(out, indent(parts, "    "))
    end
  end
  return out
end

--- A block of lines whose first line is a summary and the rest is folded.
local function folded(chat, head, body, hl)
  local lines = { head }
  local levels = { ">1" }
  for _, l in ipairs(body) do
    table.insert(lines, l)
    table.insert(levels, "1")
  end
  return M.append(chat, lines, levels, { hl })
end

function M.user(chat, d)
  chat.r.in_turn = false
  local lines = { "## You" }
  local hls = { "ClaudeChatUser" }
  vim.list_extend(lines, split(d.text))
  local labels = {}
  for _, a in ipairs(d.attachments or {}) do
    table.insert(labels, a.label or a.type)
  end
  if #labels > 0 then
    table.insert(lines, "> attached: " .. table.concat(labels, ", "))
    hls[#lines] = "ClaudeChatMeta"
  end
  local sep = not empty(chat)
  if sep then
    table.insert(lines, 1, "")
    table.insert(hls, 1, false)
  end
  local row = M.append(chat, lines, "0", hls) + (sep and 1 or 0)
  if d.uuid and d.uuid ~= vim.NIL then
    table.insert(chat.users, { mark = M.mark(chat, row), uuid = d.uuid, text = d.text })
  end
end

-- The rows of the earlier messages of a resumed or forked session
-- (chat_history) as M.user and the assistant's blocks show them, followed
-- by a marker line: built in tables, then written in a few large pieces
-- (M.prepend_history).
local function history_rows(msgs)
  local lines, hls, users = {}, {}, {}
  local in_turn = false
  local function add(l, hl)
    lines[#lines + 1] = l
    hls[#lines] = hl or false
  end
  for _, msg in ipairs(msgs) do
    if msg.role == "user" then
      in_turn = false
      if #lines > 0 then
        add("")
      end
      add("## You", "ClaudeChatUser")
      if msg.uuid and msg.uuid ~= vim.NIL then
        table.insert(users, { row = #lines, uuid = msg.uuid, text = msg.text })
      end
      for _, l in ipairs(split(msg.text)) do
        add(l)
      end
    else
      if not in_turn then
        in_turn = true
        add("## Claude", "ClaudeChatAssistant")
      end
      if msg.text and msg.text ~= "" then
        for _, l in ipairs(split(msg.text)) do
          add(l)
        end
      end
      for _, t in ipairs(msg.tools or {}) do
        add("● " .. tostring(t), "ClaudeChatTool")
      end
    end
  end
  add("")
  add("─ earlier messages above ─", "ClaudeChatMeta")
  return lines, hls, users
end

-- Rows written at once when history is prepended: more than a screen
-- shows, so the end of the history is there when the call returns; the
-- rest follows in pieces of PREPEND_SLICE rows, each its own main-loop
-- event (a timer), so that keys typed meanwhile and redraws go between
-- them.
local PREPEND_FIRST = 1500
local PREPEND_SLICE = 5000

--- Puts the earlier messages msgs (chat_history) above everything in the
--- transcript: its last PREPEND_FIRST rows now, the rest in the
--- background, top last. on_done (optional) runs when all are in.
function M.prepend_history(chat, msgs, on_done)
  local lines, hls, users = history_rows(msgs)
  local buf = chat.tbuf
  -- rows [i, j] of the history (1-based) go to the top of the buffer
  local function write(i, j)
    local sub_lines, sub_hls = {}, {}
    for k = i, j do
      sub_lines[#sub_lines + 1] = lines[k]
      sub_hls[#sub_hls + 1] = hls[k]
    end
    put(chat, 0, empty(chat) and 1 or 0, sub_lines, "0", sub_hls)
    for _, u in ipairs(users) do
      if u.row >= i and u.row <= j then
        table.insert(chat.users, { mark = M.mark(chat, u.row - i), uuid = u.uuid, text = u.text })
      end
    end
  end
  local n = #lines
  local first = math.max(1, n - PREPEND_FIRST + 1)
  write(first, n)
  if first == 1 then
    if on_done then
      on_done()
    end
    return
  end
  local function more(j)
    if by_buf[buf] ~= chat or not api.nvim_buf_is_valid(buf) then
      return -- the chat is gone
    end
    local i = math.max(1, j - PREPEND_SLICE + 1)
    write(i, j)
    if i == 1 then
      if on_done then
        on_done()
      end
      return
    end
    vim.defer_fn(function()
      more(i - 1)
    end, 0)
  end
  vim.defer_fn(function()
    more(first - 1)
  end, 0)
end

function M.tool_use(chat, d)
  turn_header(chat)
  local row = folded(chat, "● " .. (d.summary or d.name or "tool"), indent(input_lines(d.input), "    "), "ClaudeChatTool")
  chat.tools[d.tool_use_id or ""] = row
end

function M.tool_result(chat, d)
  local head = (d.is_error and "  ⎿ ✗ " or "  ⎿ ") .. (d.summary or "result")
  local body = d.text and d.text ~= "" and indent(split(d.text), "    ") or {}
  folded(chat, head, body, d.is_error and "ClaudeChatError" or "ClaudeChatMeta")
end

function M.system(chat, d)
  local icon = ({ warn = "⚠ ", error = "✗ " })[d.level] or "ℹ "
  local hl = ({ warn = "ClaudeChatWarn", error = "ClaudeChatError" })[d.level] or "ClaudeChatMeta"
  local lines = split(d.text)
  lines[1] = icon .. lines[1]
  M.append(chat, indent(lines, "> "), "0", hl)
end

function M.turn_done(chat, d)
  chat.r.in_turn = false
  if d.interrupted == true then
    return -- "Interrupted." said it
  end
  if d.is_error then
    local why = d.terminal_reason and d.terminal_reason ~= vim.NIL and d.terminal_reason or d.subtype or "error"
    local text = "> ✗ turn ended: " .. tostring(why)
    if type(d.result) == "string" and d.result ~= "" then
      text = text .. ": " .. split(d.result)[1]
    end
    M.append(chat, { text }, "0", "ClaudeChatError")
    return
  end
  local parts = {}
  if type(d.duration_ms) == "number" then
    table.insert(parts, string.format("%.1f s", d.duration_ms / 1000))
  end
  if type(d.cost_usd) == "number" then
    table.insert(parts, string.format("$%.4f", d.cost_usd))
  end
  M.append(chat, { "─ done" .. (#parts > 0 and (" · " .. table.concat(parts, " · ")) or "") }, "0", "ClaudeChatMeta")
end

function M.exited(chat, d, resume_key)
  chat.r.in_turn = false
  local lines = { string.format("> ✗ The Claude CLI exited (code %s).", tostring(d.code)) }
  for _, l in ipairs(split(d.stderr or "")) do
    if l ~= "" then
      table.insert(lines, ">   " .. l)
    end
  end
  if chat.session_id and resume_key then
    table.insert(lines, string.format("> Press %s here to resume the session.", resume_key))
  end
  M.append(chat, lines, "0", "ClaudeChatError")
end

return M
