-- executeCode: Claude runs code in a Jupyter kernel tied to the buffer the
-- user works in, after the user has seen the code and said yes.
--
-- The Go host owns the kernels (one helper process per kernel); this module
-- picks the buffer, reads the options, shows the confirmation float and
-- implements :ClaudeKernel.
local M = {}

local api = vim.api

--- The execute options: setup()'s `execute` table as claude.config resolved
--- and validated it (config.lua holds the defaults).
---@return {confirm: boolean, timeout_ms: number, max_output: number, python: string?, grace_ms: number}
function M.options()
  return require("claude.config").options.execute
end

local editor = require("claude.editor")
local util = require("claude.util")
local opt = editor.buf_opt

--- The buffer the user works in: the active editor's (claude.editor, the
--- window getCurrentSelection reads and getOpenEditors marks `isActive`),
--- else the current one.
---@return integer bufnr
function M.buffer()
  local win = editor.active_window()
  return win and api.nvim_win_get_buf(win) or api.nvim_get_current_buf()
end

-- The kernel a notebook names in metadata.kernelspec.name: from the buffer
-- when it holds the notebook's JSON, else from the file (a plugin such as
-- jupytext may show the notebook as a script).
local function notebook_kernel(buf, name)
  local function from(text)
    local ok, nb = pcall(vim.json.decode, text)
    if ok and type(nb) == "table" and type(nb.metadata) == "table" and type(nb.metadata.kernelspec) == "table" then
      local k = nb.metadata.kernelspec.name
      if type(k) == "string" and k ~= "" then
        return k
      end
    end
  end
  local k = from(table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  if k then
    return k
  end
  if vim.fn.filereadable(name) == 1 then
    return from(table.concat(vim.fn.readfile(name), "\n"))
  end
end

--- Where executeCode runs now (the Go host asks through the bridge's
--- execute_target): the buffer the user works in, its kernel (a notebook's
--- metadata.kernelspec.name, else "") and the directory the kernel starts
--- in. (The execute options reach the host with "start".)
---@return {bufnr: integer, name: string, kernel: string, dir: string}
function M.target()
  local buf = M.buffer()
  local name = api.nvim_buf_get_name(buf)
  local kernel = ""
  local dir = vim.fn.getcwd()
  if name:match("%.ipynb$") then
    kernel = notebook_kernel(buf, name) or ""
    -- Like Jupyter, a notebook's kernel starts in the notebook's directory.
    local d = vim.fn.fnamemodify(name, ":p:h")
    if vim.fn.isdirectory(d) == 1 then
      dir = d
    end
  end
  return { bufnr = buf, name = name, kernel = kernel, dir = dir }
end

-- Open confirmations by id: {win, buf, chan, prev_win, prev_mode, armed,
-- prev_key, always_step, args}.
local pending = {}

local hrtime = (vim.uv or vim.loop).hrtime
local function now_ms()
  return hrtime() / 1e6
end

local function decide(id, decision)
  local p = pending[id]
  if not p then
    return
  end
  pending[id] = nil
  pcall(vim.fn.rpcnotify, p.chan, "execute_decision", vim.json.encode({ id = id, decision = decision }))
  local had_focus = api.nvim_get_current_win() == p.win
  if api.nvim_win_is_valid(p.win) then
    pcall(api.nvim_win_close, p.win, true)
  end
  if had_focus and p.prev_win and api.nvim_win_is_valid(p.prev_win) then
    pcall(api.nvim_set_current_win, p.prev_win)
    -- Back to typing in the Claude terminal when that is where the user was.
    if p.prev_mode == "t" and opt(api.nvim_win_get_buf(p.prev_win), "buftype") == "terminal" then
      vim.cmd("startinsert")
    end
  end
  require("claude.util").emit("ClaudeExecuteDecided", { id = id, decision = decision })
end

local function split_lines(s)
  local lines = vim.split((s:gsub("\r\n", "\n")), "\n", { plain = true })
  if #lines > 1 and lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

local rich = vim.fn.has("nvim-0.10") == 1 -- floats with a title and a footer

-- float_keys: the keys the float maps besides its answers — every printable
-- character and the keys that move between windows or modes.
local function float_keys()
  local keys = { "<Space>", "<BS>", "<Tab>", "<C-w>", "<C-o>", "<C-^>", "<C-z>", "<C-d>", "<C-u>", "<Del>" }
  local lhs_of = { ["|"] = "<Bar>", ["\\"] = "<Bslash>", ["<"] = "<lt>" }
  for b = 33, 126 do
    local ch = string.char(b)
    table.insert(keys, lhs_of[ch] or ch)
  end
  return keys
end
local hints = {
  ask = " [r] Run   [c] Cancel   [a] Always for this Claude session ",
  always = " Run code from this Claude session without asking? [y] Yes   [n] No ",
  early = " Keys ignored (typed too soon): press again ",
}

-- show_hint puts one of hints in the float's footer (the last line before
-- 0.10).
local function show_hint(p, which)
  if not api.nvim_win_is_valid(p.win) then
    return
  end
  pcall(api.nvim_buf_set_var, p.buf, "claude_execute_prompt", vim.trim(hints[which]))
  if rich then
    pcall(api.nvim_win_set_config, p.win, { footer = hints[which], footer_pos = "center" })
  else
    api.nvim_buf_set_option(p.buf, "modifiable", true)
    api.nvim_buf_set_lines(p.buf, -2, -1, false, { vim.trim(hints[which]) })
    api.nvim_buf_set_option(p.buf, "modifiable", false)
  end
end

-- One key watcher while confirmations are open: it stamps the keys typed
-- into a confirmation float, so an answer can tell a deliberate key from
-- one that arrived in a stream of typing.
local key_ns
local function watch_keys()
  if key_ns then
    return
  end
  key_ns = api.nvim_create_namespace("claude_execute_keys")
  vim.on_key(function()
    local win = api.nvim_get_current_win()
    for _, p in pairs(pending) do
      if p.win == win then
        p.prev_key, p.last_key = p.last_key, now_ms()
      end
    end
  end, key_ns)
end

local function unwatch_keys()
  if key_ns and next(pending) == nil then
    vim.on_key(nil, key_ns)
    key_ns = nil
  end
end

-- deliberate: the key being handled came after the grace since the float
-- got the focus and since the key before it. Otherwise it is ignored and
-- the float says so.
local function deliberate(p)
  local grace = M.options().grace_ms
  local since = math.max(p.armed or 0, p.prev_key or 0)
  if now_ms() - since >= grace then
    return true
  end
  show_hint(p, "early")
  return false
end

-- arm gives the float the focus and starts its grace.
local function arm(p)
  if not api.nvim_win_is_valid(p.win) then
    return
  end
  if api.nvim_get_current_win() ~= p.win then
    p.prev_win = api.nvim_get_current_win()
    p.prev_mode = api.nvim_get_mode().mode
    api.nvim_set_current_win(p.win)
  end
  -- Keys typed for the window left behind (insert or terminal mode) must
  -- not land here as text.
  vim.cmd("stopinsert")
  vim.cmd("redraw")
  p.armed, p.prev_key, p.last_key = now_ms(), nil, nil
end

--- Shows the code in a float and asks: r/<CR> run, a then y always (this
--- Claude session), c/<Esc>/q cancel. args: {id, code, kernel, language,
--- bufnr, chan}. The answer goes to the host as an execute_decision
--- notification. The float takes the focus only from Normal mode: a user
--- typing in the Claude terminal or in Insert mode is told, and goes to it
--- with :ClaudeExecute — keys typed meanwhile never answer it. (The Go
--- host calls it through the bridge's execute_confirm.)
---@param args {id: string, code: string, kernel?: string, language?: string, bufnr?: integer, chan: integer}
function M.confirm(args)
  local lines = split_lines(args.code or "")
  local title = string.format(" Claude wants to run code in the %s kernel", args.kernel or "python3")
  local bname = args.bufnr and api.nvim_buf_is_valid(args.bufnr) and api.nvim_buf_get_name(args.bufnr) or ""
  if bname ~= "" then
    title = title .. " of " .. vim.fn.fnamemodify(bname, ":~:.")
  end
  title = title .. " "
  local body = vim.deepcopy(lines)
  if not rich then
    table.insert(body, 1, vim.trim(title))
    table.insert(body, 2, "")
    table.insert(body, "")
    table.insert(body, vim.trim(hints.ask))
  end

  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, body)
  api.nvim_buf_set_option(buf, "bufhidden", "wipe")
  api.nvim_buf_set_option(buf, "modifiable", false)
  pcall(api.nvim_buf_set_var, buf, "claude_execute_id", args.id)
  if rich and args.language and args.language ~= "" then
    pcall(api.nvim_buf_set_option, buf, "filetype", args.language)
  elseif not rich then
    local ns = api.nvim_create_namespace("claude_execute")
    api.nvim_buf_add_highlight(buf, ns, "Title", 0, 0, -1)
    api.nvim_buf_add_highlight(buf, ns, "Question", #body - 1, 0, -1)
  end

  local width = vim.fn.strdisplaywidth(title)
  for _, h in pairs(hints) do
    width = math.max(width, vim.fn.strdisplaywidth(h))
  end
  for _, l in ipairs(body) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 6))
  local height = math.min(#body, math.max(3, vim.o.lines - 6))
  local cfg = {
    relative = "editor",
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    style = "minimal",
    border = "rounded",
    zindex = 250,
  }
  if rich then
    cfg.title = title
    cfg.title_pos = "center"
    cfg.footer = hints.ask
    cfg.footer_pos = "center"
  end
  -- Only from Normal mode may the float take the focus: in Terminal,
  -- Insert, Replace, Visual or Command-line mode the user may be typing,
  -- and the next key must not answer it.
  local m = api.nvim_get_mode()
  local typing = m.blocking or not (m.mode == "n" or m.mode == "nt")
  local win = api.nvim_open_win(buf, false, cfg)
  api.nvim_win_set_option(win, "wrap", false)
  local p = { win = win, buf = buf, chan = args.chan, args = args }
  pending[args.id] = p
  watch_keys()

  -- a key answers only while the request waits, and only when pressed on
  -- purpose (deliberate)
  local function key(lhs, fn, desc)
    util.map(buf, lhs, function()
      if pending[args.id] and deliberate(p) then
        fn()
      end
    end, desc)
  end
  local function answer(decision)
    return function()
      decide(args.id, decision)
      unwatch_keys()
    end
  end
  key("r", answer("run"), "run")
  key("<CR>", answer("run"), "run")
  key("a", function()
    p.always_step = true
    show_hint(p, "always")
  end, "always (asks to confirm)")
  key("y", function()
    if p.always_step then
      answer("always")()
    end
  end, "confirm always")
  key("n", function()
    p.always_step = false
    show_hint(p, "ask")
  end, "not always")
  key("c", answer("cancel"), "cancel")
  key("q", answer("cancel"), "cancel")
  key("<Esc>", answer("cancel"), "cancel")
  -- Every other key that could act — a printable character, or one that
  -- moves between windows or modes (<C-w>w, :) — is swallowed within the
  -- grace after the float got the focus, so nothing typed for another
  -- window acts here; after it, such a key does what it always does
  -- (scrolling the code, :close …).
  local answers = { r = true, ["<CR>"] = true, a = true, y = true, n = true, c = true, q = true, ["<Esc>"] = true }
  for _, lhs in ipairs(float_keys()) do
    if not answers[lhs] then
      vim.keymap.set("n", lhs, function()
        if not pending[args.id] then
          return
        end
        if now_ms() - (p.armed or 0) < M.options().grace_ms then
          show_hint(p, "early")
          return
        end
        api.nvim_feedkeys(api.nvim_replace_termcodes(lhs, true, false, true), "ni", false)
      end, { buffer = buf, nowait = true, silent = true, desc = "nvim-claude: ignored within the grace" })
    end
  end
  -- Closing the float any other way (:q, <C-w>c) is a "no".
  api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      vim.schedule(function()
        decide(args.id, "cancel")
        unwatch_keys()
      end)
    end,
  })
  -- Reached some other way (<C-w>w, the mouse): the grace starts then.
  api.nvim_create_autocmd("WinEnter", {
    buffer = buf,
    callback = function()
      if pending[args.id] and api.nvim_get_current_win() == win then
        p.armed, p.prev_key, p.last_key = now_ms(), nil, nil
      end
    end,
  })
  if typing then
    require("claude.util").notify(
      "nvim-claude: Claude wants to run code in the " .. (args.kernel or "python3") .. " kernel: :ClaudeExecute to review it",
      vim.log.levels.WARN
    )
  else
    arm(p)
  end
  require("claude.util").emit("ClaudeExecuteConfirm", { id = args.id, bufnr = args.bufnr, code = args.code, focused = not typing })
  return { win = win, buf = buf }
end

--- :ClaudeExecute: goes to the oldest confirmation waiting (the code
--- Claude wants to run). Keys then count after the grace (execute.grace_ms).
function M.focus()
  local ids = M.pending()
  if #ids == 0 then
    require("claude.util").notify("nvim-claude: no code is waiting to run", vim.log.levels.INFO)
    return false
  end
  arm(pending[ids[1]])
  return true
end

--- Closes a confirmation whose request ended (the CLI cancelled it or left)
--- without telling the host anything (the bridge's execute_confirm_close).
---@param id string
function M.close_confirm(id)
  local p = pending[id]
  pending[id] = nil
  if p and api.nvim_win_is_valid(p.win) then
    pcall(api.nvim_win_close, p.win, true)
  end
  unwatch_keys()
end

--- The open confirmations' ids (tests, statusline).
function M.pending()
  local ids = {}
  for id in pairs(pending) do
    table.insert(ids, id)
  end
  table.sort(ids)
  return ids
end

local augroup

--- Tells the host on chan when buffer bufnr goes away, so its kernel stops
--- (the bridge's execute_watch_buffer).
---@param bufnr integer
---@param chan integer
function M.watch(bufnr, chan)
  augroup = augroup or api.nvim_create_augroup("claude_execute", { clear = true })
  api.nvim_clear_autocmds({ group = augroup, buffer = bufnr })
  api.nvim_create_autocmd({ "BufDelete", "BufWipeout" }, {
    group = augroup,
    buffer = bufnr,
    callback = function(a)
      pcall(vim.fn.rpcnotify, chan, "kernel_buffer_gone", vim.json.encode({ bufnr = a.buf }))
    end,
  })
end

local actions = { restart = true, interrupt = true, stop = true, status = true }

--- :ClaudeKernel [restart|interrupt|stop|status]: acts on the kernel of the
--- buffer the user works in (or the only kernel there is).
function M.kernel(action)
  action = (action == nil or action == "") and "status" or action
  local util = require("claude.util")
  if not actions[action] then
    util.notify("nvim-claude: :ClaudeKernel takes restart, interrupt, stop or status, not " .. action, vim.log.levels.ERROR)
    return
  end
  local server = require("claude.server")
  if not server.state().chan then
    util.notify("nvim-claude: no kernel is running (the host is not running)", vim.log.levels.WARN)
    return
  end
  local res, err = server.request("kernel", { action = action, bufnr = M.buffer() })
  if not res then
    util.notify(tostring(err or "nvim-claude: :ClaudeKernel failed"), vim.log.levels.ERROR)
    return
  end
  util.notify(res.message, res.ok == false and vim.log.levels.WARN or vim.log.levels.INFO)
  return res
end

--- Completion for :ClaudeKernel.
function M.complete()
  return { "restart", "interrupt", "stop", "status" }
end

-- The interpreters the host tries, in order.
local function pythons(o)
  if o.python then
    return { o.python }
  end
  local out, seen = {}, {}
  for _, p in ipairs({ vim.fn.exepath("python3"), "/usr/bin/python3" }) do
    if p ~= "" and vim.fn.executable(p) == 1 then
      local real = vim.fn.resolve(p)
      if not seen[real] then
        seen[real] = true
        table.insert(out, p)
      end
    end
  end
  return out
end

--- :checkhealth section: Python with jupyter_client and ipykernel. h has
--- start/ok/warn/error/info (health.lua's reporter).
function M.health(h)
  h.start("nvim-claude: executeCode (Jupyter kernel)")
  local ok, o = pcall(M.options)
  if not ok then
    h.error(tostring(o))
    return
  end
  local install = {
    "Debian/Ubuntu: sudo apt-get install python3-ipykernel python3-jupyter-client",
    "elsewhere: python3 -m pip install ipykernel jupyter_client",
    "or set execute.python to an interpreter that has them",
  }
  if o.python and vim.fn.executable(o.python) ~= 1 then
    h.error("execute.python = " .. o.python .. " is not an executable: executeCode cannot run code", install)
    return
  end
  local list = pythons(o)
  if #list == 0 then
    h.warn("no python3 found: executeCode cannot run code", install)
    return
  end
  local probe = "import sys, jupyter_client, ipykernel; print(sys.version.split()[0], jupyter_client.__version__, ipykernel.__version__)"
  local tried = {}
  for _, py in ipairs(list) do
    local out = vim.fn.system({ py, "-c", probe })
    if vim.v.shell_error == 0 then
      local pyv, jc, ik = vim.trim(out):match("(%S+)%s+(%S+)%s+(%S+)$")
      h.ok(string.format("%s: Python %s, jupyter_client %s, ipykernel %s", py, pyv or "?", jc or "?", ik or "?"))
      h.info(
        "confirm before running: "
          .. tostring(o.confirm)
          .. (o.confirm and "" or " (execute.confirm = false: Claude runs code without asking)")
      )
      return
    end
    local missing = out:match("No module named '([^']+)'") or vim.trim(out):sub(1, 120)
    table.insert(tried, py .. " (" .. missing .. ")")
  end
  h.warn("no Python with jupyter_client and ipykernel: " .. table.concat(tried, ", "), install)
end

return M
