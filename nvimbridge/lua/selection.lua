-- Selection area of the bridge: the Go host's selection tracker pulls the
-- state from here once the cursor has come to rest (see
-- lua/claude/selection.lua, which owns the autocmds and the gathering).
local fns = ...

-- selection_pull answers the tracker's debounced pull: the state of the
-- current window, or {kind = "wait", wait = ms} while the cursor still moves.
function fns.selection_pull(args)
  return require("claude.selection").pull(type(args) == "table" and args.force == true)
end

-- selection_current answers getCurrentSelection: the active editor's
-- selection (claude.editor.active_window), even while the Claude terminal
-- has the focus.
function fns.selection_current()
  return require("claude.selection").current()
end
