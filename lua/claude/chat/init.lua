-- The native chat panel: Claude Code's stream-json mode rendered in
-- Neovim buffers. The Go host runs one CLI per chat (chat_* requests) and
-- pushes what happens as "chat.<event>" events, in order and never dropped
-- (see /tmp/team/chat-contract.md); this module owns the buffers, windows,
-- keys and the state each chat shows.
local config = require("claude.config")
local util = require("claude.util")
local render = require("claude.chat.render")
local prompt = require("claude.chat.prompt")
local permission = require("claude.chat.permission")
local sessions = require("claude.chat.sessions")

local api = vim.api

local M = {}

-- The CLI's permission modes, by the names its --help gives them (the host
-- sends them with each chat: chat.modes); <S-Tab> goes through them in
-- this order.
M.MODES = { "manual", "acceptEdits", "plan", "auto", "dontAsk" }

M.MODE_HELP = {
  manual = "ask before edits and commands",
  acceptEdits = "apply edits without asking",
  plan = "plan only: no edits, no commands",
  auto = "a classifier decides what runs unasked",
  dontAsk = "deny whatever is not allowed already",
}

local chats = {} -- id -> chat
local order = {} -- ids, oldest first
local early = {} -- id -> events that came before chat_open returned
local opening = 0 -- chat_open / chat_fork requests in flight
local closed = {} -- ids Lua has closed (or left, on resume): their events are dropped
local repeated -- (below)
local last_id -- the chat used last
local augroup

local MAX_EARLY = 5000

local function opts()
  return config.options.chat
end

--- Whether this Neovim can run the chat; else false and the reason.
function M.supported()
  if vim.fn.has("nvim-0.8") == 0 then
    local v = vim.version()
    return false,
      string.format(
        "nvim-claude: the chat (:ClaudeChat) needs Neovim ≥ 0.8 (it uses 'winbar'); this is %d.%d.%d. "
          .. "The terminal integration (:ClaudeStart) works here.",
        v.major,
        v.minor,
        v.patch
      )
  end
  return true
end

function M.augroup()
  if not augroup then
    augroup = api.nvim_create_augroup("nvim-claude-chat", { clear = true })
  end
  return augroup
end

local function highlights()
  local set = function(name, link)
    api.nvim_set_hl(0, name, { link = link, default = true })
  end
  set("ClaudeChatHeader", "WinBar")
  set("ClaudeChatUser", "Title")
  set("ClaudeChatAssistant", "Special")
  set("ClaudeChatThinking", "Comment")
  set("ClaudeChatTool", "Function")
  set("ClaudeChatMeta", "Comment")
  set("ClaudeChatPermission", "WarningMsg")
  set("ClaudeChatWarn", "WarningMsg")
  set("ClaudeChatError", "ErrorMsg")
  set("ClaudeChatOk", "DiagnosticOk")
  set("ClaudeChatTodoDone", "Comment")
  set("ClaudeChatTodoActive", "Bold")
end

-- Lookup ----------------------------------------------------------------------

function M.get(id)
  if id == nil then
    return nil
  end
  return chats[tostring(id)]
end

function M.list()
  local out = {}
  for _, id in ipairs(order) do
    table.insert(out, chats[id])
  end
  return out
end

local function chat_of_buf(buf)
  local b = vim.b[buf]
  return M.get(b.claude_chat or b.claude_chat_prompt or b.claude_chat_todos)
end

local function tab_win(buf, tab)
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab or 0)) do
    if api.nvim_win_get_buf(w) == buf then
      return w
    end
  end
end

--- The chat the user means: the one in the current window, else one on
--- this tab, else the one used last.
function M.current()
  local c = chat_of_buf(api.nvim_get_current_buf())
  if c then
    return c
  end
  for _, id in ipairs(order) do
    if tab_win(chats[id].tbuf) or tab_win(chats[id].pbuf) then
      return chats[id]
    end
  end
  return M.get(last_id)
end

--- Whether the chat's transcript or prompt shows in the current tab.
function M.visible(chat)
  return tab_win(chat.tbuf) ~= nil or tab_win(chat.pbuf) ~= nil
end

-- Header ----------------------------------------------------------------------

local STATE = { running = "● running", idle = "○ idle", starting = "… starting", exited = "✗ exited", failed = "✗ did not start" }

local function kilo(n)
  if n >= 1000000 then
    return (string.format("%.1fM", n / 1000000):gsub("%.0M$", "M"))
  elseif n >= 1000 then
    return (string.format("%.1fk", n / 1000):gsub("%.0k$", "k"))
  end
  return tostring(n)
end

--- The header text of a chat (the transcript window's winbar).
function M.header(chat)
  local parts = {
    "Claude " .. chat.id,
    STATE[chat.state] or tostring(chat.state),
    "mode: " .. util.display(chat.mode),
    "model: " .. tostring(chat.model),
    string.format("$%.4f", tonumber(chat.cost) or 0),
  }
  local t = tonumber(chat.context_tokens)
  if t then
    local w = tonumber(chat.context_window)
    if w and w > 0 then
      table.insert(parts, string.format("ctx %s/%s (%d%%)", kilo(t), kilo(w), math.floor(t * 100 / w + 0.5)))
    else
      table.insert(parts, "ctx " .. kilo(t))
    end
  end
  if #chat.pending > 0 then
    table.insert(parts, string.format("⚠ %d waiting", #chat.pending))
  end
  return table.concat(parts, " · ")
end

--- Sets a window option for the buffer the window shows only (like
--- :setlocal): another buffer shown in the window later, or a split made
--- from it, gets the user's values, not the chat's.
function M.set_local(win, name, value)
  require("claude.editor").set_win_local(win, name, value)
end
local set_local = M.set_local

local function refresh_header(chat)
  if not api.nvim_buf_is_valid(chat.tbuf) then
    return
  end
  -- "%<" after the chat's name: a narrow window drops the tail, never the
  -- name (the default cuts from the left).
  local text = M.header(chat):gsub("%%", "%%%%")
  local name, rest = text:match("^(.-)( · .*)$")
  local bar = "%#ClaudeChatHeader#" .. (name and (name .. "%<" .. rest) or (text .. "%<"))
  for _, w in ipairs(vim.fn.win_findbuf(chat.tbuf)) do
    -- Every event comes here: setting 'winbar' redraws it, so only a
    -- change is set.
    if vim.wo[w].winbar ~= bar then
      set_local(w, "winbar", bar)
    end
  end
end
M.refresh_header = refresh_header

-- Todos -----------------------------------------------------------------------

local TASK_ICON = { pending = "☐ ", in_progress = "◐ ", completed = "☑ " }

local function todo_lines(chat)
  local lines, hls = {}, {}
  for _, t in ipairs(chat.todos) do
    local text = t.content
    if t.status == "in_progress" and t.active_form and t.active_form ~= vim.NIL and t.active_form ~= "" then
      text = t.active_form
    end
    table.insert(lines, (TASK_ICON[t.status] or "☐ ") .. tostring(text))
    table.insert(hls, t.status == "completed" and "ClaudeChatTodoDone" or t.status == "in_progress" and "ClaudeChatTodoActive" or false)
  end
  return lines, hls
end

-- show_todos puts the checklist in its small window between the transcript
-- and the prompt (created when the first list arrives).
local function show_todos(chat)
  if #chat.todos == 0 then
    -- Nothing in progress any more (the last background task ended): the
    -- window goes rather than show a stale list.
    if chat.dbuf and api.nvim_buf_is_valid(chat.dbuf) then
      for _, w in ipairs(vim.fn.win_findbuf(chat.dbuf)) do
        pcall(api.nvim_win_close, w, true)
      end
    end
    return
  end
  local buf = chat.dbuf
  if buf and api.nvim_buf_is_valid(buf) and not api.nvim_buf_is_loaded(buf) then
    pcall(api.nvim_buf_delete, buf, { force = true }) -- :bd'd: start afresh
  end
  if not (buf and api.nvim_buf_is_valid(buf)) then
    buf = api.nvim_create_buf(false, true)
    chat.dbuf = buf
    pcall(api.nvim_buf_set_name, buf, "claude-chat://" .. chat.id .. "/todos")
    vim.b[buf].claude_chat_todos = chat.id
    vim.bo[buf].bufhidden = "hide"
  end
  local lines, hls = todo_lines(chat)
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  api.nvim_buf_clear_namespace(buf, render.ns, 0, -1)
  for i, g in ipairs(hls) do
    if g then
      api.nvim_buf_add_highlight(buf, render.ns, g, i - 1, 0, -1)
    end
  end
  local height = math.min(#lines, 8)
  local dw = tab_win(buf)
  if dw then
    api.nvim_win_set_height(dw, height)
    return
  end
  local pw = tab_win(chat.pbuf)
  if not pw then
    return
  end
  api.nvim_win_call(pw, function()
    vim.cmd("aboveleft " .. height .. "split")
    dw = api.nvim_get_current_win()
    api.nvim_win_set_buf(dw, buf)
  end)
  set_local(dw, "winfixheight", true)
  set_local(dw, "number", false)
  set_local(dw, "relativenumber", false)
  set_local(dw, "signcolumn", "no")
  set_local(dw, "winbar", "%#ClaudeChatHeader#To-dos")
end

--- The chat's to-do list (what TodoWrite last sent).
function M.todos(chat)
  return chat.todos
end

-- Windows ---------------------------------------------------------------------

local function size(n, total)
  if n < 1 then
    return math.max(math.floor(total * n), 20)
  end
  return n
end

local TRANSCRIPT_WO = {
  { "wrap", true },
  { "linebreak", true },
  { "number", false },
  { "relativenumber", false },
  { "signcolumn", "no" },
  { "list", false },
  { "spell", false },
  { "foldmethod", "expr" },
  { "foldexpr", render.FOLDEXPR },
  { "foldtext", "v:lua.require'claude.chat.render'.foldtext()" },
  { "foldlevel", 0 },
  { "foldenable", true },
  { "foldcolumn", "0" },
}

local PROMPT_WO = {
  { "wrap", true },
  { "number", false },
  { "relativenumber", false },
  { "signcolumn", "no" },
  { "foldenable", false },
  { "winfixheight", true },
}

local function transcript_window(win)
  for _, o in ipairs(TRANSCRIPT_WO) do
    set_local(win, o[1], o[2])
  end
end

local function prompt_window(win)
  for _, o in ipairs(PROMPT_WO) do
    set_local(win, o[1], o[2])
  end
end

--- Shows the chat's windows in the current tab (creating them as the
--- layout option says) and focuses the prompt when focus is true.
function M.show(chat, focus)
  local o = opts()
  M.ensure_prompt(chat)
  local tw = tab_win(chat.tbuf)
  if not tw then
    if o.layout == "tab" then
      vim.cmd("tab sbuffer " .. chat.tbuf)
      tw = api.nvim_get_current_win()
    else
      local cmd = ({ right = "botright vsplit", left = "topleft vsplit", bottom = "botright split" })[o.layout]
      vim.cmd(cmd or "botright vsplit")
      tw = api.nvim_get_current_win()
      api.nvim_win_set_buf(tw, chat.tbuf)
      if o.layout == "bottom" then
        api.nvim_win_set_height(tw, size(o.width, vim.o.lines))
      else
        api.nvim_win_set_width(tw, size(o.width, vim.o.columns))
        set_local(tw, "winfixwidth", true)
      end
    end
    transcript_window(tw)
    local last = api.nvim_buf_line_count(chat.tbuf)
    api.nvim_win_set_cursor(tw, { last, 0 })
  end
  local pw = tab_win(chat.pbuf)
  if not pw then
    api.nvim_win_call(tw, function()
      vim.cmd("belowright " .. o.prompt_height .. "split")
      pw = api.nvim_get_current_win()
      api.nvim_win_set_buf(pw, chat.pbuf)
    end)
    prompt_window(pw)
  end
  refresh_header(chat)
  prompt.refresh(chat)
  show_todos(chat)
  if focus then
    api.nvim_set_current_win(pw)
  end
  last_id = chat.id
end

--- Closes the chat's windows in the current tab (the chat goes on).
function M.hide(chat)
  for _, b in ipairs({ chat.pbuf, chat.tbuf, chat.dbuf or -1 }) do
    if b > 0 then
      local w = tab_win(b)
      if w and #api.nvim_tabpage_list_wins(0) > 1 then
        pcall(api.nvim_win_close, w, false)
      end
    end
  end
end

-- Keys of the transcript --------------------------------------------------------

local function modes_of(chat)
  return type(chat.modes) == "table" and #chat.modes > 0 and chat.modes or M.MODES
end

--- Goes to the next of the CLI's modes: manual → acceptEdits → plan →
--- auto → dontAsk → manual.
function M.cycle_mode(chat)
  local modes = modes_of(chat)
  local next_mode = modes[1]
  local from = chat.mode_asked or chat.mode
  if from == "default" then
    from = "manual" -- the CLI's old name of it
  end
  for i, m in ipairs(modes) do
    if m == from then
      next_mode = modes[i % #modes + 1]
    end
  end
  return M.set_mode(chat, next_mode)
end

--- Picks the permission mode from the CLI's modes.
function M.pick_mode(chat)
  vim.ui.select(modes_of(chat), {
    prompt = "Permission mode (now " .. util.display(chat.mode) .. ")",
    format_item = function(m)
      return m .. (M.MODE_HELP[m] and (" — " .. M.MODE_HELP[m]) or "")
    end,
  }, function(m)
    if m then
      M.set_mode(chat, m)
    end
  end)
end

--- Asks the CLI for another permission mode. The answer comes later (the
--- CLI is never waited for on the main loop); the header shows the mode
--- the CLI reports.
function M.set_mode(chat, mode)
  chat.mode_asked = mode -- a second <S-Tab> before the answer goes on from here
  if chat.state == "starting" then
    M.when_ready(chat, function()
      if chat.mode_asked == mode then
        M.set_mode(chat, mode)
      end
    end)
    refresh_header(chat)
    return mode
  end
  require("claude.server").request_async("chat_set_mode", { id = chat.id, mode = mode }, function(res, err)
    if chat.mode_asked == mode then
      chat.mode_asked = nil
    end
    if not res then
      util.notify_now(err or "nvim-claude: the chat's CLI did not change the mode", vim.log.levels.ERROR)
      return
    end
    chat.mode = res.mode or mode
    refresh_header(chat)
  end)
  return mode
end

--- Picks the model from the CLI's list.
function M.pick_model(chat)
  if #chat.models == 0 then
    util.notify_now("nvim-claude: the CLI listed no models", vim.log.levels.WARN)
    return
  end
  vim.ui.select(chat.models, {
    prompt = "Claude model",
    format_item = function(m)
      local desc = m.description and m.description ~= vim.NIL and m.description ~= "" and (" — " .. m.description) or ""
      return tostring(m.display_name or m.value) .. desc
    end,
  }, function(m)
    if not m then
      return
    end
    require("claude.server").request_async("chat_set_model", { id = chat.id, model = m.value }, function(res, err)
      if not res then
        util.notify_now(err or "nvim-claude: the chat's CLI did not change the model", vim.log.levels.ERROR)
        return
      end
      chat.model = res.model or m.value
      refresh_header(chat)
    end)
  end)
end

function M.interrupt(chat)
  require("claude.server").request_async("chat_interrupt", { id = chat.id }, function(res, err)
    if not res and err then
      util.notify_now(err, vim.log.levels.ERROR)
    end
  end)
end

--- Runs fn(ready_event) once the chat's CLI has started (at once when it
--- has): chat_open answers before the CLI runs, so that opening a chat
--- never waits for the CLI.
function M.when_ready(chat, fn)
  if chat.state == "starting" then
    table.insert(chat.on_ready, fn)
  elseif chat.state ~= "failed" then
    fn({})
  end
end

-- resume starts a new CLI on the chat's session and moves the chat (its
-- buffers and what they show) to it.
function M.resume(chat)
  if chat.state ~= "exited" and chat.state ~= "failed" then
    util.notify_now("nvim-claude: this chat is still running")
    return
  end
  if not chat.session_id then
    util.notify_now("nvim-claude: this chat has no session to resume", vim.log.levels.WARN)
    return
  end
  local res, err = M._open_request("chat_open", M._open_params({ resume = chat.session_id, cwd = chat.cwd }))
  if not res then
    util.notify_now(err or "nvim-claude: chat_open: no answer", vim.log.levels.ERROR)
    return
  end
  -- the old id is done with: Go drops it from chat_list, Lua its events
  local old = chat.id
  closed[old] = true
  early[old] = nil
  if not chat.host_gone then
    pcall(require("claude.server").request, "chat_close", { id = old })
  end
  chat.host_gone = nil
  chats[chat.id] = nil
  for i, id in ipairs(order) do
    if id == chat.id then
      order[i] = tostring(res.id)
    end
  end
  chat.id = tostring(res.id)
  chats[chat.id] = chat
  chat.state = res.state or "idle"
  chat.on_ready = {}
  chat.mode = res.mode or chat.mode
  chat.modes = res.modes or chat.modes
  chat.model = res.model or chat.model
  M.ensure_prompt(chat)
  vim.b[chat.tbuf].claude_chat = chat.id
  vim.b[chat.pbuf].claude_chat_prompt = chat.id
  pcall(api.nvim_buf_set_name, chat.tbuf, "claude-chat://" .. chat.id)
  pcall(api.nvim_buf_set_name, chat.pbuf, "claude-chat://" .. chat.id .. "/prompt")
  render.append(chat, { "> ↻ resumed" }, "0", "ClaudeChatMeta")
  M._replay(chat)
  refresh_header(chat)
  return chat
end

local function transcript_keys(chat)
  local buf = chat.tbuf
  local keys = opts().keys
  local function with(fn, ...)
    local args = { ... }
    return function()
      local c = M.get(vim.b[buf].claude_chat)
      if c then
        fn(c, unpack(args))
      end
    end
  end
  util.map(buf, keys.toggle, "za", "open or close the fold")
  util.map(buf, keys.allow, with(permission.answer, "allow"), "allow once")
  util.map(buf, keys.allow_session, with(permission.answer, "session"), "allow always in this session")
  util.map(buf, keys.allow_project, with(permission.answer, "project"), "allow always in this project")
  util.map(buf, keys.deny, with(permission.answer, "deny"), "deny, with a reason")
  util.map(buf, keys.next_prompt, with(permission.jump), "go to the permission prompt waiting")
  util.map(buf, keys.rewind, with(sessions.rewind), "rewind files to before this message")
  util.map(buf, keys.undo_rewind, with(sessions.undo_rewind), "undo the last rewind")
  util.map(buf, keys.fork, with(sessions.fork), "fork the conversation from this message")
  util.map(buf, keys.resume, with(M.resume), "resume the session of an exited chat")
  util.map(buf, keys.close, with(M.hide), "hide the chat")
  util.map(buf, "i", with(function(c)
    M.show(c, true)
    vim.cmd("startinsert!")
  end), "go to the prompt")
end

-- keys both buffers share
local function common_keys(chat, buf)
  local keys = opts().keys
  local function with(fn)
    return function()
      local c = chat_of_buf(buf)
      if c then
        fn(c)
      end
    end
  end
  util.map(buf, keys.interrupt, with(M.interrupt), "interrupt the turn", { mode = { "n", "i" } })
  util.map(buf, keys.mode, with(M.cycle_mode), "next permission mode", { mode = { "n", "i" } })
  util.map(buf, keys.pick_mode, with(M.pick_mode), "pick the permission mode")
  util.map(buf, keys.model, with(M.pick_model), "pick the model")
end

-- Chats -------------------------------------------------------------------------

-- The chat is over for Lua: it leaves the lists at once (later events for
-- its id are dropped), the rest (chat_close, the buffers) is done by close.
local function forget(chat)
  chats[chat.id] = nil
  closed[chat.id] = true
  early[chat.id] = nil
  for i, id in ipairs(order) do
    if id == chat.id then
      table.remove(order, i)
      break
    end
  end
  if last_id == chat.id then
    last_id = nil
  end
  render.detach(chat.tbuf)
end

-- finish sends chat_close (errors ignored: an exited chat, a stopped host)
-- and deletes the chat's buffers.
local function finish(chat)
  if not chat.host_gone then
    pcall(require("claude.server").request, "chat_close", { id = chat.id })
  end
  local bufs = { chat.pbuf, chat.tbuf, chat.dbuf or -1 }
  for _, p in pairs(chat.perms or {}) do
    table.insert(bufs, p.plan_buf or -1)
  end
  for _, b in ipairs(bufs) do
    if b > 0 and api.nvim_buf_is_valid(b) then
      pcall(api.nvim_buf_delete, b, { force = true })
    end
  end
end

local function create_prompt(chat, lines)
  local pbuf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, pbuf, "claude-chat://" .. chat.id .. "/prompt")
  vim.bo[pbuf].bufhidden = "hide"
  vim.bo[pbuf].swapfile = false
  vim.bo[pbuf].filetype = "markdown"
  if lines and #lines > 0 then
    api.nvim_buf_set_lines(pbuf, 0, -1, false, lines)
  end
  chat.pbuf = pbuf
  prompt.setup_buffer(chat)
  common_keys(chat, pbuf)
  -- :bd / :bw of the prompt: a new prompt buffer (with the draft) takes
  -- its place (see M.ensure_prompt); the chat goes on.
  api.nvim_create_autocmd({ "BufUnload", "BufDelete", "BufWipeout" }, {
    group = M.augroup(),
    buffer = pbuf,
    desc = "nvim-claude: replace the chat's deleted prompt buffer",
    callback = function(ev)
      if chats[chat.id] ~= chat or chat.pbuf ~= pbuf or vim.v.exiting ~= vim.NIL then
        return
      end
      if ev.event == "BufUnload" then
        chat.prompt_saved = api.nvim_buf_get_lines(pbuf, 0, -1, false)
      end
      vim.schedule(function()
        if chats[chat.id] == chat then
          M.ensure_prompt(chat)
        end
      end)
    end,
  })
end

--- Makes sure the chat's prompt buffer exists and is loaded (after the
--- user deleted it: a new one, with the draft it held).
function M.ensure_prompt(chat)
  local b = chat.pbuf
  if b and b > 0 and api.nvim_buf_is_valid(b) and api.nvim_buf_is_loaded(b) then
    return b
  end
  chat.pbuf = -1
  if b and b > 0 and api.nvim_buf_is_valid(b) then
    pcall(api.nvim_buf_delete, b, { force = true }) -- unloaded: free its name
  end
  local lines = chat.prompt_saved
  chat.prompt_saved = nil
  create_prompt(chat, lines)
  return chat.pbuf
end

local function create_buffers(chat)
  local tbuf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(tbuf, "claude-chat://" .. chat.id)
  vim.bo[tbuf].bufhidden = "hide"
  vim.bo[tbuf].swapfile = false
  vim.bo[tbuf].filetype = "markdown"
  vim.bo[tbuf].modifiable = false
  vim.b[tbuf].claude_chat = chat.id
  chat.tbuf = tbuf
  render.attach(chat)
  create_prompt(chat)
  transcript_keys(chat)
  common_keys(chat, tbuf)
  -- :bd, :bunload or :bw of the transcript ends the chat cleanly (it is the
  -- chat's record; the session stays resumable with :ClaudeChatSessions).
  -- Lua forgets the chat at once so that no later event touches the
  -- unloaded buffer.
  api.nvim_create_autocmd({ "BufUnload", "BufDelete", "BufWipeout" }, {
    group = M.augroup(),
    buffer = tbuf,
    desc = "nvim-claude: end the chat whose transcript was deleted",
    callback = function()
      if chats[chat.id] ~= chat or chat.tbuf ~= tbuf or vim.v.exiting ~= vim.NIL then
        return
      end
      forget(chat)
      vim.schedule(function()
        finish(chat)
        util.notify_now(string.format("nvim-claude: chat %s ended: its transcript buffer was deleted (:ClaudeChatSessions resumes the session)", chat.id))
      end)
    end,
  })
end

--- Makes a chat of a chat_open / chat_fork result and replays the events
--- that came first.
function M._adopt(res)
  highlights()
  local chat = {
    id = tostring(res.id),
    cwd = res.cwd,
    mode = res.mode or "manual",
    modes = res.modes,
    model = res.model or "default",
    session_id = res.session_id ~= vim.NIL and res.session_id or nil,
    models = res.models or {},
    commands = res.commands or {},
    state = res.state or "idle",
    on_ready = {},
    cost = 0,
    users = {},
    tools = {},
    perms = {},
    pending = {},
    todos = {},
    attachments = {},
  }
  create_buffers(chat)
  chats[chat.id] = chat
  table.insert(order, chat.id)
  last_id = chat.id
  M._replay(chat)
  return chat
end

--- Sends chat_open / chat_fork: the events Go sends for the new chat while
--- Lua waits are kept for it (M._replay); events of other unknown ids are
--- not kept.
function M._open_request(method, params)
  opening = opening + 1
  local ok, res, err = pcall(require("claude.server").request, method, params)
  opening = opening - 1
  local id = ok and type(res) == "table" and res.id ~= nil and tostring(res.id) or nil
  local keep = id and early[id]
  if opening == 0 then
    early = {}
  end
  if keep then
    early[id] = keep
  end
  if not ok then
    return nil, tostring(res)
  end
  return res, err
end

-- repeated reports whether data is the event chat took last, delivered
-- again (and remembers it otherwise): the host sends a chat's events
-- without asking first whether Neovim is blocked at a prompt, so one it
-- gave up on may run once the prompt is answered, right before its retry
-- (the same seq).
function repeated(chat, data)
  if data.seq == nil then
    return false
  end
  if data.seq == chat.last_seq then
    return true
  end
  chat.last_seq = data.seq
  return false
end

function M._replay(chat)
  local q = early[chat.id]
  early[chat.id] = nil
  for _, e in ipairs(q or {}) do
    if not repeated(chat, e[2]) then
      M._dispatch(chat, e[1], e[2])
    end
  end
end

local function env_table(...)
  local env = {}
  for _, t in ipairs({ ... }) do
    for k, v in pairs(t or {}) do
      env[k] = tostring(v)
    end
  end
  if next(env) == nil then
    return vim.empty_dict()
  end
  return env
end

local function cli_bin()
  local o = opts()
  if o.cmd then
    return o.cmd
  end
  local base = config.options.terminal_cmd
  if type(base) == "table" then
    return base[1]
  end
  return vim.split(base, "%s+", { trimempty = true })[1]
end

--- The chat_open params for the options plus o (resume, fork, cwd).
function M._open_params(o)
  local c = opts()
  local tools = config.options.editor_tools or {}
  return {
    cwd = o.cwd or vim.fn.getcwd(),
    mode = o.mode or c.mode,
    model = o.model or c.model,
    effort = c.effort,
    resume = o.resume,
    fork = o.fork or nil,
    editor_tools = c.editor_tools and tools.enable ~= false,
    allowed_tools = c.allowed_tools,
    disallowed_tools = c.disallowed_tools,
    env = env_table(config.options.env, c.env),
    bin = cli_bin(),
    remote = o.remote or nil, -- on the far side open now (claude.remote)
  }
end

--- Opens a chat. o: {prompt?, new?, resume?, fork?, cwd?, remote?}. Without new
--- (or resume) an existing chat is shown instead of starting another.
function M.open(o)
  o = o or {}
  local ok, msg = M.supported()
  if not ok then
    util.notify_now(msg, vim.log.levels.ERROR)
    return nil
  end
  local chat = not (o.new or o.resume) and M.current() or nil
  if not chat and o.resume and not o.fork then
    -- the Claude terminal (or another chat) running that conversation
    -- stops first (:ClaudeSessions' handover)
    require("claude.sessions").release(o.resume)
  end
  if not chat then
    local res, err = M._open_request("chat_open", M._open_params(o))
    if not res then
      util.notify_now(err or "nvim-claude: chat_open: no answer from the host", vim.log.levels.ERROR)
      return nil
    end
    chat = M._adopt(res)
    if o.resume and not o.fork then
      -- The host reads a resumed session's messages while its CLI starts.
      sessions.load_history(chat)
    elseif o.resume then
      -- A fork's history stops where its CLI was rewound: once it runs.
      M.when_ready(chat, function()
        sessions.load_history(chat)
      end)
    end
  end
  M.show(chat, true)
  if o.prompt and vim.trim(o.prompt) ~= "" then
    M.when_ready(chat, function()
      prompt.send(chat, o.prompt)
    end)
  end
  return chat
end

--- Ends a chat: its CLI stops, its buffers go.
function M.close(chat)
  chat = chat or M.current()
  if not chat or chats[chat.id] ~= chat then
    return
  end
  forget(chat)
  finish(chat)
end

--- :ClaudeChatSend: attaches lines l1..l2 of the current buffer to the
--- current chat (opening one if needed) and focuses its prompt.
function M.send_range(l1, l2)
  local ok, msg = M.supported()
  if not ok then
    util.notify_now(msg, vim.log.levels.ERROR)
    return
  end
  local buf = api.nvim_get_current_buf()
  local chat = M.current() or M.open({})
  if not chat then
    return
  end
  prompt.attach_range(chat, buf, l1, l2)
  M.show(chat, true)
end

--- :ClaudeChatImage [path]
function M.image(path)
  local chat = M.current()
  if not chat then
    util.notify_now("nvim-claude: no chat (:ClaudeChat opens one)", vim.log.levels.WARN)
    return
  end
  prompt.attach_image(chat, path ~= "" and path or nil)
end

--- :ClaudeChatSessions
function M.sessions()
  local ok, msg = M.supported()
  if not ok then
    util.notify_now(msg, vim.log.levels.ERROR)
    return
  end
  sessions.pick(vim.fn.getcwd())
end

-- Events ------------------------------------------------------------------------

-- reload brings the buffers of paths up to date (a local 'autoread' for one
-- :checktime, so no W11 prompt); a buffer with unsaved changes is left
-- alone and its user told.
local function reload(paths)
  local editor = require("claude.editor")
  for _, path in ipairs(paths or {}) do
    local full = vim.fn.fnamemodify(path, ":p")
    local b = editor.find_buf(full)
    if b and api.nvim_buf_is_loaded(b) then
      if vim.bo[b].modified then
        util.notify_now(
          "nvim-claude: Claude changed " .. vim.fn.fnamemodify(full, ":~:.") .. ", but your buffer has unsaved changes: not reloaded",
          vim.log.levels.WARN
        )
      else
        util.checktime(b)
      end
    end
  end
end

-- reload_all (file_changed all = true, e.g. after Bash): every loaded,
-- unmodified file buffer is checked the same way; modified ones are never
-- touched.
local function reload_all()
  local file_path = require("claude.editor").file_path
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and not vim.bo[b].modified and file_path(b) then
      util.checktime(b)
    end
  end
end

local function needs_permission(chat, d)
  util.emit("ClaudeChatNeedsPermission", { id = chat.id, request_id = d.request_id, tool = d.tool, kind = d.kind, summary = d.summary })
  if opts().notify and not M.visible(chat) then
    util.notify(
      string.format(
        d.kind == "dialog" and "nvim-claude: Claude (chat %s) asks: %s — :ClaudeChat shows it" or "nvim-claude: Claude (chat %s) asks to use %s — :ClaudeChat shows it",
        chat.id,
        util.display(d.summary or d.tool, 120)
      ),
      vim.log.levels.WARN
    )
  end
end

function M._dispatch(chat, event, d)
  if event == "status" then
    for _, f in ipairs({ "state", "mode", "model" }) do
      if d[f] ~= nil and d[f] ~= vim.NIL then
        chat[f] = d[f]
      end
    end
    if d.session_id ~= nil and d.session_id ~= vim.NIL then
      chat.session_id = d.session_id
    end
    if d.cost_usd ~= nil and d.cost_usd ~= vim.NIL then
      chat.cost = d.cost_usd
    end
    if d.context_tokens ~= nil and d.context_tokens ~= vim.NIL then
      chat.context_tokens = d.context_tokens
    end
    if d.context_window ~= nil and d.context_window ~= vim.NIL then
      chat.context_window = d.context_window
    end
  elseif event == "ready" then
    if chat.state == "starting" then
      chat.state = "idle" -- the host sends its status (idle) first; a stub may not
    end
    chat.models = d.models or chat.models
    chat.commands = d.commands or chat.commands
    chat.modes = d.modes or chat.modes
    if d.session_id ~= nil and d.session_id ~= vim.NIL then
      chat.session_id = d.session_id
    end
    local waiting = chat.on_ready or {}
    chat.on_ready = {}
    for _, fn in ipairs(waiting) do
      local ok, err = pcall(fn, d)
      if not ok then
        util.notify_now("nvim-claude: " .. tostring(err), vim.log.levels.ERROR)
      end
    end
  elseif event == "failed" then
    chat.state = "failed"
    chat.on_ready = {}
    render.system(chat, { level = "error", text = tostring(d.message) })
    if not M.visible(chat) then
      util.notify("nvim-claude: chat " .. chat.id .. ": " .. tostring(d.message), vim.log.levels.ERROR)
    end
  elseif event == "user" then
    render.user(chat, d)
  elseif event == "text" then
    render.text(chat, d)
  elseif event == "thinking" then
    render.thinking(chat, d)
  elseif event == "tool_use" then
    render.tool_use(chat, d)
  elseif event == "tool_result" then
    render.tool_result(chat, d)
  elseif event == "system" then
    render.system(chat, d)
  elseif event == "permission" then
    permission.show(chat, d)
    needs_permission(chat, d)
  elseif event == "permission_done" then
    permission.done(chat, d.request_id, d)
  elseif event == "todos" then
    chat.todos = d.todos or {}
    show_todos(chat)
  elseif event == "turn_done" then
    if type(d.session_cost_usd) == "number" then
      chat.cost = d.session_cost_usd
    end
    render.turn_done(chat, d)
    util.emit("ClaudeChatTurnDone", d)
  elseif event == "file_changed" then
    if d.all == true then
      reload_all()
    end
    if type(d.paths) == "table" then
      reload(d.paths)
    end
  elseif event == "exited" then
    chat.state = "exited"
    for _, rid in ipairs(vim.deepcopy(chat.pending)) do
      permission.done(chat, rid, nil)
    end
    render.exited(chat, d, opts().keys.resume)
    if not M.visible(chat) then
      util.notify(string.format("nvim-claude: the Claude CLI of chat %s exited (code %s)", chat.id, tostring(d.code)), vim.log.levels.WARN)
    end
  end
  -- lifecycle and unknown events change nothing on screen; streamed text
  -- (most events by far) nothing in the header
  if event ~= "text" and event ~= "thinking" then
    refresh_header(chat)
  end
end

--- Receives the Go host's "chat.<event>" events.
function M._on_event(event, data)
  if type(data) ~= "table" or data.id == nil then
    return
  end
  local id = tostring(data.id)
  if closed[id] then
    return -- Lua closed this chat (or resumed it under a new id)
  end
  local chat = chats[id]
  if not chat then
    -- chat_open has not returned yet (its events come while Lua waits);
    -- events of ids nobody is opening are dropped
    if opening == 0 then
      return
    end
    local q = early[id] or {}
    early[id] = q
    if #q < MAX_EARLY then
      table.insert(q, { event, data })
    end
    return
  end
  if repeated(chat, data) then
    return
  end
  local ok, err = pcall(M._dispatch, chat, event, data)
  if not ok then
    util.notify("nvim-claude: chat event " .. event .. ": " .. tostring(err), vim.log.levels.ERROR)
  end
end

-- The Go host stopped: every chat's CLI went with it.
api.nvim_create_autocmd("User", {
  group = M.augroup(),
  pattern = "ClaudeStopped",
  desc = "nvim-claude: chats end with the Go host",
  callback = function()
    for _, chat in ipairs(M.list()) do
      chat.host_gone = true
      if chat.state ~= "exited" then
        M._dispatch(chat, "exited", { id = chat.id, code = "?", stderr = "the nvim-claude host stopped" })
      end
    end
  end,
})

highlights()
api.nvim_create_autocmd("ColorScheme", {
  group = M.augroup(),
  desc = "nvim-claude: chat highlight groups after a colour scheme change",
  callback = highlights,
})

return M
