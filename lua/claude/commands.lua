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
    claude().start(o.fargs, o.bang)
  end, { nargs = "*", bang = true, desc = "Start the Claude Code CLI in a terminal, connected to Neovim (! restarts it)" })
  cmd("ClaudeServe", function()
    claude().serve()
  end, { nargs = 0, desc = "Start only the IDE server, for a claude run elsewhere" })
  cmd("ClaudeToggle", function()
    claude().toggle()
  end, { nargs = 0, desc = "Show, focus or hide the Claude terminal" })
  cmd("ClaudeStop", function()
    claude().stop()
  end, { nargs = 0, desc = "Stop the Claude terminal and the IDE server" })
  cmd("ClaudeInstall", function(o)
    require("claude.install").command(o.args)
  end, {
    nargs = "?",
    complete = function(lead)
      return vim.tbl_filter(function(m)
        return m:sub(1, #lead) == lead
      end, { "auto", "build", "download" })
    end,
    desc = "Build the Go host with Go, or download the prebuilt one (SHA-256 checked)",
  })
  cmd("ClaudeStatus", function()
    vim.notify(claude().status_text(), vim.log.levels.INFO, { title = "nvim-claude" })
  end, { nargs = 0, desc = "Show the IDE server's port, lock file and connected CLIs" })

  -- Editor context (selection sharing, mentions).
  cmd("ClaudeSend", function(o)
    require("claude.mentions").send(o.line1, o.line2, o.range)
  end, { range = true, desc = "Send the range (or visual selection) to Claude as an @-mention" })
  cmd("ClaudeAdd", function(o)
    require("claude.mentions").add(o.fargs, o.line1, o.line2, o.range)
  end, { nargs = "*", range = true, complete = "file", desc = "Add a file or directory (and lines) to Claude's context" })
  cmd("ClaudeShare", function(o)
    require("claude.selection").share(o.args)
  end, {
    nargs = "?",
    complete = function()
      return { "on", "off", "toggle" }
    end,
    desc = "Turn sharing of the cursor and selection with Claude on or off",
  })

  -- Jupyter kernels (executeCode).
  cmd("ClaudeKernel", function(o)
    require("claude.execute").kernel(o.args)
  end, {
    nargs = "?",
    complete = function()
      return require("claude.execute").complete()
    end,
    desc = "Restart, interrupt, stop or list the Jupyter kernel(s) Claude runs code in",
  })
  cmd("ClaudeExecute", function()
    require("claude.execute").focus()
  end, { desc = "Go to the code Claude wants to run (the executeCode confirmation)" })

  -- The chat panel (lua/claude/chat/).
  local function chat()
    return require("claude.chat")
  end
  cmd("ClaudeChat", function(o)
    if o.fargs[1] == "--resume" and o.fargs[2] then
      -- a conversation (the terminal's, say) continues in a chat
      return chat().open({ resume = o.fargs[2], prompt = table.concat(o.fargs, " ", 3) })
    end
    chat().open({ prompt = o.args, new = o.bang })
  end, { nargs = "*", bang = true, desc = "Open the Claude chat (! starts another one); [prompt] is sent" })
  cmd("ClaudeChatSessions", function()
    chat().sessions()
  end, { nargs = 0, desc = "Resume or fork a past Claude session of this directory in a chat" })
  cmd("ClaudeChatSend", function(o)
    chat().send_range(o.line1, o.line2)
  end, { range = true, desc = "Attach the range (or visual selection) to the chat's next prompt" })
  cmd("ClaudeChatImage", function(o)
    chat().image(o.args)
  end, { nargs = "?", complete = "file", desc = "Attach an image file (no argument: the clipboard) to the chat's next prompt" })
  cmd("ClaudeChatClose", function()
    chat().close()
  end, { nargs = 0, desc = "End the current chat: its CLI stops and its buffers go" })

  -- Dictation (lua/claude/dictation.lua).
  cmd("ClaudeDictate", function(o)
    require("claude.dictation").command(o.args)
  end, {
    nargs = "?",
    complete = function()
      return { "start", "stop", "cancel", "toggle" }
    end,
    desc = "Dictate into the chat prompt or the Claude terminal (again: stop; cancel discards)",
  })

  -- Every session at a glance (lua/claude/sessions.lua).
  cmd("ClaudeSessions", function()
    require("claude.sessions").open()
  end, { nargs = 0, desc = "List every Claude session (terminal and chats) with its state" })
  cmd("ClaudeStartNew", function(o)
    require("claude.sessions").start_new(o.fargs)
  end, { nargs = "*", desc = "Start another Claude terminal; the running one goes on in the background" })
  cmd("ClaudeAnswer", function(o)
    require("claude.sessions").answer(o.args)
  end, {
    nargs = "?",
    complete = function()
      return { "allow", "always", "deny" }
    end,
    desc = "Show the question a Claude session waits on longest (in a chat transcript: the one under the cursor); allow, always or deny answers it",
  })

  -- Diff review.
  cmd("ClaudeDiffAccept", function()
    require("claude.diff").accept()
  end, { nargs = 0, desc = "Accept the Claude diff under the cursor (with your edits)" })
  cmd("ClaudeDiffReject", function()
    require("claude.diff").reject()
  end, { nargs = 0, desc = "Reject the Claude diff under the cursor" })

  -- The review queue (lua/claude/review.lua).
  cmd("ClaudeReview", function(o)
    require("claude.review").open(o.args)
  end, {
    nargs = "?",
    complete = function()
      return { "session" }
    end,
    desc = "List the files Claude changed in the current turn (or the session) to review",
  })
end

return M
