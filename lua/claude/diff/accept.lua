-- The accept write: what the accepted proposal puts in the file, written
-- where the host reads it, and the decision handed to the host.
local api = vim.api

local M = {}

-- buffer_contents is what writing buf would put in the file: its lines
-- joined by the 'fileformat' line ending, with a final one when 'eol' (or
-- 'fixeol' outside 'binary') asks for it. A buffer with no lines at all
-- writes nothing.
local function buffer_contents(buf)
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
  if bo.eol or (bo.fixeol and not bo.binary) then
    lines[#lines + 1] = "" -- the final line ending, without a second copy of the text
  end
  return table.concat(lines, nl)
end

-- write_buffer writes buf to path as :w would write it to its own file
-- ('fileformat', 'eol', 'fixeol'; no encoding conversion, no BOM added),
-- with Neovim's own :write — far cheaper for a large proposal than joining
-- its lines into a Lua string. No autocommand runs (no formatter, no
-- BufWriteCmd), no backup is made, the buffer keeps its name and options.
-- Returns true, or false and why (nothing is left at path then).
local function write_buffer(buf, path)
  local bo = vim.bo[buf]
  local saved = { buftype = bo.buftype, fenc = bo.fileencoding, bomb = bo.bomb, modified = bo.modified }
  local wb, bk = vim.o.writebackup, vim.o.backup
  local ok, err = pcall(api.nvim_buf_call, buf, function()
    vim.o.writebackup, vim.o.backup = false, false
    vim.cmd("noautocmd setlocal buftype= fileencoding= nobomb")
    vim.cmd("silent noautocmd keepalt keepjumps write! " .. vim.fn.fnameescape(path))
  end)
  vim.o.writebackup, vim.o.backup = wb, bk
  -- :w {file} lists {file} as a buffer (unloaded); it is not the user's
  local listed = vim.fn.bufnr(path)
  if listed > 0 and listed ~= buf then
    pcall(api.nvim_buf_delete, listed, { force = true })
  end
  pcall(api.nvim_buf_call, buf, function()
    vim.cmd("noautocmd setlocal buftype=" .. saved.buftype)
    if saved.fenc ~= "" then
      vim.cmd("noautocmd setlocal fileencoding=" .. saved.fenc)
    end
    if saved.bomb then
      vim.cmd("noautocmd setlocal bomb")
    end
  end)
  bo.modified = saved.modified
  if not ok then
    os.remove(path)
  end
  return ok, err
end

-- Talking to the host --------------------------------------------------------

-- send_decision hands the decision to the host and reports whether the
-- host was still waiting for it. A request, not a notification: the CLI
-- may have cancelled the diff (or closeAllDiffTabs ended it) a moment
-- before the user decided, and then nothing will be written.
local function send_decision(d, payload)
  local chan = d.chan
  if not chan or chan == 0 then
    chan = require("claude.server").state().chan
  end
  if not chan then
    return false
  end
  -- the contents (a whole file) go beside the JSON, as a string of their
  -- own: no escaping here, no decoding in the host
  local contents = payload.contents
  payload.contents = nil
  local ok, res
  if contents then
    ok, res = pcall(vim.fn.rpcrequest, chan, "diff_decision", vim.json.encode(payload), contents)
  else
    ok, res = pcall(vim.fn.rpcrequest, chan, "diff_decision", vim.json.encode(payload))
  end
  if ok and type(res) == "string" then
    ok, res = pcall(vim.json.decode, res)
  end
  return ok and type(res) == "table" and res.pending == true
end

M.buffer_contents = buffer_contents
M.write_buffer = write_buffer
M.send_decision = send_decision

return M
