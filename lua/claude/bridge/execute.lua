-- Bridge area: executeCode. The buffer choice, the options and the
-- confirmation float live in the plugin's Lua module claude.execute (it
-- also implements :ClaudeKernel); these entry points hand the host's calls
-- to it and turn its failures into plain messages (no traceback in what the
-- CLI and the user see).
local fns = {}

local function execute_module()
  local ok, mod = pcall(require, "claude.execute")
  if not ok then
    error("nvim-claude's Lua files are not on 'runtimepath': " .. tostring(mod), 0)
  end
  return mod
end

local function guarded(f, args)
  local ok, res = pcall(f, args)
  if not ok then
    return { error = tostring(res) }
  end
  return res
end

-- execute_target: {bufnr, name, kernel, dir, options}, or {error}.
function fns.execute_target()
  return guarded(execute_module().target)
end

-- execute_confirm opens the confirmation float; args {id, code, kernel,
-- language, bufnr, chan}. The answer comes later as an execute_decision
-- notification on chan.
function fns.execute_confirm(args)
  local res = guarded(execute_module().confirm, args)
  if res.error then
    return res
  end
  return { ok = true }
end

-- execute_confirm_close closes a confirmation nobody waits for any more.
function fns.execute_confirm_close(args)
  execute_module().close_confirm(args.id)
  return true
end

-- execute_watch_buffer: tell chan when buffer bufnr goes (its kernel stops).
function fns.execute_watch_buffer(args)
  if vim.api.nvim_buf_is_valid(args.bufnr) then
    execute_module().watch(args.bufnr, args.chan)
  end
  return true
end

return fns
