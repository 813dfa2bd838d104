-- Where a session's Claude runs: here (the default), on an SSH host or in a
-- container. Owns the remote option as the commands override it
-- (--ssh, --container, --devcontainer, --local) and the terminal's start on
-- the far side. The Go host (remote.Link) holds the far side: it opens the
-- channel off Neovim's main loop, writes the far lock over it, maps the
-- paths both ways, and says when the channel is lost.
local config = require("claude.config")
local util = require("claude.util")

local M = {}

--- Pulls the remote flags out of a command's arguments:
--- --ssh DEST[:DIR], --container NAME, --runtime docker|podman,
--- --devcontainer, --local. Returns the override (nil when none was
--- given), the other arguments, and an error message for a bad flag.
---@param args string[]?
---@return table? want, string[] rest, string? err
function M.split_args(args)
  local rest, want = {}, nil
  local i = 1
  args = args or {}
  local function value(flag)
    local v = args[i + 1]
    if not v or v == "" or v:sub(1, 1) == "-" then
      return nil, flag .. " needs a value"
    end
    i = i + 1
    return v
  end
  while i <= #args do
    local a = args[i]
    local flag, inline = a:match("^(%-%-[%w]+)=(.*)$")
    flag = flag or a
    local v, err
    if flag == "--ssh" or flag == "--container" or flag == "--runtime" then
      if inline then
        v = inline ~= "" and inline or nil
        err = not v and (flag .. " needs a value") or nil
      else
        v, err = value(flag)
      end
      if err then
        return nil, {}, err
      end
      want = want or {}
      if flag == "--ssh" then
        -- user@host:/dir (the scp spelling); the dir is absolute
        local dest, dir = v:match("^([^:]+):(/.*)$")
        want.ssh, want.dir = dest or v, dir
      elseif flag == "--container" then
        want.container = v
      else
        if v ~= "docker" and v ~= "podman" then
          return nil, {}, "--runtime must be docker or podman"
        end
        want.runtime = v
      end
    elseif a == "--devcontainer" then
      want = want or {}
      want.devcontainer = true
    elseif a == "--local" then
      want = { ["local"] = true }
    else
      table.insert(rest, a)
    end
    i = i + 1
  end
  return want, rest, nil
end

-- kinds a remote table names
local function kind_of(r)
  local n = (r.ssh and 1 or 0) + (r.container and 1 or 0) + (r.devcontainer and 1 or 0)
  if n > 1 then
    return nil, "remote: set one of ssh, container and devcontainer"
  end
  if r.ssh then
    return "ssh"
  elseif r.container then
    return r.runtime or "docker"
  elseif r.devcontainer then
    return "devcontainer"
  end
  return ""
end

--- The far side a session runs on: the remote option with a command's
--- override on top; nil when Claude runs here.
---@param want table? split_args's override
---@return table? remote, string? err
function M.resolve(want)
  local base = config.options.remote or {}
  if want and want["local"] then
    return nil
  end
  local r = vim.deepcopy(base)
  if want then
    if want.ssh or want.container or want.devcontainer then
      -- a command's target replaces the option's (its options, map and
      -- far CLI stay: they are the user's settings for far sides)
      -- a far directory the command names replaces the option's mapping
      r.ssh, r.container, r.devcontainer = nil, nil, nil
      if want.dir then
        r.map = nil
      end
    end
    for k, v in pairs(want) do
      r[k] = v
    end
  end
  local kind, err = kind_of(r)
  if err then
    return nil, err
  end
  if kind == "" then
    return nil
  end
  r.kind = kind
  return r
end

--- The host's parameters for r (remote.Params).
function M.params(r, args)
  local map = r.map or {}
  local dest = r.ssh or r.container or (r.devcontainer and type(r.devcontainer) == "string" and r.devcontainer) or ""
  return {
    kind = r.kind,
    dest = dest,
    dir = r.dir or "",
    config_dir = r.config_dir or "",
    bin = r.bin or "",
    claude = r.claude or "",
    options = r.options or {},
    map_remote = map.remote or "",
    map_local = map["local"] and vim.fn.expand(map["local"]) or "",
    cwd = vim.fn.getcwd(-1, -1),
    args = args or {},
  }
end

--- Starts the CLI's terminal on the far side r for the server on port:
--- the host opens the hold (off the main loop), then the terminal runs
--- the command line it gives (ssh -t …, docker exec -it …). done(term)
--- gets the terminal (nil when it failed).
function M.start_terminal(port, args, r, focus, done)
  local term = require("claude.terminal")
  local sessions = require("claude.sessions")
  local cli_args = term.remote_args(args)
  -- the session, whose hooks (HTTP hooks to the far port) the host writes
  -- on the far side; none when a terminal runs already (it is shown)
  local sid = not term.info() and sessions.far_terminal_args(cli_args, vim.fn.getcwd(-1, -1), port) or nil
  local label = util.display((r.ssh and ("ssh " .. r.ssh)) or (r.container and (r.kind .. " " .. r.container)) or "the devcontainer", 200)
  util.notify("nvim-claude: connecting to " .. label .. " …", vim.log.levels.INFO)
  local params = M.params(r, cli_args)
  params.session = sid
  require("claude.server").request_async("remote_start", params, function(res, err)
    if not res then
      sessions.far_terminal_failed(sid)
      util.notify_now(util.display(err or "nvim-claude: the far side did not answer", 1000), vim.log.levels.ERROR)
      if done then
        done(nil)
      end
      return
    end
    if not require("claude.server").is_running() then
      -- :ClaudeStop came while the far side was being opened
      sessions.far_terminal_failed(sid)
      require("claude.server").request_async("remote_stop", {}, function() end)
      if done then
        done(nil)
      end
      return
    end
    if res.warning then
      util.notify("nvim-claude: " .. util.display(res.warning, 600), vim.log.levels.WARN)
    end
    M.current = { label = res.label, far = res.far, ["local"] = res["local"], port = res.port, hold_pid = res.hold_pid }
    if sid and term.info() then
      sessions.far_terminal_failed(sid) -- another terminal came first: it is shown
    elseif sid then
      sessions.far_terminal_opening(sid)
    end
    local t = term.open(port, args, focus, nil, res.argv)
    if done then
      done(t)
    end
  end)
end

--- Opens the far side r for the IDE server (starting it) without a
--- terminal — a chat's CLI then runs there — and calls done() once the
--- host holds it (off the main loop); a failure is said and done is not
--- called.
function M.open_hold(r, done)
  local st, err = require("claude.server").start()
  if not st then
    util.notify_now(err, vim.log.levels.ERROR)
    return
  end
  require("claude.server").request_async("remote_start", M.params(r, {}), function(res, rerr)
    if not res then
      util.notify_now(util.display(rerr or "nvim-claude: the far side did not answer", 1000), vim.log.levels.ERROR)
      return
    end
    M.current = { label = res.label, far = res.far, ["local"] = res["local"], port = res.port, hold_pid = res.hold_pid }
    done()
  end)
end

--- The far session open now: {label, far, local, port, hold_pid} or nil.
function M.state()
  return M.current
end

--- Events from the host: "lost" (the channel to the far side ended on its
--- own: ssh died, the connection dropped, the container stopped).
function M._on_event(ev, data)
  if ev == "lost" then
    M.current = nil
    data = type(data) == "table" and data or {}
    util.notify_now(
      string.format(
        "nvim-claude: lost the connection to %s (%s). The far Claude can no longer reach Neovim and its lock there is removed; :ClaudeStart connects again.",
        util.display(data.label or "the far side", 200),
        util.display(data.message or "it ended", 600)
      ),
      vim.log.levels.ERROR
    )
    util.emit("ClaudeRemoteLost", { label = data.label, message = data.message })
  end
end

--- Called when the server stops (:ClaudeStop): the host closes the hold.
function M.stopped()
  M.current = nil
end

return M
