-- Past sessions (resume, fork), rewinding files to before a message, and
-- forking the conversation from a message.
local render = require("claude.chat.render")

local api = vim.api

local M = {}

local notify = require("claude.util").notify_now

local function opts()
  return require("claude.config").options.chat
end

local function request(name, params)
  local res, err = require("claude.server").request(name, params)
  if not res then
    notify(err or ("nvim-claude: " .. name .. ": no answer from the host"), vim.log.levels.ERROR)
  end
  return res
end

local function one_line(s, max)
  s = tostring(s or ""):gsub("%s+", " ")
  s = vim.trim(s)
  if #s > max then
    s = s:sub(1, max - 1) .. "…"
  end
  return s
end

--- One line per session for the picker.
function M.format(s)
  local when = type(s.modified) == "number" and os.date("%Y-%m-%d %H:%M", s.modified) or "?"
  local title = s.title and s.title ~= vim.NIL and s.title ~= "" and s.title or one_line(s.first_prompt, 40)
  local parts = { when, one_line(title, 50) }
  if s.first_prompt and s.first_prompt ~= vim.NIL and s.first_prompt ~= "" and s.first_prompt ~= title then
    table.insert(parts, "“" .. one_line(s.first_prompt, 60) .. "”")
  end
  if type(s.messages) == "number" then
    table.insert(parts, s.messages .. " messages")
  end
  return table.concat(parts, " · ")
end

--- :ClaudeChatSessions: pick a past session of cwd, then resume or fork it.
function M.pick(cwd)
  -- the transcripts are where the chat's CLI writes them: its
  -- CLAUDE_CONFIG_DIR (chat.env, then env, then Neovim's), else ~/.claude
  local config = require("claude.config")
  local dir = config.options.chat.env.CLAUDE_CONFIG_DIR
  if dir == nil or dir == "" then
    dir = config.claude_config_dir()
  end
  local res = request("chat_sessions", { cwd = cwd, config_dir = vim.fn.expand(dir) })
  if not res then
    return
  end
  local list = res.sessions or {}
  if #list == 0 then
    notify("nvim-claude: no Claude sessions for " .. cwd)
    return
  end
  vim.ui.select(list, { prompt = "Claude sessions", format_item = M.format }, function(s)
    if not s then
      return
    end
    vim.ui.select({ "resume", "fork" }, {
      prompt = "Session " .. one_line(s.title ~= vim.NIL and s.title or s.first_prompt, 40),
      format_item = function(a)
        return a == "resume" and "Resume (continue this session)" or "Fork (a new session with this history)"
      end,
    }, function(action)
      if action then
        require("claude.chat").open({ new = true, cwd = cwd, resume = s.session_id, fork = action == "fork" })
      end
    end)
  end)
end

--- Renders the earlier messages of a resumed or forked chat. The host
--- reads them off the main loop (a long session's transcript is megabytes)
--- while Neovim goes on; they go above whatever the transcript shows by
--- then, a long history filling in from its end (render.prepend_history).
function M.load_history(chat)
  require("claude.server").request_async("chat_history", { id = chat.id }, function(res, err)
    if not res then
      notify(err or "nvim-claude: chat_history: no answer from the host", vim.log.levels.ERROR)
      return
    end
    local msgs = res.messages or {}
    if #msgs > 0 and api.nvim_buf_is_valid(chat.tbuf) then
      render.prepend_history(chat, msgs)
    end
  end)
end

-- message_at: the user message at or above the cursor of the transcript.
local function message_at(chat)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local best, best_row
  for _, u in ipairs(chat.users) do
    local r = render.mark_row(chat, u.mark)
    if r and r <= row and (not best_row or r > best_row) then
      best, best_row = u, r
    end
  end
  return best
end

-- split_contents: file contents as buffer lines plus whether the file ends
-- in a newline.
local function split_contents(s)
  local eol = s:sub(-1) == "\n"
  if eol then
    s = s:sub(1, -2)
  end
  return vim.split(s, "\n", { plain = true }), eol
end

-- the loaded buffer of path, if any.
local function loaded_buf(path)
  local b = vim.fn.bufnr(vim.fn.fnamemodify(path, ":p"))
  if b > 0 and api.nvim_buf_is_loaded(b) then
    return b
  end
end

local reload = require("claude.util").checktime

-- restore puts contents into path's buffer (one undo step) and writes it;
-- contents nil means the file did not exist: the buffer is emptied (undo
-- brings the text back) and the file removed. The caller has made sure
-- the buffer holds no unsaved edits of the user (or that they agreed).
local function restore(path, contents)
  local buf = vim.fn.bufadd(path)
  vim.fn.bufload(buf)
  if contents == nil or contents == vim.NIL then
    api.nvim_buf_set_lines(buf, 0, -1, false, {})
    os.remove(path)
    vim.bo[buf].modified = false
    return "removed"
  end
  local lines, eol = split_contents(contents)
  if vim.bo[buf].fileformat == "dos" then
    for i, l in ipairs(lines) do
      lines[i] = l:gsub("\r$", "")
    end
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = eol
  local ok, err = pcall(api.nvim_buf_call, buf, function()
    vim.cmd("silent noautocmd keepalt write!")
  end)
  if not ok then
    return "not written: " .. tostring(err)
  end
  return "restored"
end

-- rewind_file restores one chat_rewind entry and calls done(how) (how nil:
-- nothing to say). A buffer with unsaved edits is never overwritten
-- silently: the user chooses (vim.ui.select) to overwrite or skip it.
local function rewind_file(f, done)
  if f.error ~= nil and f.error ~= vim.NIL then
    done("skipped: " .. tostring(f.error))
    return
  end
  if not f.changed then
    done(nil)
    return
  end
  local buf = loaded_buf(f.path)
  if f.restored_by_host == true then
    -- Go wrote the file itself (not UTF-8 text): only the buffer follows
    if not buf then
      done("restored by the host")
    elseif vim.bo[buf].modified then
      done("restored by the host on disk; your buffer has unsaved changes and was not reloaded")
    else
      reload(buf)
      done("restored by the host (buffer reloaded)")
    end
    return
  end
  if buf and vim.bo[buf].modified then
    local name = vim.fn.fnamemodify(f.path, ":~:.")
    vim.ui.select({ "skip", "overwrite" }, {
      prompt = "Rewind: " .. name .. " has unsaved changes",
      format_item = function(a)
        return a == "skip" and "Skip it (keep my unsaved changes)" or "Overwrite my unsaved changes (u undoes it)"
      end,
    }, function(choice)
      if choice == "overwrite" then
        done(restore(f.path, f.contents))
      else
        done("skipped: the buffer has unsaved changes")
      end
    end)
    return
  end
  done(restore(f.path, f.contents))
end

-- read_file is a file's bytes, or nil when it does not exist.
local function read_file(path)
  local fd = io.open(path, "rb")
  if not fd then
    return nil
  end
  local data = fd:read("*a")
  fd:close()
  return data
end

-- apply_rewind restores each entry of files in turn (asking about
-- buffers with unsaved edits) and calls finish(report, trouble).
local function apply_rewind(files, finish)
  local report, trouble = {}, false
  local function step(i)
    local f = files[i]
    if not f then
      finish(report, trouble)
      return
    end
    local called = false
    local ok, err = pcall(rewind_file, f, function(how)
      called = true
      if how then
        table.insert(report, vim.fn.fnamemodify(tostring(f.path), ":~:.") .. " " .. how)
        trouble = trouble or how:find("^restored") == nil and how ~= "removed"
      end
      step(i + 1)
    end)
    if not ok and called then
      error(err, 0) -- from a later file: already reported there
    elseif not ok then
      table.insert(report, vim.fn.fnamemodify(tostring(f.path), ":~:.") .. " failed: " .. tostring(err))
      trouble = true
      step(i + 1)
    end
  end
  step(1)
end

-- what_changes says what restoring f does: "change a.txt", "delete b.txt".
local function what_changes(f)
  local name = vim.fn.fnamemodify(tostring(f.path), ":~:.")
  if f.restored_by_host ~= true and (f.contents == nil or f.contents == vim.NIL) then
    return "delete " .. name
  end
  return "change " .. name
end

--- Rewinds the files the chat changed after the message under the cursor
--- to what they held before it, once the user has seen what that changes
--- and said yes. The whole rewind can be undone (M.undo_rewind, the
--- undo_rewind key), deleted files included. on_done (optional) gets the
--- report lines.
function M.rewind(chat, on_done)
  local u = message_at(chat)
  if not u then
    notify("nvim-claude: put the cursor on one of your messages to rewind to before it", vim.log.levels.WARN)
    return
  end
  local plan = request("chat_rewind", { id = chat.id, uuid = u.uuid, plan = true })
  if not plan then
    return
  end
  local actions = {}
  for _, f in ipairs(plan.files or {}) do
    if f.changed then
      table.insert(actions, what_changes(f))
    end
  end
  if #actions == 0 then
    notify("nvim-claude: no file changed after that message")
    if on_done then
      on_done({})
    end
    return
  end
  local undo_key = opts().keys.undo_rewind
  vim.ui.select({ "rewind", "cancel" }, {
    prompt = "Rewind to before this message? It will " .. table.concat(actions, ", "),
    format_item = function(a)
      if a == "rewind" then
        return "Rewind: " .. table.concat(actions, ", ") .. (undo_key and (" (" .. undo_key .. " undoes it)") or "")
      end
      return "Cancel"
    end,
  }, function(choice)
    if choice ~= "rewind" then
      notify("nvim-claude: rewind cancelled; nothing changed")
      return
    end
    -- What each file holds now, for the undo (text files: the host
    -- restores the others itself).
    local before = {}
    for _, f in ipairs(plan.files or {}) do
      if f.changed and f.restored_by_host ~= true then
        table.insert(before, { path = f.path, contents = read_file(f.path) })
      end
    end
    local res = request("chat_rewind", { id = chat.id, uuid = u.uuid })
    if not res then
      return
    end
    apply_rewind(res.files or {}, function(report, trouble)
      chat.last_rewind = #before > 0 and before or nil
      notify(
        "nvim-claude: rewound: " .. table.concat(report, ", ") .. (undo_key and chat.last_rewind and (" (" .. undo_key .. " in the transcript undoes it)") or ""),
        trouble and vim.log.levels.WARN or vim.log.levels.INFO
      )
      if on_done then
        on_done(report)
      end
    end)
  end)
end

--- Undoes the chat's last rewind: every file gets back what it held just
--- before it, a deleted file is written again (after the user said yes).
function M.undo_rewind(chat)
  local files = chat.last_rewind
  if not files then
    notify("nvim-claude: no rewind to undo in this chat")
    return
  end
  local actions = {}
  for _, f in ipairs(files) do
    local name = vim.fn.fnamemodify(f.path, ":~:.")
    table.insert(actions, (f.contents == nil and "delete " or (vim.fn.filereadable(f.path) == 1 and "change " or "recreate ")) .. name)
  end
  vim.ui.select({ "undo", "cancel" }, {
    prompt = "Undo the rewind? It will " .. table.concat(actions, ", "),
    format_item = function(a)
      return a == "undo" and ("Undo the rewind: " .. table.concat(actions, ", ")) or "Cancel"
    end,
  }, function(choice)
    if choice ~= "undo" then
      return
    end
    local entries = {}
    for _, f in ipairs(files) do
      table.insert(entries, { path = f.path, contents = f.contents, changed = true })
    end
    apply_rewind(entries, function(report, trouble)
      chat.last_rewind = nil
      notify("nvim-claude: rewind undone: " .. table.concat(report, ", "), trouble and vim.log.levels.WARN or vim.log.levels.INFO)
    end)
  end)
end

--- Forks the conversation from the message under the cursor: a new chat
--- whose history stops before it, with that prompt ready to edit.
function M.fork(chat)
  local u = message_at(chat)
  local main = require("claude.chat")
  local res, err = main._open_request("chat_fork", { id = chat.id, uuid = u and u.uuid or nil })
  if not res then
    notify(err or "nvim-claude: chat_fork: no answer from the host", vim.log.levels.ERROR)
    return
  end
  local new = main._adopt(res)
  main.show(new, true)
  -- The message is in the prompt at once, ready to edit while the fork's
  -- CLI starts. The CLI's own text of it (once it has gone back to the
  -- message) replaces it only in a prompt nobody has touched since: never
  -- a draft typed meanwhile, nor a prompt already sent.
  local prompt = require("claude.chat.prompt")
  local prefilled
  if u and type(u.text) == "string" and u.text ~= "" then
    prompt.set_text(new, u.text)
    prefilled = prompt.text(new)
  end
  main.when_ready(new, function(d)
    M.load_history(new)
    if d.prefill and d.prefill ~= vim.NIL and d.prefill ~= "" then
      local now = prompt.text(new)
      if now == prefilled or (prefilled == nil and now == "") then
        prompt.set_text(new, d.prefill)
      end
    end
  end)
  return new
end

return M
