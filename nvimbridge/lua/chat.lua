-- Area file: the chat panel's reads of diff review state. The chat's
-- permission prompt can accept a diff without the user writing the
-- proposal buffer; the host then needs the proposal as it now reads.
local fns = ...

local api = vim.api

-- contents is what writing buf would put in the file (the same rule as
-- claude.diff's own accept): lines joined by the 'fileformat' line ending,
-- a final one when 'eol' (or 'fixeol' outside 'binary') asks for it.
local function contents(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local bo = vim.bo[buf]
  if #lines == 1 and lines[1] == "" then
    local bytes = api.nvim_buf_call(buf, function()
      return vim.fn.wordcount().bytes
    end)
    if bytes == 0 then
      return ""
    end
  end
  local nl = ({ dos = "\r\n", mac = "\r" })[bo.fileformat] or "\n"
  local s = table.concat(lines, nl)
  if bo.eol or (bo.fixeol and not bo.binary) then
    s = s .. nl
  end
  return s
end

-- chat_proposal_text finds the pending diff named args.tab_name and returns
-- {found, contents}.
function fns.chat_proposal_text(args)
  local ok, diff = pcall(require, "claude.diff")
  if not ok then
    return { found = false }
  end
  for _, d in ipairs(diff.pending()) do
    if d.tab_name == args.tab_name and api.nvim_buf_is_valid(d.proposal_bufnr) then
      return { found = true, contents = contents(d.proposal_bufnr) }
    end
  end
  return { found = false }
end
