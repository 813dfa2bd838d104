-- The chat's prompt buffer: composing, history, completion, attachments.
local config = require("claude.config")

local api = vim.api
local util = require("claude.util")

local M = {}

-- Prompts sent from any chat, oldest first: like a shell's history, a new
-- chat can recall what was asked in the last one.
local history = {}

local IMAGE_EXT = { png = true, jpg = true, jpeg = true, gif = true, webp = true }

local function chats()
  return require("claude.chat")
end

local notify = require("claude.util").notify_now

local function opts()
  return config.options.chat
end

local function is_image(path)
  local ext = path:match("%.(%w+)$")
  return ext ~= nil and IMAGE_EXT[ext:lower()] == true
end

-- Attachments ---------------------------------------------------------------

local function rel(chat, path)
  local p = vim.fn.fnamemodify(path, ":p")
  local cwd = (chat.cwd or vim.fn.getcwd()):gsub("/$", "") .. "/"
  if p:sub(1, #cwd) == cwd then
    return p:sub(#cwd + 1)
  end
  return vim.fn.fnamemodify(p, ":~")
end

--- A short label for an attachment (the prompt's winbar, the transcript).
function M.label(chat, a)
  if a.type == "image" then
    return a.clipboard and "image: clipboard" or ("image: " .. rel(chat, a.path))
  elseif a.type == "text" then
    return a.label or "text"
  end
  local l = rel(chat, a.path)
  if a.start_line then
    l = string.format("%s:%d-%d", l, a.start_line, a.end_line or a.start_line)
  end
  return l
end

--- Adds an attachment to the chat's next prompt.
function M.attach(chat, a)
  for _, have in ipairs(chat.attachments) do
    if vim.deep_equal(have, a) then
      return
    end
  end
  table.insert(chat.attachments, a)
  M.refresh(chat)
end

function M.clear_attachments(chat)
  chat.attachments = {}
  M.refresh(chat)
end

--- Attaches lines l1..l2 of buf: as a file range when the buffer is a
--- saved file (Go reads it), else as a fenced block of the buffer's text.
function M.attach_range(chat, buf, l1, l2)
  if l1 > l2 then
    l1, l2 = l2, l1
  end
  local name = api.nvim_buf_get_name(buf)
  local path = require("claude.editor").file_path(buf)
  if path and not vim.bo[buf].modified and vim.fn.filereadable(path) == 1 then
    M.attach(chat, { type = "file", path = path, start_line = l1, end_line = l2 })
    return
  end
  local lines = api.nvim_buf_get_lines(buf, l1 - 1, l2, false)
  local label = (name ~= "" and rel(chat, name) or "[No Name]") .. string.format(":%d-%d", l1, l2)
  local text = string.format("%s\n```%s\n%s\n```", label, vim.bo[buf].filetype, table.concat(lines, "\n"))
  M.attach(chat, { type = "text", text = text, label = label })
end

-- source_window is the window the user came from: the previous window if
-- it is not part of a chat, else the largest window that is not.
local function source_window()
  local function ok(w)
    if not w or w == 0 or not api.nvim_win_is_valid(w) then
      return false
    end
    local b = api.nvim_win_get_buf(w)
    return vim.b[b].claude_chat == nil and vim.b[b].claude_chat_prompt == nil
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if ok(prev) then
    return prev
  end
  return require("claude.util").largest_window(0, function(w)
    return ok(w) and not util.floating(w)
  end)
end

--- Attaches the last visual selection of the window the user came from.
function M.attach_selection(chat)
  local w = source_window()
  if not w then
    notify("nvim-claude: no editor window to take a selection from", vim.log.levels.WARN)
    return
  end
  local buf = api.nvim_win_get_buf(w)
  local s = api.nvim_buf_get_mark(buf, "<")
  local e = api.nvim_buf_get_mark(buf, ">")
  if s[1] == 0 or e[1] == 0 then
    notify("nvim-claude: that buffer has no visual selection yet", vim.log.levels.WARN)
    return
  end
  M.attach_range(chat, buf, s[1], e[1])
end

--- Asks for an image file (empty: the clipboard) and attaches it.
function M.attach_image(chat, path)
  local function add(p)
    if p == nil then
      return
    end
    p = vim.trim(p)
    if p == "" then
      M.attach(chat, { type = "image", clipboard = true })
      return
    end
    p = vim.fn.fnamemodify(vim.fn.expand(p), ":p")
    if vim.fn.filereadable(p) ~= 1 then
      notify("nvim-claude: no such image file: " .. p, vim.log.levels.ERROR)
      return
    end
    M.attach(chat, { type = "image", path = p })
  end
  if path then
    add(path)
    return
  end
  vim.ui.input({ prompt = "Image file (empty: the clipboard): ", completion = "file" }, add)
end

-- mentions finds the @path words of text that name existing files (relative
-- to the chat's cwd) and turns them into attachments.
local function mentions(chat, text)
  local out = {}
  for word in text:gmatch("@([^%s]+)") do
    word = word:gsub("[,;:%.%)]+$", "")
    local path = word
    if path:sub(1, 1) ~= "/" and path:sub(1, 1) ~= "~" then
      path = (chat.cwd or vim.fn.getcwd()) .. "/" .. path
    end
    path = vim.fn.fnamemodify(vim.fn.expand(path), ":p")
    if vim.fn.filereadable(path) == 1 then
      table.insert(out, { type = is_image(path) and "image" or "file", path = path })
    end
  end
  return out
end

-- Sending -------------------------------------------------------------------

function M.text(chat)
  chats().ensure_prompt(chat)
  return table.concat(api.nvim_buf_get_lines(chat.pbuf, 0, -1, false), "\n")
end

local function set_text(chat, text)
  chats().ensure_prompt(chat)
  api.nvim_buf_set_lines(chat.pbuf, 0, -1, false, vim.split(text or "", "\n", { plain = true }))
  for _, w in ipairs(vim.fn.win_findbuf(chat.pbuf)) do
    local last = api.nvim_buf_line_count(chat.pbuf)
    pcall(api.nvim_win_set_cursor, w, { last, #api.nvim_buf_get_lines(chat.pbuf, last - 1, last, false)[1] })
  end
end
M.set_text = set_text

local function remember(text)
  local max = opts().history_size
  if max == 0 then
    return
  end
  if history[#history] ~= text then
    table.insert(history, text)
  end
  while #history > max do
    table.remove(history, 1)
  end
end

--- Sends text (default: the prompt buffer) with the pending attachments.
--- Returns true when the host took it.
function M.send(chat, text)
  local from_buffer = text == nil
  text = text or M.text(chat)
  local trimmed = vim.trim(text)
  local atts = vim.deepcopy(chat.attachments)
  for _, a in ipairs(mentions(chat, trimmed)) do
    local dup = false
    for _, have in ipairs(atts) do
      if have.path == a.path and not have.start_line then
        dup = true
      end
    end
    if not dup then
      table.insert(atts, a)
    end
  end
  if trimmed == "" and #atts == 0 then
    return false
  end
  if chat.state == "exited" then
    notify("nvim-claude: this chat's CLI has exited; press " .. tostring(opts().keys.resume) .. " in the transcript to resume it", vim.log.levels.WARN)
    return false
  end
  if chat.state == "failed" then
    notify("nvim-claude: this chat's CLI did not start (its transcript says why); :ClaudeChat! opens a new one", vim.log.levels.WARN)
    return false
  end
  if chat.state == "starting" then
    -- Sent as soon as the chat's CLI runs (the prompt empties now, as
    -- for any send; the attachments go with it then).
    chats().when_ready(chat, function()
      M.send(chat, text)
    end)
    if trimmed ~= "" then
      remember(trimmed)
    end
    if from_buffer then
      set_text(chat, "")
    end
    require("claude.chat.render").append(chat, { "> … sent when Claude has started" }, "0", "ClaudeChatMeta")
    return true
  end
  local params = { id = chat.id, text = trimmed }
  if #atts > 0 then
    params.attachments = atts
  end
  local res, err = require("claude.server").request("chat_send", params)
  if not res then
    notify(err or "nvim-claude: chat_send: no answer from the host", vim.log.levels.ERROR)
    return false
  end
  if trimmed ~= "" then
    remember(trimmed)
    chat.last_prompt = trimmed -- what a refusal's "edit the prompt" gives back
  end
  chat.hist_idx = nil
  chat.draft = nil
  chat.attachments = {}
  if from_buffer then
    set_text(chat, "")
  end
  M.refresh(chat)
  return true
end

-- History -------------------------------------------------------------------

-- <Up>/<Down> at the edge of the current prompt buffer.
function M._history_key(dir)
  local c = chats().get(vim.b[api.nvim_get_current_buf()].claude_chat_prompt)
  if c then
    M.history_step(c, dir)
  end
end

--- Steps through the history: dir -1 older, +1 newer.
function M.history_step(chat, dir)
  if #history == 0 then
    return
  end
  local idx = chat.hist_idx
  if idx == nil then
    if dir > 0 then
      return
    end
    chat.draft = M.text(chat)
    idx = #history + 1
  end
  idx = idx + dir
  if idx < 1 then
    idx = 1
  end
  if idx > #history then
    chat.hist_idx = nil
    set_text(chat, chat.draft or "")
    return
  end
  chat.hist_idx = idx
  set_text(chat, history[idx])
end

function M.history()
  return history
end

-- Completion ----------------------------------------------------------------

local function file_items(chat, base)
  local items = {}
  local seen = {}
  local cwd = chat and chat.cwd or vim.fn.getcwd()
  local function add(path)
    if not seen[path] then
      seen[path] = true
      table.insert(items, { word = "@" .. path, abbr = path, menu = "[file]" })
    end
  end
  -- open buffers first: what the user works on
  local file_path = require("claude.editor").file_path
  for _, b in ipairs(api.nvim_list_bufs()) do
    local name = vim.bo[b].buflisted and file_path(b)
    if name then
      local r = chat and rel(chat, name) or vim.fn.fnamemodify(name, ":.")
      if r:find(base, 1, true) == 1 or (base ~= "" and r:find(base, 1, true)) then
        add(r)
      end
    end
  end
  local pattern = base:sub(1, 1) == "/" and base or (cwd .. "/" .. base)
  for _, p in ipairs(vim.fn.glob(pattern .. "*", false, true)) do
    local r = base:sub(1, 1) == "/" and p or p:sub(#cwd + 2)
    if vim.fn.isdirectory(p) == 1 then
      r = r .. "/"
    end
    add(r)
    if #items > 200 then
      break
    end
  end
  return items
end

local function command_items(chat, base)
  local items = {}
  for _, c in ipairs(chat and chat.commands or {}) do
    if c.name and c.name:find(base, 1, true) == 1 then
      local menu = c.description or ""
      if c.argument_hint and c.argument_hint ~= vim.NIL and c.argument_hint ~= "" then
        menu = c.argument_hint .. "  " .. menu
      end
      table.insert(items, { word = "/" .. c.name, menu = menu })
    end
  end
  table.sort(items, function(a, b)
    return a.word < b.word
  end)
  return items
end

--- 'omnifunc' of prompt buffers: @file anywhere, /command at the start.
function M.omnifunc(findstart, base)
  local buf = api.nvim_get_current_buf()
  local chat = chats().get(vim.b[buf].claude_chat_prompt)
  if findstart == 1 then
    local line = api.nvim_get_current_line()
    local col = api.nvim_win_get_cursor(0)[2]
    local before = line:sub(1, col)
    local at = before:find("@[^%s@]*$")
    if at then
      return at - 1
    end
    local row = api.nvim_win_get_cursor(0)[1]
    if row == 1 and before:match("^/[%w:_%-]*$") then
      return 0
    end
    return -3 -- cancel silently
  end
  if base:sub(1, 1) == "@" then
    return file_items(chat, base:sub(2))
  elseif base:sub(1, 1) == "/" then
    return command_items(chat, base:sub(2))
  end
  return {}
end

-- The buffer ------------------------------------------------------------------

--- Sets up chat.pbuf's options and keys.
function M.setup_buffer(chat)
  local buf = chat.pbuf
  local keys = opts().keys
  vim.b[buf].claude_chat_prompt = chat.id
  vim.bo[buf].omnifunc = "v:lua.require'claude.chat.prompt'.omnifunc"
  local function with(fn)
    return function()
      local c = chats().get(vim.b[buf].claude_chat_prompt)
      if c then
        fn(c)
      end
    end
  end
  local send = with(function(c)
    M.send(c)
  end)
  util.map(buf, "<CR>", send, "send the prompt")
  util.map(buf, keys.send, function()
    if api.nvim_get_mode().mode:sub(1, 1) == "i" then
      vim.cmd("stopinsert")
    end
    send()
  end, "send the prompt", { mode = { "n", "i" } })
  -- <Up>/<Down> recall history on the first/last line and move otherwise,
  -- so a multi-line prompt stays editable; with the completion menu open
  -- they move in the menu. (An expr mapping: the key itself goes through
  -- unmapped, the history step runs as a <Cmd>.)
  local function hist(dir, edge)
    local key = dir < 0 and "<Up>" or "<Down>"
    return function()
      if vim.fn.pumvisible() == 1 then
        return key
      end
      local c = chats().get(vim.b[buf].claude_chat_prompt)
      local row = api.nvim_win_get_cursor(0)[1]
      local last = api.nvim_buf_line_count(buf)
      if c and ((edge == "first" and row == 1) or (edge == "last" and row == last)) then
        return string.format("<Cmd>lua require('claude.chat.prompt')._history_key(%d)<CR>", dir)
      end
      return key
    end
  end
  for _, k in ipairs({ { "<Up>", -1, "first", "previous prompt from the history" }, { "<Down>", 1, "last", "next prompt from the history" } }) do
    vim.keymap.set({ "n", "i" }, k[1], hist(k[2], k[3]), { buffer = buf, expr = true, silent = true, nowait = true, desc = "nvim-claude: " .. k[4] })
  end
  util.map(buf, keys.attach_selection, with(M.attach_selection), "attach the last visual selection")
  util.map(buf, keys.image, with(function(c)
    M.attach_image(c)
  end), "attach an image (file or clipboard)")
  util.map(buf, keys.clear_attachments, with(M.clear_attachments), "drop the attachments")
  require("claude.dictation").map_buffer(buf)
  -- <Tab> completes an @file or a /command (at the start of the prompt);
  -- elsewhere it stays a <Tab>. The menu opens on request only: opening it
  -- on every @ would insert a match while the user types a name.
  -- Not an expr mapping: when "@no<Tab>" arrives in one batch (a paste, a
  -- slow link), Insert mode collects "@no" and expands <Tab>'s mapping
  -- before it puts them in the line, so an expr saw no "@" and gave a
  -- <Tab>. A callback runs once they are in; its keys go next in line.
  vim.keymap.set("i", "<Tab>", function()
    local keys = "<Tab>"
    if vim.fn.pumvisible() == 1 then
      keys = "<C-n>"
    else
      local row, col = unpack(api.nvim_win_get_cursor(0))
      local before = api.nvim_get_current_line():sub(1, col)
      if before:find("@[^%s@]*$") or (row == 1 and before:match("^/[%w:_%-]*$")) then
        keys = "<C-x><C-o>"
      end
    end
    api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, false, true), "ni", false)
  end, { buffer = buf, desc = "nvim-claude: complete @file or /command" })
end

--- The prompt window's header: the attachments waiting for the next send.
function M.winbar(chat)
  local keys = opts().keys
  local text = "Prompt"
  if keys.send then
    text = text .. " (" .. keys.send .. " sends; <CR> too in Normal mode)"
  end
  if #chat.attachments > 0 then
    local labels = {}
    for _, a in ipairs(chat.attachments) do
      table.insert(labels, M.label(chat, a))
    end
    text = text .. " · 📎 " .. table.concat(labels, ", ")
  end
  return text
end

function M.refresh(chat)
  local bar = "%#ClaudeChatHeader#" .. M.winbar(chat):gsub("%%", "%%%%") .. "%<"
  for _, w in ipairs(vim.fn.win_findbuf(chat.pbuf)) do
    chats().set_local(w, "winbar", bar)
  end
end

return M
