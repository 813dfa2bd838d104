-- The deny-list's quick half in Lua: the globs of security.deny and
-- security.deny_extra (claude.config), compiled once per list and matched
-- against a path and its symlink target, so that a denied file costs
-- nothing to gather. The host's boundary is the judge (it also knows
-- another hard link to a deny-listed file) and checks every path again
-- before anything leaves Neovim; workspace/testdata/deny_table.json is the
-- one table both are tested against.
local config = require("claude.config")
local util = require("claude.util")

local fn = vim.fn
local uv = util.uv

local M = {}

local deny = { src = nil, pats = {}, cache = {} }

-- compile turns the deny globs into Vim regexes. A glob without "/" is
-- matched against the file name, one with "/" against the whole path (a
-- relative one anywhere in it). "*" crosses directory separators.
local function compile(globs)
  local pats = {}
  local case = vim.o.fileignorecase and "\\c" or "\\C"
  for _, g in ipairs(globs or {}) do
    if g ~= "" then
      local full = g:find("/", 1, true) ~= nil
      if full then
        if g:sub(1, 1) == "~" then
          g = fn.expand(g)
        elseif g:sub(1, 1) ~= "/" and g:sub(1, 1) ~= "*" then
          g = "*/" .. g
        end
      end
      local ok, re = pcall(fn.glob2regpat, g)
      if ok then
        table.insert(pats, { re = case .. re, full = full })
      end
    end
  end
  return pats
end

local function matches(path)
  local base = path:match("[^/\\]+$") or path
  for _, p in ipairs(deny.pats) do
    if fn.match(p.full and path or base, p.re) >= 0 then
      return true
    end
  end
  return false
end

--- Whether path is on the deny-list (security.deny + security.deny_extra:
--- its contents never leave Neovim). A symlink is judged by its target's
--- name too. This is the globs' half, run here so that a denied file costs
--- nothing to gather; the host's boundary is the judge (it also knows
--- another hard link to a deny-listed file) and checks every selection
--- again before it leaves (workspace/testdata/deny_table.json: one table
--- for both).
function M.denied(path)
  local globs = config.deny_globs()
  if deny.src ~= globs then
    deny.src, deny.pats, deny.cache = globs, compile(globs), {}
  end
  local hit = deny.cache[path]
  if hit == nil then
    hit = matches(path)
    if not hit then
      local real = uv.fs_realpath(path)
      hit = real ~= nil and real ~= path and matches(real)
    end
    deny.cache[path] = hit
  end
  return hit
end

return M
