-- Sharing the cursor and the visual selection with Claude (selection_changed).
--
-- The cost of a cursor move is what matters here: Neovim fires CursorMoved
-- for every key. So the CursorMoved/CursorMovedI autocmds are one-shot: the
-- first move after a quiet period notes where the cursor is, removes them
-- and tells the Go host "something moved" (selection_dirty). The host waits
-- for the debounce and asks for the state in one call (the bridge's
-- selection_pull, which lands in M.pull): if the cursor is no longer where
-- it was noted, it is still moving and the host asks again a debounce
-- later; once it has come to rest the payload is gathered and the autocmds
-- come back. While the cursor keeps moving no Lua runs at all.
--
-- The leading edge: when that first move comes after a rest (nothing seen
-- moving for at least the debounce), waiting tells Claude nothing new, so
-- the state is gathered right then and pushed (selection_update with pull,
-- as a visual-mode end is) instead of selection_dirty: a lone move reaches
-- the CLI at once. What follows within the debounce is coalesced as above
-- and the pull sends the final state, so a burst costs the CLI at most two
-- messages, the first and the last. Only a real move does this: a buffer
-- entered or visual mode entered may be a tool at work (openFile enters
-- visual mode before it records the selection as its own), and the pull's
-- gathering comes after the tool is done.
--
-- Leaving visual mode is the exception: the selection is about to vanish,
-- so it is gathered from the '< and '> marks right away and pushed
-- (selection_update), and stays "sticky" until the cursor really moves, so
-- that selecting lines and then going to the Claude terminal keeps them.
-- The push also asks the host to pull after the debounce (pull = true),
-- which re-arms the move autocmds once the cursor rests: re-arming them
-- right away would cost a Lua call on the next key and a selection_dirty on
-- the one after, for every selection made (make bench, scenario 1).
--
-- Selections that end in quick succession (a macro, a mapping, a script:
-- less than RAPID_MS after the previous one, while the host has a pull
-- coming) are not pushed one by one: like cursor moves, the last one is
-- gathered when the host pulls once things are at rest. Only its cursor
-- position and mode are noted as it ends.
--
-- Entering visual mode runs no Lua unless the move autocmds are armed (one
-- more of them notes it) or the mode is blockwise. Disarming clears them by
-- event and pattern, and the blockwise `$` tracker has a group of its own:
-- nvim_del_autocmd looks an id up among every autocmd there is.
local config = require("claude.config")
local editor = require("claude.editor")
local util = require("claude.util")

local api, fn = vim.api, vim.fn
local uv = util.uv

local M = {}

local MAXCOL = 2147483647
-- Visual selections ending less than this apart are a scripted series (a
-- macro, a mapping); no one ends two by hand that fast.
local RAPID_MS = 20
-- Visual and Select modes, as the first character of mode().
local visual_modes = { v = "v", V = "V", ["\22"] = "\22", s = "v", S = "V", ["\19"] = "\22" }

-- A host channel is attached while the IDE server runs and sharing is on.
local S = {
  chan = nil, -- the Go host's channel; nil = not tracking
  group = nil, -- augroup id while tracking
  armed = false, -- the one-shot CursorMoved/CursorMovedI autocmds exist (in group)
  armpos = nil, -- {win, buf, lnum, col}: where the cursor was when they were made
  dirty_at = 0, -- when selection_dirty was last sent (re-armed if no pull came)
  moved_at = -math.huge, -- uv.now() when a move or a state change was last seen
  rest_ms = nil, -- how long a rest is (tests); nil: the debounce
  snap = nil, -- where the cursor was when it started moving (or at the last pull)
  blockgroup = nil, -- augroup of the autocmd noting `$` in blockwise visual mode
  block = false, -- that autocmd exists
  debounce = 50,
  seq = 0, -- orders our observations for the host (newest wins)
  vwin = nil, -- window visual mode began in, once left during it (Neovim 0.7)
  dollar = false, -- the block being made extends to the end of every line
  sticky = nil, -- {win, buf, lnum, col, state}: a selection kept after visual mode ended
  -- (ended in a rapid series: state gathered when first needed, from path,
  -- vmode and dollar; unsent until a pull has returned it)
  ended_at = -math.huge, -- uv.now() when visual mode last ended
  rapid_ms = RAPID_MS,
}

local pref = nil -- :ClaudeShare's choice; nil follows the selection.track option

-- Files -------------------------------------------------------------------

-- buf_opt reads a buffer option without vim.bo's per-access table (it runs
-- as visual mode ends).
local buf_opt = editor.buf_opt

--- The file a buffer shows, or nil when it is not a plain file on disk
--- (terminal, help, quickfix, nofile, scratch, URI-named buffers …): the
--- rule of claude.editor, the one owner of it.
M.file_path = editor.file_path

M.denied = require("claude.deny").denied

-- Selections and buffers the user did not make ----------------------------

-- Buffers a tool call loaded and the user has not edited (a plain table:
-- it is read on every push).
local tool_bufs = {}

--- Marks buf as loaded by a tool call (openFile, open_file_at …): a file
--- outside the workspace (the cwd) that the user did not open is not
--- shared, until the user edits it.
function M.opened_by_tool(buf)
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  tool_bufs[buf] = true
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "BufWipeout" }, {
    buffer = buf,
    once = true,
    desc = "nvim-claude: a buffer the user edits is the user's",
    callback = function()
      tool_bufs[buf] = nil
    end,
  })
end

--- Records the Visual selection a tool just made in buf (from s to e, each
--- {row, byte col}): it is not shared back until the user changes it.
function M.tool_selected(buf, s, e)
  S.tool = { buf = buf, s = s, e = e }
end

-- inside_cwd: path is in Neovim's global working directory (the workspace
-- root) or below it.
local function inside_cwd(path)
  local cwd = vim.fn.getcwd(-1, -1)
  return path == cwd or path:sub(1, #cwd + 1) == cwd .. "/" or cwd == "/"
end

-- withheld: what the current window shows of buf must not be shared — the
-- selection a tool made and the user has not changed, or a file outside
-- the workspace a tool opened and the user has not edited.
-- ended: Visual mode just ended (the range is in the '< '> marks).
local function tool_file(buf, path)
  return tool_bufs[buf] == true and not inside_cwd(path)
end

local function withheld(buf, path, ended)
  if S.tool then
    local t = S.tool
    if t.buf == buf then
      local a, b
      if ended then
        a, b = api.nvim_buf_get_mark(buf, "<"), api.nvim_buf_get_mark(buf, ">")
      elseif visual_modes[api.nvim_get_mode().mode:sub(1, 1)] then
        local v = vim.fn.getpos("v")
        a, b = { v[2], v[3] - 1 }, api.nvim_win_get_cursor(0)
      end
      if a and a[1] == t.s[1] and a[2] == t.s[2] and b[1] == t.e[1] and b[2] == t.e[2] then
        if ended then
          S.tool = nil -- ended without a change: the next move is the user's
        end
        return true
      end
    end
    S.tool = nil -- the user moved on
  end
  return tool_file(buf, path)
end

local region = require("claude.selection.region")
local pos, utf16 = region.pos, editor.units
region = region.region

local function cursor_state(win, buf, path)
  local c = api.nvim_win_get_cursor(win)
  local line
  if win == api.nvim_get_current_win() then
    line = api.nvim_get_current_line()
  else
    line = api.nvim_buf_get_lines(buf, c[1] - 1, c[1], false)[1] or ""
  end
  local p = pos(c[1] - 1, utf16(line, c[2]))
  return { kind = "selection", path = path, text = "", start = p, ["end"] = pos(p.line, p.character), empty = true }
end

-- visual_live is the selection of the current window while in visual mode.
local function visual_live(buf, path, mode)
  local v = fn.getpos("v")
  local c = api.nvim_win_get_cursor(0)
  local vmode = visual_modes[mode]
  local dollar = vmode == "\22" and fn.getcurpos()[5] >= MAXCOL
  return region(0, buf, path, vmode, { l = v[2], c = v[3] - 1 }, { l = c[1], c = c[2] }, dollar)
end

-- ended_mode is the mode of the visual selection that just ended, and for
-- a block whether it extends to the end of every line (`$`).
local function ended_mode()
  local vmode = visual_modes[fn.visualmode()] or "v"
  -- `$` leaves curswant at MAXCOL, unless an operator (y, d) has already
  -- moved the cursor: then the last move in the block told.
  return vmode, vmode == "\22" and (fn.getcurpos()[5] >= MAXCOL or S.dollar)
end

-- visual_last is the visual selection that ended last in buf (shown in
-- win), from its marks; vmode and dollar are ended_mode()'s as it ended.
local function visual_last(win, buf, path, vmode, dollar)
  -- {line, 0-based byte} like getpos()'s [1..2] less one column, without
  -- a Vim function call (a `$` end is v:maxcol either way)
  local s, e = api.nvim_buf_get_mark(buf, "<"), api.nvim_buf_get_mark(buf, ">")
  if s[1] == 0 or e[1] == 0 then
    return nil
  end
  local p1, p2 = { l = s[1], c = s[2] }, { l = e[1], c = e[2] }
  if vmode == "V" then
    p1.c, p2.c = 0, 0
  end
  return region(win, buf, path, vmode, p1, p2, dollar)
end

-- gather_sticky gathers the state of a sticky selection noted in a rapid
-- series (from the marks, which stay until the next selection ends).
local function gather_sticky(sticky)
  if not sticky.state and api.nvim_buf_is_valid(sticky.buf) then
    local win = api.nvim_win_is_valid(sticky.win) and sticky.win or 0
    sticky.state = visual_last(win, sticky.buf, sticky.path, sticky.vmode, sticky.dollar)
  end
  return sticky.state
end

-- sticky_holds reports whether the selection kept after visual mode still
-- stands for win showing buf: the cursor has not moved since (a plugin or
-- the API can move it without CursorMoved in that window). One that ended
-- in a rapid series is gathered now, the first time it is asked for.
local function sticky_holds(win, buf)
  local sticky = S.sticky
  if not sticky or sticky.win ~= win or sticky.buf ~= buf then
    return false
  end
  local ok, c = pcall(api.nvim_win_get_cursor, win)
  if not (ok and c[1] == sticky.lnum and c[2] == sticky.col) then
    S.sticky = nil
    return false
  end
  if not gather_sticky(sticky) then
    S.sticky = nil
    return false
  end
  return true
end

local function next_seq(st)
  S.seq = S.seq + 1
  st.seq = S.seq
  return st
end

-- current_state is what the current window shows: a live visual
-- selection, the sticky one, or the cursor.
local function current_state()
  local win, buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  local path = M.file_path(buf)
  if not path then
    return { kind = "skip" }
  end
  editor.note_active(win)
  if M.denied(path) then
    return { kind = "denied" }
  end
  if withheld(buf, path) then
    return { kind = "skip" }
  end
  local mode = api.nvim_get_mode().mode:sub(1, 1)
  if visual_modes[mode] then
    S.sticky = nil
    return visual_live(buf, path, mode)
  end
  if sticky_holds(win, buf) then
    if S.sticky.unsent then
      S.sticky.unsent = nil
      return S.sticky.state
    end
    return { kind = "keep" }
  end
  S.sticky = nil
  return cursor_state(win, buf, path)
end

-- Talking to the host -------------------------------------------------------

-- request asks the host and waits (sharing changes: when :ClaudeShare off
-- returns, nothing more is shared).
local function request(chan, method, payload)
  local ok, res = pcall(vim.rpcrequest, chan, method, vim.json.encode(payload))
  if not ok then
    return nil, tostring(res)
  end
  return res
end

local function send(method, payload)
  if not S.chan then
    return
  end
  if payload == nil then
    pcall(vim.rpcnotify, S.chan, method)
  else
    pcall(vim.rpcnotify, S.chan, method, vim.json.encode(payload))
  end
end

-- snapshot is where the cursor is, to tell at pull time whether it moved.
local function snapshot()
  local c = api.nvim_win_get_cursor(0)
  return { api.nvim_get_current_win(), api.nvim_get_current_buf(), c[1], c[2], api.nvim_get_mode().mode }
end

local function same(a, b)
  return a and b and a[1] == b[1] and a[2] == b[2] and a[3] == b[3] and a[4] == b[4] and a[5] == b[5]
end

-- ModeChanged patterns: entering a visual or select mode (from any mode,
-- another visual one too), a blockwise one, and leaving one.
local TO_VISUAL, TO_BLOCK, FROM_VISUAL = "*:[vV\22sS\19]*", "*:[\22\19]*", "[vV\22sS\19]*:*"

local function disarm()
  if S.armed then
    S.armed, S.armpos = false, nil
    pcall(api.nvim_clear_autocmds, { group = S.group, event = { "CursorMoved", "CursorMovedI" } })
    pcall(api.nvim_clear_autocmds, { group = S.group, event = "ModeChanged", pattern = TO_VISUAL })
  end
end

-- dirty tells the host that the state changed: it pulls after the debounce.
local function dirty()
  disarm()
  S.snap = snapshot()
  S.dirty_at = uv.now()
  S.moved_at = S.dirty_at
  send("selection_dirty")
end

-- lead is the leading edge: the first move after a rest is gathered and
-- pushed now, and the host pulls after the debounce as after dirty (which
-- sends the burst's final state and re-arms the move autocmds). A window
-- that shares nothing, or a sticky selection, is left to that pull.
local function lead()
  local st = current_state()
  if st.kind ~= "selection" and st.kind ~= "denied" then
    return dirty()
  end
  disarm()
  S.snap = snapshot()
  S.dirty_at = uv.now()
  S.moved_at = S.dirty_at
  send("selection_update", { state = next_seq(st), pull = true })
end

-- on_move is the one-shot move autocmd: it runs once per quiet period.
local function on_move()
  local p = S.armpos
  if p and api.nvim_get_current_win() == p[1] and api.nvim_get_current_buf() == p[2] then
    local c = api.nvim_win_get_cursor(0)
    if c[1] == p[3] and c[2] == p[4] then
      -- Not a move: Neovim fires CursorMoved for the first check after the
      -- autocmd appears when the cursor is elsewhere than at the last
      -- CursorMoved, however long ago. Likewise when the cursor only
      -- settled after visual mode (Esc from `$`, an operator): the sticky
      -- selection stays until a real move.
      return
    end
  end
  -- The last move seen is at most S.moved_at (a pull notes the time it saw
  -- the cursor moving, not when it moved): the rest is at least this long.
  local rest = S.rest_ms or S.debounce
  if rest < math.huge and uv.now() - S.moved_at >= rest then
    lead()
  else
    dirty()
  end
end

-- arm installs the one-shot move autocmds; entering visual mode counts as
-- a move.
local function arm()
  if not S.group or S.armed then
    return
  end
  local opts = { group = S.group, desc = "nvim-claude: note that the cursor moved (once per quiet period)", callback = on_move }
  api.nvim_create_autocmd("CursorMoved", opts)
  api.nvim_create_autocmd("CursorMovedI", opts)
  api.nvim_create_autocmd("ModeChanged", {
    group = S.group,
    pattern = TO_VISUAL,
    desc = "nvim-claude: note that visual mode started (once per quiet period)",
    callback = dirty,
  })
  local c = api.nvim_win_get_cursor(0)
  S.armed, S.armpos = true, { api.nvim_get_current_win(), api.nvim_get_current_buf(), c[1], c[2] }
end

-- changed handles events that always count (a buffer entered): tell the
-- host unless it already knows; and if a pull never came (the host was busy
-- and gave up), start over rather than stall.
local function changed()
  if S.armed or uv.now() - S.dirty_at > 2000 then
    dirty()
  end
end

-- push sends a selection now, not after the debounce, and keeps it until
-- the cursor moves. With pull, the host also pulls after the debounce
-- (which re-arms the move autocmds once the cursor rests), as after a
-- selection_dirty.
local function push(st, win, buf, pull)
  if not st then
    return false
  end
  local c = api.nvim_win_get_cursor(0)
  S.sticky = { win = win, buf = buf, lnum = c[1], col = c[2], state = st }
  if pull then
    disarm()
    S.snap = { win, buf, c[1], c[2], api.nvim_get_mode().mode }
    S.dirty_at = uv.now()
    S.moved_at = S.dirty_at
  end
  send("selection_update", { state = next_seq(st), pull = pull or nil })
  return pull
end

-- visual_ended pushes the selection that just ended. It returns true when
-- the host was asked to pull or has a pull coming (which re-arms the move
-- autocmds).
local function visual_ended()
  local win, buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  local now = uv.now()
  local rapid = now - S.ended_at < S.rapid_ms and not S.armed
  S.ended_at, S.moved_at = now, now
  local vwin = S.vwin
  S.vwin = nil
  if vwin and vwin ~= win then
    return false -- Neovim 0.7 ends visual mode in the window switched to; WinLeave sent it
  end
  local path = M.file_path(buf)
  if not path then
    return false
  end
  editor.note_active(win)
  if M.denied(path) then
    S.sticky = nil
    disarm()
    S.snap, S.dirty_at = snapshot(), now
    send("selection_update", { state = next_seq({ kind = "denied" }), pull = true })
    return true
  end
  if withheld(buf, path, true) then
    S.sticky = nil
    return false
  end
  local vmode, dollar = ended_mode()
  if rapid then
    -- Part of a rapid series, and the move autocmds are disarmed: the host
    -- has a pull coming, which gathers this one if it is still the last.
    local c = api.nvim_win_get_cursor(0)
    S.sticky = { win = win, buf = buf, lnum = c[1], col = c[2], path = path, vmode = vmode, dollar = dollar, unsent = true }
    return true
  end
  return push(visual_last(win, buf, path, vmode, dollar), win, buf, true)
end

-- left_in_visual handles a window switch during visual mode (Neovim 0.7:
-- nvim_set_current_win keeps visual mode going in the new window).
local function left_in_visual()
  local mode = api.nvim_get_mode().mode:sub(1, 1)
  if not visual_modes[mode] then
    return
  end
  -- the first window left is the one visual mode began in
  S.vwin = S.vwin or api.nvim_get_current_win()
  local buf = api.nvim_get_current_buf()
  local path = M.file_path(buf)
  if not path or M.denied(path) or withheld(buf, path) then
    return
  end
  push(visual_live(buf, path, mode), api.nvim_get_current_win(), buf, false)
end

-- Tracking --------------------------------------------------------------------

-- block_tracking notes, while a blockwise selection is made, whether `$`
-- was used: an operator (y, d) moves the cursor before visual mode ends,
-- and curswant with it. Only blockwise visual mode pays for this.
local function note_dollar()
  S.dollar = fn.getcurpos()[5] >= MAXCOL
end

local function block_tracking(on)
  S.dollar = false
  if S.block then
    S.block = false
    pcall(api.nvim_clear_autocmds, { group = S.blockgroup })
  end
  if on and S.group then
    api.nvim_create_autocmd("CursorMoved", {
      group = S.blockgroup,
      desc = "nvim-claude: note `$` in a blockwise selection",
      callback = note_dollar,
    })
    S.block = true
  end
end

-- mode_change splits ModeChanged's match ("old:new") into the first
-- characters of both modes (vim.v.event would convert a dict).
local function mode_change(match)
  local i = match:find(":", 1, true) or 0
  return match:sub(1, 1), match:sub(i + 1, i + 1)
end

local function stop_tracking(tell_host)
  for _, g in pairs({ S.group, S.blockgroup }) do
    pcall(api.nvim_del_augroup_by_id, g)
  end
  if tell_host and S.chan then
    request(S.chan, "selection_share", { on = false })
  end
  S.group, S.chan, S.sticky, S.vwin = nil, nil, nil, nil
  editor.note_active(nil)
  S.blockgroup, S.armed, S.armpos, S.block, S.snap = nil, false, nil, false, nil
end

local function start_tracking(chan)
  if S.group then
    return
  end
  S.chan = chan
  S.armed, S.armpos, S.block, S.snap, S.dirty_at, S.sticky, S.vwin = false, nil, false, nil, 0, nil, nil
  S.ended_at, S.moved_at = -math.huge, -math.huge
  S.debounce = config.options.selection.debounce_ms
  S.blockgroup = api.nvim_create_augroup("nvim-claude-selection-block", { clear = true })
  S.group = api.nvim_create_augroup("nvim-claude-selection", { clear = true })
  local au = function(ev, opts)
    opts.group = S.group
    api.nvim_create_autocmd(ev, opts)
  end
  au("BufEnter", { desc = "nvim-claude: share the file just entered", callback = changed })
  au("ModeChanged", {
    pattern = TO_BLOCK,
    desc = "nvim-claude: note `$` while a blockwise selection is made",
    callback = function()
      block_tracking(true)
    end,
  })
  au("ModeChanged", {
    pattern = FROM_VISUAL,
    desc = "nvim-claude: send the visual selection as it ends",
    callback = function(ev)
      local _, new = mode_change(ev.match)
      if not visual_modes[new] then
        local pulled = visual_ended()
        block_tracking(false)
        if not pulled then
          arm()
        end
      elseif visual_modes[new] ~= "\22" then
        block_tracking(false) -- from blockwise to another visual mode
      end
    end,
  })
  au("WinLeave", { desc = "nvim-claude: keep a visual selection when leaving its window", callback = left_in_visual })
  arm()
  local _, err = request(chan, "selection_share", { on = true })
  if err then
    stop_tracking(false)
    util.notify("nvim-claude: could not start sharing the selection: " .. err, vim.log.levels.ERROR)
    return
  end
  local st = current_state()
  if st.kind == "selection" or st.kind == "denied" then
    send("selection_update", { state = next_seq(st) })
  end
end

local function wanted()
  if pref ~= nil then
    return pref
  end
  return config.options.selection.track
end

--- Starts tracking (the server calls this when it starts). chan overrides
--- the host channel (tests).
function M.attach(chan)
  chan = chan or require("claude.server").state().chan
  if not chan or not wanted() then
    return
  end
  start_tracking(chan)
end

--- Stops tracking (the server is stopping: nothing to tell it).
function M.detach()
  stop_tracking(false)
end

--- Whether the cursor and selection are being shared with Claude right now.
function M.sharing()
  return S.group ~= nil
end

local function announce()
  util.emit("ClaudeShareChanged", { sharing = M.sharing() })
  pcall(vim.cmd, "redrawstatus!")
end

--- :ClaudeShare [on|off|toggle]. Without an argument, tells the state.
function M.share(arg)
  arg = vim.trim(arg or "")
  if arg == "toggle" then
    arg = wanted() and "off" or "on"
  end
  if arg == "on" or arg == "off" then
    pref = arg == "on"
    local server = require("claude.server")
    if pref and server.is_running() then
      start_tracking(server.state().chan)
    elseif not pref then
      stop_tracking(true)
    end
    announce()
  elseif arg ~= "" then
    util.notify(string.format("nvim-claude: :ClaudeShare takes on, off or toggle, not %q", arg), vim.log.levels.ERROR)
    return
  end
  local msg
  if M.sharing() then
    msg = "nvim-claude: sharing the cursor and selection with Claude"
  elseif wanted() then
    msg = "nvim-claude: selection sharing is on; it starts with the server (:ClaudeStart)"
  else
    msg = "nvim-claude: not sharing the cursor and selection (:ClaudeShare on)"
  end
  util.notify(msg, vim.log.levels.INFO)
end

-- The host's entry points (lua/claude/bridge/init.lua calls them) ---------

--- The state for the Go host's debounced pull (the bridge's
--- selection_pull): the current window's selection or cursor, or
--- {kind = "skip"} / {kind = "denied"}. Unless force is set, answers
--- {kind = "wait", wait = ms} while the cursor is still moving.
---
--- Moves are not timed one by one (that would cost Lua on every key), so
--- the cursor counts as resting once it is unchanged over one poll. Polling
--- at half the debounce sends between 0.5 and 1 debounce after the last
--- move; a full-debounce poll made that 1 to 2 (make bench, scenario 2:
--- p99 101 ms at the default 50 ms).
---@param force? boolean gather now, even while the cursor moves
---@return table state
function M.pull(force)
  if S.snap then
    local now = snapshot()
    if not same(now, S.snap) then
      -- still moving (a forced pull too: the next move is no leading one)
      S.moved_at = uv.now()
      if not force then
        S.snap = now
        return { kind = "wait", wait = math.max(1, math.floor(S.debounce / 2)) }
      end
    end
  end
  S.snap = nil
  arm()
  return next_seq(current_state())
end

--- The selection in the active editor for getCurrentSelection (the
--- bridge's selection_current): claude.editor's active window, the one
--- getOpenEditors marks `isActive` — the current window if it shows a file,
--- else the file window used last. {kind = "none"} when there is none.
---@return table state
function M.current()
  local win = editor.active_window()
  if not win then
    return { kind = "none" }
  end
  local buf = api.nvim_win_get_buf(win)
  local path = M.file_path(buf)
  if M.denied(path) then
    return { kind = "denied", path = path }
  end
  if (win == api.nvim_get_current_win() and withheld(buf, path)) or tool_file(buf, path) then
    return { kind = "none" }
  end
  if win == api.nvim_get_current_win() then
    local mode = api.nvim_get_mode().mode:sub(1, 1)
    if visual_modes[mode] then
      return visual_live(buf, path, mode)
    end
  end
  if sticky_holds(win, buf) then
    return S.sticky.state
  end
  return cursor_state(win, buf, path)
end

--- The selection in the current window, the way it would be shared (for
--- tests and for users who want it).
function M.get()
  local buf = api.nvim_get_current_buf()
  local path = M.file_path(buf)
  if not path or M.denied(path) or withheld(buf, path) then
    return nil
  end
  local mode = api.nvim_get_mode().mode:sub(1, 1)
  if visual_modes[mode] then
    return visual_live(buf, path, mode)
  end
  return cursor_state(api.nvim_get_current_win(), buf, path)
end

-- Exposed for tests.
--- Sets how close selection ends make a rapid series (nil: the default)
--- and forgets when the last one ended.
function M._rapid(ms)
  S.rapid_ms = ms or RAPID_MS
  S.ended_at = -math.huge
end
--- Sets how long the cursor must rest before a move is sent at once (nil:
--- the debounce; 0: every move the autocmds see; math.huge: never).
function M._rest(ms)
  S.rest_ms = ms
end
M._region = region
M._visual_last = visual_last
function M._debug()
  return {
    tracking = S.group ~= nil,
    armed = S.armed,
    sticky = S.sticky and gather_sticky(S.sticky) or nil,
    seq = S.seq,
  }
end

return M
