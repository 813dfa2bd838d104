-- The keys of a diff: buffer-local mappings on both panes that accept or
-- reject the proposal or the hunk under the cursor.
local util = require("claude.util")

local M = {}

-- map_keys maps o's keys on both panes of d to the handlers in h
-- (accept, reject, accept_hunk, reject_hunk: claude.diff's own).
local function map_keys(d, o, h)
  d.maps = {}
  -- (in the user's own buffer a mapping of theirs is never clobbered)
  local function key(buf, lhs, fn, desc, theirs)
    if util.map(buf, lhs, fn, desc, { theirs = theirs }) then
      table.insert(d.maps, { buf = buf, lhs = lhs })
    end
  end
  for _, buf in ipairs({ d.prop_buf, d.orig_buf }) do
    local theirs = buf == d.orig_buf and not d.orig_scratch
    key(buf, o.accept, h.accept, "nvim-claude: accept Claude's proposal", theirs)
    key(buf, o.reject, h.reject, "nvim-claude: reject Claude's proposal", theirs)
    key(buf, o.accept_hunk, h.accept_hunk, "nvim-claude: accept the hunk under the cursor", theirs)
    key(buf, o.reject_hunk, h.reject_hunk, "nvim-claude: reject the hunk under the cursor", theirs)
  end
end

M.map_keys = map_keys

return M
