-- User commands. Creating them is cheap: each callback loads the plugin
-- only when it runs, which is also what lazy-loading on a command needs.
local M = {}

local created = false

local function claude()
  return require("claude")
end

function M.create()
  if created then
    return
  end
  created = true
  local cmd = vim.api.nvim_create_user_command
  cmd("ClaudeStart", function(o)
    claude().start(o.fargs)
  end, { nargs = "*", desc = "Start the Claude Code CLI in a terminal, connected to Neovim" })
  cmd("ClaudeServe", function()
    claude().serve()
  end, { nargs = 0, desc = "Start only the IDE server, for a claude run elsewhere" })
  cmd("ClaudeToggle", function()
    claude().toggle()
  end, { nargs = 0, desc = "Show, focus or hide the Claude terminal" })
  cmd("ClaudeStop", function()
    claude().stop()
  end, { nargs = 0, desc = "Stop the Claude terminal and the IDE server" })
  cmd("ClaudeStatus", function()
    vim.notify(claude().status_text(), vim.log.levels.INFO, { title = "nvim-claude" })
  end, { nargs = 0, desc = "Show the IDE server's port, lock file and connected CLIs" })
end

return M
