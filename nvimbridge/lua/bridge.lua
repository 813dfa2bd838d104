-- The Lua half of nvimbridge. The Go host installs this chunk once per
-- connection (package.loaded["nvim-claude.bridge"]) and then calls
-- M.call(name, json) for every editor fact or action: one round trip per
-- compound query, JSON both ways (bulk text rides beside the JSON as a
-- plain string argument).
local M = {}
local fns = {}

local json_encode, json_decode = vim.json.encode, vim.json.decode
local unpack = unpack or table.unpack

local function decode(payload)
  if payload == nil or payload == "" or payload == "null" then
    return nil
  end
  return json_decode(payload)
end

--- Entry point for the Go side: runs fns[name](args, ...) and wraps the
--- outcome in {ok, result} or {ok = false, error}. Arguments after the
--- deadline (bulk text, as plain strings) are passed on after args.
function M.call(name, payload, deadline_ms, ...)
  -- A call reached after its caller gave up (Neovim was blocked at a
  -- prompt) must not act late: the caller already reported a failure.
  if deadline_ms then
    local s, us = (vim.uv or vim.loop).gettimeofday()
    if s * 1000 + us / 1000 > deadline_ms then
      return json_encode({ ok = false, error = "expired: the caller stopped waiting before Neovim could run it" })
    end
  end
  local fn = fns[name]
  if not fn then
    return json_encode({ ok = false, error = "unknown bridge function: " .. tostring(name) })
  end
  local ok, res
  if select("#", ...) == 0 then
    ok, res = xpcall(function()
      return fn(decode(payload))
    end, debug.traceback)
  else
    local extra = { n = select("#", ...), ... }
    ok, res = xpcall(function()
      return fn(decode(payload), unpack(extra, 1, extra.n))
    end, debug.traceback)
  end
  if not ok then
    return json_encode({ ok = false, error = tostring(res) })
  end
  if res == nil then
    return '{"ok":true}'
  end
  return '{"ok":true,"result":' .. json_encode(res) .. "}"
end

-- emit hands a host event (a client connected, a diff opened …) to the
-- plugin's Lua side, which keeps the state status() and the statusline read.
function fns.emit(args)
  local ok, server = pcall(require, "claude.server")
  if ok and server.on_event then
    server.on_event(args.event, args.data)
  end
  return true
end

-- notify shows a message through vim.notify, outside any fast context.
function fns.notify(args)
  vim.schedule(function()
    vim.notify(args.msg, args.level or vim.log.levels.INFO, { title = "nvim-claude" })
  end)
  return true
end

M.fns = fns
return M
