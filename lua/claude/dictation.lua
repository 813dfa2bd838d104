-- Dictation: speak a prompt into the chat's prompt or the Claude terminal,
-- with a local speech-to-text engine (the audio never leaves the machine).
--
-- One recording at a time. A recorder job writes a 16 kHz mono WAV into a
-- private directory (0700, the file 0600); stopping it hands the file to
-- the engine job, whose text lands at the chat prompt's cursor or is typed
-- into the terminal (never submitted). Everything runs as jobs; the
-- directory goes on every path (done, cancel, error, Neovim exiting) and a
-- killed Neovim's are swept at the next start.
local util = require("claude.util")

local M = {}

local api = vim.api
local uv = util.uv

-- The session: nil when idle. Fields: id, dir, file, target ({kind, buf,
-- mark, job}), phase ("recording"|"stopping"|"transcribing"), rec (job id),
-- rec_name, eng (job id), eng_name, started (uv.now()), partial, timer,
-- maps (saved mappings), stderr (lines).
local cur = nil
local seq = 0
local swept = false
local ns = api.nvim_create_namespace("claude_dictation")

local function opts()
  return require("claude.config").options.dictation
end

local function notify(msg, level)
  util.notify("nvim-claude: " .. msg, level)
end

-- The recorders tried in order when dictation.recorder.cmd is not set;
-- "{file}" is the WAV to write.
local recorders = {
  { "pw-record", "--rate", "16000", "--channels", "1", "--format", "s16", "{file}" },
  { "parecord", "--rate=16000", "--channels=1", "--format=s16le", "--file-format=wav", "{file}" },
  { "arecord", "-q", "-f", "S16_LE", "-r", "16000", "-c", "1", "-t", "wav", "{file}" },
  { "rec", "-q", "-r", "16000", "-c", "1", "-b", "16", "{file}" },
  { "sox", "-q", "-d", "-r", "16000", "-c", "1", "-b", "16", "{file}" },
}

M.install_hint = "install a recorder (Debian: apt-get install pipewire-bin, pulseaudio-utils, alsa-utils or sox) or set dictation.recorder.cmd"
M.engine_hint = "install PocketSphinx (Debian: apt-get install pocketsphinx pocketsphinx-en-us), or set dictation.whisper = { cmd = …, model = … } (whisper.cpp) or dictation.cmd"

local function expand(cmd, file)
  local out, used = {}, false
  for _, a in ipairs(cmd) do
    if a:find("{file}", 1, true) then
      used = true
      a = a:gsub("{file}", (file:gsub("%%", "%%%%")))
    end
    table.insert(out, a)
  end
  if not used then
    table.insert(out, file)
  end
  return out
end

local function executable(c)
  return type(c) == "string" and c ~= "" and vim.fn.executable(c) == 1
end

--- The recorders to try, in order: { {name, argv-with-{file}} … } (the
--- user's command alone when set).
function M.recorders()
  local o = opts()
  if o.recorder.cmd then
    local c = o.recorder.cmd
    if type(c) == "string" then
      c = { c }
    end
    return { { name = c[1], cmd = c } }
  end
  local out = {}
  for _, c in ipairs(recorders) do
    if executable(c[1]) then
      table.insert(out, { name = c[1], cmd = c })
    end
  end
  return out
end

--- The engine to use: {name, cmd (argv, {file} placeholder), parse} or
--- nil plus why not.
function M.engine()
  local o = opts()
  local want = o.engine
  local function whisper()
    local w = o.whisper
    if not w.cmd or not w.model then
      return nil, "whisper.cpp needs dictation.whisper.cmd and dictation.whisper.model"
    end
    if not executable(w.cmd) then
      return nil, "whisper.cpp: " .. w.cmd .. " is not executable (dictation.whisper.cmd)"
    end
    if vim.fn.filereadable(vim.fn.expand(w.model)) ~= 1 then
      return nil, "whisper.cpp: model " .. w.model .. " is not a readable file (dictation.whisper.model)"
    end
    local cmd = { w.cmd, "-m", vim.fn.expand(w.model), "-nt", "-np" }
    if w.language then
      vim.list_extend(cmd, { "-l", w.language })
    end
    vim.list_extend(cmd, w.args or {})
    vim.list_extend(cmd, { "-f", "{file}" })
    return { name = "whisper.cpp (" .. w.cmd .. ")", cmd = cmd }
  end
  local function sphinx()
    local p = o.pocketsphinx
    local bin = p.cmd
    if bin then
      if not executable(bin) then
        return nil, "PocketSphinx: " .. bin .. " is not executable (dictation.pocketsphinx.cmd)"
      end
    else
      for _, b in ipairs({ "pocketsphinx_continuous", "pocketsphinx" }) do
        if executable(b) then
          bin = b
          break
        end
      end
      if not bin then
        return nil, "PocketSphinx is not installed (no pocketsphinx_continuous or pocketsphinx on PATH)"
      end
    end
    local cmd
    if vim.fn.fnamemodify(bin, ":t") == "pocketsphinx" then
      -- PocketSphinx 5: `pocketsphinx single FILE` prints a JSON object
      -- per utterance ({"t": text, …}).
      cmd = { bin }
      vim.list_extend(cmd, p.args or {})
      vim.list_extend(cmd, { "single", "{file}" })
      return { name = "PocketSphinx (" .. bin .. ")", cmd = cmd, json = true }
    end
    -- Debian 12's 0.8 (5prealpha): a line of text per utterance.
    cmd = { bin, "-infile", "{file}", "-logfn", "/dev/null" }
    vim.list_extend(cmd, p.args or {})
    return { name = "PocketSphinx (" .. bin .. ")", cmd = cmd }
  end
  local function user()
    local c = o.cmd
    if not c then
      return nil, "dictation.cmd is not set"
    end
    if type(c) == "string" then
      c = { c }
    end
    if not executable(c[1]) then
      return nil, "dictation.cmd: " .. c[1] .. " is not executable"
    end
    return { name = c[1], cmd = c }
  end
  if want == "whisper" then
    return whisper()
  elseif want == "pocketsphinx" then
    return sphinx()
  elseif want == "cmd" then
    return user()
  end
  local reasons = {}
  for _, f in ipairs({ whisper, sphinx, user }) do
    local e, why = f()
    if e then
      return e
    end
    table.insert(reasons, why)
  end
  return nil, "no speech-to-text engine: " .. table.concat(reasons, "; ")
end

-- Temporary files -------------------------------------------------------------

--- The directory the recordings' private directories live in.
function M.base_dir()
  return vim.fn.stdpath("cache") .. "/nvim-claude-dictation"
end

local function mkdir_private(path)
  uv.fs_mkdir(path, 448) -- 0700; fails harmlessly when it exists
  uv.fs_chmod(path, 448)
  local st = uv.fs_stat(path)
  return st and st.type == "directory"
end

local function pid_alive(pid)
  local ret, _, name = uv.kill(pid, 0)
  return ret == 0 or name == "EPERM"
end

-- sweep removes what a killed Neovim left: directories named <pid>-<n>
-- whose Neovim is gone.
local function sweep()
  swept = true
  local base = M.base_dir()
  local h = uv.fs_scandir(base)
  if not h then
    return
  end
  local mine = tostring(vim.fn.getpid())
  while true do
    local name = uv.fs_scandir_next(h)
    if not name then
      break
    end
    local pid = name:match("^(%d+)%-%d+$")
    if pid and pid ~= mine and not pid_alive(tonumber(pid)) then
      vim.fn.delete(base .. "/" .. name, "rf")
    end
  end
end

local function make_dir()
  if not swept then
    sweep()
  end
  local base = M.base_dir()
  vim.fn.mkdir(vim.fn.fnamemodify(base, ":h"), "p")
  if not mkdir_private(base) then
    return nil, "cannot create " .. base
  end
  seq = seq + 1
  local dir = string.format("%s/%d-%d", base, vim.fn.getpid(), seq)
  vim.fn.delete(dir, "rf")
  if not mkdir_private(dir) then
    return nil, "cannot create " .. dir
  end
  local file = dir .. "/audio.wav"
  local fd = uv.fs_open(file, "w", 384) -- 0600, before the recorder opens it
  if not fd then
    vim.fn.delete(dir, "rf")
    return nil, "cannot create " .. file
  end
  uv.fs_close(fd)
  return dir, file
end

-- The indicator and events ----------------------------------------------------

local function emit(state, extra)
  local data = { state = state }
  if cur then
    data.target = cur.target.kind
    data.buf = cur.target.buf
  end
  for k, v in pairs(extra or {}) do
    data[k] = v
  end
  util.emit("ClaudeDictation", data)
end

--- The indicator's text: "" when idle, else e.g. "● REC 0:07 (<C-g> stops)"
--- or "… transcribing: partial text". For a 'statusline' or 'winbar':
---   %{v:lua.require'claude.dictation'.status()}
function M.status()
  if not cur then
    return ""
  end
  if cur.phase == "recording" then
    local s = math.floor((uv.now() - cur.started) / 1000)
    local key = opts().keys.toggle
    return string.format("● REC %d:%02d (%sstop, <C-c> cancel)", math.floor(s / 60), s % 60, key and (key .. "/<Esc> ") or "<Esc> ")
  end
  local text = "… transcribing"
  if cur.partial and cur.partial ~= "" then
    text = text .. ": " .. cur.partial
  end
  return text
end

local function redraw()
  if not cur then
    return
  end
  local bar = "%#ClaudeDictation#" .. M.status():gsub("%%", "%%%%") .. "%*%<"
  for _, w in ipairs(vim.fn.win_findbuf(cur.target.buf)) do
    if cur.winbars[w] == nil then
      cur.winbars[w] = vim.wo[w].winbar
    end
    -- local to the window: a split made meanwhile does not inherit it
    pcall(require("claude.editor").set_win_local, w, "winbar", bar)
  end
  pcall(vim.cmd, "redrawstatus!")
end

-- Temporary keys while recording: <Esc> stops, <C-c> cancels (the toggle
-- key stops through its own mapping). The buffer's own are put back.
local function map_temp(buf)
  local saved = {}
  local modes = vim.b[buf].claude_terminal and { "t", "n" } or { "i", "n" }
  for _, m in ipairs(modes) do
    for lhs, fn in pairs({ ["<Esc>"] = M.stop, ["<C-c>"] = M.cancel }) do
      local old = vim.fn.maparg(lhs, m, false, true)
      if old and old.buffer == 1 then
        table.insert(saved, { mode = m, map = old })
      end
      vim.keymap.set(m, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "nvim-claude: dictation" })
      table.insert(saved, { mode = m, lhs = lhs })
    end
  end
  return saved
end

local function unmap_temp(buf, saved)
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  for _, s in ipairs(saved) do
    if s.lhs then
      pcall(vim.keymap.del, s.mode, s.lhs, { buffer = buf })
    end
  end
  for _, s in ipairs(saved) do
    local m = s.map
    if m then
      local ok = api.nvim_buf_call(buf, function()
        return pcall(vim.fn.mapset, s.mode, false, m) and vim.fn.maparg(m.lhs, s.mode) ~= ""
      end)
      if not ok then
        -- a mapset() that does not take this map (a Lua callback on an
        -- older Neovim): set it again from its parts
        pcall(vim.keymap.set, s.mode, m.lhs, m.callback or m.rhs, {
          buffer = buf,
          expr = m.expr == 1,
          silent = m.silent == 1,
          nowait = m.nowait == 1,
          remap = m.noremap == 0,
          desc = m.desc,
        })
      end
    end
  end
end

-- finish ends the session: jobs stopped, files removed, indicator gone.
local function finish()
  local s = cur
  if not s then
    return
  end
  cur = nil
  if s.timer then
    s.timer:stop()
    s.timer:close()
  end
  for _, j in pairs({ rec = s.rec, eng = s.eng }) do
    pcall(vim.fn.jobstop, j)
  end
  vim.fn.delete(s.dir, "rf")
  unmap_temp(s.target.buf, s.maps or {})
  for w, old in pairs(s.winbars or {}) do
    if api.nvim_win_is_valid(w) then
      pcall(require("claude.editor").set_win_local, w, "winbar", old)
    end
  end
  pcall(api.nvim_buf_del_extmark, s.target.buf, ns, s.target.mark or -1)
  -- the chat redraws its own winbar
  if s.target.kind == "chat" then
    pcall(function()
      local chat = require("claude.chat").get(vim.b[s.target.buf].claude_chat_prompt)
      if chat then
        require("claude.chat.prompt").refresh(chat)
      end
    end)
  end
  pcall(vim.cmd, "redrawstatus!")
end

local function fail(msg)
  local s = cur
  finish()
  notify("dictation: " .. msg, vim.log.levels.ERROR)
  emit("error", { error = msg, target = s and s.target.kind, buf = s and s.target.buf })
end

local function tail(lines)
  local out = {}
  for _, l in ipairs(lines or {}) do
    l = vim.trim(l)
    if l ~= "" then
      table.insert(out, l)
    end
  end
  while #out > 5 do
    table.remove(out, 1)
  end
  return table.concat(out, " | ")
end

local function why_exit(code, lines)
  local t = tail(lines)
  return (code > 128 and ("killed by signal " .. (code - 128)) or ("exit " .. code)) .. (t ~= "" and (": " .. t) or "")
end

-- clean turns an engine's output into one line of text: no control
-- characters (a CR would submit the terminal's prompt), no engine markup.
function M.clean(text)
  text = text:gsub("%[BLANK_AUDIO%]", " "):gsub("%[[%u_ ]+%]", " ")
  -- escape sequences whole (CSI, OSC), then any other control character
  text = text:gsub("\27%[[%d;?]*[\64-\126]", ""):gsub("\27%][^\7\27]*\7?", "")
  text = text:gsub("[%c\127]", " "):gsub("%s+", " ")
  return vim.trim(text)
end

-- The target ------------------------------------------------------------------

local function find_target()
  local buf = api.nvim_get_current_buf()
  if vim.b[buf].claude_chat_prompt then
    local row, col = unpack(api.nvim_win_get_cursor(0))
    if api.nvim_get_mode().mode:sub(1, 1) ~= "i" then
      -- Normal mode: after the character under the cursor, like `a`
      -- (its bytes: it may be more than one)
      col = col + #vim.fn.matchstr(api.nvim_get_current_line():sub(col + 1), "^.")
    end
    local mark = api.nvim_buf_set_extmark(buf, ns, row - 1, col, { right_gravity = false })
    return { kind = "chat", buf = buf, mark = mark }
  end
  local job = vim.b[buf].terminal_job_id
  if vim.b[buf].claude_terminal and job then
    return { kind = "terminal", buf = buf, job = job }
  end
  local info = require("claude.terminal").info()
  if info then
    return { kind = "terminal", buf = info.bufnr, job = info.job_id }
  end
  local ok, chat = pcall(function()
    return require("claude.chat").current()
  end)
  if ok and chat and chat.pbuf and api.nvim_buf_is_valid(chat.pbuf) then
    local last = api.nvim_buf_line_count(chat.pbuf)
    local line = api.nvim_buf_get_lines(chat.pbuf, last - 1, last, false)[1] or ""
    local mark = api.nvim_buf_set_extmark(chat.pbuf, ns, last - 1, #line, { right_gravity = false })
    return { kind = "chat", buf = chat.pbuf, mark = mark }
  end
  return nil
end

local function deliver(s, text)
  local t = s.target
  if text == "" then
    return false, "the engine heard no words"
  end
  if t.kind == "terminal" then
    if vim.fn.jobwait({ t.job }, 0)[1] ~= -1 then
      return false, "the Claude terminal has exited (the text: " .. text .. ")"
    end
    vim.fn.chansend(t.job, text)
    return true
  end
  if not api.nvim_buf_is_valid(t.buf) then
    return false, "the chat prompt is gone (the text: " .. text .. ")"
  end
  local pos = api.nvim_buf_get_extmark_by_id(t.buf, ns, t.mark, {})
  local row, col = pos[1], pos[2]
  if not row then
    row = api.nvim_buf_line_count(t.buf) - 1
    col = #(api.nvim_buf_get_lines(t.buf, row, row + 1, false)[1] or "")
  end
  local line = api.nvim_buf_get_lines(t.buf, row, row + 1, false)[1] or ""
  col = math.min(col, #line)
  local before, after = line:sub(col, col), line:sub(col + 1, col + 1)
  if col > 0 and not before:match("%s") then
    text = " " .. text
  end
  if after ~= "" and not after:match("[%s%p]") then
    text = text .. " "
  end
  api.nvim_buf_set_text(t.buf, row, col, row, col, { text })
  for _, w in ipairs(vim.fn.win_findbuf(t.buf)) do
    if w == api.nvim_get_current_win() then
      pcall(api.nvim_win_set_cursor, w, { row + 1, col + #text })
    end
  end
  return true
end

-- The jobs --------------------------------------------------------------------

local function transcribe(s)
  local eng, why = M.engine()
  if not eng then
    return fail(why .. " (" .. M.engine_hint .. ")")
  end
  s.phase = "transcribing"
  s.eng_name = eng.name
  s.partial = ""
  redraw()
  local out, err = {}, {}
  local pending = ""
  local function add(line)
    if eng.json then
      local ok, obj = pcall(vim.json.decode, line)
      line = ok and type(obj) == "table" and type(obj.t) == "string" and obj.t or ""
    end
    line = M.clean(line)
    if line ~= "" then
      table.insert(out, line)
      if cur == s then
        s.partial = table.concat(out, " ")
        emit("partial", { text = s.partial })
        redraw()
      end
    end
  end
  local ok, job = pcall(vim.fn.jobstart, expand(eng.cmd, s.file), {
    cwd = s.dir,
    on_stdout = function(_, data)
      -- data: the first item continues the last partial line
      data[1] = pending .. data[1]
      pending = table.remove(data)
      for _, l in ipairs(data) do
        add(l)
      end
    end,
    on_stderr = function(_, data)
      vim.list_extend(err, data)
      while #err > 50 do
        table.remove(err, 1)
      end
    end,
    on_exit = function(_, code)
      if pending ~= "" then
        add(pending)
        pending = ""
      end
      vim.schedule(function()
        if cur ~= s then
          return -- cancelled
        end
        s.eng = nil
        if code ~= 0 then
          return fail(string.format("the engine %s failed (%s)", eng.name, why_exit(code, err)))
        end
        local text = M.clean(table.concat(out, " "))
        local delivered, reason = deliver(s, text)
        local kind = s.target.kind
        finish()
        if not delivered then
          notify("dictation: " .. reason, vim.log.levels.WARN)
          emit("error", { error = reason, target = kind, buf = s.target.buf, text = text })
          return
        end
        emit("done", { text = text, target = kind, buf = s.target.buf })
      end)
    end,
  })
  if not ok or job <= 0 then
    return fail(string.format("could not start the engine %s: %s", eng.name, not ok and tostring(job) or "not executable"))
  end
  s.eng = job
  emit("transcribing")
end

local function start_recorder(s, list, i, tried)
  local r = list[i]
  if not r then
    local msg = #tried > 0 and ("no recorder works: " .. table.concat(tried, "; "))
      or ("no recorder found (" .. M.install_hint .. ")")
    return fail(msg)
  end
  local err = {}
  local argv = { "sh", "-c", 'umask 077 && exec "$@"', "sh" }
  vim.list_extend(argv, expand(r.cmd, s.file))
  local started = uv.now()
  local ok, job = pcall(vim.fn.jobstart, argv, {
    cwd = s.dir,
    on_stderr = function(_, data)
      vim.list_extend(err, data)
      while #err > 50 do
        table.remove(err, 1)
      end
    end,
    on_exit = function(job, code)
      vim.schedule(function()
        if cur ~= s or s.rec ~= job then
          return
        end
        s.rec = nil
        if s.phase == "recording" then
          -- it stopped by itself: a failure (or a recorder that exits at
          -- the end of its input, which is a recording like any other)
          local st = uv.fs_stat(s.file)
          if code == 0 and st and st.size > 44 then
            s.phase = "stopping"
            emit("stopped", { seconds = (uv.now() - started) / 1000 })
            return transcribe(s)
          end
          table.insert(tried, string.format("%s (%s)", r.name, why_exit(code, err)))
          if opts().recorder.cmd then
            return fail(string.format("the recorder %s failed (%s)", r.name, why_exit(code, err)))
          end
          return start_recorder(s, list, i + 1, tried)
        end
        -- stopped on request: a signal's exit code is expected
        local st = uv.fs_stat(s.file)
        if not st or st.size <= 44 then
          return fail(string.format("the recorder %s wrote no audio (%s)", r.name, why_exit(code, err)))
        end
        transcribe(s)
      end)
    end,
  })
  if not ok or job <= 0 then
    table.insert(tried, r.name .. " (" .. (not ok and tostring(job) or "not executable") .. ")")
    if opts().recorder.cmd then
      return fail(string.format("could not start the recorder %s: %s", r.name, not ok and tostring(job) or "not executable"))
    end
    return start_recorder(s, list, i + 1, tried)
  end
  s.rec, s.rec_name, s.rec_pid = job, r.name, vim.fn.jobpid(job)
end

-- Commands --------------------------------------------------------------------

--- Starts recording for the chat prompt or Claude terminal under the
--- cursor (else the running Claude terminal, else the current chat).
function M.start()
  if vim.fn.has("nvim-0.8") == 0 then
    notify("dictation needs Neovim 0.8 or newer", vim.log.levels.ERROR)
    return
  end
  if cur then
    notify("dictation: already " .. cur.phase, vim.log.levels.WARN)
    return
  end
  M._autocmds()
  local eng, why = M.engine()
  if not eng then
    notify("dictation: " .. why .. " (" .. M.engine_hint .. ")", vim.log.levels.ERROR)
    emit("error", { error = why })
    return
  end
  local list = M.recorders()
  if #list == 0 then
    notify("dictation: no recorder found (" .. M.install_hint .. ")", vim.log.levels.ERROR)
    emit("error", { error = "no recorder found" })
    return
  end
  local target = find_target()
  if not target then
    notify("dictation: open the chat (:ClaudeChat) or the Claude terminal (:ClaudeStart) first", vim.log.levels.WARN)
    return
  end
  local dir, file = make_dir()
  if not dir then
    pcall(api.nvim_buf_del_extmark, target.buf, ns, target.mark or -1)
    notify("dictation: " .. file, vim.log.levels.ERROR)
    return
  end
  local s = { dir = dir, file = file, target = target, phase = "recording", started = uv.now(), winbars = {} }
  cur = s
  s.maps = map_temp(target.buf)
  start_recorder(s, list, 1, {})
  if cur ~= s then
    return -- no recorder could start
  end
  emit("started", { recorder = s.rec_name, engine = eng.name })
  s.timer = uv.new_timer()
  local max = opts().max_seconds
  s.timer:start(0, 1000, vim.schedule_wrap(function()
    if cur ~= s then
      return
    end
    if s.phase == "recording" and max > 0 and uv.now() - s.started >= max * 1000 then
      notify(string.format("dictation: stopped at %d s (dictation.max_seconds)", max), vim.log.levels.INFO)
      M.stop()
    end
    redraw()
  end))
end

--- Stops recording; the engine transcribes what was said.
function M.stop()
  local s = cur
  if not s or s.phase ~= "recording" then
    return
  end
  s.phase = "stopping"
  emit("stopped", { seconds = (uv.now() - s.started) / 1000 })
  redraw()
  if s.rec_pid then
    -- SIGINT: recorders finish the WAV header on it; a job that ignores it
    -- is stopped (TERM, then KILL) after a while.
    uv.kill(s.rec_pid, "sigint")
    local job = s.rec
    vim.defer_fn(function()
      if cur == s and s.rec == job then
        pcall(vim.fn.jobstop, job)
      end
    end, 3000)
  end
end

--- Discards the recording (or the transcription under way).
function M.cancel()
  local s = cur
  if not s then
    return
  end
  finish()
  emit("cancelled", { target = s.target.kind, buf = s.target.buf })
end

--- Starts, or stops when recording (the mapping and :ClaudeDictate).
function M.toggle()
  if cur and cur.phase == "recording" then
    M.stop()
  elseif cur then
    notify("dictation: still transcribing (:ClaudeDictate cancel discards it)", vim.log.levels.INFO)
  else
    M.start()
  end
end

--- :ClaudeDictate [start|stop|cancel|toggle]
function M.command(arg)
  arg = arg ~= "" and arg or "toggle"
  local fn = ({ start = M.start, stop = M.stop, cancel = M.cancel, toggle = M.toggle })[arg]
  if not fn then
    notify("ClaudeDictate: unknown argument " .. arg .. " (start, stop, cancel or toggle)", vim.log.levels.ERROR)
    return
  end
  fn()
end

--- The session's state for tests and statuslines: nil or {phase, target,
--- file, dir, recorder, engine, partial}.
function M.state()
  if not cur then
    return nil
  end
  return { phase = cur.phase, target = cur.target.kind, file = cur.file, dir = cur.dir, recorder = cur.rec_name, engine = cur.eng_name, partial = cur.partial }
end

-- The session itself (tests).
function M._session()
  return cur
end

--- Maps the toggle key in a chat prompt or Claude terminal buffer (called
--- by claude.chat.prompt and claude.terminal).
function M.map_buffer(buf)
  if vim.fn.has("nvim-0.8") == 0 then
    return
  end
  local key = opts().keys.toggle
  if not key then
    return
  end
  local modes = vim.b[buf].claude_terminal and { "t", "n" } or { "i", "n" }
  vim.keymap.set(modes, key, M.toggle, { buffer = buf, nowait = true, silent = true, desc = "nvim-claude: dictate (start/stop)" })
end

local group = nil
function M._autocmds()
  if group then
    return
  end
  group = api.nvim_create_augroup("nvim-claude-dictation", { clear = true })
  api.nvim_create_autocmd("VimLeavePre", { group = group, callback = function()
    if cur then
      finish()
    end
  end })
  api.nvim_set_hl(0, "ClaudeDictation", { default = true, link = "ErrorMsg" })
end

--- :checkhealth claude's part: h is the reporter.
function M.health(h)
  h.start("nvim-claude: dictation")
  if vim.fn.has("nvim-0.8") == 0 then
    h.info("dictation needs Neovim 0.8 or newer")
    return
  end
  local rs = M.recorders()
  if opts().recorder.cmd then
    if executable(rs[1].name) then
      h.ok("recorder: " .. table.concat(rs[1].cmd, " ") .. " (dictation.recorder.cmd)")
    else
      h.error("recorder " .. rs[1].name .. " (dictation.recorder.cmd) is not executable")
    end
  elseif #rs > 0 then
    local names = vim.tbl_map(function(r)
      return r.name
    end, rs)
    h.ok("recorder: " .. names[1] .. (#names > 1 and (" (also found: " .. table.concat(names, ", ", 2) .. ")") or ""))
  else
    -- optional: nothing else needs it
    h.info("no recorder found (none of pw-record, parecord, arecord, rec, sox is on PATH): " .. M.install_hint)
  end
  local eng, why = M.engine()
  if eng then
    h.ok("engine: " .. eng.name)
  elseif opts().engine == "auto" and not opts().whisper.cmd and not opts().cmd then
    h.info(why .. ": " .. M.engine_hint)
  else
    h.warn(why, { M.engine_hint })
  end
end

return M
