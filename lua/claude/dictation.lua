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
local group = nil -- the augroup, made at the first dictation
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
M.engine_hint = "recommended: whisper.cpp's whisper-cli with an English model (ggml-base.en.bin), set as dictation.whisper = { cmd = …, model = … } (neither is packaged by Debian 12 or npm: see :help claude-dictation-engines); PocketSphinx installs with apt-get install pocketsphinx pocketsphinx-en-us but gets most words wrong; or your own dictation.cmd"

-- Where the input devices are looked for (tests point it elsewhere).
M._snd_dir = "/dev/snd"

--- What this machine offers a recorder to record from, found without
--- running anything: ALSA capture devices, a PulseAudio or PipeWire
--- server's socket. Returns a list of descriptions (empty: none), or nil
--- when it cannot tell (not Linux: no /dev/snd to look at).
function M.input_devices()
  if uv.os_uname().sysname ~= "Linux" then
    return nil
  end
  local found = {}
  local caps = vim.fn.glob(M._snd_dir .. "/pcmC*D*c", false, true)
  if #caps > 0 then
    table.insert(found, #caps == 1 and "an ALSA capture device" or (#caps .. " ALSA capture devices"))
  end
  local rt = vim.env.XDG_RUNTIME_DIR
  local pulse = vim.env.PULSE_SERVER
  if (pulse and pulse ~= "") or (rt and uv.fs_stat(rt .. "/pulse/native")) then
    table.insert(found, "a PulseAudio server")
  end
  if (rt and uv.fs_stat(rt .. "/" .. (vim.env.PIPEWIRE_REMOTE or "pipewire-0"))) then
    table.insert(found, "a PipeWire server")
  end
  return found
end

M.no_device = "this machine has no input device (no ALSA capture device in /dev/snd, no PulseAudio or PipeWire server)"
M.device_hint = "connect a microphone, or start PipeWire or PulseAudio (over ssh: forward PulseAudio, or set dictation.recorder.cmd)"

-- What recorders say when there is nothing to record from: ALSA with no
-- card, sox with no default device, arecord's open failing, a sound server
-- that is not running.
local no_device_patterns = {
  "no default audio device", "unknown pcm", "cannot find card", "no soundcards found",
  "audio open error: no such file", "connection refused", "connection failure",
  "host is down", "no target node", "can't connect",
}

local function says_no_device(lines)
  for _, l in ipairs(lines or {}) do
    l = l:lower()
    for _, p in ipairs(no_device_patterns) do
      if l:find(p, 1, true) then
        return true
      end
    end
  end
  return false
end

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

-- The words of the moment, for an engine that takes a prompt (whisper.cpp's
-- initial prompt biases it towards them): the project's name, the symbol
-- under the cursor in the window dictation started from (or the one before
-- it, when that is the chat or the terminal), and the open buffers' file
-- names. Identifiers spoken as words ("parse args") then come out spelled
-- as in the code (parse_args). Capped: whisper reads at most ~220 tokens.
local function vocabulary()
  local words, seen = {}, {}
  local function add(w)
    w = type(w) == "string" and vim.trim((w:gsub("[%c\127]", " "))) or ""
    if w ~= "" and #w <= 60 and not seen[w] then
      seen[w] = true
      table.insert(words, w)
    end
  end
  -- the project: the directory holding .git (a directory, or a worktree's
  -- file) at or above the working directory, else the working directory
  local cwd = vim.fn.getcwd()
  local root = cwd
  local g = vim.fn.finddir(".git", cwd .. ";")
  if g ~= "" then
    root = vim.fn.fnamemodify((vim.fn.fnamemodify(g, ":p"):gsub("/$", "")), ":h")
  else
    g = vim.fn.findfile(".git", cwd .. ";")
    if g ~= "" then
      root = vim.fn.fnamemodify(g, ":p:h")
    end
  end
  add(vim.fn.fnamemodify(root, ":t"))
  local function cword(win)
    if not win or win == 0 or not api.nvim_win_is_valid(win) then
      return nil
    end
    local b = api.nvim_win_get_buf(win)
    if vim.b[b].claude_chat_prompt or require("claude.terminal").owns(b) or vim.bo[b].buftype ~= "" then
      return nil
    end
    local ok, w = pcall(api.nvim_win_call, win, function()
      return vim.fn.expand("<cword>")
    end)
    return ok and w or nil
  end
  add(cword(api.nvim_get_current_win()) or cword(vim.fn.win_getid(vim.fn.winnr("#"))))
  for _, b in ipairs(api.nvim_list_bufs()) do
    if vim.bo[b].buflisted and vim.bo[b].buftype == "" then
      local name = api.nvim_buf_get_name(b)
      if name ~= "" then
        add(vim.fn.fnamemodify(name, ":t"))
      end
    end
  end
  local out = ""
  for _, w in ipairs(words) do
    if #out + #w + 2 > 600 then
      break
    end
    out = out == "" and w or (out .. ", " .. w)
  end
  return out
end
M._vocabulary = vocabulary

--- The engine to use: {name, cmd (argv, {file} placeholder), parse} or
--- nil plus why not. want: "whisper", "pocketsphinx", "cmd" or "auto"
--- (default: the dictation.engine option). vocab: the words of the moment
--- for an engine that takes a prompt.
function M.engine(want, vocab)
  local o = opts()
  want = want or o.engine
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
    local prompt = w.prompt
    if type(prompt) == "function" then
      local ok, p = pcall(prompt, vocab or "")
      prompt = ok and p or nil
    elseif prompt == nil or prompt == true then
      prompt = vocab
    end
    if type(prompt) == "string" and vim.trim(prompt) ~= "" then
      vim.list_extend(cmd, { "--prompt", (prompt:gsub("[%c\127]", " ")) })
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
    -- Debian 12's 0.8 (5prealpha): a line of text per utterance. Its
    -- model is another package (pocketsphinx-en-us, not a dependency):
    -- without it every run fails, saying nothing (-logfn /dev/null), so
    -- it is looked for where the binary's prefix keeps it.
    if not vim.tbl_contains(p.args or {}, "-hmm") then
      local prefix = vim.fn.fnamemodify(vim.fn.resolve(vim.fn.exepath(bin)), ":h:h")
      local model = prefix .. "/share/pocketsphinx/model/en-us/en-us"
      if vim.fn.isdirectory(model) ~= 1 then
        return nil, "PocketSphinx: its US English model is not installed (no " .. model .. "; Debian: apt-get install pocketsphinx-en-us, or give -hmm, -lm and -dict in dictation.pocketsphinx.args)"
      end
    end
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

-- mkdir_private makes path a private directory (0700) of this user's; with
-- fresh, one made now (not one that was there). A symlink or a directory
-- someone else owns is refused: in a cache shared with others the audio
-- would land where they can read it, or be redirected there. Returns
-- true, or nil and why.
local function mkdir_private(path, fresh)
  local made, _, code = uv.fs_mkdir(path, 448) -- 0700
  if not made and (fresh or code ~= "EEXIST") then
    return nil, "cannot create " .. path .. " (" .. tostring(code) .. ")"
  end
  local st = uv.fs_lstat(path)
  if not st or st.type ~= "directory" or st.uid ~= uv.getuid() then
    return nil, path .. " is not a directory of yours (" .. (st and (st.type ~= "directory" and st.type or "owned by uid " .. st.uid) or "gone")
      .. "): remove it, or set $XDG_CACHE_HOME to a private directory"
  end
  if not uv.fs_chmod(path, 448) then
    return nil, "cannot make " .. path .. " private (chmod 0700)"
  end
  return true
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
  -- only in our own directory: through a symlink it would delete
  -- whatever is there (make_dir then refuses it)
  local st = uv.fs_lstat(base)
  if not st or st.type ~= "directory" or st.uid ~= uv.getuid() then
    return
  end
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
  local ok, why = mkdir_private(base)
  if not ok then
    return nil, why
  end
  seq = seq + 1
  local dir = string.format("%s/%d-%d", base, vim.fn.getpid(), seq)
  vim.fn.delete(dir, "rf") -- an earlier Neovim's with this pid
  ok, why = mkdir_private(dir, true)
  if not ok then
    return nil, why
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
  local modes = require("claude.terminal").owns(buf) and { "t", "n" } or { "i", "n" }
  for _, m in ipairs(modes) do
    for lhs, fn in pairs({ ["<Esc>"] = M.stop, ["<C-c>"] = M.cancel }) do
      -- the target's own mapping (it need not be the current buffer:
      -- :ClaudeDictate from another window dictates into the terminal)
      local old = api.nvim_buf_call(buf, function()
        return vim.fn.maparg(lhs, m, false, true)
      end)
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
  if s.rec_pid then
    -- the recorder's job is its own process group: what it started (a
    -- pipeline's arecord, a background child) goes with it, even when
    -- its first process has already exited
    uv.kill(-s.rec_pid, "sigterm")
  end
  vim.fn.delete(s.dir, "rf")
  if s.au then
    pcall(api.nvim_del_autocmd, s.au)
  end
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
  local out, noise = {}, {}
  for _, l in ipairs(lines or {}) do
    l = vim.trim(l)
    if l ~= "" then
      -- ALSA's library prints its configuration's lookups line by line
      -- before the recorder says what failed: kept only when that is all
      table.insert(l:find("^ALSA lib ") and noise or out, l)
    end
  end
  if #out == 0 then
    out = noise
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
    return { kind = "chat", buf = buf, mark = mark, chat = vim.b[buf].claude_chat_prompt }
  end
  local job = vim.b[buf].terminal_job_id
  if require("claude.terminal").owns(buf) and job then
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
    return { kind = "chat", buf = chat.pbuf, mark = mark, chat = chat.id }
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
  local buf, mark = t.buf, t.mark
  if not api.nvim_buf_is_valid(buf) or not api.nvim_buf_is_loaded(buf) then
    -- the prompt deleted: the chat has a new one (with the draft); the
    -- words go at its end. (t.buf stays: finish() cleans up there.)
    local ok, chat = pcall(function()
      return require("claude.chat").get(t.chat)
    end)
    buf, mark = ok and chat and chat.pbuf, nil
    if not buf or buf <= 0 or not api.nvim_buf_is_valid(buf) or not api.nvim_buf_is_loaded(buf) then
      return false, "the chat prompt is gone (the text: " .. text .. ")"
    end
  end
  local pos = mark and api.nvim_buf_get_extmark_by_id(buf, ns, mark, {}) or {}
  local row, col = pos[1], pos[2]
  if not row then
    row = api.nvim_buf_line_count(buf) - 1
    col = #(api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or "")
  end
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  col = math.min(col, #line)
  local before, after = line:sub(col, col), line:sub(col + 1, col + 1)
  if col > 0 and not before:match("%s") then
    text = " " .. text
  end
  if after ~= "" and not after:match("[%s%p]") then
    text = text .. " "
  end
  api.nvim_buf_set_text(buf, row, col, row, col, { text })
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    if w == api.nvim_get_current_win() then
      pcall(api.nvim_win_set_cursor, w, { row + 1, col + #text })
    end
  end
  return true
end

-- The jobs --------------------------------------------------------------------

local function transcribe(s)
  local eng, why = M.engine(nil, s.vocab)
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
        -- deliver() must not throw past finish(): a prompt made
        -- 'nomodifiable', a channel gone would leave the session stuck,
        -- its keys mapped and its file behind
        local okd, delivered, reason = pcall(deliver, s, text)
        if not okd then
          delivered, reason = false, string.format("could not insert the text (%s; the text: %s)", tostring(delivered), text)
        end
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
    if #tried > 0 and (s.no_device or #(M.input_devices() or { 1 }) == 0) then
      -- said first: the recorders are there, the microphone is not
      msg = "no input device: " .. msg .. " (" .. M.device_hint .. ")"
    end
    return fail(msg)
  end
  local err = {}
  -- umask 077: whatever the recorder writes is private. The watchdog
  -- reads the job's stdin, a pipe from Neovim: at its end (Neovim killed,
  -- with no chance to stop the job) it ends the job's process group, so
  -- no microphone stays on after a crash. The recorder keeps the job's pid.
  local argv = { "sh", "-c", [[umask 077 || exit 1
exec 3<&0
{ cat <&3 >/dev/null 2>&1; kill -TERM 0; } >/dev/null 2>&1 &
exec "$@" 3<&- </dev/null]], "sh" }
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
          if st and st.size > 44 then
            -- it recorded, then failed (a device unplugged, the sound
            -- server restarted): what was said is kept, not overwritten
            -- by the next recorder nor thrown away
            if code ~= 0 then
              notify(string.format("dictation: the recorder %s stopped (%s): transcribing what it recorded", r.name, why_exit(code, err)), vim.log.levels.WARN)
            end
            s.phase = "stopping"
            emit("stopped", { seconds = (uv.now() - started) / 1000 })
            return transcribe(s)
          end
          table.insert(tried, string.format("%s (%s)", r.name, why_exit(code, err)))
          s.no_device = s.no_device or says_no_device(err)
          if opts().recorder.cmd then
            return fail(string.format("%sthe recorder %s failed (%s)", says_no_device(err) and "no input device: " or "", r.name, why_exit(code, err)))
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
  local vocab = vocabulary()
  local target = find_target()
  if not target then
    notify("dictation: open the chat (:ClaudeChat) or the Claude terminal (:ClaudeStart) first", vim.log.levels.WARN)
    emit("error", { error = "no chat prompt or Claude terminal to dictate into" })
    return
  end
  local dir, file = make_dir()
  if not dir then
    pcall(api.nvim_buf_del_extmark, target.buf, ns, target.mark or -1)
    notify("dictation: " .. file, vim.log.levels.ERROR)
    emit("error", { error = file, target = target.kind, buf = target.buf })
    return
  end
  local s = { dir = dir, file = file, target = target, phase = "recording", started = uv.now(), winbars = {}, vocab = vocab }
  cur = s
  s.maps = map_temp(target.buf)
  -- Its buffer gone (the chat closed, the CLI exited): the indicator and
  -- the keys went with it, so the microphone must not stay on unseen.
  -- The recording so far is transcribed; the text, with nowhere to go,
  -- is shown in the warning.
  s.au = api.nvim_create_autocmd({ "BufWipeout", "TermClose" }, {
    group = group,
    buffer = target.buf,
    callback = function()
      if cur == s and s.phase == "recording" then
        notify("dictation: the " .. (target.kind == "chat" and "chat prompt" or "Claude terminal") .. " closed while recording: stopped", vim.log.levels.WARN)
        M.stop()
      end
    end,
  })
  start_recorder(s, list, 1, {})
  if cur ~= s then
    return -- no recorder could start
  end
  emit("started", { recorder = s.rec_name, engine = eng.name })
  if #vim.fn.win_findbuf(target.buf) == 0 then
    -- a hidden chat or terminal: its winbar and keys are out of sight,
    -- so say that the microphone is on, and how to stop it
    notify(string.format("dictation: recording for the hidden %s (:ClaudeDictate stops, :ClaudeDictate cancel discards)",
      target.kind == "chat" and "chat prompt" or "Claude terminal"), vim.log.levels.INFO)
  end
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
    -- To the job's process group, like Ctrl-C in a shell: a pipeline's
    -- recorder stops too, not only the shell running it.
    if uv.kill(-s.rec_pid, "sigint") ~= 0 then
      uv.kill(s.rec_pid, "sigint")
    end
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
  local modes = require("claude.terminal").owns(buf) and { "t", "n" } or { "i", "n" }
  vim.keymap.set(modes, key, M.toggle, { buffer = buf, nowait = true, silent = true, desc = "nvim-claude: dictate (start/stop)" })
end

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
    local found = "recorder: " .. names[1] .. (#names > 1 and (" (also found: " .. table.concat(names, ", ", 2) .. ")") or "")
    local devs = M.input_devices()
    if devs and #devs == 0 then
      -- installed is not working: with nothing to record from, every
      -- recorder fails (ALSA's lines of noise, then "no default device")
      h.warn(found .. ", but " .. M.no_device .. ": dictation cannot record here", { M.device_hint })
    else
      h.ok(found .. (devs and (" (input: " .. table.concat(devs, ", ") .. ")") or ""))
    end
  else
    -- optional: nothing else needs it
    h.info("no recorder found (none of pw-record, parecord, arecord, rec, sox is on PATH): " .. M.install_hint)
  end
  local eng, why = M.engine()
  if eng then
    if eng.name:find("^whisper") then
      h.ok("engine: " .. eng.name .. ", model " .. vim.fn.expand(opts().whisper.model))
    elseif eng.name:find("^PocketSphinx") then
      -- it runs, but it does not understand: say so, and what is better
      h.warn("engine: " .. eng.name .. " (not recommended: on spoken coding prompts it gets most words wrong)", { M.engine_hint })
    else
      h.ok("engine: " .. eng.name)
    end
    -- "auto" passes over an engine the user configured without saying so
    -- when dictating: say it here
    local o = opts()
    if o.engine == "auto" and (o.whisper.cmd or o.whisper.model) and not eng.name:find("^whisper") then
      local _, wwhy = M.engine("whisper")
      h.warn("dictation.whisper is set but not used (" .. tostring(wwhy) .. ")")
    end
    if o.engine == "auto" and o.cmd and eng.name:find("^PocketSphinx") then
      h.info("dictation.cmd is set, but " .. eng.name .. ' comes first with engine = "auto": set engine = "cmd" to use yours')
    end
  elseif opts().engine == "auto" and not opts().whisper.cmd and not opts().cmd then
    h.info(why .. ": " .. M.engine_hint)
  else
    h.warn(why, { M.engine_hint })
  end
end

return M
