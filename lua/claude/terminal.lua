-- The Claude Code CLI in a terminal split.
local config = require("claude.config")
local util = require("claude.util")

local M = {}

local term = { bufnr = nil, job_id = nil, pid = nil, snacks = nil }
-- the terminals running in the background, oldest first (Several
-- terminals, below)
local others = {}
local warned_snacks = false

local loopback = { "localhost", "127.0.0.1", "::1" }

-- with_loopback appends the loopback names to a no_proxy list, so a proxy
-- in the environment does not swallow the CLI's connection to us.
local function with_loopback(list)
  local have = {}
  local parts = {}
  for item in (list or ""):gmatch("[^,]+") do
    item = vim.trim(item)
    if item ~= "" then
      have[item] = true
      table.insert(parts, item)
    end
  end
  for _, name in ipairs(loopback) do
    if not have[name] then
      table.insert(parts, name)
    end
  end
  return table.concat(parts, ",")
end

--- The environment for a CLI that talks to the server on port. tools is
--- M.editor_tools()'s answer: the editor tools' socket goes in the
--- environment of this CLI only (its token stays in a 0600 file beside it).
function M.env(port, tools)
  local user = config.options.env or {}
  local env = {}
  for k, v in pairs(user) do
    env[k] = tostring(v)
  end
  if tools then
    env.NVIM_CLAUDE_MCP_SOCKET = tools.socket
  end
  env.CLAUDE_CODE_SSE_PORT = tostring(port)
  env.ENABLE_IDE_INTEGRATION = "true"
  env.no_proxy = with_loopback(user.no_proxy or vim.env.no_proxy)
  env.NO_PROXY = with_loopback(user.NO_PROXY or vim.env.NO_PROXY)
  return env
end

--- The editor tools (the "nvim" MCP server) as the host serves them under
--- the editor_tools options: {socket, tools, mcp_config,
--- add_command}, or nil when they are off or the server is not running.
function M.editor_tools()
  local server = require("claude.server")
  if not server.is_running() then
    return nil
  end
  local info = server.request("edtools", vim.empty_dict())
  if type(info) == "table" and info.enabled then
    return info
  end
  return nil
end

-- with_tools adds the editor tools' --mcp-config to the CLI's arguments.
-- The option takes several values, so it goes last: nothing of the user's
-- (a prompt) may follow it.
local function with_tools(args, tools)
  local out = vim.deepcopy(args or {})
  if tools and tools.mcp_config then
    table.insert(out, "--mcp-config")
    table.insert(out, tools.mcp_config)
  end
  return out
end

--- The command line: terminal_cmd plus extra args.
function M.cmd(args)
  local base = config.options.terminal_cmd
  local cmd
  if type(base) == "table" then
    cmd = vim.deepcopy(base)
  else
    -- a string is split like a shell word list would be for the simple case
    cmd = vim.split(base, "%s+", { trimempty = true })
  end
  for _, a in ipairs(args or {}) do
    table.insert(cmd, a)
  end
  return cmd
end

local function alive()
  return term.bufnr and vim.api.nvim_buf_is_valid(term.bufnr) and term.job_id
    and vim.fn.jobwait({ term.job_id }, 0)[1] == -1
end

local function window()
  if not term.bufnr then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == term.bufnr then
      return win
    end
  end
end

-- open_float shows buf in a centred floating window.
local function open_float(buf)
  local f = config.options.terminal.float
  local width = math.max(math.floor(vim.o.columns * f.width), 20)
  local height = math.max(math.floor((vim.o.lines - vim.o.cmdheight) * f.height), 5)
  return vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = f.border,
    style = "minimal",
  })
end

-- open_window shows buf in a new split (or float) and returns the window,
-- which is then the current window.
local function open_window(buf)
  local opts = config.options.terminal
  if opts.layout == "float" then
    return open_float(buf)
  end
  local side = opts.split_side
  local vertical = side == "right" or side == "left"
  local total = vertical and vim.o.columns or vim.o.lines
  local size = opts.width < 1 and math.floor(total * opts.width) or opts.width
  local cmd = ({
    right = "botright vsplit",
    left = "topleft vsplit",
    bottom = "botright split",
    top = "topleft split",
  })[side]
  vim.cmd(cmd)
  local win = vim.api.nvim_get_current_win()
  if vertical then
    vim.api.nvim_win_set_width(win, math.max(size, 20))
  else
    vim.api.nvim_win_set_height(win, math.max(size, 5))
  end
  vim.api.nvim_win_set_buf(win, buf)
  return win
end

-- The fewest rows (columns, for a terminal at the top or bottom) a
-- terminal keeps when another is stacked beside it.
local MIN_STACKED = 8

-- terminal_windows are the split windows of this tab that show one of our
-- terminals other than the current one, the oldest terminal first.
local function terminal_windows()
  local out = {}
  for _, t in ipairs(others) do
    if t.bufnr and t.bufnr ~= term.bufnr then
      for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        if vim.api.nvim_win_get_buf(w) == t.bufnr and not util.floating(w) then
          table.insert(out, w)
        end
      end
    end
  end
  return out
end

-- window_beside shows buf where the other terminals are, and returns that
-- window (then the current one) and, when it was another terminal's, that
-- terminal's buffer; nil when none shows here. Stacked in
-- their column (their row, for a terminal at the top or bottom), so that
-- a third session does not squeeze the first to nothing; when there is no
-- room for one more, in the window of the oldest shown (Neovim 0.8+ keeps
-- redrawing a terminal it does not show; 0.7 does not, so there it
-- stacks).
local function window_beside(buf)
  local opts = config.options.terminal
  if opts.layout == "float" then
    return nil
  end
  local wins = terminal_windows()
  if #wins == 0 then
    return nil
  end
  local vertical = opts.split_side == "right" or opts.split_side == "left"
  local last = wins[#wins]
  local size = vertical and vim.api.nvim_win_get_height(last) or vim.api.nvim_win_get_width(last)
  if size >= 2 * MIN_STACKED + 1 or vim.fn.has("nvim-0.8") == 0 then
    vim.api.nvim_set_current_win(last)
    local keep = vertical and vim.api.nvim_win_get_width(last) or vim.api.nvim_win_get_height(last)
    local ok = pcall(vim.cmd, vertical and "belowright split" or "belowright vsplit")
    if ok then
      local win = vim.api.nvim_get_current_win()
      if vertical then
        pcall(vim.api.nvim_win_set_width, win, keep)
      else
        pcall(vim.api.nvim_win_set_height, win, keep)
      end
      vim.api.nvim_win_set_buf(win, buf)
      return win
    end
  end
  local was = vim.api.nvim_win_get_buf(wins[1])
  vim.api.nvim_set_current_win(wins[1])
  vim.api.nvim_win_set_buf(wins[1], buf)
  return wins[1], was
end

local function show(focus)
  if term.snacks then
    term.snacks:show()
    if focus then
      term.snacks:focus()
      vim.cmd("startinsert")
    end
    return term.snacks.win
  end
  local win = window()
  if not win then
    local prev = vim.api.nvim_get_current_win()
    win = window_beside(term.bufnr) or open_window(term.bufnr)
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.wo[win].signcolumn = "no"
    if not focus then
      vim.api.nvim_set_current_win(prev)
    end
  end
  if focus then
    vim.api.nvim_set_current_win(win)
    vim.cmd("startinsert")
  end
  return win
end

-- snacks returns snacks.nvim when terminal.provider asks for it and it is
-- installed; otherwise it says once that the native terminal is used.
local function snacks()
  if config.options.terminal.provider ~= "snacks" then
    return nil
  end
  local ok, mod = pcall(require, "snacks")
  if ok and type(mod) == "table" and mod.terminal and mod.terminal.open then
    return mod
  end
  if not warned_snacks then
    warned_snacks = true
    util.notify(
      'nvim-claude: terminal.provider = "snacks" but snacks.nvim is not installed; using the native terminal',
      vim.log.levels.WARN
    )
  end
  return nil
end

local function snacks_win_opts()
  local opts = config.options.terminal
  if opts.layout == "float" then
    return { position = "float", width = opts.float.width, height = opts.float.height, border = opts.float.border }
  end
  local vertical = opts.split_side == "right" or opts.split_side == "left"
  local win = { position = opts.split_side }
  if vertical then
    win.width = opts.width
  else
    win.height = opts.width
  end
  return win
end

local function open_snacks(S, cmd, opts, focus)
  local ok, w = pcall(S.terminal.open, cmd, {
    cwd = opts.cwd,
    env = opts.env,
    interactive = focus,
    auto_close = false,
    win = snacks_win_opts(),
  })
  if not ok or not w or not w.buf then
    return nil, tostring(w)
  end
  local job = vim.b[w.buf].terminal_job_id
  if not job then
    return nil, "snacks.nvim opened no terminal job"
  end
  term = { bufnr = w.buf, job_id = job, pid = vim.fn.jobpid(job), snacks = w }
  -- snacks has its own exit handling; watch the job to keep our state true.
  vim.api.nvim_create_autocmd("TermClose", {
    buffer = w.buf,
    once = true,
    desc = "nvim-claude: the CLI exited",
    callback = function()
      local code = vim.v.event and vim.v.event.status or 0
      vim.schedule(function()
        M._on_exit(job, code)
      end)
    end,
  })
  return term
end

-- Review ---------------------------------------------------------------------

-- Permission modes in which the CLI applies edits without asking: no diff
-- review opens (":ClaudeReview" still lists what changed).
local UNREVIEWED = { auto = true, acceptEdits = true, bypassPermissions = true, dontAsk = true }

-- The CLI's default when neither its arguments nor its settings name a
-- mode (CLI 2.1.33x: auto).
local CLI_DEFAULT_MODE = "auto"

local told_unreviewed = false -- the notice is given once per Neovim session

-- arg_mode is the --permission-mode a command line gives, if any.
local function arg_mode(cmd)
  for i, a in ipairs(cmd) do
    if a == "--permission-mode" then
      return cmd[i + 1]
    end
    local v = type(a) == "string" and a:match("^%-%-permission%-mode=(.+)$")
    if v then
      return v
    end
  end
end

-- settings_mode is permissions.defaultMode from the CLI's settings files
-- (user, project, local: the later wins), as far as a small local read
-- tells; nil when none names one or a file cannot be read or parsed.
local function settings_mode()
  local dir = config.claude_config_dir()
  local cwd = vim.fn.getcwd(-1, -1)
  local mode, from
  for _, f in ipairs({ dir .. "/settings.json", cwd .. "/.claude/settings.json", cwd .. "/.claude/settings.local.json" }) do
    local fh = io.open(f, "r")
    if fh then
      local text = fh:read(1024 * 1024) or ""
      fh:close()
      local ok, t = pcall(vim.json.decode, text)
      if ok and type(t) == "table" and type(t.permissions) == "table" and type(t.permissions.defaultMode) == "string" then
        mode, from = t.permissions.defaultMode, f
      end
    end
  end
  return mode, from
end

--- The permission mode the CLI starts in with these extra arguments, and
--- where it comes from ("arguments", "option", the settings file's path, or
--- "the CLI's default").
---@param args? string[]
---@return string mode, string from
function M.permission_mode(args)
  local m = arg_mode(M.cmd(args))
  if m then
    return m, "arguments"
  end
  m = config.options.terminal.permission_mode
  if m then
    return m, "option"
  end
  local from
  m, from = settings_mode()
  if m then
    return m, from
  end
  return CLI_DEFAULT_MODE, "the CLI's default"
end

--- Whether the CLI applies edits without asking in mode (no diff review).
function M.unreviewed(mode)
  return UNREVIEWED[mode] == true
end

-- with_mode adds terminal.permission_mode to the arguments unless the
-- command line names a mode already (the user's own arguments win).
local function with_mode(args)
  local m = config.options.terminal.permission_mode
  if not m or arg_mode(M.cmd(args)) then
    return args
  end
  local out = { "--permission-mode", m }
  for _, a in ipairs(args or {}) do
    table.insert(out, a)
  end
  return out
end

-- tell_unreviewed says once per Neovim session, at the first start in a
-- mode that applies edits unasked, that no review will open and how to
-- have one.
local function tell_unreviewed(args)
  if told_unreviewed then
    return
  end
  local mode, from = M.permission_mode(args)
  if not UNREVIEWED[mode] then
    return
  end
  told_unreviewed = true
  util.notify(
    string.format(
      "nvim-claude: Claude runs in %s mode (%s): its edits land on disk without the diff review. "
        .. 'For review, set terminal = { permission_mode = "manual" } in setup() '
        .. "(or :ClaudeStart --permission-mode manual); :ClaudeReview lists what changed.",
      util.display(mode, 40),
      util.display(from, 200)
    ),
    vim.log.levels.WARN
  )
end

--- The arguments of a CLI on the far side (claude.remote): the
--- permission mode as here; no editor tools, whose socket is this
--- machine's (its session's HTTP hooks reach the IDE server's far port:
--- the host adds their --settings, a file it writes there).
function M.remote_args(args)
  tell_unreviewed(args)
  return with_mode(args)
end

--- Opens the CLI in a terminal split (or shows the one already running).
--- port is the IDE server's port; args are extra CLI arguments; cwd is
--- where the CLI runs (nil: Neovim's cwd; a session worktree's path).
--- argv, when given, is the whole command line (a far CLI's: ssh -t …).
function M.open(port, args, focus, cwd, argv)
  if focus == nil then
    focus = true
  end
  if alive() then
    show(focus)
    return term
  end
  local tools = not argv and M.editor_tools() or nil
  cwd = cwd or vim.fn.getcwd(-1, -1)
  if not argv then
    tell_unreviewed(args)
    args = with_mode(args)
    args = with_tools(require("claude.sessions").terminal_args(args, tools, cwd, port), tools)
  end
  local env = M.env(port, tools)
  local S = snacks()
  if S then
    local t, err = open_snacks(S, argv or M.cmd(args), { cwd = cwd, env = env }, focus)
    if t then
      pcall(vim.api.nvim_buf_set_var, t.bufnr, "claude_terminal", true)
      -- our keys before the FileType event: the user's mappings there win
      require("claude.dictation").map_buffer(t.bufnr)
      vim.bo[t.bufnr].filetype = "claude"
      require("claude.sessions").terminal_started(t.pid, t.bufnr)
      return t
    end
    util.notify("nvim-claude: snacks.nvim could not open the terminal (" .. err .. "); using the native one", vim.log.levels.WARN)
  end
  local prev = vim.api.nvim_get_current_win()
  local buf = vim.api.nvim_create_buf(false, false)
  local win, was = window_beside(buf)
  win = win or open_window(buf)
  local cmd = argv or M.cmd(args)
  local opts = {
    cwd = cwd,
    env = env,
    on_exit = function(job, code)
      vim.schedule(function()
        M._on_exit(job, code)
      end)
    end,
  }
  local ok, job
  if vim.fn.has("nvim-0.11") == 1 then
    opts.term = true
    ok, job = pcall(vim.fn.jobstart, cmd, opts)
  else
    ok, job = pcall(vim.fn.termopen, cmd, opts)
  end
  if not ok or job <= 0 then
    require("claude.sessions").terminal_failed()
    if was then
      pcall(vim.api.nvim_win_set_buf, win, was) -- the terminal it replaced comes back
    else
      pcall(vim.api.nvim_win_close, win, true)
    end
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
    local why = not ok and tostring(job) or (job == -1 and (cmd[1] .. " is not executable") or "invalid arguments")
    util.notify(
      string.format(
        "nvim-claude: could not start %s: %s (%s)",
        util.display(table.concat(cmd, " "), 300),
        util.display(why, 200),
        argv and "check the remote option: :checkhealth claude" or "set the terminal_cmd option"
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  term = { bufnr = buf, job_id = job, pid = vim.fn.jobpid(job), snacks = nil }
  require("claude.sessions").terminal_started(term.pid, buf)
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].buflisted = false
  pcall(vim.api.nvim_buf_set_var, buf, "claude_terminal", true)
  -- our keys before the FileType event: the user's mappings there win
  require("claude.dictation").map_buffer(buf)
  vim.bo[buf].filetype = "claude"
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = "no"
  if focus then
    vim.cmd("startinsert")
  else
    vim.api.nvim_set_current_win(prev)
  end
  return term
end

function M._on_exit(job, code)
  if term.job_id ~= job then
    M._on_other_exit(job, code)
    return
  end
  local buf = term.bufnr
  term = { bufnr = nil, job_id = nil, pid = nil, snacks = nil }
  require("claude.sessions").terminal_exited(buf)
  -- A clean exit closes the split; a failure stays on screen to be read.
  if code == 0 and buf and vim.api.nvim_buf_is_valid(buf) then
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        pcall(vim.api.nvim_win_close, win, true)
      end
    end
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end

--- Show / focus / hide the terminal. Returns false when there is none.
function M.toggle()
  if not alive() then
    return false
  end
  if term.snacks then
    local w = term.snacks
    if w:valid() and w.win == vim.api.nvim_get_current_win() then
      w:hide()
    else
      show(true)
    end
    return true
  end
  local win = window()
  if win and win == vim.api.nvim_get_current_win() then
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
  elseif win then
    vim.api.nvim_set_current_win(win)
    vim.cmd("startinsert")
  else
    show(true)
  end
  return true
end

--- Stops the CLI and closes its terminal.
function M.close()
  local job, buf = term.job_id, term.bufnr
  term = { bufnr = nil, job_id = nil, pid = nil, snacks = nil }
  if job then
    require("claude.sessions").terminal_exited(buf)
    pcall(vim.fn.jobstop, job)
    vim.fn.jobwait({ job }, 2000)
  end
  if buf and vim.api.nvim_buf_is_valid(buf) then
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        pcall(vim.api.nvim_win_close, win, true)
      end
    end
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end

--- Whether buf is a Claude terminal this plugin started (the running one or
--- another session's: open and open_another mark them b:claude_terminal).
---@param buf integer
---@return boolean
function M.owns(buf)
  return vim.b[buf].claude_terminal and true or false
end

--- {bufnr, job_id, pid} of the running terminal, or nil.
function M.info()
  if alive() then
    return { bufnr = term.bufnr, job_id = term.job_id, pid = term.pid }
  end
  return nil
end

--- Whether the terminal is shown in the current tab page.
function M.visible()
  return alive() and window() ~= nil or false
end

local focused = true -- Neovim's own window has the desktop's focus

--- Whether Neovim has the desktop's focus (FocusLost / FocusGained).
function M.focused()
  return focused
end
local hid_for_diff = false

-- A diff waits for the user: tell them when they are not looking at Claude
-- (terminal hidden, or Neovim not focused), and get a floating terminal
-- out of the diff's way while it is open.
local function on_diff_opened(ev)
  local data = ev.data
  if not data then
    -- Neovim 0.7 passes no data to User autocmds: the newest pending diff
    -- is the one that just opened.
    local diff = package.loaded["claude.diff"]
    local pending = diff and diff.pending and diff.pending() or {}
    data = pending[#pending] or {}
  end
  local looking = M.visible() and focused
  if term.bufnr and config.options.terminal.layout == "float" and not term.snacks then
    local win = window()
    if win and win ~= vim.api.nvim_get_current_win() then
      pcall(vim.api.nvim_win_close, win, false)
      hid_for_diff = true
    end
  end
  if looking then
    return
  end
  util.emit("ClaudeNeedsInput", { tab_name = data.tab_name, file = data.file, session = data.session })
  if config.options.notify.needs_input then
    -- with several sessions, whose proposal it is
    local who = type(data.session) == "table" and data.session.name and ("Claude (" .. data.session.name .. ")")
      or "Claude"
    util.notify(
      string.format(
        "%s proposes a change to %s: review the diff (:w accepts, :q rejects)",
        util.display(who, 80),
        util.display(vim.fn.fnamemodify(data.file or "?", ":~:."), 200)
      ),
      vim.log.levels.WARN
    )
  end
end

local function on_diff_closed()
  if hid_for_diff then
    hid_for_diff = false
    local diff = package.loaded["claude.diff"]
    if alive() and not (diff and diff.pending and #diff.pending() > 0) then
      show(false)
    end
  end
end

-- Several terminals ----------------------------------------------
-- The terminal the commands act on (:ClaudeToggle, :ClaudeSend…) is `term`;
-- :ClaudeStartNew moves it to `others`, where its CLI runs on, and starts
-- another. :ClaudeSessions makes one current again (switch).

local function job_alive(t)
  return t.bufnr and vim.api.nvim_buf_is_valid(t.bufnr) and t.job_id and vim.fn.jobwait({ t.job_id }, 0)[1] == -1
end

-- close_windows closes buf's windows (never the last one).
local function close_windows(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if #vim.api.nvim_list_wins() > 1 then
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
end

--- :ClaudeStartNew: another CLI in a terminal, beside the running one
--- (which goes on in the background).
function M.open_another(port, args, focus, cwd)
  -- where it runs: --ssh / --container / --devcontainer / --local, or the
  -- remote option (a session worktree, cwd, is always here)
  local remote = require("claude.remote")
  local far, rargs, ferr = remote.split_args(args)
  local r, rerr = remote.resolve(far)
  if ferr or rerr then
    util.notify("nvim-claude: " .. (ferr or rerr), vim.log.levels.ERROR)
    return nil
  end
  local prev = alive() and term or nil
  if prev then
    -- its window stays (a terminal Neovim 0.7 does not show is not
    -- redrawn); the new one opens beside it
    table.insert(others, prev)
    term = { bufnr = nil, job_id = nil, pid = nil, snacks = nil }
  end
  local function restore(t)
    if not t and prev and not alive() then
      -- it did not start: the running one stays the current terminal
      for i, o in ipairs(others) do
        if o == prev then
          table.remove(others, i)
          term = prev
          break
        end
      end
    end
  end
  if r and not cwd then
    remote.start_terminal(port, rargs, r, focus, restore)
    return nil
  end
  local t = M.open(port, rargs, focus, cwd)
  restore(t)
  return t
end

--- Every running terminal: { {bufnr, job_id, pid, current}, ... }.
function M.all()
  local out = {}
  if alive() then
    table.insert(out, { bufnr = term.bufnr, job_id = term.job_id, pid = term.pid, current = true })
  end
  for _, t in ipairs(others) do
    if job_alive(t) then
      table.insert(out, { bufnr = t.bufnr, job_id = t.job_id, pid = t.pid, current = false })
    end
  end
  return out
end

--- Makes the terminal of buf the current one and shows it (focus: go to
--- it). Returns false when no running terminal has that buffer.
function M.switch(buf, focus)
  if term.bufnr ~= buf then
    for i, t in ipairs(others) do
      if t.bufnr == buf and job_alive(t) then
        table.remove(others, i)
        if alive() then
          table.insert(others, term)
        end
        term = t
        break
      end
    end
  end
  if term.bufnr ~= buf or not alive() then
    return false
  end
  require("claude.sessions").terminal_used(buf)
  show(focus)
  return true
end

--- Stops the terminal of buf (the current one or one in the background).
function M.stop_buf(buf)
  if term.bufnr == buf then
    M.close()
    return
  end
  for i, t in ipairs(others) do
    if t.bufnr == buf then
      table.remove(others, i)
      require("claude.sessions").terminal_exited(buf)
      pcall(vim.fn.jobstop, t.job_id)
      vim.fn.jobwait({ t.job_id }, 2000)
      close_windows(buf)
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
      return
    end
  end
end

--- Stops the terminals in the background (:ClaudeStop, the host's end).
function M.close_others()
  local bufs = {}
  for _, t in ipairs(others) do
    table.insert(bufs, t.bufnr)
  end
  for _, b in ipairs(bufs) do
    M.stop_buf(b)
  end
end

function M._on_other_exit(job, code)
  for i, t in ipairs(others) do
    if t.job_id == job then
      table.remove(others, i)
      require("claude.sessions").terminal_exited(t.bufnr)
      if code == 0 and vim.api.nvim_buf_is_valid(t.bufnr) then
        close_windows(t.bufnr)
        pcall(vim.api.nvim_buf_delete, t.bufnr, { force = true })
      end
      return
    end
  end
end

--- Called when the server starts (server.features): watches diffs and focus.
function M.attach()
  -- the editor_tools options reach the host, which starts (or not) the
  -- editor tools for CLIs run elsewhere too
  pcall(M.editor_tools)
  local group = vim.api.nvim_create_augroup("nvim-claude-terminal", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "ClaudeDiffOpened",
    desc = "nvim-claude: ClaudeNeedsInput, float out of the diff's way",
    callback = on_diff_opened,
  })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "ClaudeDiffClosed",
    desc = "nvim-claude: bring a hidden float back",
    callback = on_diff_closed,
  })
  vim.api.nvim_create_autocmd({ "FocusLost", "FocusGained" }, {
    group = group,
    desc = "nvim-claude: track whether Neovim has the desktop's focus",
    callback = function(ev)
      focused = ev.event == "FocusGained"
    end,
  })
end

function M.detach()
  pcall(vim.api.nvim_del_augroup_by_name, "nvim-claude-terminal")
end

return M
