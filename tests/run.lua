-- The pure-Lua tests: modules that need no host, no CLI and no window
-- (option validation, text made displayable, :Claude's subcommands, …).
-- Each tests/*_test.lua returns a table of test name → function; a test
-- fails by raising an error (assert, or t.eq below).
--
--   nvim -l tests/run.lua [pattern]                  (Neovim 0.9+, what `make test-lua` runs)
--   nvim --headless -u NONE -c "luafile tests/run.lua" (any line; TEST_FILTER=pattern)
--
-- It ends with the line "N passed, N failed" and exits non-zero on a failure.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. root .. "/tests/?.lua;" .. package.path

local filter = (arg and arg[1]) or vim.env.TEST_FILTER or ""

_G.t = {}
--- Deep equality with a readable failure.
function t.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(("%s: want %s, got %s"):format(what or "value", vim.inspect(want), vim.inspect(got)), 2)
  end
end

local files = vim.fn.glob(root .. "/tests/*_test.lua", false, true)
table.sort(files)
local passed, failed = 0, 0
local out = {}
for _, file in ipairs(files) do
  local mod = vim.fn.fnamemodify(file, ":t:r")
  local ok, cases = pcall(dofile, file)
  if not ok then
    failed = failed + 1
    out[#out + 1] = ("FAIL %s (load): %s"):format(mod, cases)
  else
    local names = vim.tbl_keys(cases)
    table.sort(names)
    for _, name in ipairs(names) do
      local full = mod .. "/" .. name
      if full:find(filter, 1, true) then
        local ok2, err = pcall(cases[name])
        if ok2 then
          passed = passed + 1
        else
          failed = failed + 1
          out[#out + 1] = ("FAIL %s: %s"):format(full, err)
        end
      end
    end
  end
end
out[#out + 1] = ("%d passed, %d failed"):format(passed, failed)
io.stdout:write(table.concat(out, "\n") .. "\n")
io.stdout:flush()
if passed + failed == 0 then
  io.stdout:write("no test ran\n")
  failed = 1
end
vim.cmd((failed > 0 and "cquit " .. failed or "qall!"))
