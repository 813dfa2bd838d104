-- Handing files and lines to Claude as @-mentions (at_mentioned):
-- :ClaudeSend, <Plug>(claude-send) and :ClaudeAdd, including entries of the
-- file explorers (nvim-tree, neo-tree, oil, mini.files, netrw).
--
-- The Go host delivers a mention to the connected CLIs, or queues it until
-- one connects; nothing is dropped without telling the user.
local config = require("claude.config")
local util = require("claude.util")

local api, fn = vim.api, vim.fn
local uv = util.uv

local M = {}

-- How long a queued mention waits for a CLI (milliseconds). Tests shorten it.
M._queue_timeout_ms = 30000

local function err(msg)
  util.notify("nvim-claude: " .. msg, vim.log.levels.ERROR)
  return nil
end

local function strip_slash(path)
  if #path > 1 then
    path = path:gsub("[/\\]+$", "")
  end
  return path
end

-- normalize makes path absolute (relative to the current directory) and
-- drops "." and ".." and a trailing separator.
local function normalize(path)
  path = fn.fnamemodify(path, ":p")
  path = fn.simplify(path)
  return strip_slash(path)
end

-- display is how the CLI will show a mention (relative to Neovim's cwd).
local function display(m)
  local cwd = fn.getcwd(-1, -1)
  local rel = m.filePath
  if rel:sub(1, #cwd + 1) == cwd .. "/" then
    rel = rel:sub(#cwd + 2)
  end
  if m.lineStart then
    if m.lineStart == m.lineEnd then
      return string.format("@%s#L%d", rel, m.lineStart + 1)
    end
    return string.format("@%s#L%d-%d", rel, m.lineStart + 1, m.lineEnd + 1)
  end
  return "@" .. rel
end

local function list(ms)
  local out = {}
  for _, m in ipairs(ms) do
    table.insert(out, display(m))
  end
  return table.concat(out, ", ")
end

local function denied(path)
  return require("claude.deny").denied(path)
end

-- Delivery --------------------------------------------------------------------

local function focus_terminal()
  local term = require("claude.terminal")
  local st = require("claude.server").state()
  if term.info() and st.port then
    term.open(st.port, {}, true)
    return true
  end
  return false
end

-- deliver sends mentions to the host, starting Claude first if nothing runs.
local function deliver(ms, what)
  local server = require("claude.server")
  local started = false
  if not server.is_running() then
    local prev = api.nvim_get_current_win()
    if not require("claude").start({}) then
      return nil -- start() told the user why
    end
    started = true
    if not config.options.mentions.focus_terminal and api.nvim_win_is_valid(prev) then
      api.nvim_set_current_win(prev)
      vim.cmd("stopinsert")
    end
  end
  local res, e = server.request("mention", { mentions = ms, timeout_ms = M._queue_timeout_ms })
  if not res then
    return err((e or "the Go host gave no answer") .. " (" .. what .. ")")
  end
  local focused = false
  if config.options.mentions.focus_terminal and not started then
    focused = focus_terminal()
  end
  if (res.queued or 0) > 0 and not started then
    util.notify(
      string.format(
        "nvim-claude: no Claude CLI is connected yet; %s will be delivered when one connects",
        list(ms)
      ),
      vim.log.levels.INFO
    )
  elseif not focused and not started then
    api.nvim_echo({ { "nvim-claude: sent " .. list(ms), "Normal" } }, false, {})
  end
  return res
end

--- Receives the host's mention events (server.lua routes "mentions.*").
function M._on_event(ev, data)
  if ev == "sent" then
    util.emit("ClaudeSent", data)
  elseif ev == "undelivered" then
    local secs = (tonumber(data.timeout_ms) or M._queue_timeout_ms) / 1000
    local why = "no Claude CLI connected within " .. (secs >= 1 and string.format("%d", secs) or tostring(secs)) .. " s"
    if data.reason == "stopped" then
      why = "the IDE server stopped before a Claude CLI connected"
    elseif data.reason == "failed" then
      why = "the Claude CLI that connected could not take them"
    end
    util.notify(
      string.format("nvim-claude: %s; not delivered: %s", why, list(data.mentions or {})),
      vim.log.levels.WARN
    )
  end
end

-- Explorers -------------------------------------------------------------------

-- Each explorer maps a line of its buffer to the absolute path of the entry
-- there (nil when the line holds none: a header, a message).
local explorers = {}

-- with_cursor runs f with the cursor on line lnum (where it is, when it is
-- on that line already: in netrw's wide listing the column picks the entry).
local function with_cursor(lnum, f)
  local win = api.nvim_get_current_win()
  local saved = api.nvim_win_get_cursor(win)
  if saved[1] == lnum then
    local ok, res = pcall(f)
    pcall(api.nvim_win_set_cursor, win, saved)
    return ok and res or nil
  end
  pcall(api.nvim_win_set_cursor, win, { lnum, 0 })
  local ok, res = pcall(f)
  pcall(api.nvim_win_set_cursor, win, saved)
  if ok then
    return res
  end
  return nil
end

explorers.NvimTree = function(lnum)
  local ok, tree_api = pcall(require, "nvim-tree.api")
  if not ok then
    return nil
  end
  local node = with_cursor(lnum, function()
    return tree_api.tree.get_node_under_cursor()
  end)
  if not node or node.name == ".." then
    return nil
  end
  return node.absolute_path
end

explorers["neo-tree"] = function(lnum)
  local ok, manager = pcall(require, "neo-tree.sources.manager")
  if not ok then
    return nil
  end
  local state
  if manager.get_state_for_window then
    state = manager.get_state_for_window(api.nvim_get_current_win())
  end
  if not state then
    local source = vim.b.neo_tree_source or "filesystem"
    state = manager.get_state(source)
  end
  if not state or not state.tree then
    return nil
  end
  local node = state.tree:get_node(lnum)
  if not node or (node.type ~= "file" and node.type ~= "directory") then
    return nil
  end
  return node.path or (node.get_id and node:get_id())
end

explorers.oil = function(lnum)
  local ok, oil = pcall(require, "oil")
  if not ok then
    return nil
  end
  local buf = api.nvim_get_current_buf()
  local dir = oil.get_current_dir(buf)
  local entry = oil.get_entry_on_line(buf, lnum)
  if not dir or not entry or not entry.name then
    return nil
  end
  return dir .. entry.name
end

explorers.minifiles = function(lnum)
  local ok, files = pcall(require, "mini.files")
  if not ok then
    return nil
  end
  local entry = files.get_fs_entry(api.nvim_get_current_buf(), lnum)
  return entry and entry.path or nil
end

explorers.netrw = function(lnum)
  local bannercnt = vim.w.netrw_bannercnt or 0
  if lnum < bannercnt then
    return nil -- banner lines: netrw's own handler would act on them
  end
  return with_cursor(lnum, function()
    local word = fn["netrw#Call"]("NetrwGetWord")
    if not word or word == "" then
      return nil
    end
    local style = vim.w.netrw_liststyle or vim.g.netrw_liststyle or 0
    if style == 3 and vim.w.netrw_treetop then
      local dir = fn["netrw#Call"]("NetrwTreePath", vim.w.netrw_treetop)
      if word:sub(-1) == "/" and word ~= "../" then
        return dir -- a directory: NetrwTreePath already ends with it
      end
      return dir .. word
    end
    local cur = vim.b.netrw_curdir
    if not cur then
      return nil
    end
    return cur .. "/" .. word
  end)
end

--- The explorer entries on lines line1..line2 of the current buffer, or nil
--- when it is not an explorer buffer.
function M.explorer_paths(line1, line2)
  local get = explorers[vim.bo.filetype]
  if not get then
    return nil
  end
  local paths, seen = {}, {}
  for lnum = line1, line2 do
    local p = get(lnum)
    if p and p ~= "" then
      p = normalize(p)
      if not seen[p] then
        seen[p] = true
        table.insert(paths, p)
      end
    end
  end
  return paths
end

-- Building mentions -----------------------------------------------------------

-- line_count counts the lines of path (its buffer's, when loaded).
local function line_count(path)
  local buf = fn.bufnr(path)
  if buf > 0 and api.nvim_buf_is_loaded(buf) then
    return api.nvim_buf_line_count(buf)
  end
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local n, last = 0, nil
  while true do
    local chunk = f:read(65536)
    if not chunk then
      break
    end
    n = n + select(2, chunk:gsub("\n", ""))
    last = chunk:sub(-1)
  end
  f:close()
  if last and last ~= "\n" then
    n = n + 1
  end
  return math.max(n, 1)
end

-- mention_for checks path (absolute) and builds its mention; line1/line2
-- are 1-based or nil. Returns the mention or nil and why not.
local function mention_for(path, line1, line2)
  local stat = uv.fs_stat(path)
  if not stat then
    return nil, "no such file or directory: " .. path
  end
  if stat.type ~= "directory" and denied(path) then
    return nil,
      string.format("%s matches security.deny: files on the deny-list are not sent to Claude", fn.fnamemodify(path, ":t"))
  end
  local m = { filePath = path }
  if line1 then
    if stat.type == "directory" then
      return nil, path .. " is a directory: lines apply to files only"
    end
    if line1 < 1 or line2 < line1 then
      return nil, string.format("bad line range %d-%d (1-based, start <= end)", line1, line2)
    end
    local count = line_count(path)
    if count and line1 > count then
      return nil, string.format("line %d is past the end of %s (%d lines)", line1, fn.fnamemodify(path, ":~:."), count)
    end
    if count and line2 > count then
      line2 = count
    end
    m.lineStart, m.lineEnd = line1 - 1, line2 - 1
  end
  return m
end

local function current_file(what)
  local buf = api.nvim_get_current_buf()
  local path = require("claude.editor").file_path(buf)
  if not path then
    local bt = vim.bo[buf].buftype
    return err(string.format("%s: this buffer is not a file (%s)", what, bt ~= "" and bt or "no name"))
  end
  if vim.bo[buf].modified then
    util.notify(
      "nvim-claude: " .. fn.fnamemodify(path, ":t") .. " has unsaved changes; Claude reads the file from disk",
      vim.log.levels.WARN
    )
  end
  return path
end

local function from_explorer(line1, line2, what)
  local paths = M.explorer_paths(line1, line2)
  if not paths then
    return nil
  end
  if #paths == 0 then
    err(what .. ": no file or directory under the cursor")
    return {}
  end
  local ms, problems = {}, {}
  for _, p in ipairs(paths) do
    local m, why = mention_for(p)
    if m then
      table.insert(ms, m)
    else
      table.insert(problems, why)
    end
  end
  if #problems > 0 then
    err(what .. ": " .. table.concat(problems, "; "))
  end
  return ms
end

-- cursor_range is the command's range, or the cursor's line without one.
local function cursor_range(line1, line2, range)
  if range == 0 then
    local l = api.nvim_win_get_cursor(0)[1]
    return l, l
  end
  return line1, line2
end

-- send_explorer delivers the explorer entries on lines first..last when the
-- current buffer is a file explorer; handled is false in any other buffer.
local function send_explorer(first, last, what)
  local ms = from_explorer(first, last, what)
  if not ms then
    return false
  end
  if #ms > 0 then
    return true, deliver(ms, what)
  end
  return true, nil
end

-- send_current delivers the current file (lines l1..l2, or whole) as a mention.
local function send_current(what, l1, l2)
  local path = current_file(what)
  if not path then
    return nil
  end
  local m, why = mention_for(path, l1, l2)
  if not m then
    return err(what .. ": " .. why)
  end
  return deliver({ m }, what)
end

--- :ClaudeSend — the range (visual selection) of the current file as a
--- mention; in an explorer buffer, the entries on those lines.
function M.send(line1, line2, range)
  local what = ":ClaudeSend"
  line1, line2 = cursor_range(line1, line2, range)
  local handled, res = send_explorer(line1, line2, what)
  if handled then
    return res
  end
  return send_current(what, math.min(line1, line2), math.max(line1, line2))
end

local function is_number(s)
  return s:match("^%d+$") ~= nil
end

-- expand_arg turns one :ClaudeAdd argument into paths: ~ and $VAR are
-- expanded, and a wildcard that names no file literally is globbed.
local function expand_arg(a)
  if a:sub(1, 1) == "~" or a:sub(1, 1) == "$" then
    a = fn.expand(a)
  end
  if not uv.fs_stat(a) and a:find("[*?%[]") then
    local hits = fn.glob(a, false, true)
    if #hits > 0 then
      return hits
    end
  end
  return { a }
end

--- :ClaudeAdd [path …] [start] [end] — files or directories (with 1-based
--- lines for a single file). Without a path: the explorer entries under
--- the cursor (or the range), else the current file (the range's lines).
function M.add(fargs, line1, line2, range)
  local what = ":ClaudeAdd"
  fargs = fargs or {}
  local nums = {}
  while #fargs > 0 and #nums < 2 and is_number(fargs[#fargs]) and not uv.fs_stat(fargs[#fargs]) do
    table.insert(nums, 1, tonumber(table.remove(fargs)))
  end
  local l1, l2 = nums[1], nums[2] or nums[1]

  if #fargs == 0 then
    if not l1 then
      local first, last = cursor_range(line1, line2, range)
      local handled, res = send_explorer(first, last, what)
      if handled then
        return res
      end
    end
    if not l1 and range > 0 then
      l1, l2 = math.min(line1, line2), math.max(line1, line2)
    end
    return send_current(what, l1, l2)
  end

  local paths = {}
  for _, a in ipairs(fargs) do
    for _, p in ipairs(expand_arg(a)) do
      table.insert(paths, normalize(p))
    end
  end
  if l1 and #paths > 1 then
    return err(what .. ": line numbers apply to a single file, got " .. #paths .. " paths")
  end
  local ms, problems = {}, {}
  for _, p in ipairs(paths) do
    local m, why = mention_for(p, l1, l2)
    if m then
      table.insert(ms, m)
    else
      table.insert(problems, why)
    end
  end
  if #problems > 0 then
    err(what .. ": " .. table.concat(problems, "; "))
  end
  if #ms == 0 then
    return nil
  end
  return deliver(ms, what)
end

-- Exposed for tests.
M._display = display

return M
