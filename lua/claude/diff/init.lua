-- Diff review: each edit Claude proposes opens as a Neovim diff, the file as
-- the editor has it on one side and the proposal on the other, and waits for
-- the user's decision.
--
-- The Go host opens and closes diffs (lua/claude/bridge/init.lua calls M.open
-- and M.close); the user decides here (:w, :q, :ClaudeDiffAccept …) and the
-- decision goes back to the host with rpcrequest(chan, "diff_decision",
-- json), which answers whether it was still waiting for it. The host
-- answers the CLI, and the CLI, never us, writes the file.
--
-- This module is a diff's life (open, decide, close) and the public API;
-- each part that owns a Neovim fact is a module of its own:
--   state     the open diffs, the diff.* options, which diff a command means
--   layout    the windows: where the file and the proposal show, sizes, focus
--   proposal  the proposal buffer and the file's side
--   hint      the bars over the panes (keys, hunk counter)
--   accept    the accept write and the decision handed to the host
--   watch     the CLI's write of the file after a diff closes, 'autoread'
--   cmdwin    the command-line window, which holds off opening and closing
--   keys      the buffer-local keys of a diff
local accept = require("claude.diff.accept")
local cmdwin = require("claude.diff.cmdwin")
local hint = require("claude.diff.hint")
local hunks = require("claude.hunks")
local keys = require("claude.diff.keys")
local layout = require("claude.diff.layout")
local proposal = require("claude.diff.proposal")
local state = require("claude.diff.state")
local util = require("claude.util")
local watch = require("claude.diff.watch")

local api = vim.api

local diffs, order, options, current, forget, shared_orig =
  state.diffs, state.order, state.options, state.current, state.forget, state.shared_orig
local win_ok, buf_ok, floating = layout.win_ok, layout.buf_ok, layout.floating
local place, undo_place, focus, back_to, apply_sizes =
  layout.place, layout.undo_place, layout.focus, layout.back_to, layout.apply_sizes
local take_over, close_window, restore_window, tab_has_diffs =
  layout.take_over, layout.close_window, layout.restore_window, layout.tab_has_diffs
local in_cmdwin, after_cmdwin = cmdwin.in_cmdwin, cmdwin.after_cmdwin
local shown_name, show_hint, refresh_counter, restore_winbar =
  hint.shown_name, hint.show_hint, hint.refresh_counter, hint.restore_winbar
local full_path, proposal_text, detect_filetype = proposal.full_path, proposal.proposal_text, proposal.detect_filetype
local current_side, make_proposal, fill_proposal = proposal.current_side, proposal.make_proposal, proposal.fill_proposal
local buffer_contents, write_buffer, send_decision = accept.buffer_contents, accept.write_buffer, accept.send_decision
local watch_write, release_autoread = watch.watch_write, watch.release_autoread
local notify_now = util.notify_now

local M = {}

-- The window the user is in: WinEnter is not fired when Neovim switches
-- windows for :wall, nvim_buf_call and the like, so this tells a write the
-- user issued in a proposal from one done for them (see on_write).
local user_win
local augroup

-- close removes every trace of d: windows, buffers, mappings, autocmds, and
-- puts back the layout, sizes and focus it found. outcome is "accepted",
-- "rejected" or "closed" (the CLI or the host ended it). In the
-- command-line window it waits for that to close.
local function close(d, outcome)
  if d.closed then
    return false
  end
  if in_cmdwin() then
    d.decided = true -- (the host, or the user, has ended it)
    if not d.close_deferred then
      d.close_deferred = true
      after_cmdwin(function()
        close(d, outcome)
      end)
    end
    return true
  end
  d.closing, d.closed = true, true
  forget(d)
  local cur = api.nvim_get_current_win()
  local focus_back = d.focus_back
    or not win_ok(cur)
    or cur == d.prop_win
    or cur == d.orig_win
    or (d.new_tab and api.nvim_win_get_tabpage(cur) == d.tab)
  local ok, err = pcall(function()
    if buf_ok(d.prop_buf) then
      pcall(api.nvim_clear_autocmds, { group = augroup, buffer = d.prop_buf })
    end
    if d.orig_closed_au then
      pcall(api.nvim_del_autocmd, d.orig_closed_au)
    end
    for _, m in ipairs(d.maps or {}) do
      -- (another open diff of the same file keeps the mapping)
      if buf_ok(m.buf) and not shared_orig(m.buf) then
        pcall(vim.keymap.del, "n", m.lhs, { buffer = m.buf })
      end
    end
    local fallback = (d.swapped and d.swapped.buf) or (not d.orig_scratch and d.orig_buf) or nil
    if d.orig_gone then
      take_over(d)
    end
    -- the proposal's window (whatever it shows now) and any other showing it
    close_window(d.prop_win, fallback)
    if buf_ok(d.prop_buf) then
      for _, w in ipairs(vim.fn.win_findbuf(d.prop_buf)) do
        close_window(w, fallback)
      end
    end
    if d.win_created then
      close_window(d.orig_win, fallback)
    else
      restore_window(d)
    end
    restore_winbar(d)
    if buf_ok(d.prop_buf) then
      pcall(api.nvim_buf_delete, d.prop_buf, { force = true })
    end
    if d.holds_autoread then
      d.holds_autoread = false
      release_autoread(d.orig_buf)
    end
    local ob = d.orig_buf
    if buf_ok(ob) then
      local shown = #vim.fn.win_findbuf(ob) > 0
      if d.orig_scratch then
        pcall(api.nvim_buf_delete, ob, { force = true })
      elseif d.orig_created and not shown and not vim.bo[ob].modified then
        pcall(api.nvim_buf_delete, ob, {})
      else
        if vim.bo[ob].buflisted ~= d.orig_listed then
          vim.bo[ob].buflisted = d.orig_listed
        end
        if d.orig_loaded_by_us and not shown and not vim.bo[ob].modified then
          pcall(api.nvim_buf_delete, ob, { unload = true })
        end
      end
    end
  end)
  if focus_back then
    back_to(d.prev_tab, d.prev_win, d.prev_term)
  end
  apply_sizes(d, d.sizes)
  if d.shown then
    util.emit("ClaudeDiffClosed", { tab_name = d.tab_name, file = d.file, outcome = outcome, session = d.session })
    if outcome ~= "rejected" then
      -- what the CLI will write; a file is compared in chunks and owned by
      -- the watch from here (the host has read the accepted file already)
      local expected, keep_src
      if d.accepted_file then
        expected, d.accepted_file = { file = d.accepted_file }, nil
      elseif d.accepted then
        expected = d.accepted
      elseif d.src and d.src.ff ~= "dos" then
        expected, keep_src = { file = d.src.file }, true
      else
        expected = proposal_text(d)
      end
      if expected then
        watch_write(d.file, expected)
      end
    end
  end
  if d.src and not keep_src then
    os.remove(d.src.file) -- the host's copy of the proposal
  end
  if d.accepted_file then
    os.remove(d.accepted_file) -- read by the host when the user accepted
  end
  if not ok then
    error(err, 0)
  end
  return true
end

-- Deciding -------------------------------------------------------------------

-- decide sends the user's decision to the host (the first one counts) and
-- closes the diff on the next tick: decisions come from autocmds, where
-- closing windows and wiping buffers is not allowed.
local function decide(d, kind, closed_by_user)
  if d.decided or d.closing then
    return
  end
  if kind == "accept" and hunks.all_rejected(d) then
    -- every hunk rejected: the file stays as it is, and Claude hears "no"
    kind = "reject"
  end
  d.decided = true
  local cur = api.nvim_get_current_win()
  d.focus_back = closed_by_user or cur == d.prop_win or cur == d.orig_win
  local payload = { id = d.id, decision = kind }
  if kind == "accept" then
    -- Neovim writes the accepted text where the host reads it (a private
    -- directory); the text crosses the channel as a string only when there
    -- is no such place or the write fails.
    local file = d.src and d.src.accepted
    if type(file) == "string" and file ~= "" and write_buffer(d.prop_buf, file) then
      payload.contents_file = file
      d.accepted_file = file
    else
      payload.contents = buffer_contents(d.prop_buf)
      d.accepted = payload.contents
    end
  end
  local outcome = kind == "accept" and "accepted" or "rejected"
  if not send_decision(d, payload) then
    if kind == "accept" then
      notify_now("nvim-claude: Claude is no longer waiting for this diff; nothing was written.", vim.log.levels.WARN)
    end
    d.accepted, outcome = nil, "closed"
    if d.accepted_file then
      os.remove(d.accepted_file)
      d.accepted_file = nil
    end
  end
  vim.schedule(function()
    close(d, outcome)
  end)
end

-- check_gone rejects d when its proposal is no longer on screen: closed
-- (:q, :close, :tabclose, :only elsewhere), replaced in its window, or
-- deleted. Run a tick after the event, so :e! (which unloads and reloads the
-- buffer) is not mistaken for a close.
local function check_gone(d)
  if d.decided or d.closing then
    return
  end
  local b = d.prop_buf
  if buf_ok(b) and api.nvim_buf_is_loaded(b) and #vim.fn.win_findbuf(b) > 0 then
    return
  end
  decide(d, "reject", true)
end

local function on_write(d, args)
  local target = full_path(args.file ~= "" and args.file or args.match)
  if target ~= full_path(api.nvim_buf_get_name(d.prop_buf)) then
    notify_now(
      "nvim-claude: this is Claude's proposal for "
        .. shown_name(d.file)
        .. "; :w accepts it, and it cannot be written under another name.",
      vim.log.levels.WARN
    )
    return
  end
  -- :wall, :wqa and autosave plugins write every modified buffer; Neovim
  -- runs this with the proposal's window made current behind the user's
  -- back (no WinEnter), so user_win tells those from a :w the user typed in
  -- the proposal. Only the latter accepts.
  local from = win_ok(user_win) and user_win or api.nvim_get_current_win()
  if api.nvim_get_current_buf() ~= d.prop_buf or api.nvim_win_get_buf(from) ~= d.prop_buf then
    notify_now(
      "nvim-claude: Claude's proposal for "
        .. shown_name(d.file)
        .. " was not accepted by a write from another window; :w in the proposal or :ClaudeDiffAccept accepts it.",
      vim.log.levels.WARN
    )
    return
  end
  vim.bo[d.prop_buf].modified = false
  decide(d, "accept")
end

-- Opening --------------------------------------------------------------------

local function ensure_augroup()
  if not augroup then
    augroup = api.nvim_create_augroup("nvim-claude-diff", { clear = true })
    user_win = api.nvim_get_current_win()
    api.nvim_create_autocmd("WinEnter", {
      group = augroup,
      desc = "nvim-claude: the window the user is in (a :w there accepts a proposal)",
      callback = function()
        user_win = api.nvim_get_current_win()
      end,
    })
  end
end

local function watch_proposal(d)
  local buf = d.prop_buf
  api.nvim_create_autocmd({ "CursorMoved", "TextChanged", "InsertLeave" }, {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: the hunk counter over the proposal",
    callback = function()
      refresh_counter(d, options())
    end,
  })
  api.nvim_create_autocmd("BufWriteCmd", {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: :w accepts Claude's proposal",
    callback = function(a)
      on_write(d, a)
    end,
  })
  api.nvim_create_autocmd({ "BufHidden", "BufUnload", "BufDelete", "BufWipeout" }, {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: closing Claude's proposal rejects it",
    callback = function()
      if not d.decided and not d.closing then
        vim.schedule(function()
          check_gone(d)
        end)
      end
    end,
  })
  -- Closing the file's pane ends the proposal too (nothing is left waiting
  -- with half a diff on screen); close() then gives the layout back.
  d.orig_closed_au = api.nvim_create_autocmd("WinClosed", {
    group = augroup,
    pattern = tostring(d.orig_win),
    desc = "nvim-claude: closing your side of Claude's proposal rejects it",
    callback = function()
      if d.closing or d.closed then
        return
      end
      d.orig_gone = true
      vim.schedule(function()
        if not d.decided and not d.closing then
          decide(d, "reject", true)
        end
      end)
    end,
  })
  api.nvim_create_autocmd("BufReadCmd", {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: :e! in a proposal puts Claude's text back",
    callback = function()
      -- :e! resets 'eol' and 'fileformat': put back what writes Claude's
      -- bytes exactly, as make_proposal set them
      fill_proposal(d)
    end,
  })
end

-- session_of is the diff's session as the host named it ({id, name}), or
-- nil.
local function session_of(s)
  if type(s) ~= "table" or type(s.id) ~= "string" or s.id == "" then
    return nil
  end
  return { id = s.id, name = util.display(type(s.name) == "string" and s.name or s.id, 60) }
end

-- session_tabs are the tab pages made for sessions (diff.open_in_new_tab =
-- "session"), by session id; t:claude_session and t:claude_session_name
-- name them for a 'tabline'.
local session_tabs = {}

-- to_session_tab makes d.session's tab page current (making it the first
-- time) and reports true, or false when that tab already shows a diff
-- (Neovim would diff it with this one) or cannot be made.
local function to_session_tab(d)
  local s = d.session
  local tab = session_tabs[s.id]
  if tab and api.nvim_tabpage_is_valid(tab) then
    if tab_has_diffs(tab) then
      return false
    end
    api.nvim_set_current_tabpage(tab)
  else
    local ok = pcall(vim.cmd, "tabnew")
    if not ok then
      return false
    end
    tab = api.nvim_get_current_tabpage()
    session_tabs[s.id] = tab
    local empty = api.nvim_get_current_buf()
    api.nvim_win_set_buf(0, d.orig_buf)
    if empty ~= d.orig_buf and buf_ok(empty) and api.nvim_buf_get_name(empty) == "" and not vim.bo[empty].modified then
      pcall(api.nvim_buf_delete, empty, { force = true })
    end
  end
  pcall(api.nvim_tabpage_set_var, tab, "claude_session", s.id)
  pcall(api.nvim_tabpage_set_var, tab, "claude_session_name", s.name)
  -- the sizes to keep are this tab's
  d.sizes = {}
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if not floating(w) then
      d.sizes[w] = { api.nvim_win_get_width(w), api.nvim_win_get_height(w) }
    end
  end
  return true
end

--- The tab page of a Claude session's diffs (diff.open_in_new_tab =
--- "session"), or nil.
---@param id string the session's id (require("claude").sessions())
---@return integer|nil
function M.session_tab(id)
  local tab = session_tabs[id]
  if tab and api.nvim_tabpage_is_valid(tab) then
    return tab
  end
end

-- view is what open answers: what is on screen.
local function view(d)
  return {
    proposal_bufnr = d.prop_buf,
    original_bufnr = d.orig_buf,
    modified = d.modified,
    new_file = d.new_file == true,
    tab = api.nvim_tabpage_get_number(d.tab),
  }
end

-- show ends an open: the cursor on the first change, the warning about a
-- modified buffer, the ClaudeDiffOpened event.
local function show(d, o)
  focus(d, o)
  user_win = api.nvim_get_current_win()
  if d.modified then
    notify_now(
      string.format(
        "nvim-claude: %s has unsaved changes: the diff compares Claude's proposal with your buffer, not with the file on disk.",
        shown_name(d.file)
      ),
      vim.log.levels.WARN
    )
  end
  util.emit("ClaudeDiffOpened", {
    tab_name = d.tab_name,
    file = d.file,
    session = d.session,
    proposal_bufnr = d.prop_buf,
    original_bufnr = d.orig_buf,
  })
  -- the counter walks the hunks: after the diff is on screen
  vim.schedule(function()
    refresh_counter(d, o)
  end)
end

-- The host opens a diff in three calls (args.stage "load", "compare",
-- "show"), each a turn of Neovim's main loop of its own, between which
-- Neovim takes keys and runs timers: loading the two texts, computing the
-- diff (the second :diffthis: seconds for 20 MB), and the first look at
-- it (focus's diff_hlID computes the changed parts of the lines: a second
-- more). In one call Neovim could not take a key for the sum of the three;
-- in three, no longer than for the longest, which it cannot split either.
-- Without args.stage the open is one call (as Lua callers use it). A later
-- stage of a diff that was answered or closed meanwhile does nothing and
-- answers {gone = true}.
local function next_stage(args)
  local d = diffs[args.id]
  if not d or d.closing or d.closed or not layout.win_ok(d.orig_win) or not layout.win_ok(d.prop_win) then
    -- answered or closed between two calls (the user was quick, or
    -- another open superseded it): its decision goes its own way
    return { gone = true }
  end
  local o = options()
  if args.stage == "compare" then
    layout.diff_on(d)
    return view(d)
  end
  d.staged = nil
  show(d, o)
  return view(d)
end

--- Opens a diff for review: the Go host's openDiff, through the bridge's
--- diff_open (lua/claude/bridge/init.lua). Raises an error with a plain message
--- when it cannot open.
---@param args {id: string, tab_name: string, old_path?: string, new_path: string, contents?: string, proposal?: table, chan?: integer}
---@return {proposal_bufnr: integer, original_bufnr: integer, modified: boolean, new_file: boolean, tab: integer}
function M.open(args)
  if args.stage == "compare" or args.stage == "show" then
    return next_stage(args)
  end
  if in_cmdwin() then
    -- Nothing can open while it is (E11); the CLI's own prompt in its
    -- terminal still takes the answer.
    error("close the command-line window (q:) to review Claude's change, or answer in Claude's terminal", 0)
  end
  ensure_augroup()
  for _, id in ipairs(vim.deepcopy(order)) do
    local old = diffs[id]
    -- (the same name from another session, e.g. the same file in another
    -- worktree, is that session's own diff)
    if old and (old.id == args.id or (old.tab_name == args.tab_name and old.owner == args.owner)) then
      close(old, "closed") -- superseded (the host answered it)
    end
  end
  local o = options()
  local file = full_path(args.new_path)
  local d = {
    id = args.id,
    tab_name = args.tab_name,
    owner = args.owner,
    session = session_of(args.session),
    file = file,
    old_file = full_path(args.old_path ~= nil and args.old_path ~= "" and args.old_path or file),
    contents = args.contents or "",
    src = type(args.proposal) == "table" and args.proposal or nil,
    chan = args.chan,
    prev_tab = api.nvim_get_current_tabpage(),
    prev_win = api.nvim_get_current_win(),
    prev_term = api.nvim_get_mode().mode == "t",
    staged = args.stage == "load" or nil,
  }
  d.sizes = {}
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if not floating(w) then
      d.sizes[w] = { api.nvim_win_get_width(w), api.nvim_win_get_height(w) }
    end
  end
  local ok, err = pcall(function()
    current_side(d)
    make_proposal(d)
    if vim.bo[d.orig_buf].filetype ~= "" then
      vim.bo[d.prop_buf].filetype = vim.bo[d.orig_buf].filetype
    else
      detect_filetype(d.prop_buf, d.file)
    end
  end)
  if not ok then
    d.closing = true
    pcall(close, d, "closed")
    error(err, 0)
  end
  local new_tab = o.open_in_new_tab == true or tab_has_diffs(0)
  if o.open_in_new_tab == "session" and d.session then
    -- the session's own tab page (made and named the first time); one
    -- already showing a diff gets a new tab of its own, as below
    new_tab = not to_session_tab(d)
  end
  ok, err = pcall(place, d, o, new_tab)
  if not ok and not new_tab then
    -- no room here (E36): a tab of its own
    undo_place(d)
    ok, err = pcall(place, d, o, true)
  end
  if not ok then
    d.closing = true
    pcall(close, d, "closed")
    error("could not open the diff windows: " .. tostring(err), 0)
  end
  diffs[d.id] = d
  table.insert(order, d.id)
  d.shown = true
  keys.map_keys(d, o, M)
  watch_proposal(d)
  show_hint(d, o)
  if d.staged then
    return view(d)
  end
  show(d, o)
  return view(d)
end

--- Closes diffs by id: the Go host's close_tab, closeAllDiffTabs or a CLI
--- that went away, through the bridge's diff_close.
---@param args {ids?: string[], outcome?: string} outcome defaults to "closed"
---@return integer closed how many of them were open
function M.close(args)
  local n = 0
  for _, id in ipairs(args.ids or {}) do
    local d = diffs[id]
    if d and close(d, args.outcome or "closed") then
      n = n + 1
    end
  end
  return n
end

--- Host events ("diff.<event>").
function M._on_event(event, data)
  if event == "close" then
    M.close(data or {})
  end
end

--- :ClaudeDiffAccept — accept the diff under the cursor (either side) with
--- the proposal as it now reads.
function M.accept()
  local d, err = current()
  if not d then
    return notify_now(err, vim.log.levels.WARN)
  end
  decide(d, "accept")
end

-- on_hunk runs fn (hunks.accept or hunks.reject) on the diff under the
-- cursor and shows the counter.
local function on_hunk(fn)
  local d, err = current()
  if not d then
    return notify_now(err, vim.log.levels.WARN)
  end
  local msg = fn(d)
  if msg then
    return notify_now("nvim-claude: " .. msg, vim.log.levels.WARN)
  end
  refresh_counter(d, options(), true)
end

--- Accepts the hunk under the cursor (diff.keymaps.accept_hunk, `ga`): it is
--- marked and kept, and the cursor goes to the next hunk.
function M.accept_hunk()
  on_hunk(hunks.accept)
end

--- Rejects the hunk under the cursor (diff.keymaps.reject_hunk, `gr`): the
--- current text goes back into the proposal (undoable), and the cursor goes
--- to the next hunk. Accepting a proposal whose every hunk was rejected
--- answers "rejected".
function M.reject_hunk()
  on_hunk(hunks.reject)
end

-- (tests) _watches lists the files watched for the CLI's write, each with
-- the file of its expected bytes when the watch owns one; _stop_watches
-- ends them.
M._watches = watch.list
M._stop_watches = watch.stop_all

-- (tests) the diff whose proposal is buf.
function M._get(buf)
  for _, d in pairs(diffs) do
    if d.prop_buf == buf then
      return d
    end
  end
end

--- :ClaudeDiffReject — reject the diff under the cursor.
function M.reject()
  local d, err = current()
  if not d then
    return notify_now(err, vim.log.levels.WARN)
  end
  decide(d, "reject")
end

--- The diffs waiting for a decision, oldest first:
--- {{tab_name, file, proposal_bufnr, original_bufnr, modified, session?}, …}
--- (session: {id, name} of the Claude session that proposed it, when known).
function M.pending()
  local out = {}
  for _, id in ipairs(order) do
    local d = diffs[id]
    -- a diff the host is still opening (between its load and its show)
    -- is not on screen yet: it is listed once it is
    if d and not d.decided and not d.staged then
      table.insert(out, {
        tab_name = d.tab_name,
        file = d.file,
        proposal_bufnr = d.prop_buf,
        original_bufnr = d.orig_buf,
        modified = d.modified,
        session = d.session and vim.deepcopy(d.session) or nil,
        all_rejected = hunks.all_rejected(d), -- accepting it would mean "no"
      })
    end
  end
  return out
end

function M.attach()
  ensure_augroup()
end

--- The host stopped: nobody waits for the open diffs any more.
function M.detach()
  for _, id in ipairs(vim.deepcopy(order)) do
    local d = diffs[id]
    if d then
      pcall(close, d, "closed")
    end
  end
end

--- (the 'winbar' of a proposal's panes) The bar's text for window win.
M._bar = hint.bar

--- The one-line hint over a proposal: how to answer it, with the keys as
--- configured, keys first.
M.hint_text = hint.hint_text

--- buffer_contents(buf): what writing buf would put in the file (the
--- chat's inline accept reads a proposal the same way).
M.buffer_contents = buffer_contents

return M
