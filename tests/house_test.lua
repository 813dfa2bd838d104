-- The house rules of lua/claude that a grep can hold: one module owns each
-- Neovim fact, so a helper that util.lua (or the owner) provides is not
-- written again beside it. Each rule names the pattern, the files allowed
-- to have it, and why; a new match elsewhere fails with its file and line.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")

-- files is every Lua file of the plugin, relative to the repository.
local function files()
  local out = {}
  for _, f in ipairs(vim.fn.globpath(root, "lua/claude/**/*.lua", false, true)) do
    table.insert(out, (f:sub(#root + 2)))
  end
  for _, f in ipairs(vim.fn.globpath(root, "lua/claude/*.lua", false, true)) do
    table.insert(out, (f:sub(#root + 2)))
  end
  table.sort(out)
  return vim.fn.uniq(out)
end

-- code_lines is the file's lines with comments cut off (a rule is about
-- code, and the doc comments name what they replace).
local function code_lines(rel)
  local lines = {}
  for n, l in ipairs(vim.fn.readfile(root .. "/" .. rel)) do
    lines[n] = (l:gsub("%-%-.*$", ""))
  end
  return lines
end

local function allowed(rel, list)
  for _, prefix in ipairs(list) do
    if rel:sub(1, #prefix) == prefix then
      return true
    end
  end
  return false
end

local rules = {
  {
    what = "vim.notify outside claude.util (use util.notify, or util.notify_now on the main loop)",
    pattern = "vim%.notify%s*%(",
    allow = { "lua/claude/util.lua" },
  },
  {
    what = "a local map() helper (use claude.util.map)",
    pattern = "function%s+map%s*%(",
    owner = "function%s+M%.map%s*%(",
    allow = { "lua/claude/util.lua" },
  },
  {
    what = "a float check of its own (use claude.util.floating)",
    pattern = "%.relative%s*[~=]=%s*\"\"",
    allow = { "lua/claude/util.lua" },
  },
  {
    what = "reading b:claude_terminal (ask claude.terminal.owns, or claude.editor.is_claude_terminal)",
    pattern = "claude_terminal",
    allow = { "lua/claude/terminal.lua", "lua/claude/editor.lua" },
  },
}

local cases = {}
for _, r in ipairs(rules) do
  cases[r.what] = function()
    local found = {}
    for _, rel in ipairs(files()) do
      if not allowed(rel, r.allow) then
        for n, l in ipairs(code_lines(rel)) do
          if l:find(r.pattern) then
            table.insert(found, ("%s:%d: %s"):format(rel, n, vim.trim(l)))
          end
        end
      end
    end
    if #found > 0 then
      error(r.what .. ":\n  " .. table.concat(found, "\n  "), 0)
    end
  end
end

-- The rules see what they should: each pattern (or the owner's form of it)
-- matches in the owner, the first allowed file (a rule whose pattern
-- matched nothing anywhere could never fail).
cases["each rule matches its owner"] = function()
  for _, r in ipairs(rules) do
    local hit = false
    for _, rel in ipairs(files()) do
      if rel == r.allow[1] then
        for _, l in ipairs(code_lines(rel)) do
          hit = hit or l:find(r.owner or r.pattern) ~= nil
        end
      end
    end
    assert(hit, r.what .. ": the pattern matches nothing in " .. r.allow[1])
  end
end

return cases
