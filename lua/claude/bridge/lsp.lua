-- Editor tools for the model (the "nvim" MCP server): what Neovim's
-- language servers, tree-sitter and buffers know, gathered in one round trip
-- per tool call. Positions the Go side sends and receives are 1-based lines
-- and 1-based character (code point) columns; the LSP's 0-based positions in
-- the server's offset encoding never leave this file.
local fns = {}

local H = {}

-- Neovim 0.7 has no vim.lsp.get_clients.
function H.clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(bufnr and { bufnr = bufnr } or nil)
  end
  if bufnr then
    local out = {}
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
      table.insert(out, c)
    end
    return out
  end
  return vim.lsp.get_active_clients()
end

-- The server capability behind each request (checked directly: the way to
-- ask a client changed between 0.7 and 0.11).
H.capability = {
  ["textDocument/definition"] = "definitionProvider",
  ["textDocument/references"] = "referencesProvider",
  ["textDocument/implementation"] = "implementationProvider",
  ["textDocument/typeDefinition"] = "typeDefinitionProvider",
  ["textDocument/hover"] = "hoverProvider",
  ["textDocument/documentSymbol"] = "documentSymbolProvider",
  ["workspace/symbol"] = "workspaceSymbolProvider",
  ["textDocument/prepareCallHierarchy"] = "callHierarchyProvider",
  ["textDocument/rename"] = "renameProvider",
  ["textDocument/codeAction"] = "codeActionProvider",
}

function H.supports(client, method)
  local sc = client.server_capabilities
  if type(sc) ~= "table" then
    return false
  end
  local v = sc[H.capability[method]]
  return v ~= nil and v ~= false and v ~= vim.NIL
end

-- The editor facts — is a buffer a file, which buffer holds a path, where a
-- file may be shown, columns in an encoding's code units — are
-- claude.editor's, their one owner (context.lua says why the bridge may
-- require the plugin's Lua).
function H.editor()
  return require("claude.editor")
end

-- units counts a 0-based byte offset of s in an encoding's code units.
function H.units(s, byte, enc)
  return H.editor().units(s, byte, enc)
end

-- byte turns code units of an encoding into a 0-based byte offset of s.
function H.byte(s, units, enc)
  return H.editor().byte_col(s, units, enc)
end

function H.enc(client)
  return client and client.offset_encoding or "utf-16"
end

-- buf_for finds the buffer of an absolute path without creating one
-- (claude.editor's lookup, by name only: results name many files, and a
-- real-path compare costs a system call per buffer).
function H.buf_for(path)
  return H.editor().find_buf(path, true)
end

-- load returns a loaded buffer for path. Loading runs the BufRead autocmds,
-- so filetype detection and the user's language server autostart happen as
-- if they had opened the file.
function H.load(path)
  local buf = H.buf_for(path) or vim.fn.bufadd(path)
  if not vim.api.nvim_buf_is_loaded(buf) then
    local shm = vim.o.shortmess
    vim.o.shortmess = shm .. "A" -- never the swap-file prompt
    local ok, err = pcall(vim.fn.bufload, buf)
    vim.o.shortmess = shm
    if not ok then
      return nil, "could not load " .. path .. ": " .. tostring(err)
    end
  end
  return buf
end

-- Per call: the lines of every file a result mentions, from its buffer when
-- loaded (unsaved text is what the server sees) else from disk.
function H.new_files()
  local cache = {}
  return function(path)
    if cache[path] == nil then
      local b = H.buf_for(path)
      if b and vim.api.nvim_buf_is_loaded(b) then
        cache[path] = vim.api.nvim_buf_get_lines(b, 0, -1, false)
      else
        local lines = {}
        local f = io.open(path, "rb")
        if f then
          local size = f:seek("end")
          f:seek("set")
          if size and size <= 8 * 1024 * 1024 then
            for l in f:lines() do
              table.insert(lines, (l:gsub("\r$", "")))
            end
          end
          f:close()
        end
        cache[path] = lines
      end
    end
    return cache[path]
  end
end

local max_text = 200

-- loc builds a result location from an LSP position in path.
function H.loc(files, path, pos, enc, end_pos)
  local lines = files(path)
  local text = lines[pos.line + 1] or ""
  local out = {
    path = path,
    line = pos.line + 1,
    col = H.units(text, H.byte(text, pos.character, enc), "utf-32") + 1,
    text = vim.trim(text):sub(1, max_text),
  }
  if end_pos then
    local et = lines[end_pos.line + 1] or ""
    out.end_line = end_pos.line + 1
    out.end_col = H.units(et, H.byte(et, end_pos.character, enc), "utf-32") + 1
  end
  return out
end

-- Attach buf to running clients that serve its filetype in a root that
-- holds it: a file the user has not opened is still in their project.
function H.attach_running(buf, path)
  local ft = vim.bo[buf].filetype
  if ft == "" then
    return
  end
  for _, c in ipairs(H.clients()) do
    local root = c.config and c.config.root_dir
    if not vim.lsp.buf_is_attached(buf, c.id) and type(root) == "string"
      and (path == root or path:sub(1, #root + 1) == root .. "/") then
      local fts = c.config.filetypes
      local serves = type(fts) == "table" and vim.tbl_contains(fts, ft)
      if type(fts) ~= "table" then
        for _, b in ipairs(vim.lsp.get_buffers_by_client_id(c.id)) do
          if vim.bo[b].filetype == ft then
            serves = true
            break
          end
        end
      end
      if serves then
        pcall(vim.lsp.buf_attach_client, buf, c.id)
      end
    end
  end
end

-- client waits (until deadline, in ms of uv.now) for a client of buf that
-- supports method; it gives up early when no client is attached at all.
function H.client(buf, method, deadline)
  local uv = vim.uv or vim.loop
  local found, none_since
  local pending = false
  vim.wait(math.max(deadline - uv.now(), 0), function()
    local cs = H.clients(buf)
    pending = false
    for _, c in ipairs(cs) do
      if type(c.server_capabilities) ~= "table" then
        pending = true -- still initializing
      elseif H.supports(c, method) then
        found = c
        return true
      end
    end
    if #cs == 0 then
      none_since = none_since or uv.now()
      return uv.now() - none_since > 1500 -- an autostart may be on its way
    end
    return not pending -- all initialized, none supports it
  end, 20)
  return found, pending
end

function H.no_client(path, method, buf, pending)
  local names = {}
  for _, c in ipairs(H.clients(buf)) do
    table.insert(names, c.name)
  end
  if pending then
    return string.format("the language server for %s (%s) is still starting; try again in a moment", path, table.concat(names, ", "))
  end
  if #names == 0 then
    local ft = vim.bo[buf].filetype
    return string.format("no language server attached to %s (filetype %s) that supports %s", path, ft ~= "" and ft or "none", method)
  end
  return string.format("no language server attached to %s that supports %s (attached: %s)", path, method, table.concat(names, ", "))
end

-- request runs one LSP request on buf; it returns the results of the
-- clients that answered, and the errors of those that failed.
function H.request(buf, method, params, deadline)
  local uv = vim.uv or vim.loop
  local ms = math.max(deadline - uv.now(), 1)
  local res, err = vim.lsp.buf_request_sync(buf, method, params, ms)
  if not res then
    return nil, err == "timeout" and string.format("%s timed out after %d ms", method, ms) or tostring(err)
  end
  local out, errs = {}, {}
  for id, r in pairs(res) do
    if r.err and r.err ~= vim.NIL then
      local c = vim.lsp.get_client_by_id(id)
      table.insert(errs, (c and c.name or "?") .. ": " .. tostring(r.err.message or vim.inspect(r.err)))
    elseif r.result ~= nil and r.result ~= vim.NIL then
      table.insert(out, { client = vim.lsp.get_client_by_id(id), result = r.result })
    end
  end
  if #out == 0 and #errs > 0 then
    return nil, table.concat(errs, "; ")
  end
  return out
end

function H.text_document(buf)
  return { uri = vim.uri_from_bufnr(buf) }
end

-- normalize strips what models leave out of a symbol's name: receivers'
-- pointer stars and parentheses ("(*Server).Start" is "Server.Start").
function H.normalize(name)
  return (name:gsub("[%(%)%*]", ""))
end

function H.matches(sym_name, container, want)
  if sym_name == want then
    return true
  end
  local n, w = H.normalize(sym_name), H.normalize(want)
  if n == w or n:sub(-#w - 1) == "." .. w then
    return true
  end
  return container ~= nil and (H.normalize(container) .. "." .. n) == w
end

-- find_symbol resolves {symbol} in buf: document symbols first, then the
-- first whole-word occurrence. Returns {line (0-based), byte} or nil.
function H.find_symbol(buf, name, deadline)
  local files = H.new_files()
  local client = H.client(buf, "textDocument/documentSymbol", math.min(deadline, (vim.uv or vim.loop).now() + 3000))
  if client then
    local res = H.request(buf, "textDocument/documentSymbol", { textDocument = H.text_document(buf) }, deadline)
    local hit
    local function walk(list, container)
      for _, s in ipairs(list or {}) do
        if hit then
          return
        end
        local range = s.selectionRange or (s.location and s.location.range)
        if range and H.matches(s.name, container or s.containerName, name) then
          hit = { pos = range.start, enc = H.enc(client) }
          return
        end
        walk(s.children, s.name)
      end
    end
    for _, r in ipairs(res or {}) do
      walk(r.result)
    end
    if hit then
      local text = files(vim.api.nvim_buf_get_name(buf))[hit.pos.line + 1] or ""
      return { line = hit.pos.line, byte = H.byte(text, hit.pos.character, hit.enc), how = "document symbol" }
    end
  end
  local word = name:match("([%w_]+)$") or name
  local pat = "%f[%w_]" .. vim.pesc(word) .. "%f[^%w_]"
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local s = l:find(pat)
    if s then
      return { line = i - 1, byte = s - 1, how = "text search" }
    end
  end
end

-- position resolves the {file, line, col} or {file, symbol} of a call into
-- the buffer, a 0-based line and a byte offset; or an error message.
function H.position(args, buf, deadline)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if args.symbol and args.symbol ~= "" then
    local p = H.find_symbol(buf, args.symbol, deadline)
    if not p then
      return nil, string.format("symbol %q not found in %s", args.symbol, args.rel or args.file)
    end
    return p
  end
  if not args.line or args.line < 1 then
    return nil, "give either line (1-based, with col) or symbol"
  end
  if args.line > #lines then
    return nil, string.format("line %d is past the end of %s (%d lines)", args.line, args.rel or args.file, #lines)
  end
  local text = lines[args.line]
  local byte
  if args.col and args.col >= 1 then
    byte = H.byte(text, args.col - 1, "utf-32")
  else
    byte = (text:find("%S") or 1) - 1 -- no column: the line's first word
  end
  return { line = args.line - 1, byte = byte }
end

-- word_at is the identifier around a 0-based byte offset, for messages.
function H.word_at(text, byte)
  local i = byte + 1
  local s, e = i, i - 1
  while s > 1 and text:sub(s - 1, s - 1):match("[%w_]") do
    s = s - 1
  end
  while e < #text and text:sub(e + 1, e + 1):match("[%w_]") do
    e = e + 1
  end
  if e < s then
    return nil
  end
  return text:sub(s, e)
end

function H.lsp_pos(buf, p, enc)
  local text = vim.api.nvim_buf_get_lines(buf, p.line, p.line + 1, false)[1] or ""
  return { line = p.line, character = H.units(text, p.byte, enc) }
end

-- locations turns Location | Location[] | LocationLink[] into result
-- locations, without duplicates.
function H.locations(results, files, seen, out, limit)
  for _, r in ipairs(results) do
    local res = r.result
    if res.uri or res.targetUri then
      res = { res }
    end
    for _, l in ipairs(res) do
      local uri = l.targetUri or l.uri
      local range = l.targetSelectionRange or l.range or l.targetRange
      if uri and range then
        local path = vim.uri_to_fname(uri)
        local key = path .. ":" .. range.start.line .. ":" .. range.start.character
        if not seen[key] then
          seen[key] = true
          out.total = out.total + 1
          if #out.locations < limit then
            table.insert(out.locations, H.loc(files, path, range.start, H.enc(r.client)))
          end
        end
      end
    end
  end
end

-- symbols flattens DocumentSymbol trees (or SymbolInformation lists) into
-- {name, kind, detail, line, end_line, depth}.
function H.symbols(list, depth, out, files, limit, enc)
  local kinds = vim.lsp.protocol.SymbolKind
  for _, s in ipairs(list or {}) do
    if #out.symbols >= limit then
      out.total = out.total + 1
    else
      out.total = out.total + 1
      local range = s.range or (s.location and s.location.range)
      local path = s.location and s.location.uri and vim.uri_to_fname(s.location.uri) or nil
      local item = {
        name = s.name,
        kind = kinds[s.kind] or tostring(s.kind),
        detail = type(s.detail) == "string" and s.detail:sub(1, max_text) or nil,
        container = type(s.containerName) == "string" and s.containerName ~= "" and s.containerName or nil,
        depth = depth,
      }
      if range then
        item.line = range.start.line + 1
        item.end_line = range["end"].line + 1
      end
      if path then
        item.path = path
        if range then
          local l = H.loc(files, path, (s.selectionRange or range).start, enc)
          item.col = l.col
        end
      end
      table.insert(out.symbols, item)
    end
    H.symbols(s.children, depth + 1, out, files, limit, enc)
  end
end

-- apply_edits applies LSP TextEdits to lines (a new list is returned).
function H.apply_edits(lines, edits, enc)
  local starts, acc = {}, 0
  for i, l in ipairs(lines) do
    starts[i] = acc
    acc = acc + #l + 1
  end
  local text = table.concat(lines, "\n") .. "\n"
  local function offset(pos)
    local l = lines[pos.line + 1]
    if not l then
      return #text
    end
    return starts[pos.line + 1] + H.byte(l, pos.character, enc)
  end
  local list = {}
  for i, e in ipairs(edits) do
    table.insert(list, { s = offset(e.range.start), e = offset(e.range["end"]), text = e.newText, i = i })
  end
  table.sort(list, function(a, b)
    if a.s ~= b.s then
      return a.s > b.s
    end
    return a.i > b.i
  end)
  for _, e in ipairs(list) do
    text = text:sub(1, e.s) .. e.text .. text:sub(e.e + 1)
  end
  return text
end

local diff = (vim.text and vim.text.diff) or vim.diff

-- ops are the LSP-backed tools. Each takes (args, buf, pos, client,
-- deadline, files) and returns the result table or nil and an error.
local ops = {}

local function location_op(method)
  return function(args, buf, pos, client, deadline, files)
    local params = { textDocument = H.text_document(buf), position = H.lsp_pos(buf, pos, H.enc(client)) }
    if method == "textDocument/references" then
      params.context = { includeDeclaration = true }
    end
    local res, err = H.request(buf, method, params, deadline)
    if not res then
      return nil, err
    end
    local out = { locations = {}, total = 0 }
    H.locations(res, files, {}, out, args.limit)
    table.sort(out.locations, function(a, b)
      if a.path ~= b.path then
        return a.path < b.path
      end
      if a.line ~= b.line then
        return a.line < b.line
      end
      return a.col < b.col
    end)
    return out
  end
end

ops.definition = { method = "textDocument/definition", run = location_op("textDocument/definition") }
ops.references = { method = "textDocument/references", run = location_op("textDocument/references") }
ops.implementations = { method = "textDocument/implementation", run = location_op("textDocument/implementation") }
ops.type_definition = { method = "textDocument/typeDefinition", run = location_op("textDocument/typeDefinition") }

ops.hover = {
  method = "textDocument/hover",
  run = function(_, buf, pos, client, deadline)
    local params = { textDocument = H.text_document(buf), position = H.lsp_pos(buf, pos, H.enc(client)) }
    local res, err = H.request(buf, "textDocument/hover", params, deadline)
    if not res then
      return nil, err
    end
    local parts = {}
    for _, r in ipairs(res) do
      local lines = vim.lsp.util.convert_input_to_markdown_lines(r.result.contents or {})
      local text = vim.trim(table.concat(lines, "\n"))
      if text ~= "" then
        table.insert(parts, text)
      end
    end
    return { hover = table.concat(parts, "\n\n---\n\n") }
  end,
}

ops.document_symbols = {
  method = "textDocument/documentSymbol",
  no_position = true,
  run = function(args, buf, _, client, deadline, files)
    local res, err = H.request(buf, "textDocument/documentSymbol", { textDocument = H.text_document(buf) }, deadline)
    if not res then
      return nil, err
    end
    local out = { symbols = {}, total = 0 }
    for _, r in ipairs(res) do
      H.symbols(r.result, 0, out, files, args.limit, H.enc(client))
    end
    return out
  end,
}

ops.workspace_symbols = {
  method = "workspace/symbol",
  no_position = true,
  run = function(args, buf, _, client, deadline, files)
    local res, err = H.request(buf, "workspace/symbol", { query = args.query or "" }, deadline)
    if not res then
      return nil, err
    end
    local out = { symbols = {}, total = 0 }
    for _, r in ipairs(res) do
      H.symbols(r.result, 0, out, files, args.limit, H.enc(client))
    end
    return out
  end,
}

ops.call_hierarchy = {
  method = "textDocument/prepareCallHierarchy",
  run = function(args, buf, pos, client, deadline, files)
    local enc = H.enc(client)
    local params = { textDocument = H.text_document(buf), position = H.lsp_pos(buf, pos, enc) }
    local res, err = H.request(buf, "textDocument/prepareCallHierarchy", params, deadline)
    if not res then
      return nil, err
    end
    local item = res[1] and res[1].result[1]
    if not item then
      return nil, "no function or method at that position (the server found no call hierarchy item)"
    end
    local incoming = args.direction ~= "outgoing"
    local method = incoming and "callHierarchy/incomingCalls" or "callHierarchy/outgoingCalls"
    local calls, cerr = H.request(buf, method, { item = item }, deadline)
    if not calls then
      return nil, cerr
    end
    local item_path = vim.uri_to_fname(item.uri)
    local out = {
      item = { name = item.name, kind = vim.lsp.protocol.SymbolKind[item.kind], path = item_path,
        line = item.selectionRange.start.line + 1 },
      calls = {},
      total = 0,
    }
    for _, r in ipairs(calls) do
      for _, call in ipairs(r.result) do
        local other = incoming and call.from or call.to
        out.total = out.total + 1
        if #out.calls < args.limit then
          local opath = vim.uri_to_fname(other.uri)
          local site_path = incoming and opath or item_path
          local sites = {}
          for i, range in ipairs(call.fromRanges or {}) do
            if i > 20 then
              break
            end
            table.insert(sites, H.loc(files, site_path, range.start, enc))
          end
          local target = H.loc(files, opath, other.selectionRange.start, enc)
          table.insert(out.calls, {
            name = other.name,
            kind = vim.lsp.protocol.SymbolKind[other.kind],
            detail = type(other.detail) == "string" and other.detail or nil,
            path = opath,
            line = target.line,
            col = target.col,
            sites = sites,
          })
        end
      end
    end
    return out
  end,
}

ops.rename_preview = {
  method = "textDocument/rename",
  run = function(args, buf, pos, client, deadline, files)
    local enc = H.enc(client)
    local params = {
      textDocument = H.text_document(buf),
      position = H.lsp_pos(buf, pos, enc),
      newName = args.new_name,
    }
    local res, err = H.request(buf, "textDocument/rename", params, deadline)
    if not res then
      return nil, err
    end
    local per_file, order, other = {}, {}, {}
    local function add(uri, edits)
      local path = vim.uri_to_fname(uri)
      if not per_file[path] then
        per_file[path] = {}
        table.insert(order, path)
      end
      vim.list_extend(per_file[path], edits)
    end
    for _, r in ipairs(res) do
      local we = r.result
      if we.documentChanges then
        for _, ch in ipairs(we.documentChanges) do
          if ch.textDocument then
            add(ch.textDocument.uri, ch.edits or {})
          elseif ch.kind then
            table.insert(other, ch.kind .. " " .. tostring(ch.uri or ch.oldUri or "") ..
              (ch.newUri and (" -> " .. ch.newUri) or ""))
          end
        end
      elseif we.changes then
        for uri, edits in pairs(we.changes) do
          add(uri, edits)
        end
      end
    end
    table.sort(order)
    local out = { files = {}, other = other, total = 0 }
    for _, path in ipairs(order) do
      local lines = files(path)
      local before = table.concat(lines, "\n") .. "\n"
      local after = H.apply_edits(lines, per_file[path], enc)
      out.total = out.total + #per_file[path]
      table.insert(out.files, {
        path = path,
        edits = #per_file[path],
        diff = diff(before, after, { result_type = "unified", ctxlen = 2 }) or "",
      })
    end
    return out
  end,
}

-- request_actions asks every client of buf for the code actions at the
-- call's line or range; it returns {client, action} pairs in the order the
-- listing shows them, and how many diagnostics were sent along.
function H.request_actions(args, buf, pos, client, deadline)
  local enc = H.enc(client)
  local last = math.max(args.end_line or (pos.line + 1), pos.line + 1)
  local count = vim.api.nvim_buf_line_count(buf)
  last = math.min(last, count)
  local end_text = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ""
  local range = {
    start = H.lsp_pos(buf, pos, enc),
    ["end"] = { line = last - 1, character = H.units(end_text, #end_text, enc) },
  }
  if not args.end_line then
    if (args.col and args.col >= 1) or (args.symbol and args.symbol ~= "") then
      -- a cursor position, as vim.lsp.buf.code_action() sends in Normal mode
      range["end"] = { line = range.start.line, character = range.start.character }
    else
      range.start.character = 0 -- the whole line
    end
  end
  local diags = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.lnum <= last - 1 and (d.end_lnum or d.lnum) >= pos.line then
      local lsp = d.user_data and d.user_data.lsp
      table.insert(diags, lsp or {
        range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col } },
        message = d.message,
        severity = d.severity,
        source = d.source,
      })
    end
  end
  local params = { textDocument = H.text_document(buf), range = range, context = { diagnostics = diags } }
  local res, err = H.request(buf, "textDocument/codeAction", params, deadline)
  if not res then
    return nil, err
  end
  -- pairs() over client ids has no order: sort by id, so that a listing
  -- and the apply that follows it number the actions alike.
  table.sort(res, function(a, b)
    return (a.client and a.client.id or 0) < (b.client and b.client.id or 0)
  end)
  local list = {}
  for _, r in ipairs(res) do
    for _, a in ipairs(r.result) do
      table.insert(list, { client = r.client, action = a })
    end
  end
  return list, nil, #diags
end

-- action_view is a code action as the listing shows it.
function H.action_view(a, client)
  local cmd = type(a.command) == "string" and a.command or (type(a.command) == "table" and a.command.command) or nil
  return {
    title = a.title,
    kind = type(a.kind) == "string" and a.kind or (type(a.command) == "string" and "command") or nil,
    preferred = a.isPreferred == true or nil,
    disabled = type(a.disabled) == "table" and a.disabled.reason or nil,
    client = client and client.name or nil,
    command = cmd,
  }
end

ops.code_actions = {
  method = "textDocument/codeAction",
  run = function(args, buf, pos, client, deadline)
    local list, err, ndiags = H.request_actions(args, buf, pos, client, deadline)
    if not list then
      return nil, err
    end
    local out = { actions = {}, total = #list, diagnostics = ndiags }
    for i, it in ipairs(list) do
      if i > args.limit then
        break
      end
      table.insert(out.actions, H.action_view(it.action, it.client))
    end
    return out
  end,
}

-- client_request sends one request to one client (client:request_sync
-- since 0.11, client.request_sync before).
function H.client_request(client, method, params, deadline, buf)
  local uv = vim.uv or vim.loop
  local ms = math.max(deadline - uv.now(), 1)
  local res, err
  if vim.fn.has("nvim-0.11") == 1 then
    res, err = client:request_sync(method, params, ms, buf)
  else
    res, err = client.request_sync(method, params, ms, buf)
  end
  if not res then
    return nil, err == "timeout" and string.format("%s timed out after %d ms", method, ms) or tostring(err)
  end
  if res.err and res.err ~= vim.NIL then
    return nil, client.name .. ": " .. tostring(res.err.message or vim.inspect(res.err))
  end
  if res.result == vim.NIL then
    return nil
  end
  return res.result
end

-- pick_action finds the action a call names: its number in the listing
-- (1-based), else its title (exact, then ignoring case).
function H.pick_action(list, want)
  want = vim.trim(tostring(want or ""))
  local n = tonumber(want)
  if n then
    if n >= 1 and n <= #list and n == math.floor(n) then
      return list[n], n
    end
    return nil, string.format("there is no code action %s here (%d offered)", want, #list)
  end
  for i, it in ipairs(list) do
    if it.action.title == want then
      return it, i
    end
  end
  local hits = {}
  for i, it in ipairs(list) do
    if it.action.title:lower() == want:lower() then
      table.insert(hits, i)
    end
  end
  if #hits == 1 then
    return list[hits[1]], hits[1]
  end
  local titles = {}
  for i, it in ipairs(list) do
    if i > 30 then
      break
    end
    table.insert(titles, string.format("%d. %s", i, it.action.title))
  end
  return nil, string.format("no code action titled %q here; offered: %s", want,
    #titles > 0 and table.concat(titles, "; ") or "none")
end

-- text_of is what writing buf would put in its file: its lines joined by
-- the 'fileformat' line ending, with a final one as 'eol'/'fixeol' ask.
function H.text_of(lines, bo)
  if #lines == 1 and lines[1] == "" and bo and not bo.eol then
    return ""
  end
  local nl = ({ dos = "\r\n", mac = "\r" })[bo and bo.fileformat or "unix"] or "\n"
  local s = table.concat(lines, nl)
  if not bo or bo.eol or (bo.fixeol and not bo.binary) then
    s = s .. nl
  end
  return s
end

-- file_state reads a file not loaded in Neovim into lines and the
-- 'fileformat'/'eol' its buffer would get (nil when it does not exist).
function H.file_state(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a") or ""
  f:close()
  local ff = "unix"
  local _, lf = s:gsub("\n", "")
  local _, crlf = s:gsub("\r\n", "")
  if crlf > 0 and lf == crlf then
    ff, s = "dos", s:gsub("\r\n", "\n")
  end
  local eol = s:sub(-1) == "\n"
  if eol then
    s = s:sub(1, -2)
  end
  return vim.split(s, "\n", { plain = true }), { fileformat = ff, eol = eol or s == "" }
end

-- same compares file texts, but for a missing final line ending (which
-- 'fixeol' adds when Neovim writes).
function H.same(a, b)
  if a == b then
    return true
  end
  if a == nil or b == nil then
    return false
  end
  local function trim(x)
    return (x:gsub("\r?\n$", ""))
  end
  return trim(a) == trim(b)
end

-- workspace_files turns a WorkspaceEdit into proposed file texts: for each
-- file its text now (from its buffer when loaded: what the server sees) and
-- after the edit. File renames and deletions cannot go through the review
-- and fail the whole edit.
function H.workspace_files(we, enc)
  local per, order, created = {}, {}, {}
  local function add(path, edits)
    if not per[path] then
      per[path] = {}
      table.insert(order, path)
    end
    vim.list_extend(per[path], edits or {})
  end
  if type(we.documentChanges) == "table" then
    for _, ch in ipairs(we.documentChanges) do
      if ch.textDocument then
        add(vim.uri_to_fname(ch.textDocument.uri), ch.edits)
      elseif ch.kind == "create" then
        local path = vim.uri_to_fname(ch.uri)
        created[path] = true
        add(path, {})
      else
        return nil, string.format("the edit %ss %s, which cannot go through the diff review; not applied",
          tostring(ch.kind), vim.uri_to_fname(ch.uri or ch.oldUri or ""))
      end
    end
  elseif type(we.changes) == "table" then
    local uris = vim.tbl_keys(we.changes)
    table.sort(uris)
    for _, uri in ipairs(uris) do
      add(vim.uri_to_fname(uri), we.changes[uri])
    end
  end
  local out = {}
  for _, path in ipairs(order) do
    local b = H.buf_for(path)
    local lines, bo
    if b and vim.api.nvim_buf_is_loaded(b) then
      lines, bo = vim.api.nvim_buf_get_lines(b, 0, -1, false), vim.bo[b]
    else
      lines, bo = H.file_state(path)
    end
    local exists = lines ~= nil
    if not exists and not created[path] then
      return nil, "the edit changes " .. path .. ", which does not exist; not applied"
    end
    lines = lines or { "" }
    bo = bo or { fileformat = "unix", eol = true }
    local before = exists and H.text_of(lines, bo) or ""
    local after = H.apply_edits(lines, per[path], enc)
    if not exists and #per[path] == 0 then
      after = ""
    elseif not (bo.eol or (bo.fixeol and not bo.binary)) then
      after = after:gsub("\n$", "")
    end
    local nl = ({ dos = "\r\n", mac = "\r" })[bo.fileformat]
    if nl then
      after = after:gsub("\n", nl)
    end
    if after ~= before then
      table.insert(out, { path = path, before = before, after = after, exists = exists, edits = #per[path] })
    end
  end
  return out
end

-- capture runs fn with the client's workspace/applyEdit requests held
-- (answered "not applied": what the user accepts is applied later) and
-- its window/showDocument requests declined; it returns fn's results and
-- the edits held.
function H.capture(client, fn)
  local held = {}
  local saved = {}
  local handlers = client.handlers
  if type(handlers) ~= "table" then
    client.handlers = {}
    handlers = client.handlers
  end
  local function hold(method, h)
    saved[method] = rawget(handlers, method)
    handlers[method] = h
  end
  hold("workspace/applyEdit", function(_, params)
    table.insert(held, params and params.edit or {})
    return { applied = false, failureReason = "held for the user's review in Neovim (nvim-claude)" }
  end)
  hold("window/showDocument", function()
    return { success = false }
  end)
  local ok, a, b = pcall(fn)
  for m, h in pairs(saved) do
    handlers[m] = h or nil
  end
  if not ok then
    error(a, 0)
  end
  return a, b, held
end

ops.code_action_edit = {
  method = "textDocument/codeAction",
  run = function(args, buf, pos, client, deadline)
    local list, err = H.request_actions(args, buf, pos, client, deadline)
    if not list then
      return nil, err
    end
    local it, n = H.pick_action(list, args.action)
    if not it then
      return nil, n
    end
    local a, c = it.action, it.client or client
    local view = H.action_view(a, c)
    view.index = n
    if view.disabled then
      return nil, string.format("code action %q is disabled: %s", a.title, view.disabled)
    end
    local out = { action = view, edits = {}, total = list and #list or 0 }
    local enc = H.enc(c)
    -- A Command, or a CodeAction without its edit (resolved lazily).
    if type(a.command) ~= "string" and a.edit == nil then
      local cap = c.server_capabilities.codeActionProvider
      if type(cap) == "table" and cap.resolveProvider then
        local r, rerr = H.client_request(c, "codeAction/resolve", a, deadline, buf)
        if rerr then
          return nil, "codeAction/resolve: " .. rerr
        end
        if type(r) == "table" then
          a = r
        end
      end
    end
    local cmd = type(a.command) == "string" and a or (type(a.command) == "table" and a.command) or nil
    local edits = {}
    if type(a.edit) == "table" then
      table.insert(edits, a.edit)
      if cmd then
        out.skipped_command = cmd.command
      end
    elseif cmd then
      if vim.lsp.commands and vim.lsp.commands[cmd.command] then
        return nil, string.format("code action %q runs %s, a command of Neovim's LSP client, not of the server: it cannot go through the diff review", a.title, cmd.command)
      end
      local _, cerr, held = H.capture(c, function()
        return H.client_request(c, "workspace/executeCommand", { command = cmd.command, arguments = cmd.arguments }, deadline, buf)
      end)
      out.command = cmd.command
      if #held == 0 and cerr then
        return nil, "workspace/executeCommand " .. cmd.command .. ": " .. cerr
      end
      edits = held
    end
    for _, we in ipairs(edits) do
      local files, ferr = H.workspace_files(we, enc)
      if not files then
        return nil, ferr
      end
      for _, f in ipairs(files) do
        table.insert(out.edits, f)
      end
    end
    return out
  end,
}

--- lsp_apply_files writes accepted proposals {files = {{path, before,
--- after}}}: each file's buffer (loaded if need be) gets the new text and
--- is written. Every file is checked first (its buffer and file must still
--- read as before): one that changed meanwhile fails the call and nothing
--- is applied. A file whose write fails gets its buffer back as it was.
--- Called while an autocommand runs (the :w that accepted the last diff),
--- it answers {busy = true} and does nothing: the caller asks again.
function fns.lsp_apply_files(args)
  local okst, st = pcall(vim.fn.state)
  if okst and type(st) == "string" and st:find("x", 1, true) then
    return { busy = true }
  end
  local plan = {}
  for _, f in ipairs(args.files or {}) do
    local disk
    local fh = io.open(f.path, "rb")
    if fh then
      disk = fh:read("*a")
      fh:close()
    end
    local b = H.buf_for(f.path)
    if b and vim.api.nvim_buf_is_loaded(b) then
      local now = H.text_of(vim.api.nvim_buf_get_lines(b, 0, -1, false), vim.bo[b])
      if f.exists and not H.same(now, f.before) then
        return { error = f.path .. " changed in Neovim since the proposal was made; nothing was applied" }
      end
      if f.exists and not vim.bo[b].modified and not H.same(disk, f.before) then
        return { error = f.path .. " changed on disk since the proposal was made; nothing was applied" }
      end
      if vim.bo[b].readonly then
        return { error = f.path .. " is read-only in Neovim; nothing was applied" }
      end
    elseif f.exists and not H.same(disk, f.before) then
      return { error = f.path .. " changed on disk since the proposal was made; nothing was applied" }
    end
    if not f.exists and disk ~= nil then
      return { error = f.path .. " was created meanwhile; nothing was applied" }
    end
    table.insert(plan, f)
  end
  local out = { files = {} }
  for _, f in ipairs(plan) do
    local res = { path = f.path }
    local buf, lerr = H.load(f.path)
    if not buf then
      res.error = lerr
    else
      local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      local old_eol, old_mod = vim.bo[buf].eol, vim.bo[buf].modified
      local text, ff = f.after, vim.bo[buf].fileformat
      if ff == "dos" then
        text = text:gsub("\r\n", "\n")
      elseif ff == "mac" then
        text = text:gsub("\r", "\n")
      end
      local eol = text:sub(-1) == "\n"
      if eol then
        text = text:sub(1, -2)
      end
      local new = vim.split(text, "\n", { plain = true })
      -- Replace only the lines that differ, so marks and folds elsewhere stay.
      local first = 1
      while first <= #old and first <= #new and old[first] == new[first] do
        first = first + 1
      end
      local lo, ln = #old, #new
      while lo >= first and ln >= first and old[lo] == new[ln] do
        lo, ln = lo - 1, ln - 1
      end
      local ok, err = pcall(function()
        vim.api.nvim_buf_set_lines(buf, first - 1, lo, false, vim.list_slice(new, first, ln))
        vim.bo[buf].eol = eol
        vim.fn.mkdir(vim.fn.fnamemodify(f.path, ":h"), "p")
        vim.api.nvim_buf_call(buf, function()
          vim.cmd("silent keepalt write!")
        end)
      end)
      if not ok then
        pcall(vim.api.nvim_buf_set_lines, buf, 0, -1, false, old)
        vim.bo[buf].eol = old_eol
        vim.bo[buf].modified = old_mod
        res.error = "could not write " .. f.path .. ": " .. tostring(err)
      else
        res.written = true
        vim.bo[buf].buflisted = true
      end
    end
    table.insert(out.files, res)
  end
  return out
end

-- workspace_buf picks a buffer attached to a client that answers
-- workspace/symbol, when the call names no file.
function H.workspace_buf()
  for _, c in ipairs(H.clients()) do
    if H.supports(c, "workspace/symbol") then
      local bufs = vim.lsp.get_buffers_by_client_id(c.id)
      if bufs[1] then
        return bufs[1]
      end
    end
  end
end

--- lsp_query runs one LSP-backed editor tool. args: {op, file (absolute),
--- rel (for messages), line, col, symbol, query, new_name, direction,
--- end_line, limit, timeout_ms}. Returns the op's result plus resolved
--- (where a symbol was found), or {error = "..."}.
function fns.lsp_query(args)
  local op = ops[args.op]
  if not op then
    return { error = "unknown operation " .. tostring(args.op) }
  end
  local uv = vim.uv or vim.loop
  local deadline = uv.now() + (args.timeout_ms or 4000)
  args.limit = args.limit or 100
  local buf
  if args.file and args.file ~= "" then
    if vim.fn.filereadable(args.file) ~= 1 and not H.buf_for(args.file) then
      return { error = "no such file: " .. (args.rel or args.file) }
    end
    local err
    buf, err = H.load(args.file)
    if not buf then
      return { error = err }
    end
    H.attach_running(buf, args.file)
  elseif args.op == "workspace_symbols" then
    buf = H.workspace_buf()
    if not buf then
      return { error = "no running language server supports workspace/symbol (open a file of the project first, or pass file)" }
    end
  else
    return { error = "file is required" }
  end
  local client, pending = H.client(buf, op.method, deadline)
  if not client then
    return { error = H.no_client(args.rel or vim.api.nvim_buf_get_name(buf), op.method, buf, pending) }
  end
  local files = H.new_files()
  local pos, resolved
  if not op.no_position then
    local perr
    pos, perr = H.position(args, buf, deadline)
    if not pos then
      return { error = perr }
    end
    local text = vim.api.nvim_buf_get_lines(buf, pos.line, pos.line + 1, false)[1] or ""
    resolved = {
      path = vim.api.nvim_buf_get_name(buf),
      line = pos.line + 1,
      col = H.units(text, pos.byte, "utf-32") + 1,
      text = vim.trim(text):sub(1, max_text),
      how = pos.how,
      word = H.word_at(text, pos.byte),
    }
  end
  local out, err = op.run(args, buf, pos, client, deadline, files)
  if not out then
    return { error = err, resolved = resolved }
  end
  out.resolved = resolved
  out.client = client.name
  return out
end

-- Tree-sitter node types that make a scope worth naming.
local scope_words = { "function", "method", "class", "struct", "interface", "impl", "trait", "enum", "module",
  "namespace", "type_spec", "type_declaration", "section", "declaration" }

local function is_scope(t)
  for _, w in ipairs(scope_words) do
    if t:find(w, 1, true) then
      return true
    end
  end
  return false
end

local function node_text(buf, node)
  local sr, sc, er, ec = node:range()
  local lines = vim.api.nvim_buf_get_lines(buf, sr, er + 1, false)
  if #lines == 0 then
    return ""
  end
  if #lines == 1 then
    return lines[1]:sub(sc + 1, ec)
  end
  lines[1] = lines[1]:sub(sc + 1)
  lines[#lines] = lines[#lines]:sub(1, ec)
  return table.concat(lines, "\n")
end

local function node_view(buf, node)
  local sr, sc, er, ec = node:range()
  local first = vim.api.nvim_buf_get_lines(buf, sr, sr + 1, false)[1] or ""
  local last = vim.api.nvim_buf_get_lines(buf, er, er + 1, false)[1] or ""
  return {
    type = node:type(),
    line = sr + 1,
    col = H.units(first, sc, "utf-32") + 1,
    end_line = er + 1,
    end_col = H.units(last, ec, "utf-32") + 1,
  }
end

--- ts_node: the tree-sitter node at {file, line, col}, its ancestors and
--- the enclosing scopes (function, class …) with their names and ranges.
function fns.ts_node(args)
  if vim.fn.filereadable(args.file) ~= 1 and not H.buf_for(args.file) then
    return { error = "no such file: " .. (args.rel or args.file) }
  end
  local buf, err = H.load(args.file)
  if not buf then
    return { error = err }
  end
  if not vim.treesitter or not vim.treesitter.get_parser then
    return { error = "tree-sitter needs Neovim ≥ 0.8" }
  end
  local ft = vim.bo[buf].filetype
  local lang = ft
  if vim.treesitter.language and vim.treesitter.language.get_lang then
    lang = vim.treesitter.language.get_lang(ft) or ft
  end
  if lang == "" then
    return { error = string.format("%s has no filetype, so no tree-sitter language", args.rel or args.file) }
  end
  local ok, parser = pcall(vim.treesitter.get_parser, buf, lang)
  if not ok or not parser then
    return { error = string.format("no tree-sitter parser for %s on this Neovim (%s); install one (e.g. nvim-treesitter's :TSInstall %s)",
      lang, tostring(vim.version and vim.version() and (vim.version().major .. "." .. vim.version().minor) or "?"), lang) }
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if not args.line or args.line < 1 or args.line > #lines then
    return { error = string.format("line %s is outside %s (%d lines)", tostring(args.line), args.rel or args.file, #lines) }
  end
  local text = lines[args.line]
  local row = args.line - 1
  local col = args.col and args.col >= 1 and H.byte(text, args.col - 1, "utf-32") or ((text:find("%S") or 1) - 1)
  local tree = parser:parse()[1]
  local root = tree:root()
  -- Injected languages (code in markdown, Lua in Vim script) have trees of
  -- their own: prefer the innermost.
  local ltree = parser.language_for_range and parser:language_for_range({ row, col, row, col }) or nil
  if ltree and ltree ~= parser then
    local trees = ltree:trees()
    for _, t in ipairs(trees) do
      local r = t:root()
      local sr, sc, er, ec = r:range()
      if (row > sr or (row == sr and col >= sc)) and (row < er or (row == er and col <= ec)) then
        root, lang = r, ltree:lang()
        break
      end
    end
  end
  local node = root:named_descendant_for_range(row, col, row, col)
  if not node then
    return { error = "no syntax node at that position" }
  end
  local out = node_view(buf, node)
  out.lang = lang
  out.text = node_text(buf, node):sub(1, max_text)
  out.ancestors = {}
  out.scopes = {}
  local p = node:parent()
  while p do
    if #out.ancestors < 8 then
      table.insert(out.ancestors, p:type())
    end
    if is_scope(p:type()) and #out.scopes < 6 then
      local v = node_view(buf, p)
      local name = p.field and p:field("name")[1]
      if name then
        v.name = node_text(buf, name):sub(1, 100)
      end
      v.first_line = vim.trim(lines[v.line] or ""):sub(1, max_text)
      table.insert(out.scopes, v)
    end
    p = p:parent()
  end
  return out
end

--- lsp_buffers: the listed file buffers with the language servers attached
--- to each, for open_buffers.
function fns.lsp_buffers()
  local cur = vim.api.nvim_get_current_buf()
  local visible = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    visible[vim.api.nvim_win_get_buf(w)] = true
  end
  local out = {}
  local file_path = H.editor().file_path
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.bo[b].buflisted and file_path(b)
    if name then
      local names = {}
      for _, c in ipairs(H.clients(b)) do
        table.insert(names, c.name)
      end
      table.sort(names)
      table.insert(out, {
        bufnr = b,
        path = name,
        filetype = vim.bo[b].filetype,
        modified = vim.bo[b].modified,
        loaded = vim.api.nvim_buf_is_loaded(b),
        lines = vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_line_count(b) or nil,
        current = b == cur or nil,
        visible = visible[b] or nil,
        clients = names,
      })
    end
  end
  return out
end

-- file_window is the window to show a file in: the active editor when a
-- file may be shown there, else the largest window where one may
-- (claude.editor.show_window: never the Claude terminal, a sidebar, a diff
-- or a float), else a new split.
local function file_window()
  local cur = vim.api.nvim_get_current_win()
  local win = H.editor().show_window(0)
  if win then
    return win
  end
  vim.cmd("topleft vnew")
  local w = vim.api.nvim_get_current_win()
  vim.api.nvim_set_current_win(cur)
  return w
end

--- open_file_at shows {file, line, col} to the user in a file window,
--- leaving the focus where it is.
function fns.open_file_at(args)
  if vim.fn.filereadable(args.file) ~= 1 and not H.buf_for(args.file) then
    return { error = "no such file: " .. (args.rel or args.file) }
  end
  local win = file_window()
  local ok, err = pcall(vim.api.nvim_win_call, win, function()
    vim.cmd("edit " .. vim.fn.fnameescape(args.file))
  end)
  if not ok then
    -- e.g. E37: the window's buffer has unsaved changes and 'hidden' is off
    ok, err = pcall(vim.api.nvim_win_call, win, function()
      vim.cmd("split " .. vim.fn.fnameescape(args.file))
      win = vim.api.nvim_get_current_win()
    end)
    if not ok then
      return { error = "could not open " .. (args.rel or args.file) .. ": " .. tostring(err) }
    end
  end
  local buf = vim.api.nvim_win_get_buf(win)
  vim.bo[buf].buflisted = true
  local count = vim.api.nvim_buf_line_count(buf)
  local line = math.max(1, math.min(args.line or 1, count))
  local text = vim.api.nvim_buf_get_lines(buf, line - 1, line, false)[1] or ""
  local byte = (args.col and args.col >= 1) and H.byte(text, args.col - 1, "utf-32") or ((text:find("%S") or 1) - 1)
  vim.api.nvim_win_set_cursor(win, { line, byte })
  vim.api.nvim_win_call(win, function()
    vim.cmd("normal! zz")
  end)
  return { path = args.file, line = line, col = H.units(text, byte, "utf-32") + 1, lines = count, text = vim.trim(text):sub(1, max_text) }
end

return fns
