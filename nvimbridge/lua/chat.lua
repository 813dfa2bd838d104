-- Area file: the chat panel's reads of diff review state. The chat's
-- permission prompt can accept a diff without the user writing the
-- proposal buffer; the host then needs the proposal as it now reads.
local fns = ...

local api = vim.api

-- chat_proposal_text finds the pending diff named args.tab_name and returns
-- {found, contents}.
function fns.chat_proposal_text(args)
  local ok, diff = pcall(require, "claude.diff")
  if not ok then
    return { found = false }
  end
  for _, d in ipairs(diff.pending()) do
    if d.tab_name == args.tab_name and api.nvim_buf_is_valid(d.proposal_bufnr) then
      return { found = true, contents = diff.buffer_contents(d.proposal_bufnr) }
    end
  end
  return { found = false }
end
