-- A selection's region and its UTF-16 positions: what `y` would yank for a
-- charwise, linewise or blockwise selection, with the start and end the
-- IDE protocol counts in UTF-16 code units. Pure computation over a
-- buffer's lines and the window's tab settings; the tracking that decides
-- when to compute it is claude.selection's.
local editor = require("claude.editor")

local api, fn = vim.api, vim.fn
local buf_opt = editor.buf_opt

local M = {}

-- Text and positions --------------------------------------------------------

-- utf16 counts the first n bytes of s in UTF-16 code units (claude.editor's
-- conversion, the one every module uses).
local utf16 = editor.units

-- cell returns the byte length and display width of the character cell
-- (base character plus composing ones) at byte i of line, starting at
-- display column vcol.
local function cell(line, i, vcol, ts, listtab)
  local b = line:byte(i)
  if b < 128 then
    if b == 9 then
      return 1, listtab and 2 or (ts - vcol % ts)
    elseif b < 32 or b == 127 then
      return 1, 2
    end
    return 1, 1
  end
  local ch = fn.strpart(line, i - 1, 1, 1)
  if ch == "" then
    return 1, 1
  end
  return #ch, api.nvim_strwidth(ch)
end

-- win_opt is buf_opt for window options (nvim_win_get_option on 0.7).
local win_opt
if pcall(api.nvim_get_option_value, "list", { win = 0 }) then
  local opts = { win = 0 }
  win_opt = function(win, name)
    opts.win = win
    return api.nvim_get_option_value(name, opts)
  end
else
  win_opt = api.nvim_win_get_option
end

local function tab_opts(win, buf)
  local listtab = win_opt(win, "list") and not win_opt(win, "listchars"):find("tab:", 1, true)
  return buf_opt(buf, "tabstop"), listtab
end

-- vspan is the first and last display column (0-based) of the character at
-- byte col (0-based) of line; past the end it is the one column after it.
local function vspan(line, col, ts, listtab)
  if not line:find("[^\32-\126]") then
    col = math.min(col, #line)
    return col, col
  end
  local vcol, i, n = 0, 1, #line
  while i <= n do
    local len, w = cell(line, i, vcol, ts, listtab)
    if i - 1 + len > col then
      return vcol, vcol + w - 1
    end
    vcol = vcol + w
    i = i + len
  end
  return vcol, vcol
end

-- block_part is the part of line a blockwise selection of display columns
-- left..right (inclusive, 0-based) yanks, as Vim does: characters wholly
-- inside, spaces for the inside part of a wide character or tab cut by an
-- edge, nothing for a line too short to reach the block. Also returns the
-- byte range (0-based, end exclusive) it came from.
local function block_part(line, left, right, ts, listtab)
  local n = #line
  if not line:find("[^\32-\126]") then
    if left > n then
      return string.rep(" ", right - left + 1), n, n
    elseif left == n then
      return "", n, n
    end
    local e = math.min(n, right + 1)
    return line:sub(left + 1, e), left, e
  end
  local vcol, i, w = 0, 1, 0
  while vcol < left and i <= n do
    local len
    len, w = cell(line, i, vcol, ts, listtab)
    vcol = vcol + w
    i = i + len
  end
  if vcol < left then
    -- the line ends before the block: Vim yanks the block's width in spaces
    return string.rep(" ", right - left + 1), n, n
  end
  local startspaces = vcol - left
  local pstart, pend, evcol = i, i, vcol
  local endspaces = 0
  if evcol > right then
    -- one character covers the whole block
    return string.rep(" ", right - left + 1), pstart - 1, pstart - 1
  end
  local prev = pend
  while evcol <= right and pend <= n do
    prev = pend
    local len
    len, w = cell(line, pend, evcol, ts, listtab)
    evcol = evcol + w
    pend = pend + len
  end
  if evcol > right then
    local outside = evcol - right - 1
    if outside > 0 then
      endspaces = w - outside
      if pend ~= pstart then
        pend = prev
      end
    end
  end
  local text = string.rep(" ", startspaces) .. line:sub(pstart, pend - 1) .. string.rep(" ", endspaces)
  return text, pstart - 1, pend - 1
end

local function pos(line, character)
  return { line = line, character = character }
end

-- prev_char moves a 0-based byte column back one character.
local function prev_char(line, col)
  col = col - 1
  while col > 0 do
    local b = line:byte(col + 1)
    if not b or b < 128 or b >= 192 then
      break
    end
    col = col - 1
  end
  return col
end

-- region builds the state for a selection between p1 and p2 ({l = 1-based
-- line, c = 0-based byte}) of buf, shown in win, in visual mode vmode ("v",
-- "V", "\22"). The text is what `y` would yank.
local function region(win, buf, path, vmode, p1, p2, dollar)
  if p2.l < p1.l or (p2.l == p1.l and p2.c < p1.c) then
    p1, p2 = p2, p1
  end
  local nlines = api.nvim_buf_line_count(buf)
  p1.l, p2.l = math.min(p1.l, nlines), math.min(p2.l, nlines)
  local lines = api.nvim_buf_get_lines(buf, p1.l - 1, p2.l, false)
  local first, last = lines[1] or "", lines[#lines] or ""
  local exclusive = vim.o.selection == "exclusive"
  local st = { kind = "selection", path = path, empty = false }

  if vmode == "V" then
    st.text = table.concat(lines, "\n") .. "\n"
    -- end at the start of the next line, as an editor's full-line
    -- selection does; the CLI counts such a selection's lines correctly
    -- even when the last line is empty.
    st.start, st["end"] = pos(p1.l - 1, 0), pos(p2.l, 0)
    return st
  end

  if vmode == "v" then
    local sc = math.min(p1.c, #first)
    local ec = p2.c
    local eol_break = false
    if exclusive and (p1.l ~= p2.l or p1.c ~= p2.c) then
      if ec > 0 then
        ec = prev_char(last, math.min(ec, #last))
      elseif p2.l > p1.l then
        -- exclusive end at a line start: select up to the previous line's end
        table.remove(lines)
        p2.l = p2.l - 1
        last = lines[#lines]
        ec = #last
        eol_break = true
      end
    end
    local stop -- exclusive byte end in the last line
    local newline = false
    if ec >= #last then
      stop = #last
      -- on the line break: it is selected, unless this is the last line
      newline = p2.l < nlines or eol_break
    else
      local b, nb = last:byte(ec + 1, ec + 2)
      if b < 128 and (nb == nil or nb < 128) then
        stop = ec + 1 -- one ASCII character, no composing one after it
      else
        stop = ec + #fn.strpart(last, ec, 1, 1)
      end
    end
    local parts = {}
    if #lines == 1 then
      parts[1] = first:sub(sc + 1, stop)
    else
      parts[1] = first:sub(sc + 1)
      for i = 2, #lines - 1 do
        parts[i] = lines[i]
      end
      parts[#lines] = last:sub(1, stop)
    end
    st.text = table.concat(parts, "\n") .. (newline and "\n" or "")
    st.start = pos(p1.l - 1, utf16(first, sc))
    if newline then
      st["end"] = pos(p2.l, 0)
    else
      st["end"] = pos(p2.l - 1, utf16(last, stop))
    end
    return st
  end

  -- blockwise
  local ts, listtab = tab_opts(win, buf)
  local s1, e1 = vspan(first, p1.c, ts, listtab)
  local s2, e2 = vspan(last, p2.c, ts, listtab)
  local left, right = s1, e1
  if s2 < left then
    left = s2
  end
  if e2 > right then
    if exclusive and s2 >= 1 and s2 - 1 >= right then
      right = s2 - 1
    else
      right = e2
    end
  end
  if dollar then
    -- to each line's end; the widest line's end is the block's right edge
    right = 0
    for _, line in ipairs(lines) do
      local w = vspan(line, #line, ts, listtab)
      if w > right then
        right = w
      end
    end
  end
  local parts = {}
  local sb, eb = 0, 0
  for i, line in ipairs(lines) do
    local text, b0, b1 = block_part(line, left, right, ts, listtab)
    parts[i] = text
    if i == 1 then
      sb = b0
    end
    if i == #lines then
      eb = b1
    end
  end
  st.text = table.concat(parts, "\n")
  st.start = pos(p1.l - 1, utf16(first, sb))
  st["end"] = pos(p2.l - 1, utf16(last, eb))
  return st
end

M.region = region
M.vspan = vspan
M.pos = pos

return M
