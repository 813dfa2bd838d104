-- lazy.nvim runs this file after installing or updating the plugin (when
-- the spec names no `build`); other managers can run :ClaudeInstall.
-- It builds the Go host with Go when Go is new enough, else downloads the
-- prebuilt host of this version and checks its SHA-256 (lua/claude/install.lua).
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
if not vim.tbl_contains(vim.opt.runtimepath:get(), root) then
  vim.opt.runtimepath:prepend((root:gsub(",", "\\,")))
end
local ok, msg = require("claude.install").run_sync({ root = root })
if not ok then
  error(msg, 0)
end
print(msg)
