-- The write watch: after a diff closes, the CLI (never us) writes the file;
-- this waits for that write and reloads the file's buffer, and holds a local
-- 'autoread' on the buffers open diffs show.
local editor = require("claude.editor")
local hint = require("claude.diff.hint")
local util = require("claude.util")

local api = vim.api
local uv = util.uv
local shown_name, notify_now, find_buf = hint.shown_name, util.notify_now, editor.find_buf

-- path -> watcher: after a diff closes we wait for the CLI to write the file
-- and then reload its buffer.
local watchers = {}
-- buf -> {count, restore}: the open diffs whose current side is buf hold
-- one local 'autoread' between them; the last to close puts the user's
-- value back (each restoring its own would leave it on).
local autoread_holds = {}

local M = {}

-- How long after a diff closes the CLI may take to write the file, and how
-- often we look (one stat; the CLI writes within milliseconds of our answer).
local WATCH_MS = 30000
local POLL_MS = 50

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

-- same_file reports whether the files at a and b hold the same bytes, read
-- a chunk at a time: an accepted 20 MB file is compared without ever being
-- a Lua string (twice, with the file the CLI wrote).
local CHUNK = 1024 * 1024
local function same_file(a, b)
  local sa, sb = uv.fs_stat(a), uv.fs_stat(b)
  if not sa or not sb or sa.size ~= sb.size then
    return false
  end
  local fa, fb = io.open(a, "rb"), io.open(b, "rb")
  local same = fa ~= nil and fb ~= nil
  while same do
    local x, y = fa:read(CHUNK), fb:read(CHUNK)
    same = x == y
    if x == nil then
      break
    end
  end
  if fa then
    fa:close()
  end
  if fb then
    fb:close()
  end
  return same
end

-- holds reports whether the file at path holds expected: a string, or
-- { file = f } for the bytes of the file f. The size is compared first, so
-- a file the CLI has not written yet is never read whole.
local function holds(path, expected)
  if type(expected) == "table" then
    return same_file(path, expected.file)
  end
  local st = uv.fs_stat(path)
  return st ~= nil and st.size == #expected and read_file(path) == expected
end

local function stat_key(path)
  local st = uv.fs_stat(path)
  if not st then
    return "none"
  end
  return string.format("%d:%d:%d:%d", st.size, st.mtime.sec, st.mtime.nsec or 0, st.ino or 0)
end

-- Reloading after the CLI wrote the file --------------------------------------

-- local_autoread gives buf a local 'autoread' and returns what puts the
-- user's local value back exactly. How "no local value" reads and which of
-- :set {opt}< and :setlocal {opt}< brings it back differ between Neovim
-- 0.7, 0.10 and 0.12, so each is tried until the value reads as before.
local function local_autoread(buf)
  local function read()
    local v = vim.fn.getbufvar(buf, "&l:autoread")
    return (v == nil or v == vim.NIL) and "unset" or v
  end
  local saved = read()
  vim.bo[buf].autoread = true
  return function()
    if not api.nvim_buf_is_valid(buf) then
      return
    end
    for _, cmd in ipairs({ "set autoread<", "setlocal autoread<" }) do
      api.nvim_buf_call(buf, function()
        vim.cmd(cmd)
      end)
      if read() == saved then
        return
      end
    end
    vim.bo[buf].autoread = saved == 1 or saved == true
  end
end

-- reload brings path's buffer up to date without a W11 prompt: a local
-- 'autoread' for one :checktime (which keeps the old text in undo). A buffer
-- with unsaved changes is never reloaded; its user is told instead.
local function reload(path, expected)
  local buf = find_buf(path)
  if not buf or not api.nvim_buf_is_loaded(buf) then
    return
  end
  if vim.bo[buf].modified then
    if expected == nil or holds(path, expected) then
      notify_now(
        string.format(
          "nvim-claude: Claude changed %s on disk, but your buffer has unsaved changes, so it was not reloaded. "
            .. ":e! loads Claude's version; :w keeps yours (and overwrites Claude's).",
          shown_name(path)
        ),
        vim.log.levels.WARN
      )
    end
    return
  end
  local restore = local_autoread(buf)
  pcall(vim.cmd, "silent checktime " .. buf)
  restore()
end

-- hold_autoread and release_autoread share one local 'autoread' on buf
-- among the diffs showing it.
local function hold_autoread(buf)
  local h = autoread_holds[buf]
  if h then
    h.count = h.count + 1
  else
    autoread_holds[buf] = { count = 1, restore = local_autoread(buf) }
  end
end

local function release_autoread(buf)
  local h = autoread_holds[buf]
  if not h then
    return
  end
  h.count = h.count - 1
  if h.count <= 0 then
    autoread_holds[buf] = nil
    h.restore()
  end
end

local function stop_watch(w)
  if w.done then
    return
  end
  w.done = true
  w.timer:stop()
  w.timer:close()
  if watchers[w.path] == w then
    watchers[w.path] = nil
  end
  if type(w.expected) == "table" then
    os.remove(w.expected.file) -- the accepted text, kept only for the watch
  end
end

-- watch_write waits (a while) for the CLI to write path, then reloads it.
-- The file may be seen mid-write (the CLI renames a temporary file into
-- place, but falls back to writing in place): it is reloaded at once only
-- when it reads as expected; other contents (the user answered "yes" in
-- the CLI's terminal to a different proposal, or the CLI changed line
-- endings) must first stay unchanged for a whole poll, and the watch goes
-- on after such a reload, so a write still under way is picked up too.
-- expected is a string, or { file = f } for the bytes of f, which the watch
-- then owns and removes when it ends.
local function watch_write(path, expected)
  if watchers[path] then
    stop_watch(watchers[path])
  end
  if holds(path, expected) then
    reload(path, expected) -- already written (the CLI answered in its terminal)
    if type(expected) == "table" then
      os.remove(expected.file)
    end
    return
  end
  local w = {
    path = path,
    expected = expected,
    baseline = stat_key(path),
    deadline = uv.now() + WATCH_MS,
    timer = uv.new_timer(),
  }
  watchers[path] = w
  local function tick()
    if w.done then
      return
    end
    local key = stat_key(path)
    if key ~= w.baseline then
      if holds(path, expected) then
        reload(path, expected) -- (before stop_watch removes an owned file)
        stop_watch(w)
        return
      end
      if key == w.seen then
        -- changed, then still for a poll: what the CLI wrote, for now
        w.baseline, w.seen = key, nil
        reload(path, expected)
      else
        w.seen = key
      end
    end
    if uv.now() >= w.deadline then
      if w.seen then
        reload(path, expected)
      end
      stop_watch(w)
    end
  end
  w.timer:start(POLL_MS, POLL_MS, function()
    vim.schedule(tick)
  end)
end

-- list is the files watched for the CLI's write, each with the file of its
-- expected bytes when the watch owns one (tests).
function M.list()
  local out = {}
  for path, w in pairs(watchers) do
    table.insert(out, { path = path, file = type(w.expected) == "table" and w.expected.file or nil })
  end
  return out
end

-- stop_all ends every watch (tests).
function M.stop_all()
  local ws = {}
  for _, w in pairs(watchers) do
    table.insert(ws, w)
  end
  for _, w in ipairs(ws) do
    stop_watch(w)
  end
end

M.read_file = read_file
M.hold_autoread = hold_autoread
M.release_autoread = release_autoread
M.watch_write = watch_write

return M
