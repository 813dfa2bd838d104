-- The Go host job: start, stop, requests, and the state it pushes to us.
local config = require("claude.config")
local util = require("claude.util")

local M = {}

-- Feature modules whose attach() runs each time the server starts (their
-- autocmds feed the host) and whose detach() runs when it stops.
M.features = { "claude.selection", "claude.diagnostics", "claude.diff", "claude.terminal", "claude.review", "claude.sessions" }

local state = {
  chan = nil, -- job/channel id of the Go host
  stopping = false, -- set while we stop the job ourselves
  running = false, -- IDE server listening
  port = nil,
  lock_file = nil,
  clients = {},
  stderr = {},
}
local augroup
local create_autocmds

-- Callbacks of request_async calls waiting for their "reply" event, by id.
local H = { async = {}, async_seq = 0 }

--- Fails every request_async still waiting (the host is gone).
function H.fail_async(msg)
  local waiting = H.async
  H.async = {}
  for _, w in pairs(waiting) do
    pcall(w.cb, nil, msg)
  end
end

local function reset()
  for _, mod in ipairs(M.features) do
    local m = package.loaded[mod]
    if m and m.detach then
      pcall(m.detach)
    end
  end
  state.chan = nil
  state.handshaken = nil
  state.early = nil
  state.on_early = nil
  state.running = false
  state.port = nil
  state.lock_file = nil
  state.clients = {}
  state.stderr = {}
  vim.schedule(function()
    H.fail_async("nvim-claude: the Go host stopped before it answered")
  end)
end

local function remove_lock()
  if state.lock_file then
    pcall(os.remove, state.lock_file)
  end
end

local function on_exit(job, code)
  if state.chan ~= job then
    return
  end
  local expected = state.stopping
  local lock = state.lock_file
  remove_lock()
  local tail = table.concat(state.stderr, "\n")
  reset()
  if not expected then
    local msg = string.format(
      "nvim-claude: the Go host exited (code %d)%s. The next :ClaudeStart restarts it. Log: %s",
      code,
      lock and "; its lock file was removed" or "",
      config.log_file()
    )
    if tail ~= "" then
      msg = msg .. "\n" .. tail
    end
    util.notify(msg, vim.log.levels.ERROR)
  end
  util.emit("ClaudeStopped", {})
end

local function on_stderr(_, data)
  for _, line in ipairs(data or {}) do
    if line ~= "" then
      table.insert(state.stderr, line)
      if #state.stderr > 20 then
        table.remove(state.stderr, 1)
      end
    end
  end
end

--- Starts the Go host job if it is not running. Returns the channel id, or
--- nil and a message a person can act on.
function M.ensure_job()
  if state.chan then
    return state.chan
  end
  local chan, err = M.spawn()
  if not chan then
    return nil, err
  end
  return M.handshake(chan)
end

-- start_params are the start request's parameters.
local function start_params()
  return { pid = vim.fn.getpid(), cwd = vim.fn.getcwd(-1, -1), config_dir = config.claude_config_dir() }
end

--- Starts the Go host job (no request yet). With early, the job gets the
--- options and the start request's parameters in its environment and
--- starts the server at once, while Neovim goes on starting: the lock file
--- does not wait for a main-loop turn and two round trips (auto_start). The
--- handshake (M.handshake, which M.start's requests run) checks its version
--- and options as ever. Returns the channel id, or nil and a message.
function M.spawn(early)
  if state.chan then
    return state.chan
  end
  local bin = config.bin()
  if vim.fn.executable(bin) ~= 1 then
    return nil,
      string.format(
        "nvim-claude: the Go host is not installed yet (%s is missing; a plugin manager that runs no build step, like a lazy.nvim `dir =` spec, leaves it so). Run :ClaudeInstall: it builds the host with Go %s (any Go 1.21+ fetches it) or downloads the signed prebuilt one, showing its progress (or run `make` in the plugin's directory).",
        bin,
        require("claude.install").go_needed(config.root()) or ""
      )
  end
  local log_file = config.log_file()
  vim.fn.mkdir(vim.fn.fnamemodify(log_file, ":h"), "p")
  local opts = { rpc = true, on_exit = on_exit, on_stderr = on_stderr }
  if early then
    state.early = start_params()
    opts.env = {
      NVIM_CLAUDE_START = vim.json.encode({
        version = require("claude.version"),
        options = config.host_options(),
        start = state.early,
      }),
    }
  end
  local ok, chan = pcall(vim.fn.jobstart, { bin, "-log-file", log_file, "-log-level", config.log_level() }, opts)
  if not ok or chan <= 0 then
    return nil, string.format("nvim-claude: could not start %s: %s", bin, ok and chan or tostring(chan))
  end
  state.chan = chan
  state.stopping = false
  if early then
    state.handshaken = false
    create_autocmds()
  end
  return chan
end

--- Starts the job with the server wanted at once (M.spawn(true)) and calls
--- done() when the host has started it (or failed to: done's requests then
--- say why), without holding the main loop while the host process starts;
--- a host that never says so (another version) is given 1 s. Returns nil
--- and a message when the job could not start.
function M.spawn_early(done)
  local chan, err = M.spawn(true)
  if not chan then
    return nil, err
  end
  local called = false
  local function once()
    if called then
      return
    end
    called = true
    -- only for this job while it runs: after :ClaudeStop (or the host's
    -- death) done() would start the server again, against the user's stop
    if state.chan ~= chan or state.stopping then
      return
    end
    state.on_early = nil
    done()
  end
  state.on_early = once
  vim.defer_fn(once, 1000)
  return chan
end

--- The options first (the host keeps no default of its own), then the
--- version check. Returns chan, or nil and a message (the job stopped).
function M.handshake(chan)
  state.handshaken = true
  -- The options come first: the host keeps no default of its own. Its
  -- answer names its version, which must be ours: a host left from another
  -- version of the plugin is reported and stopped, never used.
  local host_version, e = M.send_options()
  if not host_version then
    M.stop()
    return nil, e
  end
  local want = require("claude.version")
  if host_version ~= want then
    M.stop()
    return nil,
      string.format(
        "nvim-claude: the Go host %s is version %s, but the plugin is %s. Rebuild it with `make` in %s, or run :ClaudeInstall.",
        config.bin(),
        host_version,
        want,
        config.root()
      )
  end
  return chan
end

--- Sends the resolved options (claude.config.host_options()) to the Go
--- host if its job runs: when the job starts and whenever setup() runs
--- again, so that a changed option applies at once. Returns the host's
--- version (true when no host runs), or nil and an error message.
function M.send_options()
  if not state.chan then
    return true
  end
  local ok, res = pcall(vim.fn.rpcrequest, state.chan, "options", vim.json.encode(config.host_options()))
  if not ok then
    return nil, "nvim-claude: the Go host refused the options: " .. tostring(res)
  end
  local dec_ok, answer = pcall(vim.json.decode, res)
  local version = dec_ok and type(answer) == "table" and answer.version or nil
  return type(version) == "string" and version or "(a version that does not say)"
end

--- Sends a request to the Go host. Returns the decoded result, or nil and
--- an error message.
function M.request(method, params)
  local chan, err = M.ensure_job()
  if chan and not state.handshaken then
    chan, err = M.handshake(chan)
  end
  if not chan then
    return nil, err
  end
  local payload = vim.json.encode(params == nil and vim.empty_dict() or params)
  local ok, res = pcall(vim.fn.rpcrequest, chan, method, payload)
  if not ok then
    -- Neovim wraps the host's error as "Vim:Invoking 'start' on channel 3:\n…"
    -- ("Vim:Error invoking …" up to 0.9); the user needs the host's message,
    -- not the channel number.
    local msg = tostring(res):gsub("^Vim:[%w ]-[Ii]nvoking '[^']*' on channel %d+:%s*", "")
    -- One prefix and a sentence: the host's message names its request
    -- only where that helps ("start: …"), never twice.
    msg = msg:gsub("^" .. vim.pesc(method) .. ": ", "")
    return nil, "nvim-claude: " .. msg
  end
  if res == nil or res == "" or res == vim.NIL then
    return nil
  end
  return vim.json.decode(res)
end

--- Sends a request to the Go host without waiting: the host runs it off
--- Neovim's main loop and cb(result) or cb(nil, message) runs when its
--- answer comes (a "reply" event). For every request that may wait on a
--- Claude CLI: no user action waits for a CLI on the main loop.
---@param method string
---@param params table?
---@param cb fun(result: any, err: string?)
function M.request_async(method, params, cb)
  local chan, err = M.ensure_job()
  if chan and not state.handshaken then
    chan, err = M.handshake(chan)
  end
  if not chan then
    cb(nil, err)
    return
  end
  H.async_seq = H.async_seq + 1
  local id = H.async_seq
  H.async[id] = { cb = cb, method = method }
  local payload = vim.json.encode({ id = id, method = method, params = params == nil and vim.empty_dict() or params })
  local ok, e = pcall(vim.fn.rpcnotify, chan, "request_async", payload)
  if not ok then
    H.async[id] = nil
    cb(nil, "nvim-claude: " .. tostring(e))
  end
end

--- Sends a notification to the Go host if it runs (never starts it).
function M.notify(method, params)
  if not state.chan then
    return
  end
  pcall(vim.fn.rpcnotify, state.chan, method, vim.json.encode(params == nil and vim.empty_dict() or params))
end

local function apply_status(st)
  state.running = st.running
  state.port = st.port
  state.lock_file = st.lock_file
  state.clients = st.clients or {}
end

function create_autocmds()
  if augroup then
    return
  end
  augroup = vim.api.nvim_create_augroup("nvim-claude-server", { clear = true })
  vim.api.nvim_create_autocmd("DirChanged", {
    group = augroup,
    desc = "nvim-claude: keep the lock file's workspace folder current",
    callback = function()
      -- only the global cwd is the workspace (not :lcd / :tcd of one window)
      if vim.v.event and vim.v.event.scope and vim.v.event.scope ~= "global" then
        return
      end
      M.notify("cwd_changed", { cwd = vim.fn.getcwd(-1, -1) })
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = augroup,
    desc = "nvim-claude: remove the lock file on exit",
    callback = function()
      M.shutdown()
    end,
  })
end

--- Starts the IDE server (and the job if needed). Returns the status or nil
--- and an error message.
function M.start()
  local st, err = M.request("start", start_params())
  if not st then
    return nil, err or "nvim-claude: the Go host gave no answer to start"
  end
  apply_status(st)
  create_autocmds()
  local early = state.early
  state.early = nil
  if early and early.cwd ~= vim.fn.getcwd(-1, -1) then
    -- the server started early; the directory changed before DirChanged was heard
    M.notify("cwd_changed", { cwd = vim.fn.getcwd(-1, -1) })
  end
  for _, mod in ipairs(M.features) do
    local m = require(mod)
    if m.attach then
      m.attach()
    end
  end
  return st
end

--- Stops the server and the job, and removes the lock file.
function M.stop()
  local chan = state.chan
  if not chan then
    return
  end
  state.stopping = true
  pcall(vim.fn.rpcrequest, chan, "stop", "{}")
  remove_lock()
  pcall(vim.fn.jobstop, chan)
  vim.fn.jobwait({ chan }, 2000)
  if state.chan == chan then
    -- on_exit may not have run yet (it is scheduled); the state is ours now
    reset()
  end
end

-- shutdown runs at VimLeavePre: remove the lock synchronously (the job may
-- outlive us by a moment) and let Neovim end the job.
function M.shutdown()
  state.stopping = true
  remove_lock()
end

--- Receives an event the Go host pushes (the bridge's emit,
--- lua/claude/bridge/init.lua): "clients", "connected", "disconnected", or
--- "<module>.<event>", which goes on to the plugin-internal
--- require("claude.<module>")._on_event(event, data).
---@param name string
---@param data table|nil
function M.on_event(name, data)
  local mod, ev = name:match("^([%w_]+)%.(.+)$")
  if mod then
    local ok, m = pcall(require, "claude." .. mod)
    if ok and m._on_event then
      m._on_event(ev, data)
    end
    return
  end
  if name == "reply" then
    local w = H.async[data.id]
    H.async[data.id] = nil
    if w then
      local err = data.error
      if err ~= nil and err ~= vim.NIL then
        w.cb(nil, "nvim-claude: " .. tostring(err))
      else
        w.cb(data.result ~= vim.NIL and data.result or nil)
      end
    end
  elseif name == "early_start" then
    local cb = state.on_early
    state.on_early = nil
    if cb then
      cb()
    end
  elseif name == "clients" then
    state.clients = data.clients or {}
  elseif name == "connected" then
    util.emit("ClaudeConnected", data)
  elseif name == "disconnected" then
    util.emit("ClaudeDisconnected", data)
  end
end

function M.state()
  return state
end

function M.is_running()
  return state.chan ~= nil and state.running
end

return M
