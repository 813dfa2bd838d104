-- The review queue (:ClaudeReview): every file Claude changed in the
-- current turn (or the session), in the quickfix list and a small panel;
-- a file's diff against its baseline; reverting a hunk or a file; marking
-- files reviewed. The Go host (review/) keeps the baselines and answers
-- what to show and what a revert changes; this module only displays.
local config = require("claude.config")
local util = require("claude.util")

local M = {}

local api = vim.api

-- The queue as last listed, and the panel showing it.
local state = {
  count = 0, -- files of the current turns not reviewed (the statusline)
  scope = "turn",
  items = {}, -- review_list's items
  panel = nil, -- the panel's buffer
  listed = 0, -- how many listings came (tests wait for the next)
  asked = 0, -- listings asked for: an answer to an older one is stale
  seq = 0, -- the host's number of the listing the count came from
}

-- Takes a count of the host's (an event's or a turn listing's) unless a
-- newer one came already: events and answers may arrive in either order.
local function take_count(count, seq)
  if not count or (seq and seq <= state.seq) then
    return
  end
  state.seq = seq or state.seq
  if count ~= state.count then
    state.count = count
    util.emit("ClaudeReviewChanged", { count = state.count })
  end
end

local function keys()
  return config.options.review.keys
end

local function request(method, params)
  return require("claude.server").request(method, params)
end

local function ref(it)
  return { scope = state.scope, session = it.session, path = it.path }
end

-- A path as a line shows it (paths come from transcripts): from the
-- workspace when inside it; a refused one in full.
local function rel(path)
  return util.display(vim.fn.fnamemodify(path, ":~:."))
end

-- The panel's letter of each items().status (documented in :help
-- claude-review-status).
local status_letter = { modified = "M", new = "A", deleted = "D", binary = "B", unreadable = "?", refused = "!" }

-- Whether an item has a diff to open (a binary file is listed only, one
-- that cannot be read now has nothing to diff, and one the file boundary
-- refuses is never read).
local function diffable(it)
  return it.status ~= "binary" and it.status ~= "unreadable" and it.status ~= "refused"
end

-- " [wt:name]" when the item's session runs in a worktree (or the item is
-- of a worktree's branch), "" otherwise; displayable.
local function worktree_tag(it)
  local l = type(it.dir) == "string" and it.dir ~= "" and require("claude.worktree").label(it.dir) or ""
  return l ~= "" and (" [" .. l .. "]") or ""
end

--- The text of one item, as the panel and the quickfix list show it.
local function describe(it)
  local counts = diffable(it) and string.format("+%d -%d", it.added, it.removed) or it.status
  local why = ""
  if it.status == "new" then
    why = " (new)"
  elseif it.status == "deleted" then
    why = " (deleted)"
  elseif it.status == "refused" then
    why = ": " .. util.display(it.refused or "outside the workspace", 80)
  end
  return string.format(
    "%s %s %s%s · %s%s",
    it.reviewed and "[x]" or "[ ]",
    status_letter[it.status] or "?",
    counts,
    why,
    util.display(it.label, 40),
    worktree_tag(it)
  )
end

-- The path as the panel shows it: a refused file's in full, so that the
-- user sees where Claude's change went.
local function shown_path(it)
  if it.status == "refused" then
    return util.display(it.path)
  end
  return rel(it.path)
end

--- "3 to review" for a statusline ("" when nothing waits).
---@return string
function M.statusline()
  if state.count > 0 then
    return string.format("%d to review", state.count)
  end
  return ""
end

--- How many files of the current turns are not reviewed.
---@return integer
function M.count()
  return state.count
end

-- How many listings came (internal: tests wait for the next one).
function M._listed()
  return state.listed
end

--- The queue as last listed: items with session, label, path, status,
--- added, removed, reviewed.
function M.items()
  return vim.deepcopy(state.items)
end

local function qf_is_ours()
  local ok, info = pcall(vim.fn.getqflist, { title = 0 })
  return ok and type(info.title) == "string" and info.title:find("^Claude review") ~= nil
end

local function set_qf(replace)
  local qitems = {}
  for _, it in ipairs(state.items) do
    if it.status == "refused" or util.display(it.path) ~= it.path then
      -- never a jump to a refused file (nor a name that is not one line)
      qitems[#qitems + 1] = { text = describe(it) .. "  " .. shown_path(it), valid = 0 }
    else
      qitems[#qitems + 1] = { filename = it.path, lnum = it.line, col = 1, text = describe(it) }
    end
  end
  local title = "Claude review (" .. state.scope .. ")"
  if state.scope == "branch" and state.items[1] then
    title = "Claude review (branch" .. worktree_tag(state.items[1]) .. ")"
  end
  if replace then
    if not qf_is_ours() then
      return
    end
    vim.fn.setqflist({}, "r", { title = title, items = qitems })
  else
    vim.fn.setqflist({}, qf_is_ours() and "r" or " ", { title = title, items = qitems })
  end
end

-- The panel's window in the current tab (never another tab's: commands
-- must not jump between tabs).
local function panel_win()
  if not (state.panel and api.nvim_buf_is_valid(state.panel)) then
    return nil
  end
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == state.panel then
      return w
    end
  end
end

-- Whether the panel shows in any tab.
local function panel_shown()
  return state.panel and api.nvim_buf_is_valid(state.panel) and #vim.fn.win_findbuf(state.panel) > 0
end

-- What a scope is called in a message.
local function scope_words(scope)
  if scope == "session" then
    return "session"
  elseif scope == "branch" then
    return "worktree's branch (none is under review, or all of it is dropped)"
  end
  return "current turn"
end

local function render_panel()
  local buf = state.panel
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return
  end
  local lines = {}
  if #state.items == 0 then
    lines[1] = "Nothing to review in the " .. scope_words(state.scope) .. "."
  end
  for _, it in ipairs(state.items) do
    lines[#lines + 1] = describe(it) .. "  " .. shown_path(it)
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

--- The item of path in the list (of session, when given: sessions may
--- change the same file), and its index.
local function find(path, session)
  for i, it in ipairs(state.items) do
    if it.path == path and (session == nil or it.session == session) then
      return it, i
    end
  end
end

local function panel_item()
  local win = panel_win()
  if not win or api.nvim_get_current_buf() ~= state.panel then
    return nil
  end
  return state.items[api.nvim_win_get_cursor(win)[1]]
end

local function open_panel()
  local height = config.options.review.panel_height
  if height == 0 then
    return
  end
  if not (state.panel and api.nvim_buf_is_valid(state.panel)) then
    local buf = api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].filetype = "claude-review"
    pcall(api.nvim_buf_set_name, buf, "claude-review://queue")
    state.panel = buf
    local k = keys()
    -- on_item: fn of the entry under the cursor, if any
    local function on_item(fn)
      return function()
        local it = panel_item()
        if it then
          fn(it)
        end
      end
    end
    util.map(buf, k.open, on_item(M.open_diff), "open the file's diff against its baseline")
    util.map(buf, k.mark, on_item(M.mark), "mark the file reviewed")
    util.map(buf, k.revert_file, on_item(M.revert_file), "revert the file (Claude's hunks)")
    util.map(buf, k.next, function()
      M.next(1)
    end, "next file to review")
    util.map(buf, k.prev, function()
      M.next(-1)
    end, "previous file to review")
    util.map(buf, k.close, function()
      local win = panel_win()
      if win and #api.nvim_list_wins() > 1 then
        api.nvim_win_close(win, true)
      end
    end, "close the review panel")
  end
  render_panel()
  if not panel_win() then
    vim.cmd("botright " .. math.floor(height) .. "split")
    api.nvim_win_set_buf(0, state.panel)
    vim.wo.winfixheight = true
    vim.wo.cursorline = true
    vim.wo.number = false
  else
    api.nvim_set_current_win(panel_win())
  end
end

-- Takes a listing: the items, and the count of those not reviewed (the
-- statusline's, so that it says what the list shows).
local function take(res)
  state.items = res.items or {}
  state.listed = state.listed + 1
  if res.scope == "turn" then
    take_count(res.count, res.seq)
  end
end

-- Asks the host for the list; cb(res) runs with the answer unless a later
-- listing was asked for meanwhile (answers may come out of order: an older
-- list must not replace what the last one showed).
local function list(scope, cb)
  state.asked = state.asked + 1
  local mine = state.asked
  require("claude.server").request_async("review_list", { scope = scope }, function(res, err)
    if mine ~= state.asked then
      return
    end
    if not res then
      util.notify(util.display(err or "nvim-claude: the review queue did not answer"), vim.log.levels.ERROR)
      return
    end
    take(res)
    cb(res)
  end)
end

--- Lists the queue again from the host; cb() runs after.
local function refresh(cb)
  list(state.scope, function()
    render_panel()
    set_qf(true)
    if cb then
      cb()
    end
  end)
end

--- :ClaudeReview [session]: lists the files Claude changed in the current
--- turn (or the session) in the quickfix list and the panel.
---@param scope string? "turn" (default) or "session"
local augroup

-- Counts are of the file on disk: a write of a listed file lists again.
local function watch_writes()
  if augroup then
    return
  end
  augroup = api.nvim_create_augroup("nvim-claude-review", { clear = true })
  api.nvim_create_autocmd("BufWritePost", {
    group = augroup,
    desc = "nvim-claude: the review queue's counts follow a write",
    callback = function(ev)
      if find(api.nvim_buf_get_name(ev.buf)) and (panel_shown() or qf_is_ours()) then
        refresh()
      end
    end,
  })
end

function M.open(scope)
  watch_writes()
  scope = (scope == nil or scope == "") and "turn" or scope
  if scope ~= "turn" and scope ~= "session" and scope ~= "branch" then
    util.notify("nvim-claude: :ClaudeReview takes no argument, `session` or `branch`, not " .. util.display(scope, 40), vim.log.levels.ERROR)
    return
  end
  state.scope = scope
  list(scope, function()
    set_qf(false)
    open_panel()
    if #state.items == 0 then
      util.notify("nvim-claude: nothing to review in the " .. scope_words(scope))
    end
  end)
end

--- Shows a branch review the host started (review_branch's answer): the
--- worktree's files against the merge base, in the same panel, quickfix
--- list and keys (gr and gR drop a hunk or a file in the worktree's copy).
function M.show_branch(res)
  watch_writes()
  state.scope = "branch"
  state.branch = true
  state.asked = state.asked + 1 -- an older listing's answer is stale now
  take(res)
  set_qf(false)
  open_panel()
end

--- Ends the branch review (its worktree was brought in): the host forgets
--- it, and a panel or quickfix list showing it empties.
function M.end_branch()
  if not state.branch then
    return
  end
  state.branch = false
  require("claude.server").request_async("review_branch_end", {}, function() end)
  if state.scope == "branch" then
    state.items = {}
    render_panel()
    if qf_is_ours() then
      set_qf(true)
    end
  end
end

-- The review of the diff in the current tab, if it is one.
local function diff_ctx()
  local ok, r = pcall(api.nvim_tabpage_get_var, 0, "claude_review")
  if ok and type(r) == "table" then
    return r
  end
end

--- Opens the file's diff against its baseline in a new tab (Neovim's
--- diff mode: the baseline on the left, the file itself on the right).
function M.open_diff(it)
  if it.status == "binary" then
    util.notify("nvim-claude: " .. rel(it.path) .. " is binary: listed, not diffed", vim.log.levels.WARN)
    return
  end
  if it.status == "unreadable" then
    util.notify("nvim-claude: " .. rel(it.path) .. " cannot be read now: nothing to diff", vim.log.levels.WARN)
    return
  end
  -- (A refused file too: the host says why, judging it again now.)
  local res, err = request("review_baseline", ref(it))
  if not res then
    util.notify(util.display(err), vim.log.levels.ERROR)
    return
  end
  if res.binary then
    util.notify("nvim-claude: " .. rel(it.path) .. " is binary: listed, not diffed", vim.log.levels.WARN)
    return
  end
  vim.cmd("tabedit " .. vim.fn.fnameescape(it.path))
  local file_win, file_buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  vim.cmd("leftabove vnew")
  local base = api.nvim_get_current_buf()
  vim.bo[base].buftype = "nofile"
  vim.bo[base].bufhidden = "wipe"
  vim.bo[base].swapfile = false
  api.nvim_buf_set_lines(base, 0, -1, false, res.lines)
  vim.bo[base].modifiable = false
  vim.bo[base].filetype = vim.bo[file_buf].filetype
  pcall(api.nvim_buf_set_name, base, "claude-baseline://" .. it.path)
  vim.cmd("diffthis")
  api.nvim_set_current_win(file_win)
  vim.cmd("diffthis")
  api.nvim_tabpage_set_var(0, "claude_review", { session = it.session, path = it.path, scope = state.scope, buf = file_buf, base = base })
  local k = keys()
  local mapped = {} -- the keys set in the user's file (theirs stay theirs)
  for _, b in ipairs({ base, file_buf }) do
    local theirs = b == file_buf
    local function m(lhs, fn, desc)
      if util.map(b, lhs, fn, desc, { theirs = theirs }) and theirs then
        mapped[#mapped + 1] = lhs
      end
    end
    m(k.revert_hunk, M.revert_hunk, "revert Claude's hunk under the cursor")
    m(k.revert_file, function()
      M.revert_file()
    end, "revert the file (Claude's hunks)")
    m(k.mark, function()
      M.mark()
    end, "mark the file reviewed")
    m(k.next, function()
      M.next(1)
    end, "next file to review")
    m(k.prev, function()
      M.next(-1)
    end, "previous file to review")
  end
  -- The file's own keys go with the baseline (its tab closed).
  api.nvim_create_autocmd("BufWipeout", {
    buffer = base,
    once = true,
    callback = function()
      if not api.nvim_buf_is_valid(file_buf) then
        return
      end
      -- Another review tab of the same file (another session's entry)
      -- still needs them.
      for _, tp in ipairs(api.nvim_list_tabpages()) do
        local ok, r = pcall(api.nvim_tabpage_get_var, tp, "claude_review")
        if ok and type(r) == "table" and r.buf == file_buf and r.base ~= base and api.nvim_buf_is_valid(r.base) then
          return
        end
      end
      for _, lhs in ipairs(mapped) do
        pcall(vim.keymap.del, "n", lhs, { buffer = file_buf })
      end
    end,
  })
  local first = it.line or 1
  pcall(api.nvim_win_set_cursor, file_win, { math.max(1, math.min(first, api.nvim_buf_line_count(file_buf))), 0 })
end

-- The item a command acts on: the diff's in a review tab, the panel's
-- line, else the current buffer's file.
local function current_item(it)
  if it then
    return it
  end
  local r = diff_ctx()
  if r then
    return find(r.path, r.session) or { session = r.session, path = r.path }
  end
  local p = panel_item()
  if p then
    return p
  end
  return find(api.nvim_buf_get_name(0))
end

--- Reverts Claude's hunk under the cursor in the file's diff: its
--- baseline lines go back into the buffer (undoable; :w saves). Refused
--- where you changed those lines since.
function M.revert_hunk()
  local r = diff_ctx()
  if not r or not api.nvim_buf_is_valid(r.buf) then
    util.notify("nvim-claude: not in a :ClaudeReview diff", vim.log.levels.WARN)
    return
  end
  -- The cursor's line is the file's, or on the left the baseline's.
  local cur = api.nvim_get_current_buf()
  if cur ~= r.buf and cur ~= r.base then
    util.notify("nvim-claude: not in a :ClaudeReview diff", vim.log.levels.WARN)
    return
  end
  local line = api.nvim_win_get_cursor(0)[1]
  local res, err = request("review_revert_hunk", {
    scope = r.scope,
    session = r.session,
    path = r.path,
    line = line,
    side = cur == r.base and "baseline" or "file",
    lines = api.nvim_buf_get_lines(r.buf, 0, -1, false),
  })
  if not res then
    util.notify(util.display(err), vim.log.levels.WARN)
    return
  end
  api.nvim_buf_set_lines(r.buf, res.start, res["end"], false, res.lines)
  pcall(vim.cmd, "diffupdate")
end

--- Reverts the whole file: every hunk of Claude's goes back to the
--- baseline (a buffer without unsaved changes: the host writes the file,
--- through the same file boundary as every write, and the buffer follows;
--- u undoes it in the buffer); a file Claude created is deleted after
--- asking. Refused where you changed Claude's lines since, and for a file
--- outside the workspace or on the deny-list.
function M.revert_file(it)
  it = current_item(it)
  if not it then
    util.notify("nvim-claude: no file of the review queue here", vim.log.levels.WARN)
    return
  end
  -- The host judges the file now (a symlink swapped in since the listing
  -- leads out): a refused file is not even loaded.
  local okc, cerr = request("review_check", ref(it))
  if not okc then
    util.notify(util.display(cerr), vim.log.levels.WARN)
    return
  end
  local params = { scope = state.scope, session = it.session, path = it.path, lines = {} }
  local buf = vim.fn.bufadd(it.path)
  vim.fn.bufload(buf)
  if not vim.bo[buf].modified then
    -- A buffer loaded before Claude wrote the file (and not entered
    -- since) holds the old text: the revert works on the file's.
    util.checktime(buf)
  end
  params.lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  params.write = not vim.bo[buf].modified and not vim.bo[buf].readonly
  params.readonly = not vim.bo[buf].modified and vim.bo[buf].readonly
  local res, err = request("review_revert_file", params)
  if not res then
    util.notify(util.display(err), vim.log.levels.WARN)
    return
  end
  if res.delete then
    if vim.fn.confirm("Delete " .. rel(it.path) .. ", which Claude created?", "&Delete\n&Keep", 2) ~= 1 then
      return
    end
    local ok, derr = request("review_delete", ref(it))
    if not ok then
      util.notify(util.display(derr), vim.log.levels.ERROR)
      return
    end
    if diff_ctx() then
      pcall(vim.cmd, "tabclose")
    end
    pcall(api.nvim_buf_delete, buf, { force = true })
  else
    for _, e in ipairs(res.edits) do
      api.nvim_buf_set_lines(buf, e.start, e["end"], false, e.lines)
    end
    if res.written then
      -- The buffer holds what the host wrote: its 'endofline' too, and
      -- unmodified; a :checktime makes its file time the file's.
      if res.eol ~= nil then
        vim.bo[buf].eol = res.eol
      end
      vim.bo[buf].modified = false
      util.checktime(buf)
    elseif params.readonly then
      util.notify("nvim-claude: reverted in the buffer, not written: E45: 'readonly' option is set", vim.log.levels.ERROR)
    end
    pcall(vim.cmd, "diffupdate")
  end
  refresh()
end

--- Marks the file reviewed (or, when it is, not reviewed).
function M.mark(it)
  it = current_item(it)
  if not it then
    util.notify("nvim-claude: no file of the review queue here", vim.log.levels.WARN)
    return
  end
  local res, err = request("review_mark", {
    scope = state.scope,
    session = it.session,
    path = it.path,
    reviewed = not it.reviewed,
  })
  if not res then
    util.notify(util.display(err), vim.log.levels.WARN)
    return
  end
  it.reviewed = res.reviewed
  refresh()
end

--- Opens the diff of the next (dir 1) or previous (-1) file not reviewed.
function M.next(dir)
  local cur = current_item()
  local n = #state.items
  local i = 0
  if cur then
    local _, idx = find(cur.path, cur.session)
    i = idx or 0
  end
  if i == 0 and dir < 0 then
    i = n + 1 -- from no entry, [r starts at the last
  end
  for step = 1, n do
    local j = ((i - 1 + dir * step) % n) + 1
    local it = state.items[j]
    -- a binary (or unreadable) file has no diff to go to: mark it in the panel
    if it and not it.reviewed and diffable(it) and j ~= i then
      if diff_ctx() then
        vim.cmd("tabclose")
      end
      M.open_diff(it)
      return
    end
  end
  util.notify("nvim-claude: no other file to review")
end

--- The host stopped: its queue went with it.
function M.detach()
  local had = state.count > 0 or #state.items > 0
  state.count, state.items, state.seq = 0, {}, 0 -- (a new host counts from 0)
  render_panel()
  if qf_is_ours() then
    set_qf(true)
  end
  if had then
    util.emit("ClaudeReviewChanged", { count = 0 })
  end
end

--- Events of the Go host: "changed" when the queue changes.
function M._on_event(ev, data)
  if ev == "changed" then
    local seq = data and data.seq
    if not (seq and seq <= state.seq) then
      state.seq = seq or state.seq
      state.count = data and data.count or 0
      util.emit("ClaudeReviewChanged", { count = state.count })
    end
    if panel_shown() or qf_is_ours() then
      refresh()
    end
  end
end

return M
