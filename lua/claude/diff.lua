-- Diff review: each edit Claude proposes opens as a Neovim diff, the file as
-- the editor has it on one side and the proposal on the other, and waits for
-- the user's decision.
--
-- The Go host opens and closes diffs (lua/claude/bridge/init.lua calls M.open
-- and M.close); the user decides here (:w, :q, :ClaudeDiffAccept …) and the
-- decision goes back to the host with rpcrequest(chan, "diff_decision",
-- json), which answers whether it was still waiting for it. The host
-- answers the CLI, and the CLI, never us, writes the file.
local config = require("claude.config")
local editor = require("claude.editor")
local hunks = require("claude.hunks")
local util = require("claude.util")

local api = vim.api
local uv = util.uv

local M = {}

-- Open diffs by id, in the order they opened: every diff whose windows are
-- on screen. A decided diff stays here only until its windows are closed.
local diffs = {}
local order = {}
-- path -> watcher: after a diff closes we wait for the CLI to write the file
-- and then reload its buffer.
local watchers = {}
-- buf -> {count, restore}: the open diffs whose current side is buf hold
-- one local 'autoread' between them; the last to close puts the user's
-- value back (each restoring its own would leave it on).
local autoread_holds = {}
-- The window the user is in: WinEnter is not fired when Neovim switches
-- windows for :wall, nvim_buf_call and the like, so this tells a write the
-- user issued in a proposal from one done for them (see on_write).
local user_win
local augroup

-- How long after a diff closes the CLI may take to write the file, and how
-- often we look (one stat; the CLI writes within milliseconds of our answer).
local WATCH_MS = 30000
local POLL_MS = 50

-- Window options diff mode changes; restored by hand because :diffoff leaves
-- 'foldenable' off (and diff folds behind) when 'foldmethod' was manual.
local WIN_OPTS = { "foldenable", "foldmethod", "foldcolumn", "foldlevel", "wrap", "scrollbind", "cursorbind" }

local function options()
  local o = (config.options and config.options.diff) or {}
  local keys = o.keymaps or {}
  local function key(v, default)
    if v == nil then
      return default
    end
    return v
  end
  return {
    layout = o.layout == "horizontal" and "horizontal" or "vertical",
    open_in_new_tab = o.open_in_new_tab == true,
    keep_terminal_focus = o.keep_terminal_focus == true,
    accept = key(keys.accept, "<leader>ca"),
    reject = key(keys.reject, "<leader>cr"),
    accept_hunk = key(keys.accept_hunk, "ga"),
    reject_hunk = key(keys.reject_hunk, "gr"),
    hint = o.hint ~= false,
  }
end

local function win_ok(win)
  return win ~= nil and api.nvim_win_is_valid(win)
end

local function buf_ok(buf)
  return buf ~= nil and api.nvim_buf_is_valid(buf)
end

local function floating(win)
  return api.nvim_win_get_config(win).relative ~= ""
end

-- The hint over a proposal ---------------------------------------------------
--
-- Both panes of a proposal get a 'winbar' (0.8+): the proposal's names the
-- keys that answer it, then the hunk counter, then what it is; the file's
-- says it is yours. Two bars, so the panes' first text rows stay in line.
-- The text is built when Neovim draws the bar, for the window's width at
-- that moment: parts are dropped (or shortened) least useful first, so a
-- narrow pane still shows `:w accept · :q reject`.

-- A bar is parts in display order, each {forms, prio, group}: forms[i]
-- is shown until everything of a higher prio than prio[i] is given up,
-- then forms[i+1] (or nothing). Parts join with " · " within a group and
-- " │ " between groups; a part whose last prio is 1 always stays.

-- hint_parts is the proposal's bar: the keys (group 1), the hunk counter,
-- what it is.
local function hint_parts(o, counter, name)
  local parts = {
    { forms = { ":w accept" }, prio = { 1 }, group = 1 },
    { forms = { ":q reject" }, prio = { 1 }, group = 1 },
  }
  local function key(lhs, what, prio)
    if lhs and lhs ~= "" then
      table.insert(parts, { forms = { lhs .. " " .. what }, prio = { prio }, group = 1 })
    end
  end
  key(o.accept, "accept", 8)
  key(o.reject, "reject", 8)
  key(o.accept_hunk, "accept hunk", 3)
  key(o.reject_hunk, "reject hunk", 3)
  table.insert(parts, { forms = { "]c next change", "]c next" }, prio = { 6, 5 }, group = 1 })
  if counter and counter ~= "" then
    -- "hunk 2/5 · 1 accepted · 1 rejected", "hunk 2/5 · 1✓ · 1✗", "hunk 2/5"
    local short = counter:gsub(" accepted", "✓"):gsub(" rejected", "✗")
    local forms, prio = { counter, short }, { 7, 4 }
    local head = counter:match("^(hunk [^ ]+) · ")
    if head then
      table.insert(forms, head)
      table.insert(prio, 2)
    end
    table.insert(parts, { forms = forms, prio = prio, group = 2 })
  end
  if name then
    table.insert(parts, { forms = { "Claude's proposal for " .. name, "Claude's proposal" }, prio = { 9, 6 }, group = 3 })
  else
    table.insert(parts, { forms = { "Claude's proposal" }, prio = { 6 }, group = 3 })
  end
  return parts
end

-- fit joins parts into at most width display columns, giving up the form
-- of the highest prio (the later part on a tie) until they fit.
local function fit(parts, width)
  local shown = {}
  for i, p in ipairs(parts) do
    shown[i] = { level = 1, w = vim.fn.strdisplaywidth(p.forms[1]), p = p }
  end
  local function total()
    local n, any = 0, false
    for _, s in ipairs(shown) do
      if s.level then
        n = n + s.w + (any and 3 or 0)
        any = true
      end
    end
    return n
  end
  while total() > width do
    local victim
    for _, s in ipairs(shown) do
      local pr = s.level and s.p.prio[s.level]
      if pr and (pr > 1 or s.level < #s.p.forms) and (not victim or pr >= victim.p.prio[victim.level]) then
        victim = s
      end
    end
    if not victim then
      break -- (the bar's "%<" cuts what is left)
    end
    if victim.level < #victim.p.forms then
      victim.level = victim.level + 1
      victim.w = vim.fn.strdisplaywidth(victim.p.forms[victim.level])
    else
      victim.level = nil
    end
  end
  local out, prev = {}, nil
  for _, s in ipairs(shown) do
    if s.level then
      if prev then
        table.insert(out, prev.p.group == s.p.group and " · " or " │ ")
      end
      table.insert(out, s.p.forms[s.level])
      prev = s
    end
  end
  return table.concat(out)
end

-- shown_name is path as the hint and messages show it: relative to the
-- working directory, made displayable (a file name is outside text).
local function shown_name(path, max)
  return util.display(vim.fn.fnamemodify(path, ":~:."), max)
end

--- The one-line hint over a proposal: how to answer it, with the keys as
--- configured (diff.hint = false turns it off), keys first. The 'winbar'
--- shows as much of it as its width allows.
---@return string
function M.hint_text(o)
  return fit(hint_parts(o or options()), math.huge)
end

-- own_bar_parts is the bar over the file's own pane: whose it is, and that
-- closing it answers the proposal too.
local function own_bar_parts(d)
  local name = shown_name(d.file, 80)
  if d.orig_scratch then
    return {
      { forms = { "new file " .. name, "new file" }, prio = { 3, 1 }, group = 1 },
      { forms = { "empty until you accept" }, prio = { 2 }, group = 1 },
    }
  end
  return {
    { forms = { "your " .. name .. " — edit freely", "your file — edit freely", "your file" }, prio = { 3, 1, 1 }, group = 1 },
    { forms = { ":q here rejects too", ":q rejects" }, prio = { 4, 2 }, group = 1 },
  }
end

-- bar_text is what the bar of win (a pane of d) shows at its width now; the
-- parts are rebuilt only when the width or the counter changed (Neovim
-- draws a bar often).
local function bar_text(d, win)
  local o = options()
  local width = api.nvim_win_get_width(win)
  local own = win == d.orig_win
  local key = (own and "o" or "p") .. width .. ":" .. (d.counter or "")
  d.bars = d.bars or {}
  local cached = d.bars[own and "own" or "prop"]
  if cached and cached.key == key then
    return cached.text
  end
  local parts = own and own_bar_parts(d) or hint_parts(o, d.counter, shown_name(d.file, 80))
  local text = fit(parts, width)
  d.bars[own and "own" or "prop"] = { key = key, text = text }
  return text
end

--- (the 'winbar' of a proposal's panes) The bar's text for window win.
function M._bar(win)
  -- Neovim evaluates a bar with the window it draws current: a window
  -- split off a pane copies its 'winbar' (and so this call), but is no pane
  if win ~= api.nvim_get_current_win() then
    return ""
  end
  local ok, text = pcall(function()
    for _, d in pairs(diffs) do
      if not d.closed and (win == d.prop_win or win == d.orig_win) then
        return bar_text(d, win)
      end
    end
    return ""
  end)
  return ok and text or ""
end

local function bar_option(win)
  return "%#Comment#%{v:lua.require'claude.diff'._bar(" .. win .. ")}%<"
end

-- local_winbar is win's own (window-local) 'winbar', to put back.
local function local_winbar(win)
  return api.nvim_win_call(win, function()
    return api.nvim_get_option_value("winbar", { scope = "local" })
  end)
end

-- show_hint puts the bars over both panes (0.8+; the file's pane keeps its
-- own bar to put back when the diff ends), or says the hint once on 0.7.
local function show_hint(d, o)
  if not o.hint then
    return
  end
  if vim.fn.has("nvim-0.8") == 1 then
    if win_ok(d.prop_win) then
      pcall(editor.set_win_local, d.prop_win, "winbar", bar_option(d.prop_win))
    end
    if win_ok(d.orig_win) then
      if d.own_winbar == nil then
        local ok, bar = pcall(local_winbar, d.orig_win)
        d.own_winbar = ok and bar or ""
      end
      pcall(editor.set_win_local, d.orig_win, "winbar", bar_option(d.orig_win))
    end
    d.bar_wins = { d.prop_win, d.orig_win }
  elseif not d.hint_said then
    d.hint_said = true
    local text = M.hint_text(o)
    vim.schedule(function()
      -- one screen line: a wider message would ask for Enter
      local line = "nvim-claude: " .. text
      local width = vim.o.columns - 12
      if vim.fn.strdisplaywidth(line) > width then
        line = vim.fn.strcharpart(line, 0, width - 1) .. "…"
      end
      api.nvim_echo({ { line, "Comment" } }, true, {})
    end)
  end
end

-- restore_winbar puts the user's own bar back on every window showing one
-- of d's: the file's pane (or the pane that takes its place), and any
-- window split off a pane (:split, :tab split copy the 'winbar').
local function restore_winbar(d)
  if not d.bar_wins then
    return
  end
  local ours = {}
  for _, w in ipairs(d.bar_wins) do
    ours[bar_option(w)] = true
  end
  for _, w in ipairs(api.nvim_list_wins()) do
    if ours[vim.wo[w].winbar] then
      pcall(editor.set_win_local, w, "winbar", d.own_winbar or "")
    end
  end
end

-- refresh_counter recomputes the hunk counter and shows it (the winbar on
-- 0.8+; 0.7 says it after a hunk is answered).
local function refresh_counter(d, o, say)
  if d.closed or not o.hint then
    return
  end
  local ok, text = pcall(hunks.counter, d)
  if not ok then
    return
  end
  -- (runs on every cursor move in the proposal: the bar is redrawn only
  -- when the counter changes)
  if text ~= d.counter then
    d.counter = text
    if vim.fn.has("nvim-0.8") == 1 and win_ok(d.prop_win) then
      pcall(editor.set_win_local, d.prop_win, "winbar", bar_option(d.prop_win))
    end
  end
  if say and vim.fn.has("nvim-0.8") == 0 then
    api.nvim_echo({ { ("nvim-claude: " .. text):sub(1, math.max(vim.o.columns - 12, 20)), "Comment" } }, false, {})
  end
end

local function notify_now(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = "nvim-claude" })
end

-- Contents <-> lines ---------------------------------------------------------

-- split_lines splits s at each "\n" (twice as fast as vim.split, which
-- matters for a proposal of many MB).
local function split_lines(s)
  local find, sub = string.find, string.sub
  local lines, n, pos = {}, 0, 1
  while true do
    local e = find(s, "\n", pos, true)
    n = n + 1
    if not e then
      lines[n] = sub(s, pos)
      return lines
    end
    lines[n] = sub(s, pos, e - 1)
    pos = e + 1
  end
end

-- split_contents turns file contents into buffer lines plus the options that
-- write them back byte for byte: 'eol' for the final newline, 'fileformat'
-- dos when every line ends in CRLF (mixed endings stay visible as ^M).
local function split_contents(s)
  local eol = s:sub(-1) == "\n"
  local ff = "unix"
  if s:find("\r\n", 1, true) then
    local _, lf = s:gsub("\n", "")
    local _, crlf = s:gsub("\r\n", "")
    if lf == crlf then
      ff = "dos"
      s = s:gsub("\r\n", "\n")
    end
  end
  if eol then
    s = s:sub(1, -2)
  end
  return split_lines(s), eol, ff
end

-- buffer_contents is what writing buf would put in the file: its lines
-- joined by the 'fileformat' line ending, with a final one when 'eol' (or
-- 'fixeol' outside 'binary') asks for it. A buffer with no lines at all
-- writes nothing.
local function buffer_contents(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local bo = vim.bo[buf]
  if #lines == 1 and lines[1] == "" then
    local bytes = api.nvim_buf_call(buf, function()
      return vim.fn.wordcount().bytes
    end)
    if bytes == 0 then
      return ""
    end
  end
  local nl = ({ dos = "\r\n", mac = "\r" })[bo.fileformat] or "\n"
  if bo.eol or (bo.fixeol and not bo.binary) then
    lines[#lines + 1] = "" -- the final line ending, without a second copy of the text
  end
  return table.concat(lines, nl)
end

-- write_buffer writes buf to path as :w would write it to its own file
-- ('fileformat', 'eol', 'fixeol'; no encoding conversion, no BOM added),
-- with Neovim's own :write — far cheaper for a large proposal than joining
-- its lines into a Lua string. No autocommand runs (no formatter, no
-- BufWriteCmd), no backup is made, the buffer keeps its name and options.
-- Returns true, or false and why (nothing is left at path then).
local function write_buffer(buf, path)
  local bo = vim.bo[buf]
  local saved = { buftype = bo.buftype, fenc = bo.fileencoding, bomb = bo.bomb, modified = bo.modified }
  local wb, bk = vim.o.writebackup, vim.o.backup
  local ok, err = pcall(api.nvim_buf_call, buf, function()
    vim.o.writebackup, vim.o.backup = false, false
    vim.cmd("noautocmd setlocal buftype= fileencoding= nobomb")
    vim.cmd("silent noautocmd keepalt keepjumps write! " .. vim.fn.fnameescape(path))
  end)
  vim.o.writebackup, vim.o.backup = wb, bk
  -- :w {file} lists {file} as a buffer (unloaded); it is not the user's
  local listed = vim.fn.bufnr(path)
  if listed > 0 and listed ~= buf then
    pcall(api.nvim_buf_delete, listed, { force = true })
  end
  pcall(api.nvim_buf_call, buf, function()
    vim.cmd("noautocmd setlocal buftype=" .. saved.buftype)
    if saved.fenc ~= "" then
      vim.cmd("noautocmd setlocal fileencoding=" .. saved.fenc)
    end
    if saved.bomb then
      vim.cmd("noautocmd setlocal bomb")
    end
  end)
  bo.modified = saved.modified
  if not ok then
    os.remove(path)
  end
  return ok, err
end

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

-- proposal_text is Claude's proposal as it came, byte for byte.
local function proposal_text(d)
  if not d.src then
    return d.contents
  end
  local s = read_file(d.src.file)
  if s and d.src.ff == "dos" then
    s = s:gsub("\n", "\r\n")
  end
  return s
end

-- Buffers and windows --------------------------------------------------------

local function full_path(path)
  return vim.fn.fnamemodify(path, ":p")
end

-- find_buf is the buffer editing path (claude.editor's lookup: a name
-- compare, then the real path, so a symlinked project still finds its
-- buffer).
local find_buf = editor.find_buf

local function stat_key(path)
  local st = uv.fs_stat(path)
  if not st then
    return "none"
  end
  return string.format("%d:%d:%d:%d", st.size, st.mtime.sec, st.mtime.nsec or 0, st.ino or 0)
end

-- editor_window: a window we may borrow for the current side — one a tool
-- may show a file in (claude.editor.editing_window: not a terminal,
-- sidebar, preview, float or someone's diff) whose buffer survives being
-- hidden there.
local function editor_window(win)
  if not editor.editing_window(win) then
    return false
  end
  local bh = vim.bo[api.nvim_win_get_buf(win)].bufhidden
  return bh == "" or bh == "hide"
end

-- tab_has_diffs: a tab already showing diff windows (the user's, or another
-- of ours) would merge with a new diff: Neovim diffs every diff window of a
-- tab together.
local function tab_has_diffs(tab)
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if vim.wo[w].diff then
      return true
    end
  end
  return false
end

-- pick_window is the window of tab to borrow: the active editor's
-- (claude.editor) when it may be borrowed, else the largest that may.
local function pick_window(tab)
  return editor.show_window(tab, editor_window)
end

-- layout_window is a window of tab that can be split: the current one, or
-- (when that floats, e.g. the Claude terminal as a float) the largest one
-- that does not.
local function layout_window(tab)
  local cur = api.nvim_get_current_win()
  if api.nvim_win_get_tabpage(cur) == tab and not floating(cur) then
    return cur
  end
  return util.largest_window(tab, function(w)
    return not floating(w)
  end)
end

local function save_win_opts(win)
  local saved = {}
  for _, name in ipairs(WIN_OPTS) do
    saved[name] = vim.wo[win][name]
  end
  return saved
end

-- show_buf puts buf in win without touching the alternate file or the
-- jumplist. The buffer it replaces is hidden, never unloaded: with
-- 'nohidden' (0.7's default) :buffer! would unload it and throw away its
-- undo history.
local function show_buf(win, buf)
  api.nvim_win_call(win, function()
    vim.cmd("keepalt keepjumps hide buffer " .. buf)
  end)
end

local function split(win, cmd)
  local new
  api.nvim_win_call(win, function()
    vim.cmd(cmd)
    new = api.nvim_get_current_win()
  end)
  return new
end

-- back_to puts the cursor in win (in tab), and back in terminal mode when
-- it was there: a user typing to Claude keeps typing.
local function back_to(tab, win, term_mode)
  if tab and api.nvim_tabpage_is_valid(tab) and tab ~= api.nvim_get_current_tabpage() then
    api.nvim_set_current_tabpage(tab)
  end
  if not win_ok(win) then
    return
  end
  if win ~= api.nvim_get_current_win() then
    api.nvim_set_current_win(win)
  end
  if term_mode and vim.bo[api.nvim_win_get_buf(win)].buftype == "terminal" and api.nvim_get_mode().mode ~= "t" then
    vim.cmd("startinsert")
  end
end

-- Talking to the host --------------------------------------------------------

-- send_decision hands the decision to the host and reports whether the
-- host was still waiting for it. A request, not a notification: the CLI
-- may have cancelled the diff (or closeAllDiffTabs ended it) a moment
-- before the user decided, and then nothing will be written.
local function send_decision(d, payload)
  local chan = d.chan
  if not chan or chan == 0 then
    chan = require("claude.server").state().chan
  end
  if not chan then
    return false
  end
  -- the contents (a whole file) go beside the JSON, as a string of their
  -- own: no escaping here, no decoding in the host
  local contents = payload.contents
  payload.contents = nil
  local ok, res
  if contents then
    ok, res = pcall(vim.fn.rpcrequest, chan, "diff_decision", vim.json.encode(payload), contents)
  else
    ok, res = pcall(vim.fn.rpcrequest, chan, "diff_decision", vim.json.encode(payload))
  end
  if ok and type(res) == "string" then
    ok, res = pcall(vim.json.decode, res)
  end
  return ok and type(res) == "table" and res.pending == true
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

-- Closing --------------------------------------------------------------------

local function close_window(win, fallback_buf)
  if not win_ok(win) then
    return
  end
  if #api.nvim_list_wins() == 1 then
    -- the last window cannot close: show something that is not ours
    if buf_ok(fallback_buf) then
      show_buf(win, fallback_buf)
    else
      api.nvim_win_call(win, function()
        vim.cmd("enew")
      end)
    end
    return
  end
  pcall(api.nvim_win_close, win, true)
end

local function restore_window(d)
  local win = d.orig_win
  if not win_ok(win) then
    return
  end
  api.nvim_win_call(win, function()
    if vim.wo.diff then
      vim.cmd("diffoff")
    end
    local saved = d.win_opts
    if saved then
      if saved.foldmethod == "manual" then
        pcall(vim.cmd, "normal! zE") -- the folds diff mode left behind
      end
      for _, name in ipairs(WIN_OPTS) do
        if vim.wo[name] ~= saved[name] then
          vim.wo[name] = saved[name]
        end
      end
    end
    if d.swapped and buf_ok(d.swapped.buf) then
      vim.cmd("keepalt keepjumps hide buffer " .. d.swapped.buf)
      pcall(vim.fn.winrestview, d.swapped.view)
    elseif d.view and api.nvim_win_get_buf(win) == d.orig_buf then
      pcall(vim.fn.winrestview, d.view)
    end
  end)
end

-- take_over: the user closed the file's pane (:q, :close, :only in the
-- proposal …) of a window that was theirs before the diff. The proposal's
-- pane, which got its room, becomes that window again — the buffer it
-- showed, its options and view, its size — so closing either pane leaves
-- the layout as it was before the diff. Reports whether it did (not when
-- the proposal's pane is gone too, or the user deleted their buffer).
local function take_over(d)
  local old, win = d.orig_win, d.prop_win
  if win_ok(old) or not win_ok(win) or d.win_created then
    return false
  end
  local swapped = d.swapped and buf_ok(d.swapped.buf)
  if not swapped and (d.orig_scratch or not buf_ok(d.orig_buf) or not api.nvim_buf_is_loaded(d.orig_buf)) then
    return false
  end
  -- (restore_window puts the view back)
  show_buf(win, swapped and d.swapped.buf or d.orig_buf)
  d.orig_win, d.prop_win = win, nil
  if d.sizes[old] then
    d.sizes[win], d.sizes[old] = d.sizes[old], nil
  end
  if d.prev_win == old then
    d.prev_win = win
  end
  return true
end

-- apply_sizes gives the windows of the tab the diff opened from the sizes in
-- sizes (win -> {width, height}). Splitting or closing a window with
-- 'equalalways' (the default) equalizes every window, and a new tab's
-- tabline takes a row; this puts them back. ('equalalways' cannot be
-- switched off around a split: switching it on equalizes too.)
local function apply_sizes(d, sizes)
  -- (sizes of another tab's windows cannot be set safely from here)
  if not sizes or d.prev_tab ~= api.nvim_get_current_tabpage() then
    return
  end
  -- Twice: setting one window's size moves its neighbours.
  for _ = 1, 2 do
    for win, size in pairs(sizes) do
      if win_ok(win) and api.nvim_win_get_tabpage(win) == d.prev_tab then
        pcall(api.nvim_win_set_width, win, size[1])
        pcall(api.nvim_win_set_height, win, size[2])
      end
    end
  end
end

-- shared_orig reports whether buf is the current side of an open diff.
local function shared_orig(buf)
  for _, other in pairs(diffs) do
    if other.orig_buf == buf then
      return true
    end
  end
  return false
end

local function forget(d)
  diffs[d.id] = nil
  for i, id in ipairs(order) do
    if id == d.id then
      table.remove(order, i)
      break
    end
  end
end

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

-- close removes every trace of d: windows, buffers, mappings, autocmds, and
-- puts back the layout, sizes and focus it found. outcome is "accepted",
-- "rejected" or "closed" (the CLI or the host ended it). In the
-- command-line window it waits for that to close.
local function close(d, outcome)
  if d.closed then
    return false
  end
  if in_cmdwin() then
    d.decided = true -- (the host, or the user, has ended it)
    if not d.close_deferred then
      d.close_deferred = true
      after_cmdwin(function()
        close(d, outcome)
      end)
    end
    return true
  end
  d.closing, d.closed = true, true
  forget(d)
  local cur = api.nvim_get_current_win()
  local focus_back = d.focus_back
    or not win_ok(cur)
    or cur == d.prop_win
    or cur == d.orig_win
    or (d.new_tab and api.nvim_win_get_tabpage(cur) == d.tab)
  local ok, err = pcall(function()
    if buf_ok(d.prop_buf) then
      pcall(api.nvim_clear_autocmds, { group = augroup, buffer = d.prop_buf })
    end
    if d.orig_closed_au then
      pcall(api.nvim_del_autocmd, d.orig_closed_au)
    end
    for _, m in ipairs(d.maps or {}) do
      -- (another open diff of the same file keeps the mapping)
      if buf_ok(m.buf) and not shared_orig(m.buf) then
        pcall(vim.keymap.del, "n", m.lhs, { buffer = m.buf })
      end
    end
    local fallback = (d.swapped and d.swapped.buf) or (not d.orig_scratch and d.orig_buf) or nil
    if d.orig_gone then
      take_over(d)
    end
    -- the proposal's window (whatever it shows now) and any other showing it
    close_window(d.prop_win, fallback)
    if buf_ok(d.prop_buf) then
      for _, w in ipairs(vim.fn.win_findbuf(d.prop_buf)) do
        close_window(w, fallback)
      end
    end
    if d.win_created then
      close_window(d.orig_win, fallback)
    else
      restore_window(d)
    end
    restore_winbar(d)
    if buf_ok(d.prop_buf) then
      pcall(api.nvim_buf_delete, d.prop_buf, { force = true })
    end
    if d.holds_autoread then
      d.holds_autoread = false
      release_autoread(d.orig_buf)
    end
    local ob = d.orig_buf
    if buf_ok(ob) then
      local shown = #vim.fn.win_findbuf(ob) > 0
      if d.orig_scratch then
        pcall(api.nvim_buf_delete, ob, { force = true })
      elseif d.orig_created and not shown and not vim.bo[ob].modified then
        pcall(api.nvim_buf_delete, ob, {})
      else
        if vim.bo[ob].buflisted ~= d.orig_listed then
          vim.bo[ob].buflisted = d.orig_listed
        end
        if d.orig_loaded_by_us and not shown and not vim.bo[ob].modified then
          pcall(api.nvim_buf_delete, ob, { unload = true })
        end
      end
    end
  end)
  if focus_back then
    back_to(d.prev_tab, d.prev_win, d.prev_term)
  end
  apply_sizes(d, d.sizes)
  if d.shown then
    util.emit("ClaudeDiffClosed", { tab_name = d.tab_name, file = d.file, outcome = outcome })
    if outcome ~= "rejected" then
      -- what the CLI will write; a file is compared in chunks and owned by
      -- the watch from here (the host has read the accepted file already)
      local expected, keep_src
      if d.accepted_file then
        expected, d.accepted_file = { file = d.accepted_file }, nil
      elseif d.accepted then
        expected = d.accepted
      elseif d.src and d.src.ff ~= "dos" then
        expected, keep_src = { file = d.src.file }, true
      else
        expected = proposal_text(d)
      end
      if expected then
        watch_write(d.file, expected)
      end
    end
  end
  if d.src and not keep_src then
    os.remove(d.src.file) -- the host's copy of the proposal
  end
  if d.accepted_file then
    os.remove(d.accepted_file) -- read by the host when the user accepted
  end
  if not ok then
    error(err, 0)
  end
  return true
end

-- Deciding -------------------------------------------------------------------

-- decide sends the user's decision to the host (the first one counts) and
-- closes the diff on the next tick: decisions come from autocmds, where
-- closing windows and wiping buffers is not allowed.
local function decide(d, kind, closed_by_user)
  if d.decided or d.closing then
    return
  end
  if kind == "accept" and hunks.all_rejected(d) then
    -- every hunk rejected: the file stays as it is, and Claude hears "no"
    kind = "reject"
  end
  d.decided = true
  local cur = api.nvim_get_current_win()
  d.focus_back = closed_by_user or cur == d.prop_win or cur == d.orig_win
  local payload = { id = d.id, decision = kind }
  if kind == "accept" then
    -- Neovim writes the accepted text where the host reads it (a private
    -- directory); the text crosses the channel as a string only when there
    -- is no such place or the write fails.
    local file = d.src and d.src.accepted
    if type(file) == "string" and file ~= "" and write_buffer(d.prop_buf, file) then
      payload.contents_file = file
      d.accepted_file = file
    else
      payload.contents = buffer_contents(d.prop_buf)
      d.accepted = payload.contents
    end
  end
  local outcome = kind == "accept" and "accepted" or "rejected"
  if not send_decision(d, payload) then
    if kind == "accept" then
      notify_now("nvim-claude: Claude is no longer waiting for this diff; nothing was written.", vim.log.levels.WARN)
    end
    d.accepted, outcome = nil, "closed"
    if d.accepted_file then
      os.remove(d.accepted_file)
      d.accepted_file = nil
    end
  end
  vim.schedule(function()
    close(d, outcome)
  end)
end

-- check_gone rejects d when its proposal is no longer on screen: closed
-- (:q, :close, :tabclose, :only elsewhere), replaced in its window, or
-- deleted. Run a tick after the event, so :e! (which unloads and reloads the
-- buffer) is not mistaken for a close.
local function check_gone(d)
  if d.decided or d.closing then
    return
  end
  local b = d.prop_buf
  if buf_ok(b) and api.nvim_buf_is_loaded(b) and #vim.fn.win_findbuf(b) > 0 then
    return
  end
  decide(d, "reject", true)
end

local function on_write(d, args)
  local target = full_path(args.file ~= "" and args.file or args.match)
  if target ~= full_path(api.nvim_buf_get_name(d.prop_buf)) then
    notify_now(
      "nvim-claude: this is Claude's proposal for "
        .. shown_name(d.file)
        .. "; :w accepts it, and it cannot be written under another name.",
      vim.log.levels.WARN
    )
    return
  end
  -- :wall, :wqa and autosave plugins write every modified buffer; Neovim
  -- runs this with the proposal's window made current behind the user's
  -- back (no WinEnter), so user_win tells those from a :w the user typed in
  -- the proposal. Only the latter accepts.
  local from = win_ok(user_win) and user_win or api.nvim_get_current_win()
  if api.nvim_get_current_buf() ~= d.prop_buf or api.nvim_win_get_buf(from) ~= d.prop_buf then
    notify_now(
      "nvim-claude: Claude's proposal for "
        .. shown_name(d.file)
        .. " was not accepted by a write from another window; :w in the proposal or :ClaudeDiffAccept accepts it.",
      vim.log.levels.WARN
    )
    return
  end
  vim.bo[d.prop_buf].modified = false
  decide(d, "accept")
end

-- current finds the diff a command means: the one whose window or buffer
-- the cursor is in, else the only pending one.
local function current()
  local win, buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  local pending = {}
  for _, id in ipairs(order) do
    local d = diffs[id]
    if not d.decided then
      if win == d.prop_win or win == d.orig_win or buf == d.prop_buf then
        return d
      end
      table.insert(pending, d)
    end
  end
  for _, d in ipairs(pending) do
    if buf == d.orig_buf then
      return d
    end
  end
  if #pending == 1 then
    return pending[1]
  elseif #pending == 0 then
    return nil, "nvim-claude: no Claude diff is waiting for a decision"
  end
  return nil,
    string.format("nvim-claude: %d Claude diffs are open; run this in the one you mean", #pending)
end

-- Opening --------------------------------------------------------------------

local function ensure_augroup()
  if not augroup then
    augroup = api.nvim_create_augroup("nvim-claude-diff", { clear = true })
    user_win = api.nvim_get_current_win()
    api.nvim_create_autocmd("WinEnter", {
      group = augroup,
      desc = "nvim-claude: the window the user is in (a :w there accepts a proposal)",
      callback = function()
        user_win = api.nvim_get_current_win()
      end,
    })
  end
end

-- set_name names a buffer of ours after the CLI's tab name, made
-- displayable: the statusline, tabline and :ls show it.
local function set_name(buf, name)
  name = util.display(name)
  if pcall(api.nvim_buf_set_name, buf, name) then
    return
  end
  -- a buffer of that name exists (left over, or the user's): number ours
  for i = 2, 100 do
    if pcall(api.nvim_buf_set_name, buf, string.format("%s (%d)", name, i)) then
      return
    end
  end
end

local function detect_filetype(buf, path)
  api.nvim_buf_call(buf, function()
    pcall(vim.cmd, "silent doautocmd filetypedetect BufRead " .. vim.fn.fnameescape(path))
  end)
end

-- fill_proposal puts Claude's text into the proposal buffer (again, for
-- :e!), with the options that write it back byte for byte. The host hands
-- a proposal over as a file it wrote (d.src = {file, eol, ff}: the text
-- with CRLF turned into LF when ff is "dos"), which Neovim reads natively —
-- a large proposal then never becomes Lua strings — or, when it could not
-- write one, as a string (d.contents).
local function fill_proposal(d)
  local buf = d.prop_buf
  local lines, eol, ff
  if d.src then
    eol, ff = d.src.eol, d.src.ff
  else
    lines, eol, ff = split_contents(d.contents)
  end
  api.nvim_buf_call(buf, function()
    vim.cmd("setlocal undolevels=-1") -- Claude's text is not an undoable change
    if lines then
      api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    else
      api.nvim_buf_set_lines(buf, 0, -1, false, {})
      -- ++bin: no line-ending or encoding conversion, no BOM handling;
      -- :0read puts the lines above the buffer's one empty line. It also
      -- sets 'binary' (and with it 'textwidth' …): put that back.
      local binary = vim.bo[buf].binary
      vim.cmd("silent noautocmd keepalt keepjumps 0read ++bin " .. vim.fn.fnameescape(d.src.file))
      vim.bo[buf].binary = binary
      if api.nvim_buf_line_count(buf) > 1 then
        api.nvim_buf_set_lines(buf, -2, -1, false, {})
      end
      -- :read leaves an (unlisted, unloaded) buffer named after the file
      local name = vim.fn.fnamemodify(d.src.file, ":p")
      for _, b in ipairs(api.nvim_list_bufs()) do
        if b ~= buf and not api.nvim_buf_is_loaded(b) and api.nvim_buf_get_name(b) == name then
          pcall(api.nvim_buf_delete, b, { force = true })
        end
      end
    end
    vim.cmd("set undolevels<")
  end)
  vim.bo[buf].fileformat = ff
  vim.bo[buf].eol = eol
  -- exactly Claude's final newline (or its absence); :set eol adds one
  vim.bo[buf].fixeol = false
  vim.bo[buf].modified = false
end

local function make_proposal(d)
  local buf = api.nvim_create_buf(false, true)
  d.prop_buf = buf
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  set_name(buf, d.tab_name)
  fill_proposal(d)
  api.nvim_buf_set_var(buf, "claude_diff", { tab_name = d.tab_name, file = d.file })
  return buf
end

local function current_side(d)
  local buf = find_buf(d.old_file)
  if buf then
    d.orig_listed = vim.bo[buf].buflisted
    if not api.nvim_buf_is_loaded(buf) then
      vim.fn.bufload(buf)
      d.orig_loaded_by_us = true
    end
  elseif uv.fs_stat(d.old_file) then
    buf = vim.fn.bufadd(full_path(d.old_file))
    d.orig_listed = vim.bo[buf].buflisted
    vim.fn.bufload(buf)
    d.orig_created = true
  else
    -- a new file: the current side is empty
    buf = api.nvim_create_buf(false, true)
    d.orig_scratch = true
    d.new_file = true
    set_name(buf, d.tab_name .. " (new file)")
    vim.bo[buf].modifiable = false
    detect_filetype(buf, d.file)
  end
  d.orig_buf = buf
  d.modified = not d.orig_scratch and vim.bo[buf].modified or false
  if not d.orig_scratch then
    -- The CLI may write the file while the diff is still open (the user
    -- answered in its terminal): a checktime then reloads quietly instead
    -- of asking (W11).
    hold_autoread(buf)
    d.holds_autoread = true
  end
  return buf
end

local function map_keys(d, o)
  d.maps = {}
  local function map(buf, lhs, fn, desc, only_if_free)
    if not lhs or lhs == "" then
      return
    end
    if only_if_free then
      local taken = api.nvim_buf_call(buf, function()
        local m = vim.fn.maparg(lhs, "n", false, true)
        return type(m) == "table" and m.buffer == 1 and not (m.desc or ""):find("^nvim%-claude:")
      end)
      if taken then
        return -- never clobber the user's own buffer-local mapping
      end
    end
    -- nowait in our proposal buffer: Neovim 0.11's global gr* (LSP) maps
    -- would hold a `gr` back for 'timeoutlen'; in the user's own buffer
    -- those keep working (and `gr` waits)
    vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true, nowait = not only_if_free, desc = desc })
    table.insert(d.maps, { buf = buf, lhs = lhs })
  end
  for _, buf in ipairs({ d.prop_buf, d.orig_buf }) do
    local theirs = buf == d.orig_buf and not d.orig_scratch
    map(buf, o.accept, M.accept, "nvim-claude: accept Claude's proposal", theirs)
    map(buf, o.reject, M.reject, "nvim-claude: reject Claude's proposal", theirs)
    map(buf, o.accept_hunk, M.accept_hunk, "nvim-claude: accept the hunk under the cursor", theirs)
    map(buf, o.reject_hunk, M.reject_hunk, "nvim-claude: reject the hunk under the cursor", theirs)
  end
end

local function watch_proposal(d)
  local buf = d.prop_buf
  api.nvim_create_autocmd({ "CursorMoved", "TextChanged", "InsertLeave" }, {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: the hunk counter over the proposal",
    callback = function()
      refresh_counter(d, options())
    end,
  })
  api.nvim_create_autocmd("BufWriteCmd", {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: :w accepts Claude's proposal",
    callback = function(a)
      on_write(d, a)
    end,
  })
  api.nvim_create_autocmd({ "BufHidden", "BufUnload", "BufDelete", "BufWipeout" }, {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: closing Claude's proposal rejects it",
    callback = function()
      if not d.decided and not d.closing then
        vim.schedule(function()
          check_gone(d)
        end)
      end
    end,
  })
  -- Closing the file's pane ends the proposal too (nothing is left waiting
  -- with half a diff on screen); close() then gives the layout back.
  d.orig_closed_au = api.nvim_create_autocmd("WinClosed", {
    group = augroup,
    pattern = tostring(d.orig_win),
    desc = "nvim-claude: closing your side of Claude's proposal rejects it",
    callback = function()
      if d.closing or d.closed then
        return
      end
      d.orig_gone = true
      vim.schedule(function()
        if not d.decided and not d.closing then
          decide(d, "reject", true)
        end
      end)
    end,
  })
  api.nvim_create_autocmd("BufReadCmd", {
    group = augroup,
    buffer = buf,
    desc = "nvim-claude: :e! in a proposal puts Claude's text back",
    callback = function()
      -- :e! resets 'eol' and 'fileformat': put back what writes Claude's
      -- bytes exactly, as make_proposal set them
      fill_proposal(d)
    end,
  })
end

-- diff_on puts both windows in diff mode; the second :diffthis computes the
-- diff (seconds for a proposal of 20 MB).
local function diff_on(d)
  api.nvim_win_call(d.orig_win, function()
    vim.cmd("diffthis")
  end)
  api.nvim_win_call(d.prop_win, function()
    vim.cmd("diffthis")
  end)
end

-- place opens the windows: the current side in a window of the current tab
-- (the file's own window if it shows, else a borrowed editor window, else a
-- new split) or of a new tab, and the proposal split next to it.
local function place(d, o, new_tab)
  local split_cmd = o.layout == "vertical" and "rightbelow vsplit" or "rightbelow split"
  local W
  if new_tab then
    local tab = api.nvim_get_current_tabpage()
    local from = pick_window(tab) or layout_window(tab)
    if from and from ~= api.nvim_get_current_win() then
      api.nvim_set_current_win(from)
    end
    vim.cmd("tab split")
    d.tab = api.nvim_get_current_tabpage()
    d.new_tab = true
    W = api.nvim_get_current_win()
    d.win_created = true
    show_buf(W, d.orig_buf)
  else
    d.tab = api.nvim_get_current_tabpage()
    for _, w in ipairs(api.nvim_tabpage_list_wins(d.tab)) do
      if api.nvim_win_get_buf(w) == d.orig_buf and editor_window(w) then
        W = w
        break
      end
    end
    if W then
      d.view = api.nvim_win_call(W, vim.fn.winsaveview)
    else
      W = pick_window(d.tab)
      if W then
        d.swapped = { buf = api.nvim_win_get_buf(W), view = api.nvim_win_call(W, vim.fn.winsaveview) }
        show_buf(W, d.orig_buf)
      else
        -- only terminals and sidebars here: a new window beside the current one
        W = split(layout_window(d.tab), o.layout == "vertical" and "leftabove vsplit" or "leftabove split")
        d.win_created = true
        show_buf(W, d.orig_buf)
      end
    end
  end
  d.orig_win = W
  d.win_opts = save_win_opts(W)
  local before = d.sizes[W] or { api.nvim_win_get_width(W), api.nvim_win_get_height(W) }
  d.prop_win = split(W, split_cmd)
  api.nvim_win_set_buf(d.prop_win, d.prop_buf)
  -- The split takes half of W and nothing else moves (no 'equalalways'
  -- surprise for the terminal or the user's other windows).
  local sizes = {}
  for w, size in pairs(d.sizes) do
    if w ~= W then
      sizes[w] = size
    end
  end
  if o.layout == "vertical" then
    local half = math.max(math.floor((before[1] - 1) / 2), 1)
    sizes[W] = { half, before[2] }
    sizes[d.prop_win] = { before[1] - 1 - half, before[2] }
  else
    local half = math.max(math.floor((before[2] - 1) / 2), 1)
    sizes[W] = { before[1], half }
    sizes[d.prop_win] = { before[1], before[2] - 1 - half }
  end
  apply_sizes(d, sizes)
  if not d.staged then
    diff_on(d)
  end
end

local function undo_place(d)
  d.closing = true
  if win_ok(d.prop_win) then
    pcall(api.nvim_win_close, d.prop_win, true)
  end
  if d.win_created then
    if win_ok(d.orig_win) and #api.nvim_list_wins() > 1 then
      pcall(api.nvim_win_close, d.orig_win, true)
    end
  else
    pcall(restore_window, d)
  end
  apply_sizes(d, d.sizes)
  d.prop_win, d.orig_win, d.win_created, d.swapped, d.view, d.new_tab = nil, nil, nil, nil, nil, nil
  d.closing = false
  back_to(d.prev_tab, d.prev_win, false)
end

local function focus(d, o)
  if o.keep_terminal_focus then
    back_to(d.prev_tab, d.prev_win, d.prev_term)
    return
  end
  api.nvim_set_current_win(d.prop_win)
  -- the cursor on the first change
  api.nvim_win_set_cursor(d.prop_win, { 1, 0 })
  if vim.fn.diff_hlID(1, 1) == 0 then
    pcall(vim.cmd, "normal! ]c")
  end
end

-- view is what open answers: what is on screen.
local function view(d)
  return {
    proposal_bufnr = d.prop_buf,
    original_bufnr = d.orig_buf,
    modified = d.modified,
    new_file = d.new_file == true,
    tab = api.nvim_tabpage_get_number(d.tab),
  }
end

-- show ends an open: the cursor on the first change, the warning about a
-- modified buffer, the ClaudeDiffOpened event.
local function show(d, o)
  focus(d, o)
  user_win = api.nvim_get_current_win()
  if d.modified then
    notify_now(
      string.format(
        "nvim-claude: %s has unsaved changes: the diff compares Claude's proposal with your buffer, not with the file on disk.",
        shown_name(d.file)
      ),
      vim.log.levels.WARN
    )
  end
  util.emit("ClaudeDiffOpened", {
    tab_name = d.tab_name,
    file = d.file,
    proposal_bufnr = d.prop_buf,
    original_bufnr = d.orig_buf,
  })
  -- the counter walks the hunks: after the diff is on screen
  vim.schedule(function()
    refresh_counter(d, o)
  end)
end

-- The host opens a diff in three calls (args.stage "load", "compare",
-- "show"), each a turn of Neovim's main loop of its own, between which
-- Neovim takes keys and runs timers: loading the two texts, computing the
-- diff (the second :diffthis: seconds for 20 MB), and the first look at
-- it (focus's diff_hlID computes the changed parts of the lines: a second
-- more). In one call Neovim could not take a key for the sum of the three;
-- in three, no longer than for the longest, which it cannot split either.
-- Without args.stage the open is one call (as Lua callers use it). A later
-- stage of a diff that was answered or closed meanwhile does nothing and
-- answers {gone = true}.
local function next_stage(args)
  local d = diffs[args.id]
  if not d or d.closing or d.closed or not win_ok(d.orig_win) or not win_ok(d.prop_win) then
    -- answered or closed between two calls (the user was quick, or
    -- another open superseded it): its decision goes its own way
    return { gone = true }
  end
  local o = options()
  if args.stage == "compare" then
    diff_on(d)
    return view(d)
  end
  d.staged = nil
  show(d, o)
  return view(d)
end

--- Opens a diff for review: the Go host's openDiff, through the bridge's
--- diff_open (lua/claude/bridge/init.lua). Raises an error with a plain message
--- when it cannot open.
---@param args {id: string, tab_name: string, old_path?: string, new_path: string, contents?: string, proposal?: table, chan?: integer}
---@return {proposal_bufnr: integer, original_bufnr: integer, modified: boolean, new_file: boolean, tab: integer}
function M.open(args)
  if args.stage == "compare" or args.stage == "show" then
    return next_stage(args)
  end
  if in_cmdwin() then
    -- Nothing can open while it is (E11); the CLI's own prompt in its
    -- terminal still takes the answer.
    error("close the command-line window (q:) to review Claude's change, or answer in Claude's terminal", 0)
  end
  ensure_augroup()
  for _, id in ipairs(vim.deepcopy(order)) do
    local old = diffs[id]
    if old and (old.id == args.id or old.tab_name == args.tab_name) then
      close(old, "closed") -- superseded (the host answered it)
    end
  end
  local o = options()
  local file = full_path(args.new_path)
  local d = {
    id = args.id,
    tab_name = args.tab_name,
    file = file,
    old_file = full_path(args.old_path ~= nil and args.old_path ~= "" and args.old_path or file),
    contents = args.contents or "",
    src = type(args.proposal) == "table" and args.proposal or nil,
    chan = args.chan,
    prev_tab = api.nvim_get_current_tabpage(),
    prev_win = api.nvim_get_current_win(),
    prev_term = api.nvim_get_mode().mode == "t",
    staged = args.stage == "load" or nil,
  }
  d.sizes = {}
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if not floating(w) then
      d.sizes[w] = { api.nvim_win_get_width(w), api.nvim_win_get_height(w) }
    end
  end
  local ok, err = pcall(function()
    current_side(d)
    make_proposal(d)
    if vim.bo[d.orig_buf].filetype ~= "" then
      vim.bo[d.prop_buf].filetype = vim.bo[d.orig_buf].filetype
    else
      detect_filetype(d.prop_buf, d.file)
    end
  end)
  if not ok then
    d.closing = true
    pcall(close, d, "closed")
    error(err, 0)
  end
  local new_tab = o.open_in_new_tab or tab_has_diffs(0)
  ok, err = pcall(place, d, o, new_tab)
  if not ok and not new_tab then
    -- no room here (E36): a tab of its own
    undo_place(d)
    ok, err = pcall(place, d, o, true)
  end
  if not ok then
    d.closing = true
    pcall(close, d, "closed")
    error("could not open the diff windows: " .. tostring(err), 0)
  end
  diffs[d.id] = d
  table.insert(order, d.id)
  d.shown = true
  map_keys(d, o)
  watch_proposal(d)
  show_hint(d, o)
  if d.staged then
    return view(d)
  end
  show(d, o)
  return view(d)
end

--- Closes diffs by id: the Go host's close_tab, closeAllDiffTabs or a CLI
--- that went away, through the bridge's diff_close.
---@param args {ids?: string[], outcome?: string} outcome defaults to "closed"
---@return integer closed how many of them were open
function M.close(args)
  local n = 0
  for _, id in ipairs(args.ids or {}) do
    local d = diffs[id]
    if d and close(d, args.outcome or "closed") then
      n = n + 1
    end
  end
  return n
end

--- Host events ("diff.<event>").
function M._on_event(event, data)
  if event == "close" then
    M.close(data or {})
  end
end

--- :ClaudeDiffAccept — accept the diff under the cursor (either side) with
--- the proposal as it now reads.
function M.accept()
  local d, err = current()
  if not d then
    return notify_now(err, vim.log.levels.WARN)
  end
  decide(d, "accept")
end

-- on_hunk runs fn (hunks.accept or hunks.reject) on the diff under the
-- cursor and shows the counter.
local function on_hunk(fn)
  local d, err = current()
  if not d then
    return notify_now(err, vim.log.levels.WARN)
  end
  local msg = fn(d)
  if msg then
    return notify_now("nvim-claude: " .. msg, vim.log.levels.WARN)
  end
  refresh_counter(d, options(), true)
end

--- Accepts the hunk under the cursor (diff.keymaps.accept_hunk, `ga`): it is
--- marked and kept, and the cursor goes to the next hunk.
function M.accept_hunk()
  on_hunk(hunks.accept)
end

--- Rejects the hunk under the cursor (diff.keymaps.reject_hunk, `gr`): the
--- current text goes back into the proposal (undoable), and the cursor goes
--- to the next hunk. Accepting a proposal whose every hunk was rejected
--- answers "rejected".
function M.reject_hunk()
  on_hunk(hunks.reject)
end

-- (tests) the diff whose proposal is buf.
-- _watches lists the files watched for the CLI's write, each with the file
-- of its expected bytes when the watch owns one; _stop_watches ends them
-- (tests).
function M._watches()
  local out = {}
  for path, w in pairs(watchers) do
    table.insert(out, { path = path, file = type(w.expected) == "table" and w.expected.file or nil })
  end
  return out
end

function M._stop_watches()
  local ws = {}
  for _, w in pairs(watchers) do
    table.insert(ws, w)
  end
  for _, w in ipairs(ws) do
    stop_watch(w)
  end
end

function M._get(buf)
  for _, d in pairs(diffs) do
    if d.prop_buf == buf then
      return d
    end
  end
end

--- :ClaudeDiffReject — reject the diff under the cursor.
function M.reject()
  local d, err = current()
  if not d then
    return notify_now(err, vim.log.levels.WARN)
  end
  decide(d, "reject")
end

--- The diffs waiting for a decision, oldest first:
--- {{tab_name, file, proposal_bufnr, original_bufnr, modified}, …}.
function M.pending()
  local out = {}
  for _, id in ipairs(order) do
    local d = diffs[id]
    if d and not d.decided then
      table.insert(out, {
        tab_name = d.tab_name,
        file = d.file,
        proposal_bufnr = d.prop_buf,
        original_bufnr = d.orig_buf,
        modified = d.modified,
        all_rejected = hunks.all_rejected(d), -- accepting it would mean "no"
      })
    end
  end
  return out
end

function M.attach()
  ensure_augroup()
end

--- The host stopped: nobody waits for the open diffs any more.
function M.detach()
  for _, id in ipairs(vim.deepcopy(order)) do
    local d = diffs[id]
    if d then
      pcall(close, d, "closed")
    end
  end
end

--- buffer_contents(buf): what writing buf would put in the file (the
--- chat's inline accept reads a proposal the same way).
M.buffer_contents = buffer_contents

return M
