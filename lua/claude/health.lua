-- :checkhealth claude
local M = {}

-- Neovim 0.10 has vim.health.start/ok/…; 0.7–0.9 have report_* in the
-- "health" module.
local function reporter()
  local h = vim.health
  if h and h.start then
    return h
  end
  local old = require("health")
  return {
    start = old.report_start,
    ok = old.report_ok,
    warn = old.report_warn,
    error = old.report_error,
    info = old.report_info,
  }
end

local function pid_alive(pid)
  -- uv.kill returns 0, or nil plus an error name; EPERM still means alive
  local ret, _, name = (vim.uv or vim.loop).kill(pid, 0)
  return ret == 0 or name == "EPERM"
end

local function run(cmd)
  local out = vim.fn.system(cmd)
  return vim.v.shell_error == 0, vim.trim(out or "")
end

function M.check()
  local h = reporter()
  local config = require("claude.config")
  local version = require("claude.version")

  h.start("nvim-claude: editor")
  if vim.fn.has("nvim-0.7.2") == 1 then
    h.ok("Neovim " .. tostring(vim.version().major) .. "." .. vim.version().minor .. "." .. vim.version().patch)
  else
    h.error("Neovim 0.7.2 or newer is required")
  end

  h.start("nvim-claude: Go host")
  local install = require("claude.install")
  local go = install.go()
  local fix = go.ok and ("rebuild it with `make` in " .. config.root() .. " or :ClaudeInstall")
    or (
      go.fetch and ("install it with :ClaudeInstall (it builds it with Go " .. go.need .. ", which your Go fetches)")
      or ("install it with :ClaudeInstall (no Go 1.21+ here: it downloads the prebuilt host and checks its signature)")
    )
  local bin = config.bin()
  if vim.fn.executable(bin) ~= 1 then
    h.error("host binary missing: " .. bin, { fix })
  else
    local ok, out = run({ bin, "-version" })
    local got = out:match("nvim%-claude%s+(%S+)")
    if not ok or not got then
      h.error("host binary does not run: " .. bin .. ": " .. out, { fix })
    elseif got ~= version then
      h.error(
        string.format("host binary is version %s, the plugin (its Lua) is %s: it will not be used", got, version),
        { fix }
      )
    else
      h.ok("host binary " .. bin .. " (" .. got .. ", the plugin's version)")
    end
  end
  if go.ok then
    h.ok(string.format("Go %s at %s (building the host needs %s or newer)", go.version, go.path, go.need))
  elseif go.fetch then
    h.ok(
      string.format(
        "Go %s at %s is older than the %s building the host needs, and fetches it itself through the module proxy: :ClaudeInstall and `make` do (GOTOOLCHAIN=auto for that build; about 65 MB once)",
        go.version,
        go.path,
        go.need
      )
    )
  elseif go.path then
    h.info(
      string.format(
        "Go %s at %s is older than the %s building the host needs, and too old (before 1.21) to fetch it; :ClaudeInstall downloads the prebuilt host instead (newer Go: https://go.dev/dl/, or golang from bookworm-backports on Debian 12)",
        go.version or "(unknown version)",
        go.path,
        go.need
      )
    )
  else
    h.info(string.format("no Go on PATH: needed only to build the host yourself (Go %s or newer; 1.21+ fetches it)", go.need))
  end
  if not go.ok and not go.fetch then
    if vim.fn.executable("ssh-keygen") == 1 and vim.fn.executable("curl") == 1 then
      h.ok("curl and ssh-keygen: the prebuilt host can be downloaded and its signature checked")
    else
      h.warn("the prebuilt host needs curl and ssh-keygen (OpenSSH 8.1+) to be downloaded and its signature checked", {
        "install them, or Go " .. go.need .. " (or any Go 1.21+) to build the host",
      })
    end
  end

  h.start("nvim-claude: Claude Code CLI")
  local cmd = config.options.terminal_cmd
  local exe = type(cmd) == "table" and cmd[1] or vim.split(cmd, "%s+", { trimempty = true })[1]
  if vim.fn.executable(exe) ~= 1 then
    h.warn("`" .. exe .. "` not found", {
      "install it: npm install -g @anthropic-ai/claude-code",
      "or set terminal_cmd in setup() to its path",
    })
  else
    local ok, out = run({ exe, "--version" })
    if ok then
      h.ok(exe .. ": " .. out)
    else
      h.warn(exe .. " --version failed: " .. out)
    end
  end

  local term = require("claude.terminal")
  local mode, from = term.permission_mode()
  local shown = require("claude.util").display
  mode, from = shown(mode, 40), shown(from, 200)
  if term.unreviewed(mode) then
    -- A choice, not a fault: said, not warned about.
    h.info(
      string.format(
        ':ClaudeStart starts Claude in %s mode (%s): edits land on disk without the diff review (for review: terminal = { permission_mode = "manual" } in setup(); :ClaudeReview lists what Claude changed)',
        mode,
        from
      )
    )
  else
    h.ok(string.format(":ClaudeStart starts Claude in %s mode (%s)", mode, from))
  end

  M.check_remote(h)

  h.start("nvim-claude: lock files")
  local dir = config.claude_config_dir() .. "/ide"
  if vim.fn.isdirectory(dir) == 0 then
    h.info(dir .. " does not exist yet (created on :ClaudeStart)")
  else
    local perm = vim.fn.getfperm(dir)
    if perm:sub(4) ~= "------" then
      h.warn(dir .. " is readable by others (" .. perm .. ")", { "chmod 700 " .. dir })
    else
      h.ok(dir .. " (" .. perm .. ")")
    end
  end
  if vim.fn.isdirectory(dir) == 1 then
    local stale = {}
    for _, f in ipairs(vim.fn.glob(dir .. "/*.lock", false, true)) do
      local ok, lock = pcall(vim.json.decode, table.concat(vim.fn.readfile(f), "\n"))
      if ok and type(lock) == "table" and type(lock.pid) == "number" and not pid_alive(lock.pid) then
        table.insert(stale, f)
      end
    end
    if #stale > 0 then
      h.warn(
        #stale .. " stale lock file(s) of editors that are gone: " .. table.concat(stale, ", "),
        { "they are swept at the next :ClaudeStart, or delete them" }
      )
    else
      h.ok("no stale lock files")
    end
  end

  -- A proxy variable without loopback in no_proxy captures the CLI's
  -- connection to us when the CLI is started outside Neovim.
  local proxied
  for _, var in ipairs({ "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY" }) do
    if (vim.env[var] or "") ~= "" then
      proxied = var
      break
    end
  end
  if proxied then
    local np = (vim.env.no_proxy or "") .. "," .. (vim.env.NO_PROXY or "")
    if np:find("127.0.0.1", 1, true) and np:find("localhost", 1, true) then
      h.ok(proxied .. " is set and no_proxy exempts loopback")
    else
      h.warn(proxied .. " is set and no_proxy does not exempt loopback", {
        ":ClaudeStart adds it for the CLI it starts; for a claude run elsewhere: export no_proxy=localhost,127.0.0.1,::1",
      })
    end
  end

  h.start("nvim-claude: chat")
  if vim.fn.has("nvim-0.8") == 1 then
    local chat_cmd = config.options.chat.cmd or exe
    if vim.fn.executable(chat_cmd) == 1 then
      h.ok(":ClaudeChat runs " .. chat_cmd)
    else
      h.warn(":ClaudeChat: `" .. chat_cmd .. "` not found", { "set chat.cmd (or terminal_cmd) in setup() to the CLI's path" })
    end
    if vim.fn.executable("wl-paste") == 1 or vim.fn.executable("xclip") == 1 then
      h.ok("clipboard images: " .. (vim.fn.executable("wl-paste") == 1 and "wl-paste" or "xclip"))
    else
      h.info("clipboard images need wl-paste or xclip; image files work without")
    end
  else
    h.info(":ClaudeChat needs Neovim 0.8 or newer ('winbar'); the terminal integration works here")
  end

  require("claude.execute").health(h)
  require("claude.dictation").health(h)

  local st = require("claude").status()
  h.start("nvim-claude: server")
  if not st.running then
    h.info("not running (:ClaudeStart or :ClaudeServe)")
    return
  end
  h.ok(string.format("listening on 127.0.0.1:%d, %d CLI(s) connected", st.port, #st.clients))
  local res, err = require("claude.server").request("probe", {})
  if res then
    h.ok(string.format("live handshake with the token: ping answered in %.2f ms", res.rtt_ms))
  else
    h.error("live handshake failed: " .. tostring(err), { "restart with :ClaudeStop and :ClaudeStart; see the log" })
  end
end

--- The remote option: the engine here, the mapping, the connection and
--- the far CLI's version. The host runs the far command off the main
--- loop; :checkhealth waits for its answer (bounded).
function M.check_remote(h)
  h = h or reporter()
  local shown = require("claude.util").display
  local remote = require("claude.remote")
  h.start("nvim-claude: where Claude runs")
  local r, err = remote.resolve(nil)
  if err then
    h.error(err, { "set one of remote.ssh, remote.container and remote.devcontainer in setup()" })
    return
  end
  if not r then
    h.ok("here, beside Neovim (the remote option is not set; :help nvim-claude-containers)")
    return
  end
  local res, rerr, done = nil, nil, false
  require("claude.server").request_async("remote_check", remote.params(r, {}), function(a, b)
    res, rerr, done = a, b, true
  end)
  vim.wait(60000, function()
    return done
  end, 50)
  if not done then
    h.error("the far side did not answer within 60 s", { "check that the engine's command works in a shell" })
    return
  elseif not res then
    h.error(shown(rerr or "no answer", 600))
    return
  end
  h.info("Claude runs on " .. shown(res.target, 300))
  if res.step == "settings" then
    h.error(shown(res.error, 600), { shown(res.fix, 300) })
    return
  end
  if res.map and res.map ~= "" then
    h.ok("mapping: " .. shown(res.map, 600))
  else
    h.ok("no mapping: the far side sees the project under the same path as Neovim")
  end
  if res.step == "engine" then
    h.error(shown(res.error, 600), { shown(res.fix, 300) })
    return
  end
  h.ok("engine: " .. shown(res.engine, 300))
  if res.step == "far" then
    h.error(shown(res.error, 600), { shown(res.fix, 600) })
    return
  end
  h.ok("far CLI: " .. shown(res.version, 200))
end

return M
