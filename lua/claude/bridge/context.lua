-- Editor context for the Go host (area file: receives the core's `fns`):
-- open buffers, the workspace folders, opening files, saving, formatting,
-- reading and writing documents, and bringing diagnostics up to date.
-- The Go side is nvimbridge/context.go.
local fns = {}

local api = vim.api
local uv = vim.uv or vim.loop

local function has(feature)
  return vim.fn.has(feature) == 1
end

-- The editor facts — is this buffer a file, which buffer holds a path, may a
-- file be shown in this window, which window is the active editor, how a
-- column counts in UTF-16 — are claude.editor's (lua/claude/editor.lua), the
-- one owner every module of the plugin asks too, so getOpenEditors'
-- isActive and getCurrentSelection cannot disagree. The host is only ever
-- started by the plugin (claude.server's jobstart), so that Lua is on
-- 'runtimepath' whenever the host calls in. It is looked up at the first
-- use, not while the bridge loads: a Neovim without the plugin's Lua (the
-- bridge's own tests) still loads the bridge and runs the functions that do
-- not need it; the ones that do fail with a message that says why.
local E = setmetatable({}, {
  __index = function(t, k)
    local ok, mod = pcall(require, "claude.editor")
    if not ok then
      error("nvim-claude's Lua files are not on 'runtimepath': " .. tostring(mod), 0)
    end
    setmetatable(t, { __index = mod })
    return mod[k]
  end,
})

local function opt(buf, name)
  return E.buf_opt(buf, name)
end

local function set_opt(buf, name, value)
  api.nvim_buf_set_option(buf, name, value)
end

-- Messages of Vim errors without the Lua location and "Vim(write):".
local function clean_err(err)
  local s = tostring(err)
  s = s:gsub("\nstack traceback:.*$", "")
  s = s:gsub("^.-Vim%(%a+%):", "")
  s = s:gsub("^[^\n]-%.lua:%d+: ", "")
  return s
end

local function diagnostics_module()
  local ok, m = pcall(require, "claude.diagnostics")
  if ok then
    return m
  end
end


---------------------------------------------------------------------------
-- Disk stamps. Neovim warns before :write when the file changed since the
-- buffer was read, with a yes/no prompt that would block the host. To refuse
-- such a save instead, each buffer remembers the file's stat as of its last
-- read or write (b:claude_disk), which is when Neovim's own record changes.
---------------------------------------------------------------------------

local function stamp(path)
  local st = uv.fs_stat(path)
  if not st then
    return { missing = true }
  end
  return { sec = st.mtime.sec, nsec = st.mtime.nsec or 0, size = st.size }
end

local function record(buf, path)
  pcall(api.nvim_buf_set_var, buf, "claude_disk", stamp(path))
end

local stamp_group = api.nvim_create_augroup("nvim-claude-disk", { clear = true })
api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufWritePost", "FileChangedShellPost" }, {
  group = stamp_group,
  desc = "nvim-claude: remember the file's stat as of the buffer's last read or write",
  callback = function(args)
    -- (pcall: in a Neovim without the plugin's Lua an autocmd must not fail)
    local ok, path = pcall(function()
      return E.file_path(args.buf)
    end)
    if not ok or not path then
      return
    end
    -- ":w other.txt" writes another file: the buffer's own base is unchanged
    if args.event == "BufWritePost" and vim.fn.fnamemodify(args.file, ":p") ~= path then
      return
    end
    record(args.buf, path)
  end,
})

-- disk_changed tells whether the file changed on disk since buf was read or
-- last written: nil when it did not, else a few words saying how.
local function disk_changed(buf, path)
  local ok, rec = pcall(api.nvim_buf_get_var, buf, "claude_disk")
  if ok and type(rec) == "table" then
    if rec.conflict then
      return "changed on disk since it was read"
    end
    local now = stamp(path)
    if rec.missing then
      return not now.missing and "created on disk after the buffer was opened" or nil
    end
    if now.missing then
      return nil -- deleted: writing creates it again, as :write does
    end
    if now.sec ~= rec.sec or now.nsec ~= rec.nsec or now.size ~= rec.size then
      return "changed on disk since it was read"
    end
    return nil
  end
  -- Loaded before the host was: ask Neovim's own timestamp check, without
  -- letting it prompt or reload.
  local reason
  local g = api.nvim_create_augroup("nvim-claude-probe", { clear = true })
  api.nvim_create_autocmd("FileChangedShell", {
    group = g,
    pattern = "*",
    callback = function(a)
      if a.buf == buf then
        reason = vim.v.fcs_reason
        vim.v.fcs_choice = ""
      end
    end,
  })
  pcall(vim.cmd, "checktime " .. buf)
  pcall(api.nvim_del_augroup_by_id, g)
  if reason == "changed" or reason == "conflict" or reason == "time" then
    -- Neovim reports a change only once: remember it for the next save
    pcall(api.nvim_buf_set_var, buf, "claude_disk", { conflict = true })
    return "changed on disk since it was read"
  end
  return nil
end

-- room_for reports whether path's file system has room for buf's text:
-- on a full disk :write truncates the file before it fails (E514), losing
-- what was there (stock Neovim does it too).
local function room_for(buf, path)
  local uv = vim.uv or vim.loop
  if not uv.fs_statfs then
    return true
  end
  local st = uv.fs_statfs(vim.fn.fnamemodify(path, ":h"))
  if not st then
    return true
  end
  local size = api.nvim_buf_call(buf, function()
    return vim.fn.line2byte(vim.fn.line("$") + 1)
  end)
  return size < 0 or (size + 65536) <= st.bavail * st.bsize
end

-- write runs :write (or :write!) for buf without any prompt reaching the
-- user: callers have ruled out the changed-on-disk question.
local function write(buf, bang)
  local path = api.nvim_buf_get_name(buf)
  if not room_for(buf, path) then
    return false, "no space left on the device for " .. path .. "; the file was left as it was"
  end
  local ok, err = pcall(api.nvim_buf_call, buf, function()
    vim.cmd(bang and "silent write!" or "silent write")
  end)
  if not ok then
    return false, clean_err(err)
  end
  if opt(buf, "modified") then
    return false, "the buffer is still modified after :write"
  end
  return true
end

local function notify(msg, level)
  require("claude.util").notify(msg, level or vim.log.levels.WARN)
end

-- save writes buf's file unless that would overwrite a change made on disk.
local function save(buf)
  local path = E.file_path(buf)
  if opt(buf, "readonly") then
    return { ok = false, reason = "readonly", message = path .. " is read-only in Neovim ('readonly' is set)" }
  end
  local why = disk_changed(buf, path)
  if why then
    notify(
      string.format(
        "nvim-claude: not saving %s: it %s. Reload it with :edit! or overwrite it with :write!",
        vim.fn.fnamemodify(path, ":~:."),
        why
      )
    )
    return { ok = false, reason = "conflict", message = path .. " " .. why .. "; not saved (the change on disk was kept)" }
  end
  local ok, err = write(buf, false)
  if not ok then
    return { ok = false, reason = "failed", message = "could not write " .. path .. ": " .. err }
  end
  return { ok = true }
end

---------------------------------------------------------------------------
-- Windows
---------------------------------------------------------------------------

-- Window-local options a split copies from the window it came from; a new
-- editing window made beside the terminal or a sidebar gets the global ones.
local reset_options = { "number", "relativenumber", "signcolumn", "foldcolumn", "spell", "list", "cursorline" }

-- split_beside makes a window next to base: left of it (above when it is
-- narrow), unless base sits against the left (top) edge with windows beside
-- it, as a sidebar or a left-hand terminal does.
local function split_beside(base)
  local pos = api.nvim_win_get_position(base)
  local width, height = api.nvim_win_get_width(base), api.nvim_win_get_height(base)
  local cmd
  if width >= 80 then
    local edge = pos[2] == 0 and width < vim.o.columns
    cmd = (edge and "belowright" or "aboveleft") .. " vsplit"
  else
    local edge = pos[1] <= 1 and height < vim.o.lines - 2
    cmd = (edge and "belowright" or "aboveleft") .. " split"
  end
  local new
  api.nvim_win_call(base, function()
    vim.cmd(cmd)
    new = api.nvim_get_current_win()
  end)
  pcall(api.nvim_win_set_option, new, "winfixwidth", false)
  pcall(api.nvim_win_set_option, new, "winfixheight", false)
  for _, name in ipairs(reset_options) do
    local ok, global = pcall(api.nvim_get_option, name)
    if ok then
      pcall(api.nvim_win_set_option, new, name, global)
    end
  end
  return new
end

-- editor_window picks where to show buf: an editing window already showing
-- it, the active editor when a file may be shown there, the largest editing
-- window (claude.editor.show_window), else a new split beside the largest
-- window (the terminal, a sidebar …).
local function editor_window(buf)
  local cur = api.nvim_get_current_win()
  if E.editing_window(cur) and api.nvim_win_get_buf(cur) == buf then
    return cur
  end
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if E.editing_window(w) and api.nvim_win_get_buf(w) == buf then
      return w
    end
  end
  local win = E.show_window(0)
  if win then
    return win
  end
  local util = require("claude.util")
  local base = util.largest_window(0, function(w)
    return not util.floating(w)
  end)
  return split_beside(base or cur)
end

---------------------------------------------------------------------------
-- Loading buffers
---------------------------------------------------------------------------

-- load reads buf's file. An existing swap file opens it read-only instead of
-- showing the ATTENTION prompt, which would block the host.
local function load(buf)
  if api.nvim_buf_is_loaded(buf) then
    return
  end
  local g = api.nvim_create_augroup("nvim-claude-swap", { clear = true })
  api.nvim_create_autocmd("SwapExists", {
    group = g,
    pattern = "*",
    callback = function()
      if vim.v.swapchoice == "" then
        vim.v.swapchoice = "o"
      end
    end,
  })
  local ok, err = pcall(vim.fn.bufload, buf)
  pcall(api.nvim_del_augroup_by_id, g)
  if not ok then
    error(clean_err(err), 0)
  end
end

-- open makes path a loaded buffer; listed unless preview asks otherwise, in
-- which case it becomes listed once edited (like VS Code's preview tabs).
local function open(path, preview)
  local buf = E.find_buf(path)
  local listed = buf and opt(buf, "buflisted")
  if not buf then
    buf = vim.fn.bufadd(path)
  end
  local was_loaded = api.nvim_buf_is_loaded(buf)
  load(buf)
  if not was_loaded then
    -- Loaded by a tool call, not by the user: outside the workspace it is
    -- not shared (claude.selection) until the user edits it.
    pcall(function()
      require("claude.selection").opened_by_tool(buf)
    end)
  end
  if listed then
    return buf
  end
  if not preview then
    set_opt(buf, "buflisted", true)
    return buf
  end
  local g = api.nvim_create_augroup("nvim-claude-preview-" .. buf, { clear = true })
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "BufWritePost" }, {
    group = g,
    buffer = buf,
    desc = "nvim-claude: a previewed file becomes a listed buffer once edited",
    callback = function()
      pcall(set_opt, buf, "buflisted", true)
      pcall(api.nvim_del_augroup_by_id, g)
    end,
  })
  return buf
end

-- selection finds start_text (and end_text after it) in buf: the (1-based
-- row, 0-based byte col) of its first and last character, or nil.
local function selection(buf, a)
  if type(a.start_text) ~= "string" or a.start_text == "" then
    return nil
  end
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, "\n")
  local s = text:find(a.start_text, 1, true)
  if not s then
    return nil
  end
  local e = s + #a.start_text - 1
  if type(a.end_text) == "string" and a.end_text ~= "" then
    local es = text:find(a.end_text, e + 1, true)
    if es then
      e = es + #a.end_text - 1
    end
  end
  local function pos(offset)
    local row, start = 1, 1
    for i, l in ipairs(lines) do
      if offset <= start + #l then
        row = i
        break
      end
      start = start + #l + 1
      row = i + 1
    end
    return row, offset - start
  end
  local srow, scol = pos(s)
  local erow, ecol = pos(e)
  local eline = lines[erow] or ""
  if a.select_to_eol then
    ecol = #eline - 1
  end
  ecol = math.max(math.min(ecol, #eline - 1), 0)
  return { srow, scol }, { erow, ecol }
end

local function describe(buf)
  return {
    path = E.file_path(buf),
    filetype = opt(buf, "filetype"),
    line_count = api.nvim_buf_line_count(buf),
  }
end

-- focus shows buf in win, moves the focus there and selects s..e in
-- Visual mode (Normal mode when there is no selection).
local function focus(win, buf, s, e)
  if not api.nvim_win_is_valid(win) or not api.nvim_buf_is_valid(buf) then
    return
  end
  if api.nvim_win_get_buf(win) ~= buf then
    api.nvim_win_set_buf(win, buf)
  end
  api.nvim_set_current_win(win)
  if not s then
    return
  end
  if api.nvim_get_mode().mode:match("^[vV\22sS\19]") then
    vim.cmd("normal! \27") -- leave an old Visual selection first
  end
  api.nvim_win_set_cursor(win, s)
  vim.cmd("normal! zvzz")
  vim.cmd("normal! v")
  api.nvim_win_set_cursor(win, e)
  -- A selection made by a tool, not by the user: not shared back until the
  -- user changes it.
  pcall(function()
    require("claude.selection").tool_selected(buf, s, e)
  end)
end

-- Focus requests waiting for Terminal or Insert mode to end (see below).
local pending_focus, focus_seq = {}, 0

function fns.ctx_focus_pending(id)
  local p = pending_focus[id]
  pending_focus[id] = nil
  if p then
    focus(p.win, p.buf, p.s, p.e)
  end
end

-- ctx_open_file opens a file. With focus, in an editing window that gets
-- the focus, the found text selected (Visual mode); without, the buffer is
-- only loaded, with the found text as its last Visual area ('<,'>).
function fns.ctx_open_file(a)
  local buf = open(a.path, a.preview)
  local s, e = selection(buf, a)
  local out = describe(buf)
  out.found = s ~= nil
  if not a.focus then
    if s then
      api.nvim_buf_set_mark(buf, "<", s[1], s[2], {})
      api.nvim_buf_set_mark(buf, ">", e[1], e[2], {})
    end
    return out
  end
  local win = editor_window(buf)
  if api.nvim_win_get_buf(win) ~= buf then
    api.nvim_win_set_buf(win, buf)
  end
  local mode = api.nvim_get_mode().mode
  if mode == "n" or mode:match("^[vV\22]") then
    focus(win, buf, s, e)
    return out
  end
  if mode:match("^[cr]") then
    -- the user is typing a command or answering a prompt: show the file,
    -- leave the focus
    if s then
      api.nvim_win_set_cursor(win, s)
    end
    return out
  end
  -- In Terminal mode (the user typing to Claude) or Insert mode this call
  -- runs inside that mode's loop, which would take the focus back or keep
  -- its mode. Leave it the way a user does, then focus from the typeahead.
  focus_seq = focus_seq + 1
  pending_focus[focus_seq] = { win = win, buf = buf, s = s, e = e }
  local keys = string.format(
    [[<C-\><C-N><Cmd>lua package.loaded['nvim-claude.bridge'].fns.ctx_focus_pending(%d)<CR>]],
    focus_seq
  )
  api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, false, true), "n", false)
  return out
end

-- ctx_open_files loads every path (listed); the last one is shown in the
-- editing window, and the focus stays where it is.
function fns.ctx_open_files(a)
  local out, last = {}, nil
  for _, path in ipairs(a.paths or {}) do
    local ok, res = pcall(open, path, false)
    if ok then
      last = res
      table.insert(out, { path = E.file_path(res) or path, ok = true })
    else
      table.insert(out, { path = path, ok = false, message = clean_err(res) })
    end
  end
  if last then
    local win = editor_window(last)
    if api.nvim_win_get_buf(win) ~= last then
      api.nvim_win_set_buf(win, last)
    end
  end
  return out
end

---------------------------------------------------------------------------
-- Facts
---------------------------------------------------------------------------

-- ctx_editors: the listed file buffers, and the file in the active editor
-- window with its cursor (character in UTF-16 units).
--
-- The buffers come packed in one string (nvimbridge/context.go unpacks it):
-- per buffer "<bufnr> <line_count> <flags> <filetype>\0<path>\0", flags
-- adding 1 for modified, 2 for active and 4 for loaded (NUL is the one
-- byte no name holds). With 500 buffers, decoding that is a third of the
-- host's cost of decoding 500 JSON objects (make bench, scenario 7).
function fns.ctx_editors()
  local win = E.active_window()
  local active = win and api.nvim_win_get_buf(win)
  local packed, n = {}, 0
  local buflisted, is_loaded, line_count = vim.fn.buflisted, api.nvim_buf_is_loaded, api.nvim_buf_line_count
  local file_path, str, flag = E.file_path, E.buf_str, E.buf_flag
  for _, b in ipairs(api.nvim_list_bufs()) do
    local path = buflisted(b) == 1 and file_path(b)
    if path then
      local loaded = is_loaded(b)
      local flags = (flag(b, "modified") and 1 or 0) + (b == active and 2 or 0) + (loaded and 4 or 0)
      n = n + 1
      packed[n] = b
        .. " "
        .. (loaded and line_count(b) or 0)
        .. " "
        .. flags
        .. " "
        .. str(b, "filetype")
        .. "\0"
        .. path
        .. "\0"
    end
  end
  local current
  if active and E.file_path(active) then
    local cursor = api.nvim_win_get_cursor(win)
    local line = api.nvim_buf_get_lines(active, cursor[1] - 1, cursor[1], false)[1] or ""
    current = describe(active)
    current.modified = flag(active, "modified")
    current.line = cursor[1] - 1
    current.character = E.units(line, cursor[2])
  end
  return { packed = table.concat(packed), current = current }
end

-- Neovim's version, computed once: vim.version() builds the whole API
-- metadata (vim.fn.api_info()), ~0.6 ms a call on 0.12, which was nearly all
-- of getWorkspaceFolders' cost (make bench, scenario 11).
local nvim_version
local function version_string()
  if not nvim_version then
    local v = vim.version()
    nvim_version = string.format("%d.%d.%d", v.major, v.minor, v.patch)
  end
  return nvim_version
end

-- ctx_workspace: the workspace folders (cwd first, then language servers'
-- folders) and Neovim's version.
function fns.ctx_workspace()
  local m = diagnostics_module()
  local folders = m and m.workspace_folders() or { vim.fn.getcwd(-1, -1) }
  return {
    cwd = vim.fn.getcwd(-1, -1),
    folders = folders,
    version = version_string(),
  }
end

-- ctx_document: whether path is open and has unsaved changes.
function fns.ctx_document(a)
  local buf = E.find_buf(a.path)
  if not buf or not (api.nvim_buf_is_loaded(buf) or opt(buf, "buflisted")) then
    return { open = false }
  end
  return { open = true, path = E.file_path(buf), modified = opt(buf, "modified") }
end

---------------------------------------------------------------------------
-- Actions on documents
---------------------------------------------------------------------------

-- ctx_save writes path's buffer if it has unsaved changes (a file missing on
-- disk is written too).
function fns.ctx_save(a)
  local buf = E.find_buf(a.path)
  if not buf or not api.nvim_buf_is_loaded(buf) then
    return { ok = false, reason = "not_open" }
  end
  local path = E.file_path(buf)
  if not opt(buf, "modified") and uv.fs_stat(path) then
    return { ok = true, path = path, unchanged = true }
  end
  local res = save(buf)
  res.path = path
  return res
end

local function buf_clients(buf)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = buf })
  end
  if has("nvim-0.8") then
    return vim.lsp.get_active_clients({ bufnr = buf })
  end
  local out = {}
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
    table.insert(out, c)
  end
  return out
end

local function can_format(client, buf)
  if has("nvim-0.11") then
    return client:supports_method("textDocument/formatting", buf)
  end
  if has("nvim-0.8") then
    return client.supports_method("textDocument/formatting", { bufnr = buf })
  end
  local caps = client.server_capabilities or {}
  return caps.documentFormattingProvider ~= nil and caps.documentFormattingProvider ~= false
end

local function request_sync(client, method, params, timeout, buf)
  if has("nvim-0.11") then
    return client:request_sync(method, params, timeout, buf)
  end
  return client.request_sync(method, params, timeout, buf)
end

-- ctx_format formats path's buffer with the first attached language server
-- that can, synchronously; a buffer that had no unsaved changes is saved
-- after, so the file on disk is formatted too.
function fns.ctx_format(a)
  local buf = E.find_buf(a.path)
  local loaded_here = false
  if not buf or not api.nvim_buf_is_loaded(buf) then
    buf = buf or vim.fn.bufadd(a.path)
    load(buf)
    loaded_here = true
    -- Language servers attach on FileType, while the buffer loads (lspconfig,
    -- vim.lsp.start); some setups attach from a scheduled callback.
    vim.wait(200, function()
      return #buf_clients(buf) > 0
    end, 10)
  end
  local function finish(res)
    if loaded_here and #vim.fn.win_findbuf(buf) == 0 and not opt(buf, "modified") then
      pcall(api.nvim_buf_delete, buf, { unload = true })
    end
    return res
  end
  local path = E.file_path(buf) or a.path
  local clients = buf_clients(buf)
  -- a server still starting has no capabilities yet
  vim.wait(a.init_ms or 2000, function()
    for _, c in ipairs(clients) do
      if not c.initialized then
        return false
      end
    end
    return true
  end, 20)
  local client
  for _, c in ipairs(clients) do
    if can_format(c, buf) then
      client = c
      break
    end
  end
  if not client then
    local names = {}
    for _, c in ipairs(clients) do
      table.insert(names, c.name)
    end
    local why = #names == 0 and ("no language server is attached to " .. path)
      or string.format("no language server attached to %s can format it (%s)", path, table.concat(names, ", "))
    return finish({ ok = false, reason = "no_formatter", message = "No formatter: " .. why })
  end
  local was_modified = opt(buf, "modified")
  local params = api.nvim_buf_call(buf, function()
    return vim.lsp.util.make_formatting_params({})
  end)
  local timeout = a.timeout_ms or 3000
  local resp, err = request_sync(client, "textDocument/formatting", params, timeout, buf)
  if not resp then
    local msg = err == "timeout" and string.format("%s did not format %s within %d ms", client.name, path, timeout)
      or string.format("%s could not format %s: %s", client.name, path, tostring(err))
    return finish({ ok = false, reason = "failed", message = msg })
  end
  if resp.err then
    return finish({
      ok = false,
      reason = "failed",
      message = string.format("%s could not format %s: %s", client.name, path, resp.err.message or vim.inspect(resp.err)),
    })
  end
  local tick = api.nvim_buf_get_changedtick(buf)
  if type(resp.result) == "table" and #resp.result > 0 then
    vim.lsp.util.apply_text_edits(resp.result, buf, client.offset_encoding or "utf-16")
  end
  local changed = api.nvim_buf_get_changedtick(buf) ~= tick
  local out = { ok = true, client = client.name, saved = false, changed = changed }
  if changed and not was_modified then
    local res = save(buf)
    if not res.ok then
      res.message = "formatted in the editor, but " .. res.message
      return finish(res)
    end
    out.saved = true
  end
  return finish(out)
end

-- buffer_text is what :write would put in the file, as one string.
local function buffer_text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local ff = opt(buf, "fileformat")
  local nl = ff == "dos" and "\r\n" or ff == "mac" and "\r" or "\n"
  local text = table.concat(lines, nl)
  if not (#lines == 1 and lines[1] == "") and (opt(buf, "eol") or opt(buf, "fixeol")) then
    text = text .. nl
  end
  if opt(buf, "bomb") then
    text = "\239\187\191" .. text
  end
  return text
end

-- denied tells whether path is on the user's deny-list (security.deny):
-- such files' contents never leave Neovim. The globs' half (claude.deny);
-- the host's boundary, which judges every
-- path anyway, also knows another hard link to a deny-listed file.
local function denied(path)
  return require("claude.deny").denied(path)
end

-- ctx_read: the text of path's buffer when it has unsaved changes (else the
-- Go side reads the file itself), and whether the file is on the deny-list.
function fns.ctx_read(a)
  if denied(a.path) or (a.real and denied(a.real)) then
    return { denied = true }
  end
  local buf = E.find_buf(a.path)
  if not buf or not api.nvim_buf_is_loaded(buf) then
    return { loaded = false }
  end
  if not opt(buf, "modified") then
    return { loaded = true, modified = false }
  end
  return { loaded = true, modified = true, text = buffer_text(buf) }
end

-- split_content turns file content into buffer lines plus the options that
-- make :write reproduce it byte for byte.
local function split_content(content)
  local bomb = content:sub(1, 3) == "\239\187\191"
  if bomb then
    content = content:sub(4)
  end
  local eol = content:sub(-1) == "\n"
  local body = eol and content:sub(1, -2) or content
  local lines = vim.split(body, "\n", { plain = true })
  local crlf = #lines > 1 or eol
  for i, l in ipairs(lines) do
    local last = i == #lines
    if l:sub(-1) ~= "\r" and not (last and not eol) then
      crlf = false
      break
    end
  end
  if crlf then
    for i, l in ipairs(lines) do
      lines[i] = l:gsub("\r$", "")
    end
  end
  return lines, { eol = eol, crlf = crlf, bomb = bomb }
end

-- ctx_write replaces the text of path's loaded buffer (one undoable change,
-- touching only the lines that differ) and writes it. Not loaded → the Go
-- side writes the file.
function fns.ctx_write(a)
  local buf = E.find_buf(a.path)
  if not buf or not api.nvim_buf_is_loaded(buf) then
    return { loaded = false }
  end
  local path = E.file_path(buf)
  if opt(buf, "readonly") or not opt(buf, "modifiable") then
    return {
      loaded = true,
      ok = false,
      message = path .. " is open read-only in Neovim ('readonly' or 'nomodifiable' is set); not written",
    }
  end
  local had_changes = opt(buf, "modified")
  local lines, o = split_content(a.content)
  local old = api.nvim_buf_get_lines(buf, 0, -1, false)
  local first = 1
  while first <= #old and first <= #lines and old[first] == lines[first] do
    first = first + 1
  end
  local ol, nl = #old, #lines
  while ol >= first and nl >= first and old[ol] == lines[nl] do
    ol, nl = ol - 1, nl - 1
  end
  if first <= ol or first <= nl then
    api.nvim_buf_set_lines(buf, first - 1, ol, false, vim.list_slice(lines, first, nl))
  end
  set_opt(buf, "fileformat", o.crlf and "dos" or "unix")
  set_opt(buf, "bomb", o.bomb)
  set_opt(buf, "eol", o.eol)
  if not o.eol then
    set_opt(buf, "fixeol", false)
  end
  -- The caller gave the whole content: it wins over a change on disk.
  local ok, err = write(buf, true)
  if not ok then
    return { loaded = true, ok = false, message = "could not write " .. path .. ": " .. err }
  end
  return { loaded = true, ok = true, replaced_unsaved = had_changes }
end

---------------------------------------------------------------------------
-- Diagnostics
---------------------------------------------------------------------------

-- Files as last seen by ctx_diagnostics_sync, per buffer: only a buffer whose
-- file's stat moved is asked about (checktime), which keeps the sync cheap
-- with hundreds of buffers.
local seen = {}

-- reload_changed reloads unmodified buffers whose file changed on disk (the
-- CLI edits files itself), as 'autoread' would but without waiting for focus,
-- so language servers and linters look at the new text. Buffers with unsaved
-- changes are left alone: Neovim warns about those when the user is there.
local function reload_changed()
  local reloaded = {}
  local g = api.nvim_create_augroup("nvim-claude-reload", { clear = true })
  api.nvim_create_autocmd("FileChangedShell", {
    group = g,
    pattern = "*",
    callback = function(args)
      local r = vim.v.fcs_reason
      if (r == "changed" or r == "time") and not opt(args.buf, "modified") then
        vim.v.fcs_choice = "reload"
      else
        vim.v.fcs_choice = ""
      end
    end,
  })
  local live = {}
  -- With hundreds of buffers this loop is most of getDiagnostics' wait on
  -- Neovim: 'modified' is read once a buffer (the fast reader), and again
  -- only after a reload; a stamp that did not move is kept as it is.
  local is_loaded, is_valid, file_path, flag = api.nvim_buf_is_loaded, api.nvim_buf_is_valid, E.file_path, E.buf_flag
  for _, b in ipairs(api.nvim_list_bufs()) do
    local path = is_loaded(b) and file_path(b)
    if path then
      live[b] = true
      local now = stamp(path)
      local before = seen[b]
      local moved = not before
        or before.path ~= path
        or now.missing ~= before.missing
        or now.sec ~= before.sec
        or now.nsec ~= before.nsec
        or now.size ~= before.size
      local modified = flag(b, "modified")
      if moved and not modified and not now.missing then
        local tick = api.nvim_buf_get_changedtick(b)
        local had = #vim.diagnostic.get(b) > 0
        pcall(vim.cmd, "checktime " .. b)
        if is_valid(b) and api.nvim_buf_get_changedtick(b) ~= tick then
          table.insert(reloaded, { buf = b, had = had })
        end
        modified = not is_valid(b) or flag(b, "modified")
      end
      if moved and not modified then
        now.path = path
        seen[b] = now
      end
    end
  end
  for b in pairs(seen) do
    if not live[b] then
      seen[b] = nil
    end
  end
  pcall(api.nvim_del_augroup_by_id, g)
  return reloaded
end

-- ctx_diagnostics_sync brings the host's copy of the diagnostics up to date:
-- reloads buffers changed on disk, sends the pending diagnostics, and names
-- the reloaded files whose new diagnostics are likely on their way.
function fns.ctx_diagnostics_sync()
  local reloaded = reload_changed()
  local m = diagnostics_module()
  local seq = nil
  if m and m.attached() then
    seq = m.flush()
  end
  -- Worth waiting for: files with a language server, or with diagnostics
  -- before the reload (a linter is at work on them).
  local wait = {}
  for _, r in ipairs(reloaded) do
    if r.had or #buf_clients(r.buf) > 0 then
      table.insert(wait, E.file_path(r.buf))
    end
  end
  return { seq = seq, reloaded = #reloaded, wait = wait }
end

return fns
