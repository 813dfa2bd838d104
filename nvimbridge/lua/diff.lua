-- Area file: diff review. The windows, buffers and the user's decisions
-- live in the plugin's Lua module claude.diff (its state is what
-- :ClaudeDiffAccept and status() read); these entry points hand the host's
-- calls to it and turn its failures into plain messages (no traceback in
-- what the CLI and the user see).
local fns = ...

local function diff_module()
  local ok, mod = pcall(require, "claude.diff")
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
  local mod = diff_module()
  local ok, res = pcall(mod.open, args)
  if not ok then
    return { error = tostring(res) }
  end
  return res
end

-- diff_close closes diffs by id; args {ids, outcome}. Returns how many
-- were open.
function fns.diff_close(args)
  return { closed = diff_module().close(args) }
end
