local commands = require("claude.commands")
commands.create()

return {
  subcommand_names = function()
    for cmd, sub in pairs({
      ClaudeStart = "start",
      ClaudeChatSessions = "chat-sessions",
      ClaudeStartNew = "start-new",
      ClaudeDiffAccept = "diff-accept",
    }) do
      local c = commands.subcommands[sub]
      t.eq(cmd, c and c.name, ":Claude " .. sub)
    end
  end,
  every_command_has_a_subcommand = function()
    local have = {}
    for _, c in pairs(commands.subcommands) do
      have[c.name] = true
    end
    for name in pairs(vim.api.nvim_get_commands({})) do
      if name:match("^Claude.") then
        t.eq(true, have[name] or false, name .. " as a subcommand")
      end
    end
  end,
  completion = function()
    for _, c in ipairs({
      { "Claude chat-s", "chat-s", { "chat-send", "chat-sessions" } },
      { "Claude share ", "", { "on", "off", "toggle" } },
      { "Claude install d", "d", { "download" } },
      { "Claude nope x", "x", {} },
    }) do
      t.eq(c[3], commands.complete(c[2], c[1]), c[1])
    end
  end,
}
