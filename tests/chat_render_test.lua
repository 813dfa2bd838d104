local api = vim.api
local render = require("claude.chat.render")

-- a transcript buffer as the chat makes one (unmodifiable), shown in a
-- window with the chat's folds
local function transcript()
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].modifiable = false
  local chat = { id = "t", tbuf = buf }
  render.attach(chat)
  vim.cmd("vsplit")
  api.nvim_win_set_buf(0, buf)
  vim.wo.foldmethod = "expr"
  vim.wo.foldexpr = render.FOLDEXPR
  return chat, api.nvim_get_current_win()
end

local function hl_rows(chat, group)
  local rows = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(chat.tbuf, render.ns, 0, -1, { details = true })) do
    if m[4].hl_group == group then
      rows[#rows + 1] = m[2]
    end
  end
  return rows
end

return {
  -- Streamed text lands whole and in order whether a delta breaks the
  -- line or only extends it; the window follows the end; the buffer stays
  -- unmodifiable and unmodified; a thinking line's highlight covers what
  -- later deltas append to it.
  stream_deltas = function()
    local chat, win = transcript()
    local text = { "Hel", "lo ", "world", ".\n\nSecond", " par", "agraph\n- a", " b", "" }
    for _, d in ipairs(text) do
      render.text(chat, { message_id = "m", index = 0, delta = d })
    end
    render.thinking(chat, { message_id = "m", index = 1, delta = "hm" })
    render.thinking(chat, { message_id = "m", index = 1, delta = "m, so" })
    render.thinking(chat, { message_id = "m", index = 1, delta = "\nnext" })
    local lines = api.nvim_buf_get_lines(chat.tbuf, 0, -1, false)
    t.eq({ "## Claude", "Hello world.", "", "Second paragraph", "- a b", "▸ Thinking", "hmm, so", "next" }, lines)
    t.eq(#lines, api.nvim_win_get_cursor(win)[1], "the window follows the end")
    t.eq(false, vim.bo[chat.tbuf].modifiable, "modifiable")
    t.eq(false, vim.bo[chat.tbuf].modified, "modified")
    local rows = hl_rows(chat, "ClaudeChatThinking")
    t.eq(true, vim.tbl_contains(rows, 6) and vim.tbl_contains(rows, 7), "thinking rows highlighted")
    for _, m in ipairs(api.nvim_buf_get_extmarks(chat.tbuf, render.ns, { 6, 0 }, { 6, -1 }, { details = true })) do
      if m[4].hl_group == "ClaudeChatThinking" then
        t.eq(true, m[4].end_row > 6 or m[4].end_col >= #"hmm, so", "the highlight runs past the appended text")
      end
    end
    vim.cmd("close")
    render.detach(chat.tbuf)
    api.nvim_buf_delete(chat.tbuf, { force = true })
  end,

  -- A delta appended at the end of a long block makes Neovim evaluate the
  -- fold expression of a few lines, not of every line up to the block's
  -- last checkpoint (and down again): the lines after the map's last
  -- entry have a number for a level, not "=". The folds stay the
  -- renderer's.
  stream_fold_walk = function()
    local chat, win = transcript()
    render.thinking(chat, { message_id = "m", index = 0, delta = "think" })
    local body = {}
    for i = 1, 60 do
      body[i] = "line " .. i
    end
    render.text(chat, { message_id = "m", index = 1, delta = table.concat(body, "\n") })
    vim.cmd([[
      let g:claude_fold_evals = 0
      function! ClaudeTestFoldEval(level) abort
        let g:claude_fold_evals += 1
        return a:level
      endfunction
    ]])
    vim.wo[win].foldexpr = "ClaudeTestFoldEval(" .. render.FOLDEXPR .. ")"
    local n = api.nvim_buf_line_count(chat.tbuf)
    api.nvim_win_call(win, function()
      vim.fn.foldlevel(n) -- the folds computed afresh
    end)
    vim.g.claude_fold_evals = 0
    render.text(chat, { message_id = "m", index = 1, delta = " more" })
    local evals
    api.nvim_win_call(win, function()
      evals = vim.g.claude_fold_evals
      for l = 1, n do
        local want = render.foldexpr(l) == "0" and 0 or 1
        t.eq(want, vim.fn.foldlevel(l), "fold level of line " .. l)
      end
    end)
    t.eq("line 60 more", api.nvim_buf_get_lines(chat.tbuf, n - 1, n, false)[1], "the delta")
    t.eq(true, evals <= 4, "fold expression evaluated " .. evals .. " times for one delta")
    vim.cmd("close")
    render.detach(chat.tbuf)
    api.nvim_buf_delete(chat.tbuf, { force = true })
    vim.cmd("delfunction ClaudeTestFoldEval")
  end,
}
