-- The plan buffer: a plan Claude presents for approval (ExitPlanMode), a
-- chat's or a Claude terminal's, in a markdown buffer (`claude-plan://…`).
-- The user's edits are their comments: :w sends them back (keep planning),
-- ga approves the plan (manual mode), gA approves it and accepts edits.
-- What an answer does is the caller's (spec.on_comments, spec.on_approve).
local M = {}

local api = vim.api

--- The user's edits of the plan in buf as a diff the model can read, or
--- nil when there are none (original: the plan as presented).
function M.comments(buf, original)
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return nil
  end
  local now = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
  local was = tostring(original or "")
  if was:sub(-1) ~= "\n" then
    was = was .. "\n"
  end
  if now == was then
    return nil
  end
  local diff = vim.diff(was, now, { result_type = "unified", ctxlen = 2 })
  return "The user commented on your plan (their edits as a diff of the plan). "
    .. "Revise the plan accordingly and present it again with ExitPlanMode:\n\n"
    .. diff
end

--- Makes the plan buffer. spec: name (the buffer's), plan (its text,
--- displayable), var (b:claude_plan), augroup, on_comments(comments) (:w
--- with edits), on_approve(mode) (ga: "manual", gA: "acceptEdits").
--- Returns the buffer.
function M.create(spec)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, spec.name)
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split((tostring(spec.plan or "")):gsub("\n$", ""), "\n", { plain = true }))
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = "markdown"
  vim.b[buf].claude_plan = spec.var
  api.nvim_create_autocmd("BufWriteCmd", {
    group = spec.augroup,
    buffer = buf,
    desc = "nvim-claude: send the plan comments to Claude",
    callback = function()
      local comments = M.comments(buf, spec.plan)
      if not comments then
        require("claude.util").notify_now(
          "nvim-claude: the plan is unchanged; approve it with ga (manual mode) or gA (acceptEdits)",
          vim.log.levels.WARN
        )
        return
      end
      vim.bo[buf].modified = false
      spec.on_comments(comments)
    end,
  })
  local function approve(mode)
    return function()
      spec.on_approve(mode)
    end
  end
  vim.keymap.set("n", "ga", approve("manual"), { buffer = buf, desc = "nvim-claude: approve the plan (manual mode)" })
  vim.keymap.set("n", "gA", approve("acceptEdits"), {
    buffer = buf,
    desc = "nvim-claude: approve the plan and accept edits",
  })
  return buf
end

--- Closes the plan buffer buf (after the event that settled it).
function M.close(buf)
  vim.schedule(function()
    if buf and api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end)
end

return M
