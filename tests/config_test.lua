local config = require("claude.config")

-- apply() on a fresh copy of the defaults: the problems it reports.
local function problems(opts)
  return config.apply(opts)
end

return {
  valid_options_apply = function()
    t.eq({}, problems({ log_level = "debug", terminal = { split_side = "left", width = 0.5 } }), "problems")
    t.eq("left", config.options.terminal.split_side, "split_side")
    t.eq(0.5, config.options.terminal.width, "width")
  end,
  invalid_options_are_named_and_ignored = function()
    for _, c in ipairs({
      { { terminal = { split_side = "up" } }, "terminal.split_side" },
      { { terminal = { width = -1 } }, "terminal.width" },
      { { log_level = "loud" }, "log_level" },
      { { selection = { debounce_ms = -5 } }, "selection.debounce_ms" },
      { "not a table", "setup() takes a table" },
    }) do
      local p = problems(c[1])
      t.eq(1, #p, vim.inspect(c[1]) .. " problems")
      assert(p[1]:find(c[2], 1, true), ("problem %q does not name %q"):format(p[1], c[2]))
    end
    t.eq(config.defaults().terminal.split_side, (function()
      problems({ terminal = { split_side = "up" } })
      return config.options.terminal.split_side
    end)(), "an invalid value leaves the default")
  end,
  deny_lists_replace = function()
    problems({ security = { deny = { "*.key" }, deny_extra = { "*.tfstate" } } })
    t.eq({ "*.key", "*.tfstate" }, config.deny_globs(), "deny globs")
  end,
  setup_again_changes_only_what_it_names = function()
    config.apply({ log_level = "info" })
    local base = config.options
    config.apply({ terminal = { split_side = "bottom" } }, base)
    t.eq("info", config.options.log_level, "kept")
    t.eq("bottom", config.options.terminal.split_side, "changed")
  end,
}
