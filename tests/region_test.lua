local region = require("claude.selection.region")

-- A scratch buffer in the current window holding lines.
local function buf_with(lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_win_set_buf(0, buf)
  return buf
end

return {
  -- What `y` would yank, and the UTF-16 positions the IDE protocol counts.
  charwise_linewise_blockwise = function()
    local buf = buf_with({ "héllo wörld", "😀 two", "three" })
    for _, c in ipairs({
      { "v", { l = 1, c = 0 }, { l = 1, c = 5 }, "héllo", { 0, 0 }, { 0, 5 } },
      { "v", { l = 1, c = 7 }, { l = 2, c = 4 }, "wörld\n😀 ", { 0, 6 }, { 1, 3 } },
      { "V", { l = 2, c = 0 }, { l = 3, c = 0 }, "😀 two\nthree\n", { 1, 0 }, { 3, 0 } },
      { "\22", { l = 1, c = 0 }, { l = 3, c = 0 }, "h\n \nt", { 0, 0 }, { 2, 1 } }, -- half a wide character yanks as a space, as `y` does
    }) do
      local st = region.region(0, buf, "/x", c[1], c[2], c[3], false)
      t.eq(c[4], st.text, c[1] .. " text")
      t.eq({ line = c[5][1], character = c[5][2] }, st.start, c[1] .. " start")
      t.eq({ line = c[6][1], character = c[6][2] }, st["end"], c[1] .. " end")
    end
  end,
  reversed_ends_are_swapped = function()
    local buf = buf_with({ "abcdef" })
    local st = region.region(0, buf, "/x", "v", { l = 1, c = 4 }, { l = 1, c = 1 }, false)
    t.eq("bcde", st.text, "text")
  end,
}
