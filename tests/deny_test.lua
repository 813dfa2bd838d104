local config = require("claude.config")
local deny = require("claude.deny")

-- The glob rows of the table the host's boundary is tested against
-- (workspace/testdata/deny_table.json): the Lua half must agree on them.
local function table_rows()
  local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
  local f = assert(io.open(root .. "/workspace/testdata/deny_table.json"))
  local data = vim.json.decode(f:read("*a"))
  f:close()
  return data
end

return {
  globs = function()
    config.apply({ security = { deny = { ".env", "*.pem", "secrets/*", "~/.ssh/*" } } })
    local home = vim.env.HOME
    for path, want in pairs({
      ["/p/.env"] = true,
      ["/p/sub/.env"] = true,
      ["/p/key.pem"] = true,
      ["/p/secrets/a.txt"] = true,
      [home .. "/.ssh/id_ed25519"] = true,
      ["/p/main.go"] = false,
      ["/p/env"] = false,
    }) do
      t.eq(want, deny.denied(path), path)
    end
  end,
  a_new_list_is_compiled_again = function()
    config.apply({ security = { deny = { "*.a" } } })
    t.eq(true, deny.denied("/p/x.a"), "first list")
    config.apply({ security = { deny = { "*.b" } } })
    t.eq(false, deny.denied("/p/x.a"), "old glob gone")
    t.eq(true, deny.denied("/p/x.b"), "new glob")
  end,
  the_shared_table_exists = function()
    local rows = table_rows()
    assert(type(rows) == "table" and next(rows) ~= nil, "workspace/testdata/deny_table.json is empty")
  end,
}
