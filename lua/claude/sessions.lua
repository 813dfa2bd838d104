-- Every Claude session at a glance: the Claude terminal and the
-- chats, each "working", "needs input", "done", "idle" or "exited". The
-- state lives in the Go host (package sessions); this module registers the
-- terminal's CLI with it, keeps the last list for statuslines, fires
-- `User ClaudeSessionState`, notifies, and shows :ClaudeSessions.
local config = require("claude.config")
local util = require("claude.util")

local M = {}

local api = vim.api

local cache = {} -- the last list, for statusline()
local line -- statusline() as built from cache; nil once cache changes
local pending_id = nil -- the session of the terminal CLI about to start
local term_ids = {} -- terminal buffer → session id
local term_bufs = {} -- session id → terminal buffer
local panel = { buf = nil }
local handing = {} -- session id → true: hand it over when its turn ends
local plans = {} -- request id → { buf, text }: a terminal's plan buffer

local function server()
  return package.loaded["claude.server"]
end

-- running: the host runs (chats need no IDE server).
local function running()
  local s = server()
  return s ~= nil and s.state().chan ~= nil
end

local function opts()
  return config.options.sessions or {}
end

local function request(method, params)
  if not running() then
    return nil
  end
  local ok, res, err = pcall(server().request, method, params)
  if ok then
    return res, err
  end
  return nil, res
end

local function refresh()
  local res = request("sessions.list", vim.empty_dict())
  if type(res) == "table" then
    cache, line = res, nil
  end
  return cache
end

--- Every session: { {id, name, dir, mode, state, since, cost_usd, waiting,
--- claude_session, pid}, ... }, oldest first.
function M.list()
  if not running() then
    return {}
  end
  return vim.deepcopy(refresh())
end

--- "✻ 2 working · api needs you" (cached state only: cheap for every
--- redraw); "" when no session works or waits. The sessions that need you
--- or are done are named (up to two, then counted): with several at once,
--- which one to look at.
local function build_statusline()
  local n = { working = 0, ["needs input"] = 0, done = 0 }
  local names = { ["needs input"] = {}, done = {} }
  for _, s in ipairs(cache) do
    if n[s.state] then
      n[s.state] = n[s.state] + 1
      if names[s.state] then
        table.insert(names[s.state], util.display(s.name or "?", 20))
      end
    end
  end
  local function who(state, one, many)
    local l = names[state]
    if #l > 0 and #l <= 2 then
      return table.concat(l, ", ") .. " " .. (#l == 1 and one or many)
    end
    return n[state] .. " " .. one
  end
  local parts = {}
  if n.working > 0 then
    table.insert(parts, n.working .. " working")
  end
  if n["needs input"] > 0 then
    table.insert(parts, who("needs input", "needs you", "need you"))
  end
  if n.done > 0 then
    table.insert(parts, who("done", "done", "done"))
  end
  if #parts == 0 then
    return ""
  end
  return "✻ " .. table.concat(parts, " · ")
end

function M.statusline()
  -- a statusline is drawn on every redraw; the cache changes per event
  line = line or build_statusline()
  return line
end

-- Terminal ---------------------------------------------------------------

--- A CLI started with --resume takes that session over: the old record
--- is let go.
local function release_resumed(args)
  for i, a in ipairs(args or {}) do
    if a == "--resume" or a == "-r" then
      M.release(args[i + 1])
    end
  end
end

--- The user's own --settings in argv from index first on (the CLI keeps
--- only the last one, so ours, given last, must carry it).
local function user_settings(argv, first)
  local user
  for i = first, #argv do
    if argv[i] == "--settings" and argv[i + 1] then
      user = argv[i + 1]
    elseif argv[i]:find("^%-%-settings=") then
      user = argv[i]:sub(#"--settings=" + 1)
    end
  end
  return user
end

--- Called by terminal.open before it starts the CLI: registers the
--- session and, with sessions.hooks and the editor tools' socket, adds the
--- --settings layer of our hooks to args. Returns the new args.
function M.terminal_args(args, tools, cwd, port)
  pending_id = nil
  release_resumed(args)
  -- the CLI keeps only the last --settings: ours carries the user's
  local user = user_settings(require("claude.terminal").cmd(args), 2)
  -- HTTP hooks to the IDE server's port (no process per hook), or
  -- command hooks through the editor tools' socket
  local http = opts().http_hooks ~= false and type(port) == "number" and port > 0
  local want = opts().hooks and (http or (tools and tools.socket))
  local res = request("sessions.terminal", {
    dir = cwd or vim.fn.getcwd(-1, -1),
    user_settings = want and user or nil,
    answer = want and opts().answer ~= false or nil,
    port = want and http and port or nil,
  })
  if type(res) ~= "table" or not res.id then
    return args
  end
  pending_id = res.id
  if want and res.warning then
    util.notify("nvim-claude: " .. util.display(res.warning, 300), vim.log.levels.WARN)
  end
  if want and res.settings and res.settings ~= "" then
    args = vim.deepcopy(args or {})
    table.insert(args, "--settings")
    table.insert(args, res.settings)
  end
  return args
end

--- Called by claude.remote before it starts a CLI on the far side:
--- registers the session (here, in cwd: Neovim's directory) and returns its
--- id, or nil. With sessions.hooks and HTTP hooks (the default), the host
--- writes the session's settings layer on the far side, where a command
--- hook could not run: with sessions.http_hooks = false the far session
--- has no hooks, and only its diffs tell its state.
function M.far_terminal_args(args, cwd, port)
  release_resumed(args)
  -- the user's own --settings in the far CLI's arguments: ours, given
  -- last, carries it (JSON only: a far file cannot be read here)
  local user = user_settings(args or {}, 1)
  local want = opts().hooks and opts().http_hooks ~= false and type(port) == "number" and port > 0
  local res = request("sessions.terminal", {
    dir = cwd or vim.fn.getcwd(-1, -1),
    far = true,
    user_settings = want and user or nil,
    answer = want and opts().answer ~= false or nil,
    port = want and port or nil,
  })
  if type(res) ~= "table" or not res.id then
    return nil
  end
  if want and res.warning then
    util.notify("nvim-claude: " .. util.display(res.warning, 300), vim.log.levels.WARN)
  end
  return res.id
end

--- Called by claude.remote just before it opens the far CLI's terminal
--- for session id (far_terminal_args): terminal.open then reports it.
function M.far_terminal_opening(id)
  pending_id = id
end

local function update(id, event, extra)
  local p = extra or {}
  p.id, p.event = id, event
  if not running() then
    return
  end
  server().request_async("sessions.update", p, function() end)
end

--- Called by terminal.open once the CLI runs in buf.
function M.terminal_started(pid, buf)
  if pending_id then
    term_ids[buf], term_bufs[pending_id] = pending_id, buf
    update(pending_id, "pid", { pid = pid })
  end
  pending_id = nil
end

--- Called by terminal when the terminal of buf becomes the current one:
--- among sessions in one tree, the last used gets the selection.
function M.terminal_used(buf)
  local id = buf and term_ids[buf]
  if id then
    update(id, "used")
  end
end

--- Called by claude.remote when the far side of session id could not be
--- opened: its CLI never starts.
function M.far_terminal_failed(id)
  if id then
    update(id, "exited")
  end
end

--- Called by terminal.open when the CLI could not start.
function M.terminal_failed()
  if pending_id then
    update(pending_id, "exited")
  end
  pending_id = nil
end

--- Called by terminal when the CLI of buf exits or is stopped.
function M.terminal_exited(buf)
  local id = buf and term_ids[buf]
  if id then
    update(id, "exited")
    term_ids[buf], term_bufs[id] = nil, nil
  end
end

-- tab_shows: whether a window of the current tab page shows buf.
local function tab_shows(buf)
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == buf then
      return true
    end
  end
  return false
end

-- Visibility -----------------------------------------------------------------

local function chat_of(s)
  local chat = package.loaded["claude.chat"]
  return chat and chat.get(s.id:sub(2)) or nil
end

-- visible: whether the user sees the session now (its window is on this
-- tab page, and Neovim has the desktop's focus).
local function visible(s)
  if not require("claude.terminal").focused() then
    return false
  end
  if s.mode == "chat" then
    local c = chat_of(s)
    return c ~= nil and require("claude.chat").visible(c)
  end
  return term_bufs[s.id] ~= nil and tab_shows(term_bufs[s.id])
end

-- Caps of what the panel and the notices show of a session (each text
-- comes from outside: a directory, the CLI's hooks, a chat's stream).
local NAME_MAX, DIR_MAX, WAITING_MAX = 60, 80, 200

local function name_of(s)
  return util.display(s.name, NAME_MAX)
end

local function other_mode(s)
  return s.mode == "chat" and "the terminal" or "a chat"
end

local function waiting_of(s)
  return util.display(s.waiting, WAITING_MAX)
end

local function notify(s, state)
  local o = opts()
  local msg
  if state == "needs input" then
    local w = waiting_of(s)
    msg = string.format("Claude (%s) needs you%s", name_of(s), w ~= "" and (": " .. w) or "")
  else
    msg = string.format("Claude (%s) is done", name_of(s))
  end
  -- a hidden chat's permission prompt is notified by the chat itself
  -- (chat.notify), and a terminal's diff by the diff review
  -- (notify.needs_input): not twice
  local chat_says = s.mode == "chat" and state == "needs input" and (config.options.chat or {}).notify
  local diff_says = s.mode == "terminal"
    and state == "needs input"
    and (s.waiting or ""):find("^diff: ")
    and (config.options.notify or {}).needs_input
  if o.notify and not chat_says and not diff_says then
    util.notify(msg .. " (:ClaudeSessions)", state == "needs input" and vim.log.levels.WARN or vim.log.levels.INFO)
  end
  if type(o.notifier) == "table" and #o.notifier > 0 then
    local cmd = vim.deepcopy(o.notifier)
    table.insert(cmd, msg)
    pcall(vim.fn.jobstart, cmd, { detach = false })
  end
end

-- remember keeps session x in the cache (the list the host last told).
local function remember(x)
  line = nil
  for i, c in ipairs(cache) do
    if c.id == x.id then
      cache[i] = x
      return
    end
  end
  table.insert(cache, x)
end

--- The host's "sessions.<event>" events. They arrive inside the host's
--- request: nothing here may ask the host back.
function M._on_event(event, data)
  if event == "answered" and type(data) == "table" then
    vim.schedule(function()
      M._settled(data)
    end)
    return
  end
  if event ~= "state" or type(data) ~= "table" or type(data.session) ~= "table" then
    return
  end
  local s = data.session
  remember(s)
  if data.state ~= data.previous then -- not a rename
    util.emit("ClaudeSessionState", { id = data.id, state = data.state, previous = data.previous })
  end
  vim.schedule(function()
    -- the notice first: a panel that fails to draw must not swallow it
    local ok, shown = pcall(visible, s)
    shown = ok and shown
    if data.state ~= data.previous and (data.state == "needs input" or data.state == "done") and not shown then
      notify(s, data.state)
    end
    if data.state == "done" and shown then
      update(s.id, "seen")
    end
    if data.state ~= data.previous then
      M._handover_due(s, data.state)
    end
    if data.state == "needs input" and s.mode == "terminal" and type(s.request) == "table" and s.request.kind == "plan" then
      -- the plan opens above the terminal that presents it, as a chat's
      -- above its transcript (a hidden one's on :ClaudeAnswer)
      local shown_plan, err = pcall(M.open_plan, s, false)
      if not shown_plan then
        util.notify("nvim-claude: cannot open the plan: " .. util.display(err, 200), vim.log.levels.ERROR)
      end
    end
    if panel.buf and api.nvim_buf_is_valid(panel.buf) then
      local drawn, err = pcall(M._render)
      if not drawn then
        util.notify("nvim-claude: cannot draw :ClaudeSessions: " .. util.display(err, 200), vim.log.levels.ERROR)
      end
    end
  end)
end

-- seen: the user looks at a session that is done.
local function on_enter()
  local buf = api.nvim_get_current_buf()
  for _, s in ipairs(cache) do
    if s.state == "done" then
      local c = s.mode == "chat" and chat_of(s)
      local t = s.mode == "terminal" and term_ids[buf] == s.id
      if t or (c and (c.tbuf == buf or c.pbuf == buf)) then
        update(s.id, "seen")
      end
    end
  end
end

local open_tabs = {} -- the terminals' diffs the host was told of: key → {tab, session}

-- (a diff is its tab name and, when the host knew it, its session: two
-- sessions may propose files of one name, in two worktrees)
local function diff_key(tab, sid)
  return tab .. "\0" .. (sid or "")
end

local function diff_event(ev, opened)
  local found = {}
  if ev.data and ev.data.tab_name then
    local sid = type(ev.data.session) == "table" and ev.data.session.id or nil
    found[1] = { tab = ev.data.tab_name, session = sid }
  else
    -- Neovim 0.7 passes no data: compare with the pending diffs
    local diff = package.loaded["claude.diff"]
    local pending = {}
    for _, d in ipairs(diff and diff.pending and diff.pending() or {}) do
      local sid = d.session and d.session.id or nil
      local key = diff_key(d.tab_name, sid)
      pending[key] = true
      if opened and not open_tabs[key] then
        table.insert(found, { tab = d.tab_name, session = sid })
      end
    end
    if not opened then
      for key, e in pairs(open_tabs) do
        if not pending[key] then
          table.insert(found, e)
        end
      end
    end
  end
  for _, e in ipairs(found) do
    -- the chat's diffs are its permission prompts, which it reports
    -- itself; a terminal's is the session the host named, else the host
    -- finds which terminal's CLI is editing
    if next(term_bufs) and not e.tab:find("^%[Claude chat%]") then
      open_tabs[diff_key(e.tab, e.session)] = opened and e or nil
      update(e.session or "", opened and "diff_opened" or "diff_closed", { tab = e.tab })
    end
  end
end

--- Called when the server starts (server.features).
function M.attach()
  local group = api.nvim_create_augroup("nvim-claude-sessions", { clear = true })
  api.nvim_create_autocmd("User", {
    group = group,
    pattern = "ClaudeDiffOpened",
    desc = "nvim-claude: a pending diff is the terminal's question",
    callback = function(ev)
      diff_event(ev, true)
    end,
  })
  api.nvim_create_autocmd("User", {
    group = group,
    pattern = "ClaudeDiffClosed",
    desc = "nvim-claude: the terminal's diff is answered",
    callback = function(ev)
      diff_event(ev, false)
    end,
  })
  api.nvim_create_autocmd({ "BufEnter", "WinEnter", "FocusGained" }, {
    group = group,
    desc = "nvim-claude: a finished session is seen",
    callback = on_enter,
  })
end

function M.detach()
  pcall(api.nvim_del_augroup_by_name, "nvim-claude-sessions")
  -- the CLIs in the background lose their IDE with the host
  require("claude.terminal").close_others()
  cache, line = {}, nil
  pending_id = nil
  open_tabs = {}
  handing = {}
  -- the prompts they were for are gone with the host
  for _, p in pairs(plans) do
    require("claude.plan").close(p.buf)
  end
  plans = {}
end

-- :ClaudeSessions --------------------------------------------------------------

local function since(t)
  local d = os.time() - (tonumber(t) or os.time())
  if d < 60 then
    return d .. "s"
  elseif d < 3600 then
    return math.floor(d / 60) .. "m"
  end
  return math.floor(d / 3600) .. "h"
end

local function line(s)
  local cost = (tonumber(s.cost_usd) or 0) > 0 and string.format("$%.2f", s.cost_usd) or ""
  local w = waiting_of(s)
  return string.format(
    "%-4s %-20s %-9s %-12s %5s %7s  %s%s",
    util.display(s.id, 8),
    name_of(s),
    util.display(s.mode, 10),
    util.display(s.state, 12),
    since(s.since),
    cost,
    util.display(vim.fn.fnamemodify(tostring(s.dir or ""), ":~"), DIR_MAX)
      .. (require("claude.worktree").of_dir(s.dir) and ("  [" .. require("claude.worktree").label(s.dir) .. "]") or ""),
    w ~= "" and ("  — " .. w) or ""
  ) .. (handing[s.id] and ("  → " .. other_mode(s) .. " when the turn ends (h cancels)") or "")
end

-- request_view: the lines that show what session s is asked to allow
-- (its request, from the host: the whole input, or its start and end with
-- what was left out said), the model's description beside it.
local function request_view(r, indent)
  local out = {}
  if type(r) ~= "table" then
    return out
  end
  local n = tonumber(r.line_count) or 0
  table.insert(
    out,
    indent
      .. util.display(r.tool, 60)
      .. (n > 1 and string.format(" (%d lines)", n) or "")
      .. (r.whole == false and " — not all of it is shown here" or "")
      .. ":"
  )
  for _, l in ipairs(type(r.lines) == "table" and r.lines or {}) do
    table.insert(out, indent .. "│ " .. util.display(l, 220))
  end
  if r.description and r.description ~= "" then
    table.insert(out, indent .. "Claude says: " .. util.display(r.description, 200))
  end
  return out
end

-- pending_request: the request of s worth showing in full (one that its
-- one-line summary does not hold).
local function pending_request(s)
  local r = s.state == "needs input" and s.request
  if type(r) == "table" and r.fits ~= true then
    return r
  end
end

function M._render()
  local buf = panel.buf
  local lines = { "id   name                 mode      state        since    cost  dir" }
  panel.ids = {}
  for _, s in ipairs(cache) do
    table.insert(lines, line(s))
    panel.ids[#lines] = s.id
    local r = pending_request(s)
    if r then
      for _, l in ipairs(request_view(r, "     ")) do
        table.insert(lines, l)
        panel.ids[#lines] = s.id
      end
    end
  end
  if #cache == 0 then
    table.insert(lines, "(no session: :ClaudeStart or :ClaudeChat starts one)")
  end
  table.insert(lines, "")
  table.insert(
    lines,
    "<CR> jump · a allow · A always (session) · d deny · x stop · r rename · h continue in the other mode · w new session in a worktree · F finish its worktree · D discard its worktree · q close"
  )
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

local function under_cursor()
  local id = panel.ids and panel.ids[api.nvim_win_get_cursor(0)[1]]
  for _, s in ipairs(cache) do
    if s.id == id then
      return s
    end
  end
end

--- Shows session s (focus: its window).
function M.jump(s)
  if s.mode == "chat" then
    local c = chat_of(s)
    if c then
      require("claude.chat").show(c, true)
    end
  elseif term_bufs[s.id] then
    require("claude.terminal").switch(term_bufs[s.id], true)
  end
end

--- Stops session s.
function M.stop(s)
  if s.mode == "chat" then
    local c = chat_of(s)
    if c then
      require("claude.chat").close(c)
    end
  elseif term_bufs[s.id] then
    require("claude.terminal").stop_buf(term_bufs[s.id])
  end
end

--- :ClaudeSessions: the panel.
function M.open()
  refresh()
  if not (panel.buf and api.nvim_buf_is_valid(panel.buf)) then
    panel.buf = api.nvim_create_buf(false, true)
    vim.bo[panel.buf].bufhidden = "wipe"
    vim.bo[panel.buf].filetype = "claude-sessions"
    util.map(panel.buf, "<CR>", function()
      local s = under_cursor()
      if s then
        M.jump(s)
      end
    end, "nvim-claude: jump to the session")
    util.map(panel.buf, "x", function()
      local s = under_cursor()
      if s then
        M.stop(s)
      end
    end, "nvim-claude: stop the session")
    for key, choice in pairs({ a = "allow", A = "always", d = "deny" }) do
      util.map(panel.buf, key, function()
        local s = under_cursor()
        if s then
          M.answer_in_panel(s, choice)
        end
      end, "nvim-claude: " .. choice .. " what the session asks")
    end
    util.map(panel.buf, "r", function()
      local s = under_cursor()
      if not s then
        return
      end
      vim.ui.input({ prompt = "Rename " .. name_of(s) .. ": ", default = name_of(s) }, function(name)
        if name and vim.trim(name) ~= "" then
          request("sessions.update", { id = s.id, event = "rename", name = name })
          refresh()
          M._render()
        end
      end)
    end, "nvim-claude: rename the session")
    util.map(panel.buf, "h", function()
      local s = under_cursor()
      if s then
        M.handover(s)
      end
    end, "nvim-claude: continue the session in the other mode")
    util.map(panel.buf, "w", function()
      vim.ui.input({ prompt = "New session in a worktree, name (empty: a fresh one): " }, function(name)
        if name == nil then
          return
        end
        name = vim.trim(name)
        require("claude").start_worktree(name ~= "" and name or nil, {})
      end)
    end, "nvim-claude: a new Claude session in its own git worktree")
    util.map(panel.buf, "D", function()
      local s = under_cursor()
      if not (s and require("claude.worktree").of_dir(s.dir)) then
        util.notify("nvim-claude: this session runs in no worktree", vim.log.levels.INFO)
        return
      end
      require("claude.worktree").discard(s.dir, function()
        refresh()
        if panel.buf and api.nvim_buf_is_valid(panel.buf) then
          M._render()
        end
      end, function()
        if s.state ~= "exited" then
          M.stop(s)
        end
      end)
    end, "nvim-claude: discard the session's worktree and branch (asks first)")
    util.map(panel.buf, "F", function()
      local s = under_cursor()
      if not (s and require("claude.worktree").of_dir(s.dir)) then
        util.notify("nvim-claude: this session runs in no worktree", vim.log.levels.INFO)
        return
      end
      require("claude.worktree").finish(s.dir)
    end, "nvim-claude: finish the session's worktree: review its branch, then bring it in")
    util.map(panel.buf, "q", "<cmd>close<CR>", "nvim-claude: close the panel")
  end
  M._render()
  local wins = vim.fn.win_findbuf(panel.buf)
  if #wins == 0 then
    vim.cmd("botright split")
    api.nvim_win_set_buf(0, panel.buf)
    api.nvim_win_set_height(0, math.min(#cache + 4, 15))
  else
    -- already open: the keys that follow must land in it
    api.nvim_set_current_win(wins[1])
  end
  return panel.buf
end

local choices = { allow = "allow", always = "session", deny = "deny" }

-- chat_here: the chat whose transcript is the current buffer, with a
-- prompt waiting.
local function chat_here()
  local chat = package.loaded["claude.chat"]
  local c = chat and chat.current and chat.current()
  if c and c.tbuf == api.nvim_get_current_buf() and #require("claude.chat.permission").pending(c) > 0 then
    return c
  end
end

-- not_shown says why a request is not allowed from where the user stands,
-- and shows it (the lines are displayable; one per line of the notice).
local function not_shown(s, r, how)
  local what
  if (tonumber(r.line_count) or 0) > 1 then
    what = string.format("its %s input has %d lines", util.display(r.tool, 60), r.line_count)
  else
    what = string.format("its %s input is longer than a notice shows", util.display(r.tool, 60))
  end
  local lines = {
    string.format("nvim-claude: not allowed: %s (%s), and you have not seen all of it. It is shown now; read it, then %s.", name_of(s), what, how),
  }
  vim.list_extend(lines, request_view(r, "  "))
  util.notify(table.concat(lines, "\n"), vim.log.levels.WARN)
end

-- A terminal's prompts answered from Neovim ------------------------------------
-- The host holds the CLI's PermissionRequest hook until the user answers
-- here or in the terminal (the CLI takes the first answer); what the
-- terminal settled leaves the list ("sessions.answered").

-- answerable: the request of terminal session s that Neovim can answer
-- (not one a pending diff shows better: that is answered in the diff).
local function answerable(s)
  local r = s.mode == "terminal" and s.state == "needs input" and s.request
  if type(r) == "table" and type(r.request_id) == "string" and r.request_id ~= "" and not (s.waiting or ""):find("^diff: ") then
    return r
  end
end

local function redraw_panel()
  if panel.buf and api.nvim_buf_is_valid(panel.buf) then
    refresh()
    pcall(M._render)
  end
end

-- send answers the terminal prompt r of s; it says why when it cannot.
local function send(s, r, params)
  params.request_id = r.request_id
  local res, err = request("sessions.answer", params)
  if res == nil then
    util.notify("nvim-claude: " .. name_of(s) .. ": " .. util.display(err or "the host is not running", 300), vim.log.levels.WARN)
    return false
  end
  redraw_panel()
  return true
end

-- deny sends r back: a plan with the user's edits as comments when there
-- are, else with the reason asked for (empty: just denied).
local function deny(s, r)
  local prompt = "Reason for Claude (empty: just deny): "
  if r.kind == "plan" then
    local p = plans[r.request_id]
    local comments = p and require("claude.plan").comments(p.buf, p.text)
    if comments then
      send(s, r, { behavior = "deny", message = comments })
      return
    end
    prompt = "What should change in the plan? "
  end
  vim.ui.input({ prompt = prompt }, function(reason)
    if reason == nil then
      return -- cancelled: the prompt stays
    end
    reason = vim.trim(reason)
    send(s, r, { behavior = "deny", message = reason ~= "" and reason or nil })
  end)
end

--- Opens the plan terminal session s presents (ExitPlanMode) in a markdown
--- buffer — above the session's terminal when this tab page shows it;
--- with focus, above the current window too, and goes there. Its keys are
--- the chat's: :w sends the edits back as comments, ga approves (manual
--- mode), gA approves and accepts edits. Returns the buffer.
function M.open_plan(s, focus)
  local r = answerable(s)
  if not (r and r.kind == "plan") then
    return nil
  end
  local p = plans[r.request_id]
  if not (p and api.nvim_buf_is_valid(p.buf)) then
    local res, err = request("sessions.plan", { request_id = r.request_id })
    if type(res) ~= "table" then
      util.notify("nvim-claude: cannot show the plan: " .. util.display(err or "the host is not running", 300), vim.log.levels.WARN)
      return nil
    end
    local lines = {}
    for _, l in ipairs(type(res.lines) == "table" and res.lines or {}) do
      table.insert(lines, util.display(l, 0))
    end
    local text = table.concat(lines, "\n")
    p = { text = text }
    p.buf = require("claude.plan").create({
      name = string.format("claude-plan://%s/%s.md", s.id, (r.request_id:gsub("/", "-"))),
      plan = text,
      var = { session = s.id, request_id = r.request_id },
      augroup = api.nvim_create_augroup("nvim-claude-sessions-plans", { clear = false }),
      on_comments = function(comments)
        send(s, r, { behavior = "deny", message = comments })
      end,
      on_approve = function(mode)
        if res.cut == true then
          util.notify("nvim-claude: this plan is too long to show here in full: approve it in the terminal, or :w your comments", vim.log.levels.WARN)
          return
        end
        send(s, r, { behavior = "allow", mode = mode })
      end,
    })
    plans[r.request_id] = p
  end
  local wins = vim.fn.win_findbuf(p.buf)
  if #wins > 0 then
    if focus then
      api.nvim_set_current_win(wins[1])
    end
    return p.buf
  end
  local at
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if term_bufs[s.id] and api.nvim_win_get_buf(w) == term_bufs[s.id] then
      at = w
      break
    end
  end
  if not (at or focus) then
    return p.buf -- the terminal is elsewhere: :ClaudeAnswer shows the plan
  end
  local cur = api.nvim_get_current_win()
  api.nvim_win_call(at or cur, function()
    vim.cmd("aboveleft split")
    api.nvim_win_set_buf(0, p.buf)
  end)
  if focus then
    api.nvim_set_current_win(vim.fn.win_findbuf(p.buf)[1])
  elseif api.nvim_win_is_valid(cur) then
    api.nvim_set_current_win(cur)
  end
  return p.buf
end

--- A terminal's prompt left the list (the host's "sessions.answered":
--- {id, request_id, by = "neovim", "terminal" or "gone"}): its plan buffer
--- goes, saying so when the answer came from elsewhere.
function M._settled(data)
  local p = plans[data.request_id]
  plans[data.request_id] = nil
  if p then
    require("claude.plan").close(p.buf)
    if data.by == "terminal" then
      util.notify("nvim-claude: the plan was answered in the terminal", vim.log.levels.INFO)
    elseif data.by == "gone" then
      util.notify("nvim-claude: the plan is no longer asked for (the CLI withdrew it)", vim.log.levels.INFO)
    end
  end
  redraw_panel()
end

-- panel_rows: the first and last line of session s in the panel.
local function panel_rows(s)
  local first, last
  for row, id in pairs(panel.ids or {}) do
    if id == s.id then
      first = math.min(first or row, row)
      last = math.max(last or row, row)
    end
  end
  return first, last
end

--- Answers what session s asks from the :ClaudeSessions panel (a, A, d):
--- a terminal's permission prompt, allowed only when the panel shows all
--- of it on screen (otherwise it is brought into view and this press
--- allows nothing), a plan (it opens; approve it there), or a chat's
--- prompt (shown in the chat, answered there).
function M.answer_in_panel(s, choice)
  if s.mode == "chat" then
    M.jump(s)
    local c = chat_of(s)
    if c and s.state == "needs input" then
      require("claude.chat.permission").jump(c)
      util.notify("nvim-claude: answer the chat's prompt there, with the cursor on it", vim.log.levels.INFO)
    end
    return
  end
  local r = answerable(s)
  if not r then
    util.notify(
      s.state == "needs input" and ("nvim-claude: " .. name_of(s) .. " is answered in the terminal (or its diff): <CR> goes there")
        or ("nvim-claude: " .. name_of(s) .. " asks nothing"),
      vim.log.levels.INFO
    )
    return
  end
  if choice == "deny" then
    deny(s, r)
    return
  end
  if r.kind == "plan" then
    M.open_plan(s, true)
    util.notify("nvim-claude: read the plan: ga approves it, gA approves and accepts edits, :w sends your edits back", vim.log.levels.INFO)
    return
  end
  if r.whole == false then
    util.notify(
      "nvim-claude: not allowed: this request is too long to show here in full; allow it in the terminal, or deny it (d)",
      vim.log.levels.WARN
    )
    return
  end
  local first, last = panel_rows(s)
  local win = vim.fn.win_findbuf(panel.buf)[1]
  if not (first and win) then
    return
  end
  -- nvim_win_call gives back one value
  local view = api.nvim_win_call(win, function()
    return { vim.fn.line("w0"), vim.fn.line("w$") }
  end)
  local top, bottom = view[1], view[2]
  if first < top or last > bottom then
    api.nvim_win_set_cursor(win, { first, 0 })
    api.nvim_win_call(win, function()
      pcall(vim.cmd, "normal! zt")
    end)
    util.notify("nvim-claude: the whole request is on screen now: read it, then press the key again", vim.log.levels.WARN)
    return
  end
  send(s, r, { behavior = "allow", scope = choice == "always" and "session" or "once" })
end

-- answer_terminal: :ClaudeAnswer [choice] at the terminal prompt r of s
-- that Neovim can answer. Without a choice it shows the prompt (the
-- terminal, the request in a notice; a plan in its buffer); an allow is
-- given when the notice can show all of the request (else the panel shows
-- it, and a or A there allows it); a plan is approved from its buffer.
local function answer_terminal(s, r, choice)
  if r.kind == "plan" then
    -- approved from its buffer only: the plan is what the user reads
    local p = plans[r.request_id]
    local here = p ~= nil and api.nvim_get_current_buf() == p.buf
    local b = M.open_plan(s, choice ~= "deny")
    if choice == "deny" then
      deny(s, r)
    elseif choice and here then
      send(s, r, { behavior = "allow", mode = "manual" })
    elseif b then
      util.notify("nvim-claude: read the plan: ga approves it, gA approves and accepts edits, :w sends your edits back", vim.log.levels.INFO)
    end
    return
  end
  if choice == "deny" then
    deny(s, r)
    return
  end
  if choice and r.fits == true then
    send(s, r, { behavior = "allow", scope = choice == "always" and "session" or "once" })
    return
  end
  if choice then
    if r.whole == false then
      util.notify(
        "nvim-claude: not allowed: the request of " .. name_of(s) .. " is too long to show here in full; allow it in the terminal, or deny it",
        vim.log.levels.WARN
      )
      return
    end
    M.open()
    local first = panel_rows(s)
    if first then
      api.nvim_win_set_cursor(0, { first, 0 })
      pcall(vim.cmd, "normal! zt")
    end
    not_shown(s, r, "allow it in the panel (a, or A for the session), or in the terminal")
    return
  end
  M.jump(s)
  local lines = { string.format("nvim-claude: %s asks to allow (answer in the terminal, or :ClaudeAnswer allow|always|deny):", name_of(s)) }
  vim.list_extend(lines, request_view(r, "  "))
  util.notify(table.concat(lines, "\n"), vim.log.levels.WARN)
end

--- :ClaudeAnswer [allow|always|deny]. In a chat's transcript it answers
--- the prompt under the cursor (with the cursor elsewhere there, it says
--- where the waiting one is). Anywhere else it goes to the session that
--- has waited longest and shows its question — a chat's permission prompt
--- (the oldest of that chat), the terminal's pending diff, or else the
--- terminal at the CLI's prompt (with the request it is asked to allow,
--- in a notice) — and, given a choice, answers it: a chat's can_use_tool
--- request (always: for the session), the terminal's diff (allow and
--- always accept, deny rejects), the terminal's permission prompt (through
--- the CLI's PermissionRequest hook: answer_terminal) or its plan (in the
--- plan buffer). An allow is given from elsewhere only when the one-line
--- notice showed all of the input; otherwise the request is shown and the
--- allow waits for a second :ClaudeAnswer at it (a terminal's: a or A in
--- :ClaudeSessions). Returns the session, or nil when none waits.
function M.answer(choice)
  if choice == "" then
    choice = nil
  end
  if choice and not choices[choice] then
    util.notify(string.format('nvim-claude: :ClaudeAnswer takes "allow", "always" or "deny", not %q', choice), vim.log.levels.ERROR)
    return nil
  end
  refresh()
  local perm_mod = package.loaded["claude.chat"] and require("claude.chat.permission")
  local here = perm_mod and chat_here()
  if here then
    -- the user reads this transcript: what is under the cursor is seen
    if choice then
      perm_mod.answer(here, choices[choice])
    else
      perm_mod.jump(here)
    end
    for _, s in ipairs(cache) do
      if s.id == "c" .. tostring(here.id) then
        return s
      end
    end
    return nil
  end
  local oldest
  for _, s in ipairs(cache) do
    if s.state == "needs input" and (not oldest or s.since < oldest.since) then
      oldest = s
    end
  end
  if not oldest then
    util.notify("nvim-claude: no session waits for you", vim.log.levels.INFO)
    return nil
  end
  if oldest.mode == "chat" then
    local c = chat_of(oldest)
    if not c then
      return nil
    end
    local chat = require("claude.chat")
    chat.show(c, true)
    local perm = require("claude.chat.permission")
    if not (perm.jump(c) and choice) then
      return oldest
    end
    local r = oldest.request
    if choice ~= "deny" and not (type(r) == "table" and r.fits == true and r.request_id == perm.pending(c)[1]) then
      if type(r) == "table" then
        not_shown(oldest, r, string.format("allow it there (:ClaudeAnswer %s again, with the cursor on it)", choice))
      else
        util.notify("nvim-claude: not allowed from here: the request is shown now; answer it there", vim.log.levels.WARN)
      end
      return oldest
    end
    perm.answer(c, choices[choice])
    return oldest
  end
  local diff = package.loaded["claude.diff"]
  for _, d in ipairs(diff and diff.pending and diff.pending() or {}) do
    if not (d.tab_name or ""):find("^%[Claude chat%]") then
      for _, w in ipairs(vim.fn.win_findbuf(d.proposal_bufnr)) do
        api.nvim_set_current_win(w)
        if choice == "deny" then
          diff.reject()
        elseif choice then
          diff.accept()
        end
        return oldest
      end
    end
  end
  local ar = answerable(oldest)
  if ar then
    answer_terminal(oldest, ar, choice)
    return oldest
  end
  M.jump(oldest)
  local r = oldest.request
  if type(r) == "table" then
    local lines = { string.format("nvim-claude: %s asks to allow (answer in the terminal):", name_of(oldest)) }
    vim.list_extend(lines, request_view(r, "  "))
    util.notify(table.concat(lines, "\n"), vim.log.levels.WARN)
  end
  if choice then
    util.notify("nvim-claude: this prompt is answered in the terminal (sessions.answer is off, or the hooks are)", vim.log.levels.INFO)
  end
  return oldest
end

--- :ClaudeStartNew [args]: another Claude terminal beside the running one,
--- which goes on in the background (:ClaudeSessions brings it back).
function M.start_new(args)
  if config.options.terminal.provider == "none" then
    return require("claude").start(args)
  end
  local st = require("claude").serve_quiet()
  if not st then
    return nil
  end
  require("claude.terminal").open_another(st.port, args)
  return st
end

-- Handover ---------------------------------------------------------------------

--- Stops whichever session runs the CLI conversation claude_session
--- (except the chat except_chat), so that another mode can resume it:
--- called before a chat or the terminal resumes a session.
function M.release(claude_session, except_chat)
  if not claude_session or claude_session == "" then
    return
  end
  for _, s in ipairs(refresh()) do
    if s.claude_session == claude_session and s.state ~= "exited" and s.id ~= except_chat then
      M.stop(s)
    end
  end
end

-- hand_over continues s in the other mode now.
local function hand_over(s)
  M.stop(s)
  if s.mode == "chat" then
    -- beside a running terminal, whose CLI goes on
    M.start_new({ "--resume", s.claude_session })
  else
    require("claude.chat").open({ resume = s.claude_session, cwd = s.dir })
  end
end

--- Continues session s in the other mode (the CLI's --resume): a chat in
--- the Claude terminal, the terminal's conversation in a chat. The other
--- side is stopped first. A session whose turn still runs (working, or
--- waiting for an answer) is handed over when that turn ends, so that its
--- last answer goes along; asked again meanwhile, the wait is cancelled.
function M.handover(s)
  if not s.claude_session or s.claude_session == "" then
    util.notify(
      "nvim-claude: the CLI's session id of " .. name_of(s) .. " is not known yet (it comes with the first turn; for the terminal, through its hooks)",
      vim.log.levels.WARN
    )
    return
  end
  if handing[s.id] then
    handing[s.id] = nil
    util.notify(string.format("nvim-claude: %s stays where it is (the handover is cancelled)", name_of(s)), vim.log.levels.INFO)
  elseif s.state == "working" or s.state == "needs input" then
    handing[s.id] = true
    util.notify(
      string.format(
        "nvim-claude: %s is %s: it continues in %s when its turn ends, with every message (h on it again cancels)",
        name_of(s),
        s.state == "working" and "still working" or "waiting for your answer",
        other_mode(s)
      ),
      vim.log.levels.INFO
    )
  else
    hand_over(s)
    return
  end
  if panel.buf and api.nvim_buf_is_valid(panel.buf) then
    pcall(M._render)
  end
end

--- The sessions waiting to be handed over when their turn ends (ids).
function M.handovers()
  local out = {}
  for id in pairs(handing) do
    table.insert(out, id)
  end
  table.sort(out)
  return out
end

-- handover_due runs a handover that waited for the turn of s to end.
local function handover_due(s, state)
  if not handing[s.id] or state == "working" or state == "needs input" then
    return
  end
  handing[s.id] = nil
  if state == "exited" then
    util.notify(string.format("nvim-claude: %s exited before its turn ended: not handed over", name_of(s)), vim.log.levels.WARN)
    return
  end
  hand_over(s)
end
M._handover_due = handover_due

return M
