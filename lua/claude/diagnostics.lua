-- claude.diagnostics: keeps the Go host's copy of the editor's diagnostics
-- current, and tells it when the workspace folders change.
--
-- Every DiagnosticChanged (from any source: LSP, linters, vim.diagnostic.set)
-- marks its buffer; a short timer then sends the diagnostics of the marked
-- file buffers in one "diagnostics_changed" notification. The host answers
-- getDiagnostics from that copy without asking Neovim, which keeps it well
-- inside the CLI's 500 ms budget however many buffers are open.
--
-- The workspace folders (the global cwd plus the folders of attached language
-- servers) go to the host on attach and whenever a language server attaches
-- or detaches, so the lock file lists them.
local M = {}

-- How long DiagnosticChanged events are gathered before one notification
-- goes out: a language server publishing a burst costs one push per buffer.
local FLUSH_MS = 30

local state = {
  augroup = nil,
  attached = false,
  pending = {}, -- bufnr -> true: buffers whose diagnostics changed
  timer = nil, -- the scheduled flush, or nil
  seq = 0, -- number of the last notification sent
  reported = {}, -- bufnr -> path last reported with diagnostics
  folders_key = nil, -- the folder list last sent, as a string
}

local severities = { "Error", "Warning", "Info", "Hint" }

local api = vim.api

local function server()
  return require("claude.server")
end

local editor = require("claude.editor")

-- file_path returns the absolute path of a buffer that holds a file, or nil
-- for terminals, help, quickfix, scratch and URL-named buffers (fugitive://,
-- oil://, diff proposals …): their diagnostics are not files' diagnostics.
-- The rule is claude.editor's, the same for every module.
M.file_path = editor.file_path

-- utf16 converts a byte column of line to UTF-16 code units (what LSP and
-- VS Code count) with claude.editor's conversion. A column past the end (a
-- linter's range through the line break) counts the missing bytes as units,
-- as VS Code keeps such ranges.
local function utf16(line, col)
  col = col or 0
  if not line then
    return math.max(col, 0)
  end
  local units = editor.units(line, col)
  if col > #line then
    units = units + (col - #line)
  end
  return units
end

-- line_getter returns a function giving line lnum (0-based) of buf: from the
-- buffer when it is loaded, else from the file (language servers publish
-- diagnostics for files that are not open).
local function line_getter(buf, path)
  local loaded = api.nvim_buf_is_loaded(buf)
  local cache = {}
  local file
  return function(lnum)
    if cache[lnum] ~= nil then
      return cache[lnum] or nil
    end
    local line
    if loaded then
      line = api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
    else
      if file == nil then
        local ok, lines = pcall(vim.fn.readfile, path)
        file = ok and lines or false
      end
      line = file and file[lnum + 1] or nil
    end
    cache[lnum] = line or false
    return line
  end
end

local function namespace_name(ns)
  local ok, info = pcall(vim.diagnostic.get_namespace, ns)
  if ok and info and info.name and info.name ~= "" then
    return info.name
  end
end

-- convert turns vim.diagnostic items into the VS Code shape (PROTOCOL.md §6).
local function convert(buf, path, items)
  local line = line_getter(buf, path)
  table.sort(items, function(a, b)
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    if a.col ~= b.col then
      return a.col < b.col
    end
    return (a.severity or 1) < (b.severity or 1)
  end)
  local out = {}
  for _, d in ipairs(items) do
    local lnum, col = d.lnum or 0, d.col or 0
    local end_lnum, end_col = d.end_lnum or lnum, d.end_col or col
    local lsp = type(d.user_data) == "table" and d.user_data.lsp or nil
    local code = d.code
    if code == nil and type(lsp) == "table" then
      code = lsp.code -- Neovim 0.7 keeps an LSP diagnostic's code only here
    end
    local item = {
      message = d.message or "",
      severity = severities[d.severity or 1] or "Error",
      range = {
        start = { line = lnum, character = utf16(line(lnum), col) },
        ["end"] = { line = end_lnum, character = utf16(line(end_lnum), end_col) },
      },
      source = d.source or namespace_name(d.namespace),
    }
    if code ~= nil and code ~= vim.NIL then
      item.code = code
    end
    table.insert(out, item)
  end
  return out
end

--- The diagnostics of one buffer in the VS Code shape, or nil when the
--- buffer holds no file.
function M.collect(buf)
  local path = M.file_path(buf)
  if not path then
    return nil
  end
  return path, convert(buf, path, vim.diagnostic.get(buf))
end

-- entry is one buffer's part of a notification; path = nil tells the host
-- the buffer no longer holds a file with diagnostics (wiped, renamed to a
-- URL …) so it drops what it had.
local function entry(buf)
  local path, diags = M.collect(buf)
  if not path then
    if state.reported[buf] then
      state.reported[buf] = nil
      return { bufnr = buf, diagnostics = {} }
    end
    return nil
  end
  if #diags == 0 and not state.reported[buf] then
    return nil -- never reported: nothing to clear
  end
  state.reported[buf] = #diags > 0 and path or nil
  return { bufnr = buf, path = path, diagnostics = diags }
end

local function send(payload)
  state.seq = state.seq + 1
  payload.seq = state.seq
  server().notify("diagnostics_changed", payload)
  return state.seq
end

--- Sends the diagnostics of the buffers marked since the last flush.
--- Returns the number of the last notification sent (0 when none ever was).
function M.flush()
  if state.timer then
    state.timer:stop()
    state.timer:close()
    state.timer = nil
  end
  if not state.attached or next(state.pending) == nil then
    return state.seq
  end
  local bufs = vim.tbl_keys(state.pending)
  state.pending = {}
  table.sort(bufs)
  local files = {}
  for _, buf in ipairs(bufs) do
    local e = entry(buf)
    if e then
      table.insert(files, e)
    end
  end
  if #files > 0 then
    send({ files = files })
  end
  return state.seq
end

local function mark(buf)
  if not state.attached or not buf or buf <= 0 then
    return
  end
  state.pending[buf] = true
  if state.timer then
    return
  end
  local uv = vim.uv or vim.loop
  state.timer = uv.new_timer()
  state.timer:start(
    FLUSH_MS,
    0,
    vim.schedule_wrap(function()
      M.flush()
    end)
  )
end

--- Sends every buffer's diagnostics; the host replaces its whole copy.
function M.snapshot()
  if not state.attached then
    return state.seq
  end
  state.pending = {}
  state.reported = {}
  local files = {}
  -- Nothing has diagnostics before something loads vim.diagnostic, and
  -- loading it here would hold the main loop at every server start.
  local bufs = package.loaded["vim.diagnostic"] and api.nvim_list_bufs() or {}
  for _, buf in ipairs(bufs) do
    local path, diags = M.collect(buf)
    if path and #diags > 0 then
      state.reported[buf] = path
      table.insert(files, { bufnr = buf, path = path, diagnostics = diags })
    end
  end
  return send({ snapshot = true, files = files })
end

local function lsp_clients()
  -- No language server runs before something loads vim.lsp, which costs
  -- tens of milliseconds of the main loop to load.
  if not package.loaded["vim.lsp"] then
    return {}
  end
  if vim.lsp.get_clients then
    return vim.lsp.get_clients()
  end
  return vim.lsp.get_active_clients()
end

--- The workspace folders: the global cwd first, then the folders of the
--- running language servers that are not inside one already listed.
function M.workspace_folders()
  local folders = { vim.fn.getcwd(-1, -1) }
  local function covered(dir)
    for _, f in ipairs(folders) do
      if dir == f or dir:sub(1, #f + 1) == f .. "/" or (f == "/" and dir:sub(1, 1) == "/") then
        return true
      end
    end
  end
  -- the session worktrees made outside the cwd (worktree.dir elsewhere)
  local wt = package.loaded["claude.worktree"]
  for _, dir in ipairs(wt and wt.folders(folders[1]) or {}) do
    if not covered(dir) then
      table.insert(folders, dir)
    end
  end
  for _, client in ipairs(lsp_clients()) do
    local wf = client.workspace_folders
    if type(wf) ~= "table" and client.config and type(client.config.root_dir) == "string" then
      wf = { { uri = vim.uri_from_fname(client.config.root_dir) } }
    end
    for _, f in ipairs(type(wf) == "table" and wf or {}) do
      local ok, dir = pcall(vim.uri_to_fname, f.uri or "")
      if ok and dir ~= "" and dir:sub(1, 1) == "/" then
        dir = dir:gsub("(.)/+$", "%1")
        if not covered(dir) then
          table.insert(folders, dir)
        end
      end
    end
  end
  return folders
end

-- send_folders tells the host the workspace folders when they changed.
local function send_folders()
  if not state.attached then
    return
  end
  local folders = M.workspace_folders()
  local key = table.concat(folders, "\n")
  if key == state.folders_key then
    return
  end
  state.folders_key = key
  server().notify("workspace_folders", { folders = folders })
end

--- Sends the workspace folders again (a session worktree was made).
function M.refresh_folders()
  state.folders_key = nil
  send_folders()
end

function M.attach()
  if state.attached then
    return
  end
  state.attached = true
  state.augroup = api.nvim_create_augroup("nvim-claude-diagnostics", { clear = true })
  api.nvim_create_autocmd("DiagnosticChanged", {
    group = state.augroup,
    desc = "nvim-claude: send changed diagnostics to Claude (coalesced per buffer)",
    callback = function(args)
      mark(args.buf)
    end,
  })
  api.nvim_create_autocmd({ "BufWipeout", "BufFilePost" }, {
    group = state.augroup,
    desc = "nvim-claude: drop diagnostics of wiped or renamed buffers",
    callback = function(args)
      if state.reported[args.buf] then
        mark(args.buf)
      end
    end,
  })
  -- LspAttach/LspDetach exist from Neovim 0.8; 0.7 has no event for a
  -- language server starting, so there the folders are looked at again on
  -- BufEnter (cheap: a walk over the running clients).
  local events = { "DirChanged", "BufEnter" }
  if vim.fn.exists("##LspAttach") == 1 then
    events = { "DirChanged", "LspAttach", "LspDetach" }
  end
  api.nvim_create_autocmd(events, {
    group = state.augroup,
    desc = "nvim-claude: keep the workspace folders in the lock file current",
    callback = function(args)
      if args.event == "DirChanged" then
        -- the server's own cwd_changed rewrites the lock with the cwd alone:
        -- send the whole list after it even when it looks unchanged
        state.folders_key = nil
      end
      -- LspDetach fires before the client is gone: look once it is.
      vim.schedule(send_folders)
    end,
  })
  M.snapshot()
  send_folders()
end

function M.detach()
  state.attached = false
  if state.timer then
    state.timer:stop()
    state.timer:close()
    state.timer = nil
  end
  if state.augroup then
    pcall(api.nvim_del_augroup_by_id, state.augroup)
    state.augroup = nil
  end
  state.pending = {}
  state.reported = {}
  state.folders_key = nil
end

--- Whether the module feeds a running host.
function M.attached()
  return state.attached
end

return M
