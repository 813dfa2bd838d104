-- Neovim sources this file at startup (this directory doubles as the Go
-- package "plugin"; Go ignores .lua files). It only defines the user
-- commands; nothing starts until one of them runs.
if vim.g.loaded_nvim_claude then
  return
end
vim.g.loaded_nvim_claude = 1

if vim.fn.has("nvim-0.7.2") == 0 then
  vim.notify("nvim-claude needs Neovim 0.7.2 or newer", vim.log.levels.ERROR)
  return
end

require("claude.commands").create()

-- Visual mode: send the selection to Claude. README suggests
--   vim.keymap.set("x", "<leader>cs", "<Plug>(claude-send)")
vim.keymap.set("x", "<Plug>(claude-send)", ":ClaudeSend<CR>", { silent = true, desc = "Send selection to Claude" })

-- Go to the oldest question a Claude session waits on (:ClaudeAnswer):
--   vim.keymap.set("n", "<leader>ca", "<Plug>(claude-answer)")
vim.keymap.set("n", "<Plug>(claude-answer)", "<cmd>ClaudeAnswer<CR>", { silent = true, desc = "Answer Claude" })
