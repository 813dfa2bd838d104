-- The Lua half of nvimbridge (Go: nvimbridge/). The Go host requires it
-- once per connection and then calls
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
  -- A deadline of 0 is a cleanup's (closing what an abandoned call showed):
  -- it acts whenever Neovim reaches it.
  if deadline_ms and deadline_ms > 0 then
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
  require("claude.util").notify(args.msg, args.level)
  return true
end

-- The host's calls that the plugin's own modules answer: the diff review
-- (claude.diff: its windows, buffers and the user's decisions) and the
-- selection tracker (claude.selection: the autocmds and the gathering).
-- Failures come back as plain messages, no traceback in what the CLI and
-- the user see.
local function module(name)
  local ok, mod = pcall(require, name)
  if not ok then
    error("nvim-claude's Lua files are not on 'runtimepath': " .. tostring(mod), 0)
  end
  return mod
end

-- diff_open opens a diff; args {id, tab_name, old_path, new_path, chan},
-- contents (the proposal, a string beside the JSON). Returns the opened
-- view, or {error = message}.
function fns.diff_open(args, contents)
  args.contents = contents
  local ok, res = pcall(module("claude.diff").open, args)
  if not ok then
    return { error = tostring(res) }
  end
  return res
end

-- diff_close closes diffs by id; args {ids, outcome}. Returns how many
-- were open.
function fns.diff_close(args)
  return { closed = module("claude.diff").close(args) }
end

-- selection_pull answers the tracker's debounced pull: the state of the
-- current window, or {kind = "wait", wait = ms} while the cursor still moves.
function fns.selection_pull(args)
  return module("claude.selection").pull(type(args) == "table" and args.force == true)
end

-- selection_current answers getCurrentSelection: the active editor's
-- selection (claude.editor.active_window), even while the Claude terminal
-- has the focus.
function fns.selection_current()
  return module("claude.selection").current()
end

-- The areas with logic of their own: editor context (documents, buffers,
-- workspace), the LSP tools, executeCode.
for _, area in ipairs({ "context", "lsp", "execute" }) do
  for name, fn in pairs(require("claude.bridge." .. area)) do
    fns[name] = fn
  end
end

M.fns = fns
return M
