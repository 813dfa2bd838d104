-- lazy.nvim runs this file after installing or updating the plugin (when
-- the spec names no `build`); other managers can run :ClaudeInstall.
-- It builds the Go host with Go (fetching the toolchain go.mod names when
-- the Go on PATH is older but 1.21+), else downloads the prebuilt host of
-- this version and checks its signature and SHA-256
-- (lua/claude/install.lua). It says each step as it goes: lazy.nvim runs
-- build files in a coroutine and shows what they yield (`:Lazy build` would
-- otherwise be silent for a minute); run any other way, it prints them.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
if not vim.tbl_contains(vim.opt.runtimepath:get(), root) then
  vim.opt.runtimepath:prepend((root:gsub(",", "\\,")))
end
local lines, done, ok, msg = {}, false, false, nil
require("claude.install").run({
  root = root,
  progress = function(line)
    table.insert(lines, line)
  end,
}, function(o, m)
  done, ok, msg = true, o, m
end)
-- In lazy.nvim's task (11.x: lazy.async knows the running coroutine) yield
-- each line to it and sleep between looks; anywhere else print and wait.
local lazy_async = package.loaded["lazy.async"]
local yieldable = type(lazy_async) == "table"
  and type(lazy_async.running) == "function"
  and type(lazy_async.sleep) == "function"
  and lazy_async.running() ~= nil
local deadline = vim.loop.now() + 15 * 60 * 1000
while true do
  while #lines > 0 do
    local line = table.remove(lines, 1)
    if yieldable then
      coroutine.yield(line)
    else
      print(line)
    end
  end
  if done then
    break
  end
  if vim.loop.now() > deadline then
    error("nvim-claude: the install did not finish within 15 minutes", 0)
  end
  if yieldable then
    lazy_async.sleep(100)
  else
    vim.wait(100, function()
      return done or #lines > 0
    end, 20)
  end
end
if not ok then
  error(msg, 0)
end
if yieldable then
  coroutine.yield(msg)
else
  print(msg)
end
