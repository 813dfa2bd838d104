-- The command-line window (q:): while it is open no other window may be
-- entered or closed (E11), so a diff neither opens nor closes then.
local api = vim.api

local M = {}

local function in_cmdwin()
  return vim.fn.getcmdwintype() ~= ""
end

-- after_cmdwin runs fn once the command-line window (q:) has closed: while
-- it is open no other window may be entered or closed (E11).
local cmdwin_queue
local function after_cmdwin(fn)
  if not cmdwin_queue then
    cmdwin_queue = {}
    api.nvim_create_autocmd("CmdwinLeave", {
      group = api.nvim_create_augroup("nvim-claude-diff-cmdwin", { clear = true }),
      once = true,
      callback = function()
        local q = cmdwin_queue
        cmdwin_queue = nil
        -- (CmdwinLeave comes before the window closes)
        vim.schedule(function()
          for _, f in ipairs(q) do
            pcall(f)
          end
        end)
      end,
    })
  end
  table.insert(cmdwin_queue, fn)
end

M.in_cmdwin = in_cmdwin
M.after_cmdwin = after_cmdwin

return M
