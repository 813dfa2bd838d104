-- nvim-claude: Claude Code in Neovim. Public Lua interface; see
-- :help nvim-claude.
local util = require("claude.util")

local M = {}

M.version = require("claude.version")

local setup_done = false

--- Applies options. Starts nothing (unless auto_start): the Go host starts
--- on the first command.
---@param opts? claude.Config
function M.setup(opts)
  local config = require("claude.config")
  -- A second setup() changes what it names and keeps the rest.
  local problems = config.apply(opts, setup_done and config.options or nil)
  if #problems > 0 then
    util.notify_now("nvim-claude: " .. table.concat(problems, "; "), vim.log.levels.ERROR)
  end
  require("claude.commands").create()
  if setup_done then
    -- A running host takes the new options now (a second setup() that
    -- turns execute.confirm on must not wait for the next :ClaudeStart).
    local ok, err = require("claude.server").send_options()
    if not ok then
      util.notify_now(err, vim.log.levels.ERROR)
    end
  end
  if config.options.auto_start and not setup_done then
    M._auto_start()
  end
  setup_done = true
end

-- auto_start starts the server after Neovim's first screen, never on its
-- way: once Neovim has entered (VimEnter) and its UI is there (UIEnter; the
-- TUI of 0.10+ attaches after VimEnter), on a later turn of the main loop,
-- when the screen has been flushed. Headless (no UI coming) it starts right
-- after VimEnter (its process starts at setup(): no screen to keep clear);
-- a UI that never attaches does not hold it back past 1 s. The host starts
-- its server by itself (server.spawn_early): the lock file does not wait
-- for Neovim's main loop, nor the main loop for the host.
function M._auto_start()
  local started = false
  -- The host starts the server by itself as soon as its process is up (the
  -- lock does not wait for the main loop); the requests that report it
  -- (serve_quiet) follow once it has and Neovim has entered, so that the
  -- main loop never waits for the host process to start.
  local spawned, host_ready, entered_loop = nil, false, false
  local function finish()
    if host_ready and entered_loop then
      host_ready = false
      M.serve_quiet()
    end
  end
  local function spawn()
    if spawned == nil then
      spawned = require("claude.server").spawn_early(function()
        host_ready = true
        finish()
      end) ~= nil
    end
  end
  local function start()
    if started then
      return
    end
    started = true
    pcall(vim.api.nvim_del_augroup_by_name, "nvim-claude-auto-start")
    -- a timer, not vim.schedule: it runs after the loop's next flush
    vim.defer_fn(function()
      spawn()
      entered_loop = true
      if spawned then
        finish()
      else
        M.serve_quiet() -- says why the job did not start
      end
    end, 0)
  end
  local function ui_expected()
    for _, a in ipairs(vim.v.argv) do
      if a == "--headless" then
        return false
      end
    end
    return true
  end
  if not ui_expected() then
    -- No screen to draw first: the host process starts beside Neovim's own
    -- startup.
    spawn()
  end
  local function entered()
    if #vim.api.nvim_list_uis() > 0 or not ui_expected() then
      return start()
    end
    vim.api.nvim_create_autocmd("UIEnter", {
      group = vim.api.nvim_create_augroup("nvim-claude-auto-start", { clear = false }),
      desc = "nvim-claude: auto_start once the UI is there",
      once = true,
      callback = start,
    })
    vim.defer_fn(start, 1000)
  end
  if vim.v.vim_did_enter == 1 then
    return entered()
  end
  vim.api.nvim_create_autocmd("VimEnter", {
    group = vim.api.nvim_create_augroup("nvim-claude-auto-start", { clear = true }),
    desc = "nvim-claude: auto_start",
    once = true,
    callback = entered,
  })
end

local function fail(msg)
  util.notify_now(msg, vim.log.levels.ERROR)
  return nil
end

--- Starts the IDE server without a terminal; returns the status or nil.
function M.serve_quiet()
  local st, err = require("claude.server").start()
  if not st then
    return fail(err)
  end
  return st
end

--- The exact command that connects a CLI started elsewhere.
function M.connect_hint(port)
  return string.format(
    "cd %s && CLAUDE_CODE_SSE_PORT=%d claude   (or `claude --ide` in this directory)",
    vim.fn.shellescape(vim.fn.getcwd(-1, -1)),
    port
  )
end

--- :ClaudeStart [args]: the server plus the CLI in a terminal split.
function M.start(args, restart)
  local config = require("claude.config")
  local term = require("claude.terminal")
  local far, rargs, rerr = require("claude.remote").split_args(args)
  if rerr then
    return fail("nvim-claude: " .. rerr)
  end
  local r, err = require("claude.remote").resolve(far)
  if err then
    return fail("nvim-claude: " .. err)
  end
  args = rargs
  local want, rest = require("claude.worktree").split_args(args)
  if want then
    if r then
      return fail("nvim-claude: --worktree runs Claude here; a far side (ssh, container) has its own checkout")
    end
    return M.start_worktree(want.name, rest)
  end
  if term.info() then
    if restart then
      -- :ClaudeStart! — a new CLI with these arguments; the server stays.
      term.close()
    elseif args and #args > 0 then
      util.notify_now(
        "nvim-claude: Claude is already running, so these arguments were not used; :ClaudeStart! "
          .. table.concat(args, " ")
          .. " restarts it with them",
        vim.log.levels.WARN
      )
    end
  end
  local st = M.serve_quiet()
  if not st then
    return
  end
  if r then
    -- the host opens the far side off the main loop; the terminal follows
    require("claude.remote").start_terminal(st.port, args, r, true)
    return st
  end
  if config.options.terminal.provider == "none" then
    util.notify_now(
      "nvim-claude: listening on port " .. st.port .. ". Run the CLI yourself:\n  " .. M.connect_hint(st.port),
      vim.log.levels.INFO
    )
    return st
  end
  require("claude.terminal").open(st.port, args)
  return st
end

--- :ClaudeStart --worktree [name]: a git worktree on a new branch from
--- HEAD (git runs as a job), then a Claude terminal in it — beside a
--- running one, which goes on in the background. Outside a git repository
--- it says so and starts nothing. done(w), when given, gets the worktree.
function M.start_worktree(name, args, done)
  local config = require("claude.config")
  local st = M.serve_quiet()
  if not st then
    return
  end
  require("claude.worktree").create(name, function(w)
    if config.options.terminal.provider == "none" then
      require("claude.util").notify_now(
        string.format(
          "nvim-claude: worktree %s ready on branch %s. Run the CLI yourself:\n  cd %s && CLAUDE_CODE_SSE_PORT=%d claude",
          require("claude.util").display(w.name, 64),
          require("claude.util").display(w.branch, 80),
          vim.fn.shellescape(w.path),
          st.port
        ),
        vim.log.levels.INFO
      )
    else
      require("claude.terminal").open_another(st.port, args, true, w.path)
    end
    if done then
      done(w)
    end
  end)
  return st
end

--- :ClaudeServe: the server only, for a CLI run elsewhere.
function M.serve()
  local st = M.serve_quiet()
  if not st then
    return
  end
  util.notify_now(
    string.format(
      "nvim-claude: listening on 127.0.0.1:%d (lock %s).\nIn a shell in this project run:\n  %s\n(or /ide inside a running claude)",
      st.port,
      st.lock_file,
      M.connect_hint(st.port)
    ),
    vim.log.levels.INFO
  )
  return st
end

--- :ClaudeToggle: show / focus / hide the terminal, starting it if needed.
function M.toggle()
  if not require("claude.terminal").toggle() then
    M.start({})
  end
end

--- :ClaudeStop: the CLI terminal, the server and the lock file.
function M.stop()
  local term = require("claude.terminal").info()
  local server = require("claude.server")
  local port = server.state().port
  local running = server.is_running()
  require("claude.terminal").close()
  -- the host closes the far side's hold (its lock, its forward) with the server
  server.stop()
  require("claude.remote").stopped()
  local parts = {}
  if term then
    table.insert(parts, string.format("the Claude terminal (pid %s)", tostring(term.pid)))
  end
  if running then
    table.insert(parts, string.format("the IDE server (port %s)", tostring(port)))
  end
  if #parts == 0 then
    util.notify_now("nvim-claude: nothing is running", vim.log.levels.INFO)
  else
    util.notify_now("nvim-claude: stopped " .. table.concat(parts, " and "), vim.log.levels.INFO)
  end
end

-- loaded returns a feature module only if something already loaded it:
-- status() and statusline() must not load modules on every redraw.
local function loaded(name)
  return package.loaded[name]
end

local function pending_diffs()
  local diff = loaded("claude.diff")
  return diff and diff.pending and diff.pending() or {}
end

local function sharing()
  local sel = loaded("claude.selection")
  if sel and sel.sharing then
    return sel.sharing()
  end
  return require("claude.config").options.selection.track
end

--- The state of the integration. Never starts anything.
function M.status()
  local s = require("claude.server").state()
  local clients = {}
  for _, c in ipairs(s.clients or {}) do
    table.insert(clients, { pid = c.pid })
  end
  return {
    running = s.chan ~= nil and s.running or false,
    port = s.port,
    lock_file = s.lock_file,
    clients = clients,
    terminal = require("claude.terminal").info(),
    diffs = pending_diffs(),
    sharing = sharing(),
  }
end

--- A short string for a statusline: "" when not running, else e.g.
--- "✻ 1 session · 2 diffs" (· "not sharing" when selection sharing is off).
--- Reads cached state only: cheap enough for every redraw.
function M.statusline()
  local server = package.loaded["claude.server"]
  if not server then
    return ""
  end
  local s = server.state()
  if not (s.chan and s.running) then
    return ""
  end
  local parts = {}
  local n = #(s.clients or {})
  if n == 0 then
    parts[1] = "✻ waiting"
  else
    parts[1] = string.format("✻ %d session%s", n, n == 1 and "" or "s")
  end
  -- what the sessions do, when any works or waits
  local busy = M.sessions_statusline()
  if busy ~= "" then
    parts[1] = busy
  end
  local d = #pending_diffs()
  if d > 0 then
    table.insert(parts, string.format("%d diff%s", d, d == 1 and "" or "s"))
  end
  if not sharing() then
    table.insert(parts, "not sharing")
  end
  return table.concat(parts, " · ")
end

--- Every Claude session this Neovim runs (the terminal and the chats):
--- { {id, name, dir, mode, state, since, cost_usd, waiting, ...} }.
function M.sessions()
  return require("claude.sessions").list()
end

--- "✻ 2 working · 1 needs you" for a statusline ("" when nothing works or
--- waits); cached state only.
function M.sessions_statusline()
  local s = package.loaded["claude.sessions"]
  return s and s.statusline() or ""
end

--- :ClaudeStatus text.
function M.status_text()
  local st = M.status()
  if not st.running then
    return "nvim-claude: not running (:ClaudeStart or :ClaudeServe starts it)"
  end
  local pids = {}
  for _, c in ipairs(st.clients) do
    table.insert(pids, tostring(c.pid))
  end
  local lines = {
    string.format("nvim-claude %s: listening on 127.0.0.1:%d", M.version, st.port),
    "lock file: " .. st.lock_file,
    "connected CLIs: " .. (#pids > 0 and ("pid " .. table.concat(pids, ", pid ")) or "none"),
  }
  if st.terminal then
    table.insert(lines, string.format("terminal: buffer %d, pid %d", st.terminal.bufnr, st.terminal.pid))
  end
  local far = package.loaded["claude.remote"] and require("claude.remote").state()
  if far then
    table.insert(
      lines,
      "Claude runs on "
        .. util.display(far.label or "?", 200)
        .. (far.far and far.far ~= "" and (" (" .. util.display(far.far, 200) .. " there is " .. util.display(far["local"] or "?", 200) .. " here)") or "")
    )
  end
  table.insert(lines, "selection sharing: " .. (st.sharing and "on" or "off"))
  if #st.diffs > 0 then
    table.insert(lines, string.format("pending diffs: %d", #st.diffs))
  end
  if #pids == 0 then
    table.insert(lines, "connect a CLI: " .. M.connect_hint(st.port))
  end
  local tools = require("claude.terminal").editor_tools()
  if tools then
    table.insert(
      lines,
      string.format(
        "editor tools (mcp__nvim__*): %d tools; for a claude run elsewhere: %s",
        #tools.tools,
        tools.add_command
      )
    )
  end
  return table.concat(lines, "\n")
end

return M
