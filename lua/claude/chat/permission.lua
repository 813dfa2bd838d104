-- Permission prompts inline in the transcript, the plan buffer and
-- AskUserQuestion. Every answer is one chat_permission request; Go answers
-- the CLI (and, for a diff-backed Edit/Write, reads the proposal buffer).
local config = require("claude.config")
local render = require("claude.chat.render")
local display = require("claude.util").display

local api = vim.api

local M = {}

local notify = require("claude.util").notify_now

local function keys()
  return config.options.chat.keys
end

local function k(name)
  local v = keys()[name]
  return v and ("[" .. v .. "]") or nil
end

local function join(parts)
  local out = {}
  for _, p in ipairs(parts) do
    if p then
      table.insert(out, p)
    end
  end
  return table.concat(out, " · ")
end

local choose -- a dialog's choices (defined with the answers)

local function lines_of(s)
  return vim.split(tostring(s or ""), "\n", { plain = true })
end

-- help_line names the keys that answer a prompt of this kind.
local function help_line(kind)
  if kind == "plan" then
    return join({
      k("allow") and (k("allow") .. " approve") or nil,
      k("deny") and (k("deny") .. " keep planning (with your comments)") or nil,
    })
  elseif kind == "question" then
    return join({
      k("allow") and (k("allow") .. " answer") or nil,
      k("deny") and (k("deny") .. " decline") or nil,
    })
  elseif kind == "dialog" then
    return join({
      k("allow") and (k("allow") .. " choose") or nil,
      k("deny") and (k("deny") .. " dismiss") or nil,
    })
  end
  return join({
    k("allow") and (k("allow") .. " allow once") or nil,
    k("allow_session") and (k("allow_session") .. " always (session)") or nil,
    k("allow_project") and (k("allow_project") .. " always (project)") or nil,
    k("deny") and (k("deny") .. " deny with a reason") or nil,
  })
end

local PREVIEW_LINES = 12 -- per old/new text
local PREVIEW_TOTAL = 60 -- in all
local PREVIEW_WIDTH = 200

-- capped lines of s, each prefixed and displayable; a note says how many
-- were left out, and cut.any is set when anything was.
local function head(s, prefix, max, cut)
  local out = {}
  local ls = lines_of(s)
  if ls[#ls] == "" and #ls > 1 then
    table.remove(ls)
  end
  for i, l in ipairs(ls) do
    if i > max then
      cut.any = true
      table.insert(out, string.format("%s… %d more line%s", prefix, #ls - max, #ls - max == 1 and "" or "s"))
      break
    end
    if vim.fn.strchars(l) > PREVIEW_WIDTH then
      cut.any = true
    end
    table.insert(out, prefix .. display(l, PREVIEW_WIDTH))
  end
  return out
end

local function str(v)
  return type(v) == "string" and v or nil
end

-- edit_preview: what an Edit/Write/MultiEdit would change, for a prompt
-- without the diff review (it could not be opened).
local function edit_preview(input, cut)
  local out = {} -- the heading names the file already
  local function edit(e, n)
    if n then
      table.insert(out, string.format("edit %d%s:", n, e.replace_all == true and " (all occurrences)" or ""))
    elseif e.replace_all == true then
      table.insert(out, "(all occurrences)")
    end
    vim.list_extend(out, head(str(e.old_string) or "", "- ", PREVIEW_LINES, cut))
    vim.list_extend(out, head(str(e.new_string) or "", "+ ", PREVIEW_LINES, cut))
  end
  if str(input.content) then
    table.insert(out, "content:")
    vim.list_extend(out, head(input.content, "  ", PREVIEW_LINES * 2, cut))
  elseif type(input.edits) == "table" then
    for i, e in ipairs(input.edits) do
      if type(e) == "table" then
        edit(e, i)
      end
    end
  elseif str(input.old_string) or str(input.new_string) then
    edit(input)
  end
  if #out > PREVIEW_TOTAL then
    cut.any = true
    local n = #out - PREVIEW_TOTAL
    out = vim.list_slice(out, 1, PREVIEW_TOTAL)
    table.insert(out, string.format("… %d more line%s", n, n == 1 and "" or "s"))
  end
  return out
end

-- body: the lines that show what answering allows, and whether they show
-- all of it. The host sends the input as shown (d.body: displayable, blank
-- runs collapsed, d.fits false when it is too long to show whole); edits
-- without a diff review, plans and questions are shown here.
local function body(d)
  local out = {}
  local cut = { any = d.fits == false }
  local input = type(d.input) == "table" and d.input or {}
  if d.kind == "edit" then
    if d.diff then
      table.insert(out, "The diff review is open: accept or reject it there (edit the proposal first if you like), or answer here.")
    else
      vim.list_extend(out, edit_preview(input, cut))
    end
  elseif d.kind == "plan" then
    table.insert(out, "The plan is open in a buffer: add your comments there and :w sends them, or answer here.")
  elseif d.kind == "question" then
    for _, q in ipairs(d.questions or {}) do
      table.insert(out, "? " .. display(q.question))
      for _, o in ipairs(q.options or {}) do
        local desc = o.description and o.description ~= vim.NIL and o.description ~= "" and (" — " .. display(o.description)) or ""
        table.insert(out, "  - " .. display(o.label) .. desc)
      end
    end
  end
  if type(d.body) == "table" then
    for _, l in ipairs(d.body) do
      table.insert(out, display(l))
    end
  end
  if d.kind == "dialog" then
    for i, c in ipairs(type(d.choices) == "table" and d.choices or {}) do
      table.insert(out, string.format("  %d. %s", i, display(c.label)))
    end
  end
  return out, cut.any
end

--- Shows a permission prompt (or one of the CLI's dialogs, kind "dialog")
--- at the end of the transcript.
function M.show(chat, d)
  local heading = d.kind == "dialog" and "⚠ Claude asks: " or "⚠ Permission: "
  local lines = { heading .. display(d.summary or d.display_name or d.tool) }
  local shown, cut = body(d)
  vim.list_extend(lines, shown)
  table.insert(lines, help_line(d.kind))
  for i, l in ipairs(lines) do
    lines[i] = "┃ " .. l
  end
  local hls = {}
  for i = 1, #lines do
    hls[i] = "ClaudeChatPermission"
  end
  local row = render.append(chat, lines, "0", hls)
  local p = {
    d = d,
    id = d.request_id,
    start = render.mark(chat, row),
    help = render.mark(chat, row + #lines - 1),
    cut = cut, -- the block does not show all of the input
  }
  if d.kind == "dialog" then
    -- the prompt this dialog is about: one sent while it waits must not
    -- be the one "edit the prompt" gives back
    p.prompt = chat.last_prompt
  end
  chat.perms[d.request_id] = p
  table.insert(chat.pending, d.request_id)
  if d.kind == "plan" then
    vim.schedule(function()
      M.open_plan(chat, p)
    end)
  end
  return p
end

local function drop_pending(chat, rid)
  for i, id in ipairs(chat.pending) do
    if id == rid then
      table.remove(chat.pending, i)
      return
    end
  end
end

local DONE_TEXT = {
  user = "",
  diff = " in the diff review",
  cli_cancelled = " (the CLI withdrew the request)",
  plan_mode = " (plan mode is on)",
}

--- Marks a prompt as settled (permission_done) or, with d nil, cancelled.
function M.done(chat, rid, d)
  local p = chat.perms[rid]
  if not p or p.settled then
    return
  end
  p.settled = true
  drop_pending(chat, rid)
  local text
  if d then
    local how = d.behavior == "allow" and "✓ allowed" or "✗ denied"
    if p.d.kind == "plan" then
      how = d.behavior == "allow" and "✓ plan approved" or "✗ plan sent back"
    elseif p.d.kind == "dialog" then
      how = d.behavior == "allow" and ("✓ " .. display(d.label or d.result or "answered")) or "✗ dismissed"
    end
    text = how .. (DONE_TEXT[d.by] or (d.by and (" (" .. d.by .. ")") or ""))
  else
    text = "✗ not answered: the CLI is gone"
  end
  local row = render.mark_row(chat, p.help)
  render.replace(chat, row, row + 1, { "┃ " .. text }, d and d.behavior == "allow" and "ClaudeChatOk" or "ClaudeChatError")
  if p.plan_buf and api.nvim_buf_is_valid(p.plan_buf) then
    require("claude.plan").close(p.plan_buf)
    p.plan_buf = nil
  end
end

-- target: the prompt under the cursor in the transcript. A key pressed
-- with the cursor anywhere else answers nothing: it must never allow some
-- other request than the one the user is looking at.
local function target(chat)
  if #chat.pending == 0 or api.nvim_get_current_buf() ~= chat.tbuf then
    return nil
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  for _, rid in ipairs(chat.pending) do
    local p = chat.perms[rid]
    local s, e = render.mark_row(chat, p.start), render.mark_row(chat, p.help)
    if s and e and row >= s and row <= e then
      return p
    end
  end
  return nil
end

-- waiting says which prompt waits and how to reach it.
local function waiting(chat)
  local p = chat.perms[chat.pending[1]]
  local row = p and render.mark_row(chat, p.start)
  local what = p and p.d and (p.d.tool or p.d.kind) or "a request"
  local jump = k("next_prompt")
  return string.format(
    "nvim-claude: put the cursor on the prompt to answer it: a permission for %s waits at line %d%s",
    what,
    (row or 0) + 1,
    jump and (" (" .. jump .. " jumps to it)") or ""
  )
end

--- Moves the cursor to the oldest prompt waiting in the transcript.
function M.jump(chat)
  local p = chat.perms[chat.pending[1] or ""]
  local row = p and render.mark_row(chat, p.start)
  if not row then
    notify("nvim-claude: no permission request is waiting in this chat", vim.log.levels.INFO)
    return false
  end
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == chat.tbuf then
      api.nvim_set_current_win(win)
      api.nvim_win_set_cursor(win, { row + 1, 0 })
      -- the block from its top, as much of it as the window holds
      pcall(vim.cmd, "normal! zvzt")
      return true
    end
  end
  return false
end

-- proposal_text is the text of the pending diff named tab_name as writing
-- its proposal buffer would save it (nil when that diff is gone), and
-- whether every hunk of it was rejected (then an allow means "no", as
-- accepting it in the diff does).
local function proposal_text(tab_name)
  local ok, diff = pcall(require, "claude.diff")
  if not ok then
    return nil
  end
  for _, d in ipairs(diff.pending()) do
    if d.tab_name == tab_name and api.nvim_buf_is_valid(d.proposal_bufnr) then
      return diff.buffer_contents(d.proposal_bufnr), d.all_rejected
    end
  end
  return nil
end

--- The chat_permission parameters of an answer to p (params: behavior,
--- scope, message, answers, accept_plan_mode). An allow of a diff-backed
--- request carries the proposal as the user left it in the diff review, so
--- the host needs no second trip to Neovim.
---@param chat {id: string}
---@param p {id: string, d: table}
---@param params table
---@return table
function M.params(chat, p, params)
  params.id = chat.id
  params.request_id = p.id
  if params.behavior == "allow" and p.d.diff and p.d.tab_name then
    local text, all_rejected = proposal_text(p.d.tab_name)
    if all_rejected then
      params.behavior, params.scope = "deny", nil
      params.message = "The user rejected every hunk of this change in the diff review."
    else
      params.proposal = text
    end
  end
  return params
end

--- Sends the answer for p (see M.params).
function M.respond(chat, p, params)
  params = M.params(chat, p, params)
  local res, err = require("claude.server").request("chat_permission", params)
  if not res and err then
    notify(err, vim.log.levels.ERROR)
    return false
  end
  return true
end

local function deny_with_reason(chat, p, prompt)
  vim.ui.input({ prompt = prompt or "Reason for Claude (empty: just deny): " }, function(reason)
    if reason == nil then
      return -- cancelled: the prompt stays open
    end
    reason = vim.trim(reason)
    if reason == "" then
      reason = "The user denied this."
    end
    M.respond(chat, p, { behavior = "deny", message = reason })
  end)
end

-- ask_questions runs AskUserQuestion's questions through vim.ui.select one
-- after the other (multi-select ones through vim.ui.input) and allows with
-- the answers.
local function ask_questions(chat, p)
  local qs = p.d.questions or {}
  local answers = {}
  local function ask(i)
    local q = qs[i]
    if not q then
      -- an empty Lua table encodes as [] (Go wants an object)
      M.respond(chat, p, { behavior = "allow", answers = next(answers) and answers or vim.empty_dict() })
      return
    end
    local labels = {}
    for _, o in ipairs(q.options or {}) do
      table.insert(labels, tostring(o.label))
    end
    local title = (q.header and q.header ~= vim.NIL and q.header ~= "") and (q.header .. ": " .. q.question) or q.question
    if q.multi_select then
      vim.ui.input({ prompt = title .. " (comma-separated: " .. table.concat(labels, ", ") .. "): " }, function(s)
        if s == nil then
          return
        end
        answers[q.question] = vim.trim(s)
        ask(i + 1)
      end)
      return
    end
    vim.ui.select(q.options or {}, {
      prompt = title,
      format_item = function(o)
        local desc = o.description and o.description ~= vim.NIL and o.description ~= "" and (" — " .. o.description) or ""
        return tostring(o.label) .. desc
      end,
    }, function(choice)
      if choice == nil then
        return
      end
      answers[q.question] = choice.label
      ask(i + 1)
    end)
  end
  ask(1)
end

local function approve_plan(chat, p, mode)
  local function send(m)
    if m then
      M.respond(chat, p, { behavior = "allow", accept_plan_mode = m })
    end
  end
  if mode then
    send(mode)
    return
  end
  -- every mode of the CLI but plan, as its own plan dialog offers
  local main = require("claude.chat")
  local modes = {}
  for _, m in ipairs(type(chat.modes) == "table" and #chat.modes > 0 and chat.modes or main.MODES) do
    if m ~= "plan" then
      table.insert(modes, m)
    end
  end
  vim.ui.select(modes, {
    prompt = "Approve the plan and continue in mode",
    format_item = function(m)
      return m .. (main.MODE_HELP[m] and (" (" .. main.MODE_HELP[m] .. ")") or "")
    end,
  }, send)
end

-- plan_comments is what the user changed in the plan buffer, as a diff the
-- model can read, or nil when nothing changed.
local function plan_comments(p)
  return require("claude.plan").comments(p.plan_buf, p.d.plan)
end

local function deny_plan(chat, p)
  local comments = plan_comments(p)
  if comments then
    M.respond(chat, p, { behavior = "deny", message = comments })
    return
  end
  deny_with_reason(chat, p, "What should change in the plan? ")
end

-- in_view: whether the current window (the transcript's) shows all of
-- p's block, no line of it scrolled away or folded.
local function in_view(chat, p)
  local s, e = render.mark_row(chat, p.start), render.mark_row(chat, p.help)
  if not (s and e) then
    return false
  end
  if s + 1 < vim.fn.line("w0") or e + 1 > vim.fn.line("w$") then
    return false
  end
  for l = s + 1, e + 1 do
    if vim.fn.foldclosed(l) ~= -1 then
      return false
    end
  end
  return true
end

-- may_allow: whether allowing p from here allows only what the user can
-- see. What is allowed must be on screen when the key is pressed: a block
-- that is not shown whole is brought into view (folds opened, scrolled)
-- and this press allows nothing; one that cannot be shown whole (too long
-- for the chat, or taller than the window) cannot be allowed from here.
local function may_allow(chat, p)
  if p.d.diff then
    return true -- the diff review shows the change, and the answer takes it from there
  end
  local what = p.d.lines and p.d.lines > 1 and string.format("this request (a command of %d lines)", p.d.lines) or "this request"
  if p.cut then
    notify(
      "nvim-claude: "
        .. what
        .. " is too long to show in the chat in full, so it cannot be allowed from here; deny it (with a reason, e.g. to split it up)",
      vim.log.levels.WARN
    )
    return false
  end
  if in_view(chat, p) then
    return true
  end
  local s = render.mark_row(chat, p.start)
  local win = api.nvim_get_current_win()
  api.nvim_win_set_cursor(win, { s + 1, 0 })
  pcall(vim.cmd, "normal! zvzt")
  if in_view(chat, p) then
    notify("nvim-claude: the whole request is on screen now: read it, then press the key again to answer", vim.log.levels.WARN)
  else
    notify(
      "nvim-claude: " .. what .. " does not fit in this window, so it cannot be allowed from here: make the window taller and press the key again, or deny it",
      vim.log.levels.WARN
    )
  end
  return false
end

--- Settles one of the CLI's dialogs with result (one of its choices; ""
--- dismisses it).
function M.respond_dialog(chat, p, result)
  local res, err = require("claude.server").request("chat_dialog", { id = chat.id, request_id = p.id, result = result })
  if not res and err then
    notify(err, vim.log.levels.ERROR)
    return false
  end
  if result == "edit_prompt" and p.prompt then
    -- The refused prompt comes back for editing, unless the user has
    -- started another one meanwhile.
    local prompt = require("claude.chat.prompt")
    if vim.trim(prompt.text(chat)) == "" then
      prompt.set_text(chat, p.prompt)
    end
  end
  return true
end

-- choose offers a dialog's choices, each with the CLI's own words.
choose = function(chat, p)
  local choices = type(p.d.choices) == "table" and p.d.choices or {}
  vim.ui.select(choices, {
    prompt = display(p.d.summary or "Claude asks"),
    format_item = function(c)
      return display(c.label)
    end,
  }, function(c)
    if c then
      M.respond_dialog(chat, p, c.result)
    end
  end)
end

--- Answers the prompt under the cursor; with the cursor elsewhere it
--- answers nothing and says which prompt waits and how to reach it.
--- choice: "allow", "session", "project" or "deny".
function M.answer(chat, choice)
  if #chat.pending == 0 then
    notify("nvim-claude: no permission request is waiting in this chat", vim.log.levels.WARN)
    return
  end
  local p = target(chat)
  if not p then
    notify(waiting(chat), vim.log.levels.WARN)
    return
  end
  local kind = p.d.kind
  if kind == "dialog" then
    if choice == "deny" then
      M.respond_dialog(chat, p, "")
    else
      choose(chat, p)
    end
    return
  end
  if kind == "question" then
    if choice == "deny" then
      M.respond(chat, p, { behavior = "deny", message = "The user declined to answer." })
    else
      ask_questions(chat, p)
    end
    return
  end
  if kind == "plan" then
    if choice == "deny" then
      deny_plan(chat, p)
    else
      approve_plan(chat, p)
    end
    return
  end
  if choice == "deny" then
    deny_with_reason(chat, p)
  elseif not may_allow(chat, p) then
    return
  elseif choice == "session" or choice == "project" then
    M.respond(chat, p, { behavior = "allow", scope = choice })
  else
    M.respond(chat, p, { behavior = "allow", scope = "once" })
  end
end

-- The plan buffer -----------------------------------------------------------

--- Opens (or shows again) the plan of a plan prompt in a markdown buffer
--- above the transcript. :w sends the edits as comments (keep planning);
--- ga approves, gA approves and switches to acceptEdits.
function M.open_plan(chat, p)
  if p.settled then
    return
  end
  if not (p.plan_buf and api.nvim_buf_is_valid(p.plan_buf)) then
    p.plan_buf = require("claude.plan").create({
      name = string.format("claude-plan://%s/%s.md", chat.id, p.id),
      plan = tostring(p.d.plan or ""),
      var = { chat = chat.id, request_id = p.id },
      augroup = require("claude.chat").augroup(),
      on_comments = function(comments)
        M.respond(chat, p, { behavior = "deny", message = comments })
      end,
      on_approve = function(mode)
        approve_plan(chat, p, mode)
      end,
    })
  end
  if #vim.fn.win_findbuf(p.plan_buf) > 0 then
    return
  end
  local tw
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == chat.tbuf then
      tw = w
      break
    end
  end
  if not tw then
    return -- the chat is hidden; the key on the prompt shows the plan later
  end
  local cur = api.nvim_get_current_win()
  api.nvim_win_call(tw, function()
    vim.cmd("aboveleft split")
    api.nvim_win_set_buf(0, p.plan_buf)
  end)
  if api.nvim_win_is_valid(cur) then
    api.nvim_set_current_win(cur)
  end
end

--- The request ids waiting for an answer (for tests and the header).
function M.pending(chat)
  return vim.deepcopy(chat.pending)
end

return M
