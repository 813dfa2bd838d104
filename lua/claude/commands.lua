-- User commands. Creating them is cheap: each callback loads the plugin
-- only when it runs, which is also what lazy-loading on a command needs.
local util = require("claude.util")

local M = {}

local created = false

--- The subcommands of :Claude, by name ("start", "chat-sessions").
M.subcommands = {}

local function claude()
  return require("claude")
end

function M.create()
  if created then
    return
  end
  created = true
  -- Each :ClaudeXxx is also :Claude xxx (the lazy.nvim habit): the same
  -- callback and completion, from this one list, so the two cannot drift.
  local function cmd(name, fn, opts)
    vim.api.nvim_create_user_command(name, fn, opts)
    local sub = name:gsub("^Claude", ""):gsub("(%l)(%u)", "%1-%2"):lower()
    M.subcommands[sub] = { name = name, fn = fn, opts = opts }
  end
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
    util.notify_now(claude().status_text(), vim.log.levels.INFO)
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
    local far, fargs, ferr = require("claude.remote").split_args(o.fargs)
    local r, rerr = require("claude.remote").resolve(far)
    if ferr or rerr then
      return util.notify_now("nvim-claude: " .. (ferr or rerr), vim.log.levels.ERROR)
    end
    if r then
      -- a chat whose CLI runs on the far side (stream-json over ssh or
      -- the runtime's exec), once the host holds it
      local text = table.concat(fargs, " ")
      return require("claude.remote").open_hold(r, function()
        chat().open({ prompt = text, new = o.bang or far ~= nil, remote = true })
      end)
    end
    local want, rest = require("claude.worktree").split_args(o.fargs)
    if want then
      -- a new chat in its own worktree, once git has made it
      return require("claude.worktree").create(want.name, function(w)
        chat().open({ prompt = table.concat(rest, " "), new = true, cwd = w.path })
      end)
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
  cmd("ClaudeWorktree", function(o)
    require("claude.worktree").command(o.fargs)
  end, {
    nargs = "+",
    complete = function(lead, line)
      return require("claude.worktree").complete(lead, line)
    end,
    desc = "Finish a session's worktree (review its branch, then bring it in) or discard it",
  })
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
    local far = package.loaded["claude.remote"] and require("claude.remote").state()
    if far then
      -- the queue reads the CLI's transcripts, which are on the far side
      util.notify_now(
        "nvim-claude: the review queue is not available while Claude runs on "
          .. util.display(far.label or "the far side", 200)
          .. ": its transcripts are there, not here. Each edit is still reviewed in a diff as Claude proposes it.",
        vim.log.levels.WARN
      )
      return
    end
    require("claude.review").open(o.args)
  end, {
    nargs = "?",
    complete = function()
      return { "session", "branch" }
    end,
    desc = "List the files Claude changed in the current turn (or the session, or a worktree's branch) to review",
  })

  vim.api.nvim_create_user_command("Claude", function(o)
    M.dispatch(o)
  end, { nargs = "*", bang = true, range = true, complete = M.complete, desc = "Claude <subcommand>: every :ClaudeXxx command as :Claude xxx" })
end

--- :Claude <sub> [args]: runs :Claude<Sub> with the rest of the line, the
--- bang and the range.
function M.dispatch(o)
  local sub = o.fargs[1]
  local c = sub and M.subcommands[sub]
  if not c then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    local msg = sub and ("nvim-claude: no subcommand %q"):format(require("claude.util").display(sub, 40))
      or "nvim-claude: :Claude needs a subcommand"
    util.notify_now(msg .. "; one of: " .. table.concat(names, ", "), vim.log.levels.ERROR)
    return
  end
  local fargs = vim.list_slice(o.fargs, 2)
  local args = o.args:gsub("^%s*%S+%s*", "", 1)
  local call = { fargs = fargs, args = args, bang = o.bang, line1 = o.line1, line2 = o.line2, range = o.range, count = o.count, mods = o.mods, smods = o.smods, name = c.name }
  if not c.opts.range and o.range > 0 then
    call.range, call.line1, call.line2 = 0, vim.fn.line("."), vim.fn.line(".")
  end
  if not c.opts.bang and o.bang then
    util.notify_now(("nvim-claude: :%s takes no !"):format(c.name), vim.log.levels.ERROR)
    return
  end
  c.fn(call)
end

--- Completion of :Claude: subcommands first, then the subcommand's own.
function M.complete(lead, line)
  local words = vim.split(line:gsub("^%S*%s*", "", 1), "%s+")
  if #words <= 1 then
    local out = {}
    for name in pairs(M.subcommands) do
      if name:sub(1, #lead) == lead then
        out[#out + 1] = name
      end
    end
    table.sort(out)
    return out
  end
  local c = M.subcommands[words[1]]
  local comp = c and c.opts.complete
  if type(comp) == "function" then
    return comp(lead, line, #line)
  elseif type(comp) == "string" then
    return vim.fn.getcompletion(lead, comp)
  end
  return {}
end

return M
